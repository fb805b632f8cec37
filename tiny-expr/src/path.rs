//! JSONPath selection: parsed once at compile time, run per message.
//!
//! Paths are parsed by `jsonpath-rust` (RFC 9535). Paths made only of `.name`, `['name']`
//! and `[index]` segments (RFC 9535 "singular queries", the common case) are also lowered
//! to a list of steps and walked directly: no allocation, and a precise reason when
//! nothing matches. Every other path runs through `jsonpath-rust`.

use std::borrow::Cow;
use std::fmt::Write as _;

use jsonpath_rust::parser::errors::JsonPathError;
use jsonpath_rust::parser::model::{JpQuery, Segment, Selector};
use jsonpath_rust::parser::parse_json_path;
use jsonpath_rust::query::js_path_process;
use serde_json::{Map, Value};

use crate::error::{Fault, SyntaxError};
use crate::value::type_name;

/// One step of a singular path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    Key(String),
    Index(i64),
}

/// How a path is run.
#[derive(Debug, Clone)]
enum Plan {
    /// Only names and indexes: walked directly.
    Singular(Vec<Step>),
    /// Anything else: run by `jsonpath-rust`.
    Query(JpQuery),
}

/// A compiled JSONPath.
#[derive(Debug, Clone)]
pub(crate) struct Path {
    source: String,
    plan: Plan,
}

impl Path {
    /// Parses `source` (which starts with `$`); `at` is its byte offset, for errors.
    pub(crate) fn compile(source: &str, at: usize) -> Result<Path, SyntaxError> {
        let query = parse_json_path(source).map_err(|e| path_error(source, at, &e))?;
        let steps: Option<Vec<Step>> = query
            .segments
            .iter()
            .map(|segment| match segment {
                Segment::Selector(Selector::Name(name)) => Some(Step::Key(name.clone())),
                Segment::Selector(Selector::Index(i)) => Some(Step::Index(*i)),
                _ => None,
            })
            .collect();
        let plan = match steps {
            Some(steps) => Plan::Singular(steps),
            None => Plan::Query(query),
        };
        Ok(Path {
            source: source.to_owned(),
            plan,
        })
    }

    /// The steps of a singular path that starts with a name (`$.a`, `$.a[0].b`): what
    /// [`take`](Self::take) can move out. `None` for `$` itself and every other path.
    /// (A filter may read `$` anywhere; a path starting with an index reads `$` as an
    /// array, not a named field of it.)
    pub(crate) fn named_steps(&self) -> Option<&[Step]> {
        match &self.plan {
            Plan::Singular(steps) if matches!(steps.first(), Some(Step::Key(_))) => Some(steps),
            _ => None,
        }
    }

    /// Moves the node a [`named_steps`](Self::named_steps) path selects out of `root`,
    /// leaving `null` in its place; `None` (and `root` untouched) when it selects
    /// nothing or is not such a path. What [`select`](Self::select) would have
    /// borrowed, without the copy.
    pub(crate) fn take(&self, root: &mut Value) -> Option<Value> {
        let mut node = root;
        for step in self.named_steps()? {
            node = match (step, node) {
                (Step::Key(k), Value::Object(map)) => entry_mut(map, k)?,
                (Step::Index(idx), Value::Array(items)) => {
                    let i = resolve_index(*idx, items.len())?;
                    items.get_mut(i)?
                }
                _ => return None,
            };
        }
        Some(std::mem::take(node))
    }

    /// Selects from `root`. One node yields that node (borrowed); several yield an array of
    /// copies; none is a [`FaultKind::NoMatch`](crate::error::FaultKind::NoMatch) fault.
    pub(crate) fn select<'a>(&self, root: &'a Value) -> Result<Cow<'a, Value>, Fault> {
        match &self.plan {
            Plan::Singular(steps) => match self.walk(steps, root) {
                Ok(v) => Ok(Cow::Borrowed(v)),
                // ajson's `.length` of an array (`$.items.length`), where no key of
                // that name is there to select.
                Err(f) => match steps.split_last() {
                    Some((Step::Key(k), before)) if k == "length" => match self.walk(before, root) {
                        Ok(Value::Array(items)) => Ok(Cow::Owned(Value::from(items.len()))),
                        _ => Err(f),
                    },
                    _ => Err(f),
                },
            },
            Plan::Query(query) => {
                let found = js_path_process(query, root)
                    .map_err(|e| Fault::other(format!("path {} failed: {e}", self.source)))?;
                match found.len() {
                    0 => Err(Fault::no_match(format!("path {} matched nothing", self.source))),
                    1 => Ok(Cow::Borrowed(found[0].val)),
                    _ => Ok(Cow::Owned(Value::Array(
                        found.into_iter().map(|r| r.val.clone()).collect(),
                    ))),
                }
            }
        }
    }

    /// Selects from `root` keeping where the result sits, for `key`, `parent` and `root`.
    /// A single node is a [`Place::Node`]; several nodes are one detached array.
    pub(crate) fn locate<'a>(&self, root: &'a Value) -> Result<Place<'a>, Fault> {
        match &self.plan {
            Plan::Singular(steps) => self.walk_placed(steps, root).map(Place::node),
            Plan::Query(query) => {
                let found = js_path_process(query, root)
                    .map_err(|e| Fault::other(format!("path {} failed: {e}", self.source)))?;
                match found.as_slice() {
                    [] => Err(Fault::no_match(format!("path {} matched nothing", self.source))),
                    [one] => {
                        // The normalized path of the match (`$['a'][0]`) is a singular path;
                        // walking it again finds the node's holder.
                        match Path::compile(&one.path, 0) {
                            Ok(Path {
                                plan: Plan::Singular(steps),
                                ..
                            }) => self.walk_placed(&steps, root).map(Place::node),
                            _ => Ok(Place::Detached(Cow::Borrowed(one.val))),
                        }
                    }
                    many => Ok(Place::Detached(Cow::Owned(Value::Array(
                        many.iter().map(|r| r.val.clone()).collect(),
                    )))),
                }
            }
        }
    }

    fn walk<'a>(&self, steps: &[Step], root: &'a Value) -> Result<&'a Value, Fault> {
        self.walk_placed(steps, root).map(|(value, _)| value)
    }

    /// Follows `steps` from `root`, returning the node reached and its holder.
    fn walk_placed<'a>(&self, steps: &[Step], root: &'a Value) -> Result<(&'a Value, Holder<'a>), Fault> {
        let mut node = root;
        let mut holder = None;
        for (i, step) in steps.iter().enumerate() {
            let next = match (step, node) {
                (Step::Key(k), Value::Object(map)) => entry(map, k).map(|(k, v)| (v, Some(k.as_str()))),
                (Step::Index(idx), Value::Array(items)) => resolve_index(*idx, items.len())
                    .and_then(|i| items.get(i))
                    .map(|v| (v, None)),
                _ => None,
            };
            match next {
                Some((n, key)) => {
                    holder = Some((node, key));
                    node = n;
                }
                None => return Err(self.no_match(&steps[..i], step, node)),
            }
        }
        Ok((node, holder))
    }

    /// A no-match fault that says which step failed, e.g. `($.user has no key "nmae")`.
    fn no_match(&self, done: &[Step], step: &Step, node: &Value) -> Fault {
        let mut at = String::from("$");
        for s in done {
            match s {
                Step::Key(k) if is_shorthand(k) => {
                    let _ = write!(at, ".{k}");
                }
                Step::Key(k) => {
                    let _ = write!(at, "[{}]", Value::String(k.clone()));
                }
                Step::Index(i) => {
                    let _ = write!(at, "[{i}]");
                }
            }
        }
        let why = match (step, node) {
            (Step::Key(k), Value::Object(_)) => {
                format!("{at} has no key {}", Value::String(k.clone()))
            }
            (Step::Index(i), Value::Array(items)) => {
                format!("{at} has {} elements, no index {i}", items.len())
            }
            (Step::Key(_), other) => format!("{at} is {}, not an object", a_type(other)),
            (Step::Index(_), other) => format!("{at} is {}, not an array", a_type(other)),
        };
        Fault::no_match(format!("path {} matched nothing ({why})", self.source))
    }
}

/// The node holding a selected node, and the selected node's key when the holder is an
/// object; `None` for `$` itself.
pub(crate) type Holder<'a> = Option<(&'a Value, Option<&'a str>)>;

/// Where a selected value sits in the message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Place<'a> {
    /// One node of the message.
    Node { value: &'a Value, holder: Holder<'a> },
    /// A value that is not one node of the message.
    Detached(Cow<'a, Value>),
}

impl<'a> Place<'a> {
    fn node((value, holder): (&'a Value, Holder<'a>)) -> Place<'a> {
        Place::Node { value, holder }
    }
}

/// Below this many fields an object is searched key by key: comparing a few short
/// keys costs less than hashing one (serde_json's map hashes with SipHash).
const SCAN: usize = 8;

/// `map`'s entry for `key`.
fn entry<'a>(map: &'a Map<String, Value>, key: &str) -> Option<(&'a String, &'a Value)> {
    if map.len() <= SCAN {
        map.iter().find(|(k, _)| *k == key)
    } else {
        map.get_key_value(key)
    }
}

/// `map`'s value for `key`, to change.
fn entry_mut<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    if map.len() <= SCAN {
        map.iter_mut().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        map.get_mut(key)
    }
}

/// Whether two singular paths may select the same node, or one a node inside the
/// other's: they start alike, name for name. An index is taken to meet any step (`[-1]`
/// and `[2]` may be one element).
pub(crate) fn overlap(a: &[Step], b: &[Step]) -> bool {
    a.iter().zip(b).all(|pair| match pair {
        (Step::Key(x), Step::Key(y)) => x == y,
        _ => true,
    })
}

/// RFC 9535 index semantics: negative counts from the end.
fn resolve_index(idx: i64, len: usize) -> Option<usize> {
    if idx >= 0 {
        usize::try_from(idx).ok().filter(|&i| i < len)
    } else {
        usize::try_from(idx.unsigned_abs())
            .ok()
            .and_then(|back| len.checked_sub(back))
    }
}

fn a_type(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Array(_) | Value::Object(_) => format!("an {}", type_name(v)),
        _ => format!("a {}", type_name(v)),
    }
}

fn is_shorthand(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || !c.is_ascii())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || !c.is_ascii())
}

/// Turns a `jsonpath-rust` error into a one-line syntax error positioned in the path.
fn path_error(source: &str, at: usize, err: &JsonPathError) -> SyntaxError {
    match err {
        JsonPathError::PestError(pest_err) => {
            let pos = match pest_err.location {
                pest::error::InputLocation::Pos(p) => p,
                pest::error::InputLocation::Span((p, _)) => p,
            };
            let rest = source.get(pos..).unwrap_or("");
            let near = if rest.is_empty() {
                "at the end".to_owned()
            } else {
                format!("at {:?}", rest.chars().take(12).collect::<String>())
            };
            SyntaxError::new(at + pos, format!("invalid JSONPath {source}: syntax error {near}"))
        }
        other => SyntaxError::new(at, format!("invalid JSONPath {source}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(src: &str) -> Path {
        match Path::compile(src, 0) {
            Ok(p) => p,
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn singular_paths_are_walked_directly() {
        assert!(matches!(path("$.a[0]['b c'][-1]").plan, Plan::Singular(_)));
        assert!(matches!(path("$").plan, Plan::Singular(ref s) if s.is_empty()));
        assert!(matches!(path("$.a[*]").plan, Plan::Query(_)));
        assert!(matches!(path("$..a").plan, Plan::Query(_)));
        assert!(matches!(path("$['a','b']").plan, Plan::Query(_)));
    }

    #[test]
    fn fields_are_found_in_small_and_large_objects() {
        for len in [1, SCAN, SCAN + 1, 3 * SCAN] {
            let mut map = Map::new();
            for i in 0..len {
                map.insert(format!("k{i}"), Value::from(i));
            }
            let mut root = Value::Object(map);
            for i in 0..len {
                let p = path(&format!("$.k{i}"));
                assert_eq!(
                    p.select(&root).ok().as_deref(),
                    Some(&Value::from(i)),
                    "{len} fields, k{i}"
                );
                assert_eq!(p.take(&mut root), Some(Value::from(i)), "{len} fields, k{i}");
                assert_eq!(p.take(&mut root), Some(Value::Null), "taken already");
            }
            assert!(path("$.nope").select(&root).is_err());
            assert_eq!(path("$.nope").take(&mut root), None);
        }
    }

    #[test]
    fn negative_indexes() {
        let v = json!({"a": [1, 2, 3]});
        assert_eq!(path("$.a[-1]").select(&v), Ok(Cow::Borrowed(&json!(3))));
        assert_eq!(path("$.a[-3]").select(&v), Ok(Cow::Borrowed(&json!(1))));
        assert_eq!(
            path("$.a[-4]").select(&v).map_err(|f| f.message),
            Err("path $.a[-4] matched nothing ($.a has 3 elements, no index -4)".to_owned())
        );
    }

    #[test]
    fn no_match_reasons() {
        let v = json!({"a": {"b c": 1, "n": null}, "s": "x"});
        let msg = |p: &str| path(p).select(&v).map_err(|f| f.message);
        assert_eq!(
            msg("$['a']['b c'].d"),
            Err(r#"path $['a']['b c'].d matched nothing ($.a["b c"] is a number, not an object)"#.to_owned())
        );
        assert_eq!(
            msg("$.s[0]"),
            Err("path $.s[0] matched nothing ($.s is a string, not an array)".to_owned())
        );
        assert_eq!(
            msg("$.a.n.x"),
            Err("path $.a.n.x matched nothing ($.a.n is null, not an object)".to_owned())
        );
        assert_eq!(
            msg("$.a[0]"),
            Err("path $.a[0] matched nothing ($.a is an object, not an array)".to_owned())
        );
        assert_eq!(msg("$.zz[*]"), Err("path $.zz[*] matched nothing".to_owned()));
    }

    #[test]
    fn syntax_errors_point_into_the_path() {
        let e = Path::compile("$.a[?@.b ==]", 10).err();
        assert_eq!(
            e,
            Some(SyntaxError::new(
                21,
                r#"invalid JSONPath $.a[?@.b ==]: syntax error at "]""#
            ))
        );
    }
}

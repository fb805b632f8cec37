//! Compiled JSON templates: find the `{{...}}` in every string once, render per message.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::ast::Node;
use crate::error::{CompileError, EvalError, Fault, FaultKind, push_pointer_token};
use crate::eval::{eval, owned};
use crate::lexer::Mode;
use crate::limits::{Render, charge};
use crate::parser::parse;
use crate::path::{Step, overlap};
use crate::value::write_text;

/// A compiled JSON template: a JSON value whose strings may hold `{{...}}` expressions.
///
/// Compile it once when a node is loaded, then [`render`](Self::render) it for each
/// message; rendering parses nothing and copies constant parts as they are.
///
/// * A string that is exactly one expression, `"{{ $.a }}"`, becomes the expression's
///   value with its JSON type (number, boolean, object, array or null).
/// * A string mixing text and expressions, `"Hi {{$.first}} {{$.last}}"`, interpolates
///   each expression: strings as they are, numbers in JSON form (`5`, `1.5`), `true` and
///   `false`, null as nothing, arrays and objects as compact JSON.
/// * Strings without `{{`, numbers, booleans and null are copied unchanged. Arrays and
///   objects are processed recursively; object keys are never templated.
/// * **Escape:** `\{{` in a string stands for a literal `{{` (in JSON source that is
///   written `"\\{{"`). There is no other escape: a lone `}}` outside an expression is
///   plain text, and `}}` inside a string literal or a JSONPath bracket does not close an
///   expression.
///
/// ```
/// use serde_json::json;
/// use tiny_expr::Template;
///
/// let t = Template::compile(&json!({
///     "id": "{{ $.order.id }}",
///     "greeting": "Hello {{$.user.first}} {{$.user.last}}!",
///     "total": "{{ $.order.qty * $.order.price }}",
///     "literal": "\\{{not an expression}}",
///     "fixed": [1, "two"]
/// }))?;
/// let out = t.render(&json!({
///     "order": {"id": 7, "qty": 3, "price": 2.5},
///     "user": {"first": "Ada", "last": "Lovelace"}
/// }))?;
/// assert_eq!(out, json!({
///     "id": 7,
///     "greeting": "Hello Ada Lovelace!",
///     "total": 7.5,
///     "literal": "{{not an expression}}",
///     "fixed": [1, "two"]
/// }));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Template {
    root: TNode,
}

/// A compiled part of the configuration.
#[derive(Debug, Clone)]
enum TNode {
    /// A subtree without expressions, kept ready to copy.
    Const(Value),
    /// A string that is exactly one expression: the result keeps its type.
    Whole(Box<Site>),
    /// A string mixing text and expressions, with a capacity hint for the result.
    Interp(Box<[Part]>, usize),
    Array(Box<[TNode]>),
    Object(Box<[(String, TNode)]>),
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Expr(Site),
}

/// One expression and where it came from, for errors.
#[derive(Debug, Clone)]
struct Site {
    node: Node,
    /// JSON pointer of the field.
    pointer: Box<str>,
    /// The expression as written, braces included.
    source: Box<str>,
    /// A path placed whole (`"{{$.user}}"`) whose node no other expression of the
    /// template reads: [`Template::render_taking`] moves it out of `$` instead of
    /// copying it.
    movable: bool,
}

impl Site {
    fn eval<'a>(&'a self, root: &'a Value) -> Result<Cow<'a, Value>, EvalError> {
        eval(&self.node, root).map_err(|f| self.error(f))
    }

    fn error(&self, f: Fault) -> EvalError {
        f.into_eval_error(&self.pointer, &self.source)
    }

    /// The site's value: taken out of `root` when it may be, else evaluated.
    fn value(&self, root: &mut impl Root) -> Result<Value, EvalError> {
        match root.take(self) {
            Some(v) => Ok(v),
            None => owned(self.eval(root.get())?).map_err(|f| self.error(f)),
        }
    }
}

/// What a render reads `$` from: a message it borrows, or one it may move the values
/// of [movable](Site::movable) sites out of.
trait Root {
    fn get(&self) -> &Value;
    fn take(&mut self, site: &Site) -> Option<Value>;
}

impl Root for &Value {
    fn get(&self) -> &Value {
        self
    }
    fn take(&mut self, _: &Site) -> Option<Value> {
        None
    }
}

impl Root for &mut Value {
    fn get(&self) -> &Value {
        self
    }
    fn take(&mut self, site: &Site) -> Option<Value> {
        match &site.node {
            Node::Path(path) if site.movable => path.take(self),
            _ => None,
        }
    }
}

impl Template {
    /// Compiles a configuration. Every expression is parsed, every JSONPath and every
    /// literal regular expression compiled, and function names and argument counts
    /// checked, now rather than per message.
    ///
    /// # Errors
    ///
    /// A [`CompileError`] for the first string that does not compile, with its JSON
    /// pointer and the char offset of the problem.
    pub fn compile(config: &Value) -> Result<Template, CompileError> {
        let mut pointer = String::new();
        let mut root = compile_value(config, &mut pointer)?;
        mark_movable(&mut root);
        Ok(Template { root })
    }

    /// Renders the template with `root` as `$`. Only the selected parts of `root` are
    /// copied.
    ///
    /// # Errors
    ///
    /// An [`EvalError`] for the first expression that fails, with its JSON pointer. A
    /// path that matches nothing is an error unless it sits on the left of `??`.
    pub fn render(&self, root: &Value) -> Result<Value, EvalError> {
        let _budget = Render::begin();
        render_node(&self.root, &mut { root })
    }

    /// [`render`](Self::render), moving out of `root` what it would copy whole: a path
    /// placed as a whole string (`"{{$.user}}"`) that no other expression of the template
    /// reads. The result is the same as `render`'s; what is left of `root` (those values
    /// replaced by `null`) is only fit to be dropped.
    ///
    /// ```
    /// use serde_json::json;
    /// use tiny_expr::Template;
    ///
    /// let t = Template::compile(&json!({"who": "{{$.user}}", "n": "{{$.n + 1}}"}))?;
    /// let mut root = json!({"user": {"name": "Ada"}, "n": 1});
    /// assert_eq!(t.render_taking(&mut root)?, json!({"who": {"name": "Ada"}, "n": 2}));
    /// assert_eq!(root, json!({"user": null, "n": 1}));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`render`](Self::render).
    pub fn render_taking(&self, root: &mut Value) -> Result<Value, EvalError> {
        let _budget = Render::begin();
        render_node(&self.root, &mut { root })
    }

    /// Renders the template as the Go SDK's evaluator does: an expression that fails
    /// does not fail the render. A string that is one expression becomes `null`; an
    /// expression inside a longer string leaves its text, braces included, in place,
    /// unless it is a path alone that matched nothing, which is written as nothing (Go's
    /// missing value). Each failure is pushed onto `failures` (in document order), for
    /// the caller to report.
    ///
    /// ```
    /// use serde_json::json;
    /// use tiny_expr::Template;
    ///
    /// let t = Template::compile(&json!({
    ///     "note": "{{ $.order.note }}",
    ///     "line": "Order {{$.order.id}}: {{$.order.note}}",
    ///     "total": "Total: {{$.order.id * 'x'}}"
    /// }))?;
    /// let mut failures = Vec::new();
    /// let out = t.render_lenient(&json!({"order": {"id": 7}}), &mut failures);
    /// assert_eq!(
    ///     out,
    ///     json!({"note": null, "line": "Order 7: ", "total": "Total: {{$.order.id * 'x'}}"})
    /// );
    /// assert_eq!(failures.len(), 3);
    /// assert_eq!(failures[0].pointer, "/note");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn render_lenient(&self, root: &Value, failures: &mut Vec<EvalError>) -> Value {
        let _budget = Render::begin();
        render_lenient(&self.root, &mut { root }, failures)
    }

    /// [`render_lenient`](Self::render_lenient), moving values out of `root` as
    /// [`render_taking`](Self::render_taking) does.
    pub fn render_lenient_taking(&self, root: &mut Value, failures: &mut Vec<EvalError>) -> Value {
        let _budget = Render::begin();
        render_lenient(&self.root, &mut { root }, failures)
    }

    /// The top-level fields of `$` the template reads, in the order first read, when
    /// every expression reads only named fields (`$.a`, `$.a.b[0]`, `$['a']`); `None`
    /// when one may read more (`$`, `$[0]`, `$..a`, a filter). Rendering against a root
    /// holding only these fields gives the same result as against the whole message,
    /// so a caller can build just those.
    ///
    /// ```
    /// use serde_json::json;
    /// use tiny_expr::Template;
    ///
    /// let t = Template::compile(&json!({"to": "{{$.user.email}}", "n": "{{ $.n ?? 0 }}", "k": 1}))?;
    /// assert_eq!(t.root_keys(), Some(vec!["user", "n"]));
    /// assert_eq!(Template::compile(&json!("{{$}}"))?.root_keys(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn root_keys(&self) -> Option<Vec<&str>> {
        let mut paths = Vec::new();
        let mut named = true;
        self.root
            .for_each_site(&mut |site, _| named &= site.node.read_paths(&mut paths));
        if !named {
            return None;
        }
        let mut keys = Vec::new();
        for path in paths {
            if let Some(Step::Key(k)) = path.first()
                && !keys.contains(&k.as_str())
            {
                keys.push(k.as_str());
            }
        }
        Some(keys)
    }

    /// The names of the fields of the object the template makes, in order, when it
    /// makes one with an expression in it (`{"to": "{{$.email}}", "n": 1}`); `None` for
    /// any other template. [`render_fields`](Self::render_fields) renders their values.
    pub fn fields(&self) -> Option<Vec<&str>> {
        match &self.root {
            TNode::Object(entries) => Some(entries.iter().map(|(k, _)| k.as_str()).collect()),
            _ => None,
        }
    }

    /// The values of the object's [`fields`](Self::fields), in order, without the
    /// object: what [`render`](Self::render) (`failures: None`) or
    /// [`render_lenient`](Self::render_lenient) (`Some`) would put in it. A caller that
    /// keeps the names apart saves making the object, a map whose every key is hashed.
    /// A template that makes no such object gives its one rendered value.
    ///
    /// ```
    /// use serde_json::json;
    /// use tiny_expr::Template;
    ///
    /// let t = Template::compile(&json!({"to": "{{$.email}}", "n": "{{$.n + 1}}"}))?;
    /// assert_eq!(t.fields(), Some(vec!["to", "n"]));
    /// let root = json!({"email": "a@b.c", "n": 1});
    /// assert_eq!(t.render_fields(&root, None)?, vec![json!("a@b.c"), json!(2)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As [`render`](Self::render), when `failures` is `None`.
    pub fn render_fields(&self, root: &Value, failures: Option<&mut Vec<EvalError>>) -> Result<Vec<Value>, EvalError> {
        let _budget = Render::begin();
        render_fields(&self.root, &mut { root }, failures)
    }

    /// [`render_fields`](Self::render_fields), moving values out of `root` as
    /// [`render_taking`](Self::render_taking) does.
    ///
    /// # Errors
    ///
    /// As [`render`](Self::render), when `failures` is `None`.
    pub fn render_fields_taking(
        &self,
        root: &mut Value,
        failures: Option<&mut Vec<EvalError>>,
    ) -> Result<Vec<Value>, EvalError> {
        let _budget = Render::begin();
        render_fields(&self.root, &mut { root }, failures)
    }

    /// For each of the object's [`fields`](Self::fields), the top-level field of `$` it
    /// is, when it is one placed whole that no other expression reads
    /// (`"to": "{{$.email}}"`): a caller that can make that value on its own may hand it
    /// to [`render_fields_placed`](Self::render_fields_placed) rather than put it in `$`.
    pub fn placed_fields(&self) -> Vec<Option<&str>> {
        let TNode::Object(entries) = &self.root else {
            return Vec::new();
        };
        entries
            .iter()
            .map(|(_, item)| match item {
                TNode::Whole(site) if site.movable => match &site.node {
                    Node::Path(path) => match path.named_steps() {
                        Some([Step::Key(k)]) => Some(k.as_str()),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    /// [`render_fields_taking`](Self::render_fields_taking), with `placed[i]`, where it
    /// holds a value, as the value of field `i` (see
    /// [`placed_fields`](Self::placed_fields)); the other fields render from `root`.
    ///
    /// # Errors
    ///
    /// As [`render`](Self::render), when `failures` is `None`.
    pub fn render_fields_placed(
        &self,
        root: &mut Value,
        placed: Vec<Option<Value>>,
        failures: Option<&mut Vec<EvalError>>,
    ) -> Result<Vec<Value>, EvalError> {
        self.render_fields_placed_as(root, placed, |v| v, failures)
    }

    /// [`render_fields_placed`](Self::render_fields_placed) for a caller that keeps
    /// the values it placed in a form of its own, `P`: a rendered value is made one by
    /// `wrap`, a placed one is returned as it was given.
    ///
    /// # Errors
    ///
    /// As [`render`](Self::render), when `failures` is `None`.
    pub fn render_fields_placed_as<P>(
        &self,
        root: &mut Value,
        placed: Vec<Option<P>>,
        wrap: impl Fn(Value) -> P,
        failures: Option<&mut Vec<EvalError>>,
    ) -> Result<Vec<P>, EvalError> {
        let _budget = Render::begin();
        let TNode::Object(entries) = &self.root else {
            return render_fields(&self.root, &mut { root }, failures).map(|v| v.into_iter().map(wrap).collect());
        };
        let mut placed = placed.into_iter();
        let mut failures = failures;
        let mut root = root;
        // A plain loop: collecting `Result`s through the iterator adapters moved each
        // value several times (callgrind: about 300 instructions on a 4-field object).
        let mut out = Vec::with_capacity(entries.len());
        for (_, item) in entries.iter() {
            out.push(match placed.next().flatten() {
                Some(v) => v,
                None => wrap(render_one(item, &mut root, &mut failures)?),
            });
        }
        Ok(out)
    }

    /// Whether [`render_taking`](Self::render_taking) may move anything out of `$`: the
    /// template places a path whole that no other expression of it reads. When it does
    /// not, `render` on a shared tree costs the same.
    pub fn moves_values(&self) -> bool {
        let mut any = false;
        self.root.for_each_site(&mut |site, _| any |= site.movable);
        any
    }

    /// True when the configuration holds no expressions, so [`render`](Self::render)
    /// returns the same value for every message (with `\{{` escapes resolved).
    pub fn is_constant(&self) -> bool {
        matches!(self.root, TNode::Const(_))
    }
}

fn compile_value(v: &Value, pointer: &mut String) -> Result<TNode, CompileError> {
    match v {
        Value::String(s) => compile_string(s, pointer),
        Value::Array(items) => {
            let mut nodes = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let len = pointer.len();
                push_pointer_token(pointer, &i.to_string());
                nodes.push(compile_value(item, pointer)?);
                pointer.truncate(len);
            }
            if nodes.iter().all(|n| matches!(n, TNode::Const(_))) {
                return Ok(TNode::Const(Value::Array(nodes.into_iter().map(into_const).collect())));
            }
            Ok(TNode::Array(nodes.into_boxed_slice()))
        }
        Value::Object(map) => {
            let mut entries = Vec::with_capacity(map.len());
            for (key, item) in map {
                let len = pointer.len();
                push_pointer_token(pointer, key);
                entries.push((key.clone(), compile_value(item, pointer)?));
                pointer.truncate(len);
            }
            if entries.iter().all(|(_, n)| matches!(n, TNode::Const(_))) {
                return Ok(TNode::Const(Value::Object(
                    entries.into_iter().map(|(k, n)| (k, into_const(n))).collect(),
                )));
            }
            Ok(TNode::Object(entries.into_boxed_slice()))
        }
        other => Ok(TNode::Const(other.clone())),
    }
}

fn into_const(n: TNode) -> Value {
    match n {
        TNode::Const(v) => v,
        // Only called after checking every node is constant.
        _ => Value::Null,
    }
}

fn compile_string(s: &str, pointer: &str) -> Result<TNode, CompileError> {
    if !s.contains("{{") {
        return Ok(TNode::Const(Value::String(s.to_owned())));
    }
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut pos = 0;
    while let Some(found) = s[pos..].find("{{") {
        let open = pos + found;
        if s[..open].ends_with('\\') {
            text.push_str(&s[pos..open - 1]);
            text.push_str("{{");
            pos = open + 2;
            continue;
        }
        text.push_str(&s[pos..open]);
        let (node, end) = parse(s, open + 2, Mode::Template { open }).map_err(|e| e.into_compile_error(pointer, s))?;
        if !text.is_empty() {
            parts.push(Part::Text(std::mem::take(&mut text)));
        }
        parts.push(Part::Expr(Site {
            node,
            pointer: pointer.into(),
            source: s[open..end].into(),
            movable: false,
        }));
        pos = end;
    }
    text.push_str(&s[pos..]);
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    match parts.as_slice() {
        [] => Ok(TNode::Const(Value::String(String::new()))),
        [Part::Text(_)] => match parts.pop() {
            Some(Part::Text(t)) => Ok(TNode::Const(Value::String(t))),
            _ => Ok(TNode::Const(Value::String(String::new()))),
        },
        [Part::Expr(_)] => match parts.pop() {
            Some(Part::Expr(site)) => Ok(TNode::Whole(Box::new(site))),
            _ => Ok(TNode::Const(Value::Null)),
        },
        _ => {
            let hint = parts
                .iter()
                .map(|p| match p {
                    Part::Text(t) => t.len(),
                    Part::Expr(_) => 16,
                })
                .sum();
            Ok(TNode::Interp(parts.into_boxed_slice(), hint))
        }
    }
}

fn render_node(n: &TNode, root: &mut impl Root) -> Result<Value, EvalError> {
    match n {
        TNode::Const(v) => Ok(v.clone()),
        TNode::Whole(site) => site.value(root),
        TNode::Interp(parts, hint) => {
            let mut out = String::with_capacity(*hint);
            for part in parts {
                match part {
                    Part::Text(t) => out.push_str(t),
                    Part::Expr(site) => {
                        let before = out.len();
                        write_text(&mut out, &*site.eval(root.get())?);
                        charge(out.len() - before).map_err(|f| site.error(f))?;
                    }
                }
            }
            Ok(Value::String(out))
        }
        TNode::Array(items) => items
            .iter()
            .map(|item| render_node(item, root))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        TNode::Object(entries) => {
            let mut map = Map::with_capacity(entries.len());
            for (key, item) in entries {
                map.insert(key.clone(), render_node(item, root)?);
            }
            Ok(Value::Object(map))
        }
    }
}

fn render_lenient(n: &TNode, root: &mut impl Root, failures: &mut Vec<EvalError>) -> Value {
    match n {
        TNode::Const(v) => v.clone(),
        TNode::Whole(site) => site.value(root).unwrap_or_else(|e| {
            failures.push(e);
            Value::Null
        }),
        TNode::Interp(parts, hint) => {
            let mut out = String::with_capacity(*hint);
            for part in parts {
                match part {
                    Part::Text(t) => out.push_str(t),
                    Part::Expr(site) => match eval(&site.node, root.get()) {
                        Ok(v) => {
                            let before = out.len();
                            write_text(&mut out, &v);
                            if let Err(f) = charge(out.len() - before) {
                                // Over the budget: what was written goes, the failure stays.
                                out.truncate(before);
                                failures.push(site.error(f));
                            }
                        }
                        // A path that matched nothing is ajson's missing value, which
                        // interpolates as nothing; any other failure (arithmetic on
                        // it too) leaves its text.
                        Err(f) => {
                            let missing = f.kind == FaultKind::NoMatch && matches!(site.node, Node::Path(_));
                            failures.push(f.into_eval_error(&site.pointer, &site.source));
                            if !missing {
                                out.push_str(&site.source);
                            }
                        }
                    },
                }
            }
            Value::String(out)
        }
        TNode::Array(items) => Value::Array(items.iter().map(|item| render_lenient(item, root, failures)).collect()),
        TNode::Object(entries) => Value::Object(
            entries
                .iter()
                .map(|(key, item)| (key.clone(), render_lenient(item, root, failures)))
                .collect(),
        ),
    }
}

/// The values of an object template's fields (see [`Template::render_fields`]).
fn render_fields(
    n: &TNode,
    root: &mut impl Root,
    failures: Option<&mut Vec<EvalError>>,
) -> Result<Vec<Value>, EvalError> {
    let mut failures = failures;
    match n {
        TNode::Object(entries) => entries
            .iter()
            .map(|(_, item)| render_one(item, root, &mut failures))
            .collect(),
        other => render_one(other, root, &mut failures).map(|v| vec![v]),
    }
}

/// One node, leniently when there is a list for the failures.
fn render_one(n: &TNode, root: &mut impl Root, failures: &mut Option<&mut Vec<EvalError>>) -> Result<Value, EvalError> {
    match failures {
        Some(failures) => Ok(render_lenient(n, root, failures)),
        None => render_node(n, root),
    }
}

/// Marks the sites [`Template::render_taking`] may move out of `$`: a path placed
/// whole whose steps meet no path another site reads, in a template where every
/// expression reads named paths only (else any expression may read anything).
fn mark_movable(root: &mut TNode) {
    let movable: Vec<bool> = {
        let mut sites = Vec::new();
        let mut named = true;
        root.for_each_site(&mut |site, whole| {
            let mut paths = Vec::new();
            named &= site.node.read_paths(&mut paths);
            let alone = whole && matches!(site.node, Node::Path(_));
            sites.push((alone, paths));
        });
        sites
            .iter()
            .enumerate()
            .map(|(i, (alone, paths))| {
                named
                    && *alone
                    && paths.iter().all(|mine| {
                        sites
                            .iter()
                            .enumerate()
                            .all(|(j, (_, others))| j == i || others.iter().all(|other| !overlap(mine, other)))
                    })
            })
            .collect()
    };
    let mut flags = movable.into_iter();
    root.for_each_site_mut(&mut |site| site.movable = flags.next().unwrap_or(false));
}

impl TNode {
    /// Calls `f` with every expression, in document order, and whether it is a whole
    /// string's (`"{{...}}"`, whose value keeps its type).
    fn for_each_site<'a>(&'a self, f: &mut impl FnMut(&'a Site, bool)) {
        match self {
            TNode::Const(_) => {}
            TNode::Whole(site) => f(site, true),
            TNode::Interp(parts, _) => {
                for part in parts {
                    if let Part::Expr(site) = part {
                        f(site, false);
                    }
                }
            }
            TNode::Array(items) => items.iter().for_each(|n| n.for_each_site(f)),
            TNode::Object(entries) => entries.iter().for_each(|(_, n)| n.for_each_site(f)),
        }
    }

    /// [`for_each_site`](Self::for_each_site), to change the sites.
    fn for_each_site_mut(&mut self, f: &mut impl FnMut(&mut Site)) {
        match self {
            TNode::Const(_) => {}
            TNode::Whole(site) => f(site),
            TNode::Interp(parts, _) => {
                for part in parts.iter_mut() {
                    if let Part::Expr(site) = part {
                        f(site);
                    }
                }
            }
            TNode::Array(items) => items.iter_mut().for_each(|n| n.for_each_site_mut(f)),
            TNode::Object(entries) => entries.iter_mut().for_each(|(_, n)| n.for_each_site_mut(f)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compile(v: Value) -> Template {
        match Template::compile(&v) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn constant_subtrees_are_collapsed() {
        let t = compile(json!({"a": {"b": [1, "x", {"c": null}]}, "d": "{{$.d}}"}));
        let TNode::Object(entries) = &t.root else {
            panic!("expected an object node, got {:?}", t.root)
        };
        assert!(matches!(entries[0].1, TNode::Const(_)));
        assert!(matches!(entries[1].1, TNode::Whole(_)));
        assert!(!t.is_constant());
        assert!(compile(json!({"a": [1, {"b": "\\{{x}}"}]})).is_constant());
    }

    #[test]
    fn whole_and_interpolated_strings() {
        assert!(matches!(compile(json!("{{ $.a }}")).root, TNode::Whole(_)));
        assert!(matches!(compile(json!(" {{$.a}}")).root, TNode::Interp(..)));
        let TNode::Interp(parts, _) = compile(json!("{{$.a}} {{$.b}}")).root else {
            panic!("expected interpolation")
        };
        assert_eq!(parts.len(), 3);
    }

    #[test]
    fn sites_remember_pointer_and_source() {
        let t = compile(json!({"a/b": ["x {{ $.y }} z"]}));
        let TNode::Object(entries) = &t.root else { panic!() };
        let TNode::Array(items) = &entries[0].1 else { panic!() };
        let TNode::Interp(parts, _) = &items[0] else { panic!() };
        let Part::Expr(site) = &parts[1] else { panic!() };
        assert_eq!(&*site.pointer, "/a~1b/0");
        assert_eq!(&*site.source, "{{ $.y }}");
    }
}

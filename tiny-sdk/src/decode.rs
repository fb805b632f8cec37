//! How a message's JSON becomes a port's type: serde first, then Go's rules.
//!
//! # Why
//!
//! The Go SDK decodes an input into a fresh zero value of the port's type, with
//! `encoding/json`'s rules: a field the JSON lacks keeps its zero value, and a `null`
//! leaves a field as it is. So in a Go flow an edge expression that failed (and gave
//! `null`), a condition over a field the message lacks, or a settings key that a newer
//! version of a component added and an older TinyNode lacks, gives `false`, `0` or `""`,
//! and the message goes on. tiny must do the same with the same flow.
//!
//! # How
//!
//! A payload is decoded with serde as it is (the common case, and a type's own
//! `#[serde(default)]`s apply). Only when that fails is it decoded again by Go's rules
//! ([`Go`]): a `null` where the type takes none, and a field serde requires that the
//! JSON lacks, become the zero of the field's type: `false`, `0`, `""`, an empty list or
//! map, a struct of zeros (each of its fields by the same rules), `None`. A value of the
//! wrong type (a string where a number belongs) still does not decode, as in Go, and
//! the error names every field that is wrong.
//!
//! One exception, on purpose: a `null` float does not decode. JSON's `null` is what a
//! NaN or an infinity becomes (serde writes them so), and a broken sensor reading must
//! reach the author's error handling (the catch port, code `UNDECODABLE`) rather than
//! pass as `0`. A float the JSON lacks is `0`, as in Go.
//!
//! A type with no zero (an enum) missing or `null` does not decode either. Nor does what
//! serde buffers before it decodes it: a struct with a `flatten` field, untagged and
//! internally tagged enums keep serde's rules (a `null` or a missing field there fails).

use std::{collections::HashSet, fmt};

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, IntoDeserializer as _, Visitor};
use serde_json::Value;

use crate::error::{Error, Result, code};

/// Decodes `payload` for `port`: with serde, else by Go's rules (see the module docs).
/// An error names the port and every field that is wrong (code `UNDECODABLE`).
pub(crate) fn decode<T: DeserializeOwned>(port: &str, payload: &Value) -> Result<T> {
    match T::deserialize(payload) {
        Ok(v) => Ok(v),
        Err(_) => {
            let mut learned = Learned::new();
            as_go::<T>(payload, &mut learned).map_err(|first| report::<T>(port, payload, first, &mut learned))
        }
    }
}

/// The most missing fields one decode learns before it gives up: one more decode each.
const MAX_LEARNED: usize = 256;

/// A struct type, as a decode sees it: its name, and the address of its field list
/// (two types of the same name are told apart by it).
type Owner = (&'static str, usize);

/// The fields found missing so far, by the struct they belong to.
type Learned = HashSet<(Owner, &'static str)>;

fn owner(name: &'static str, fields: &'static [&'static str]) -> Owner {
    (name, fields.as_ptr() as usize)
}

/// Decodes `payload` by Go's rules. A field serde requires is found missing by
/// decoding (serde says which, of which struct); the decode then runs again with that
/// field of that struct taken as `null`, until nothing is missing.
fn as_go<T: DeserializeOwned>(payload: &Value, learned: &mut Learned) -> std::result::Result<T, Failure> {
    loop {
        match T::deserialize(Go::new(payload, learned)) {
            Ok(v) => return Ok(v),
            Err(Failure {
                kind:
                    Kind::Missing {
                        owner: Some(owner),
                        field,
                    },
                ..
            }) if learned.len() < MAX_LEARNED && learned.insert((owner, field)) => {}
            Err(e) => return Err(e),
        }
    }
}

/// The error for `first`, with up to 7 more wrong fields: each wrong field is taken out
/// of a copy (it then decodes as its zero) and the copy decoded again.
fn report<T: DeserializeOwned>(port: &str, payload: &Value, first: Failure, learned: &mut Learned) -> Error {
    const MORE: usize = 7;
    let mut copy = payload.clone();
    let mut at = first.path.clone();
    let mut more = Vec::new();
    while more.len() < MORE && take_out(&mut copy, &at) {
        match as_go::<T>(&copy, learned) {
            Err(e) if matches!(e.kind, Kind::Other(_)) && e.path != at => {
                more.push(e.to_string());
                at = e.path;
            }
            _ => break,
        }
    }
    let first = format!("port `{port}`: {first}");
    let text = if more.is_empty() {
        first
    } else {
        format!("{first}; {}", more.join("; "))
    };
    Error::permanent(text).with_code(code::UNDECODABLE)
}

/// Removes the object field `path` ends at from `value`; whether there was one.
fn take_out(value: &mut Value, path: &[Segment]) -> bool {
    // Innermost last when walking down: the path is kept innermost first.
    let Some((Segment::Key(last), parents)) = path.split_first() else {
        return false;
    };
    let mut at = value;
    for s in parents.iter().rev() {
        let next = match s {
            Segment::Key(key) => at.get_mut(key.as_str()),
            Segment::Index(i) => at.get_mut(*i),
        };
        let Some(next) = next else { return false };
        at = next;
    }
    at.as_object_mut().and_then(|o| o.shift_remove(last.as_str())).is_some()
}

/// Why a value did not decode by Go's rules, and where.
#[derive(Debug)]
struct Failure {
    kind: Kind,
    /// Innermost first: each level adds its own as the failure goes up.
    path: Vec<Segment>,
}

#[derive(Debug)]
enum Kind {
    /// Serde requires `field` and the JSON lacks it; `owner` is the struct, once the
    /// struct's level knows the field is its own.
    Missing { owner: Option<Owner>, field: &'static str },
    /// Anything else: a wrong type, a wrong length, an unknown variant.
    Other(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Key(String),
    Index(usize),
}

impl Failure {
    fn json(e: serde_json::Error) -> Self {
        Self {
            kind: Kind::Other(e.to_string()),
            path: Vec::new(),
        }
    }

    /// The failure one level up, at `segment`.
    fn at(mut self, segment: Segment) -> Self {
        self.path.push(segment);
        self
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Missing { field, .. } => write!(f, "missing field `{field}`"),
            Kind::Other(text) => f.write_str(text),
        }
    }
}

/// `field `a.b[0].c` does not decode: <why>`, as the serde path of the field.
impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            return write!(f, "message does not decode: {}", self.kind);
        }
        f.write_str("field `")?;
        for (i, s) in self.path.iter().rev().enumerate() {
            match s {
                Segment::Key(key) if i == 0 => f.write_str(key)?,
                Segment::Key(key) => write!(f, ".{key}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        write!(f, "` does not decode: {}", self.kind)
    }
}

impl std::error::Error for Failure {}

impl de::Error for Failure {
    fn custom<M: fmt::Display>(msg: M) -> Self {
        Self {
            kind: Kind::Other(msg.to_string()),
            path: Vec::new(),
        }
    }

    fn missing_field(field: &'static str) -> Self {
        Self {
            kind: Kind::Missing { owner: None, field },
            path: Vec::new(),
        }
    }
}

/// A JSON value decoded by Go's rules: `null` is the zero of whatever type reads it,
/// and the fields learned to be missing are read as `null` (see [`as_go`]).
struct Go<'a> {
    value: &'a Value,
    /// Fields serde requires that some JSON object lacks, by struct.
    learned: &'a Learned,
}

impl<'a> Go<'a> {
    fn new(value: &'a Value, learned: &'a Learned) -> Self {
        Self { value, learned }
    }
}

static NULL: Value = Value::Null;

/// A scalar read as serde_json reads it; `$null` is what a `null` reads as.
macro_rules! scalar {
    ($($method:ident => $null:expr;)*) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
            match self.value {
                Value::Null => $null(visitor),
                v => v.$method(visitor).map_err(Failure::json),
            }
        }
    )*};
}

impl<'a> Deserializer<'a> for Go<'a> {
    type Error = Failure;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Array(items) => visitor.visit_seq(Items::new(&self, items.iter(), items.len())),
            Value::Object(map) => visitor.visit_map(Fields::new(&self, map, None)),
            v => v.deserialize_any(visitor).map_err(Failure::json),
        }
    }

    scalar! {
        deserialize_bool => |v: V| v.visit_bool(false);
        deserialize_i8 => |v: V| v.visit_i8(0);
        deserialize_i16 => |v: V| v.visit_i16(0);
        deserialize_i32 => |v: V| v.visit_i32(0);
        deserialize_i64 => |v: V| v.visit_i64(0);
        deserialize_i128 => |v: V| v.visit_i128(0);
        deserialize_u8 => |v: V| v.visit_u8(0);
        deserialize_u16 => |v: V| v.visit_u16(0);
        deserialize_u32 => |v: V| v.visit_u32(0);
        deserialize_u64 => |v: V| v.visit_u64(0);
        deserialize_u128 => |v: V| v.visit_u128(0);
        deserialize_str => |v: V| v.visit_borrowed_str("");
        deserialize_string => |v: V| v.visit_borrowed_str("");
        deserialize_bytes => |v: V| v.visit_borrowed_bytes(&[]);
        deserialize_byte_buf => |v: V| v.visit_borrowed_bytes(&[]);
        deserialize_unit => |v: V| v.visit_unit();
    }

    /// A float: a missing one is `0`, but a `null` does not decode: JSON's `null` is what
    /// NaN and the infinities become, and a broken reading must not pass as `0`.
    fn deserialize_f32<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        match self.value {
            Value::Null if std::ptr::eq(self.value, &ABSENT) => visitor.visit_f32(0.0),
            v => v.deserialize_f32(visitor).map_err(Failure::json),
        }
    }

    fn deserialize_f64<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        match self.value {
            Value::Null if std::ptr::eq(self.value, &ABSENT) => visitor.visit_f64(0.0),
            v => v.deserialize_f64(visitor).map_err(Failure::json),
        }
    }

    fn deserialize_char<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        self.value.deserialize_char(visitor).map_err(Failure::json)
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> std::result::Result<V::Value, Failure> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> std::result::Result<V::Value, Failure> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        match self.value {
            Value::Null => visitor.visit_seq(Items::new(&self, std::iter::empty(), 0)),
            Value::Array(items) => visitor.visit_seq(Items::new(&self, items.iter(), items.len())),
            v => v.deserialize_seq(visitor).map_err(Failure::json),
        }
    }

    /// A fixed-size array or tuple: `null` is `len` zeros, as a Go array's zero value.
    fn deserialize_tuple<V: Visitor<'a>>(self, len: usize, visitor: V) -> std::result::Result<V::Value, Failure> {
        match self.value {
            // A missing tuple is one of missing items (a float among them is 0).
            Value::Null => {
                let item = if std::ptr::eq(self.value, &ABSENT) {
                    &ABSENT
                } else {
                    &NULL
                };
                visitor.visit_seq(Items::new(&self, std::iter::repeat_n(item, len), len))
            }
            Value::Array(items) => visitor.visit_seq(Items::new(&self, items.iter(), items.len())),
            v => v.deserialize_tuple(len, visitor).map_err(Failure::json),
        }
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> std::result::Result<V::Value, Failure> {
        self.deserialize_tuple(len, visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        match self.value {
            Value::Null => visitor.visit_map(Fields::new(&self, &EMPTY, None)),
            Value::Object(map) => visitor.visit_map(Fields::new(&self, map, None)),
            v => v.deserialize_map(visitor).map_err(Failure::json),
        }
    }

    /// A struct: `null` is an object with no fields, each then its zero. A missing field
    /// serde requires comes back as this struct's, so that the next decode reads it.
    fn deserialize_struct<V: Visitor<'a>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, Failure> {
        let map = match self.value {
            Value::Null => &*EMPTY,
            Value::Object(map) => map,
            v => return v.deserialize_struct(name, fields, visitor).map_err(Failure::json),
        };
        visitor
            .visit_map(Fields::new(&self, map, Some((name, fields))))
            .map_err(|mut e| {
                if let Kind::Missing {
                    owner: owner @ None, ..
                } = &mut e.kind
                    && e.path.is_empty()
                {
                    *owner = Some(self::owner(name, fields));
                }
                e
            })
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, Failure> {
        self.value
            .deserialize_enum(name, variants, visitor)
            .map_err(Failure::json)
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        self.value.deserialize_identifier(visitor).map_err(Failure::json)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        visitor.visit_unit()
    }
}

static EMPTY: std::sync::LazyLock<serde_json::Map<String, Value>> = std::sync::LazyLock::new(serde_json::Map::new);

/// The items of a JSON array (or the zeros of a `null` array), each read by Go's rules.
struct Items<'a, I> {
    learned: &'a Learned,
    items: I,
    index: usize,
    len: usize,
}

impl<'a, I: Iterator<Item = &'a Value>> Items<'a, I> {
    fn new(parent: &Go<'a>, items: I, len: usize) -> Self {
        Self {
            learned: parent.learned,
            items,
            index: 0,
            len,
        }
    }
}

impl<'a, I: Iterator<Item = &'a Value>> de::SeqAccess<'a> for Items<'a, I> {
    type Error = Failure;

    fn next_element_seed<S: DeserializeSeed<'a>>(&mut self, seed: S) -> std::result::Result<Option<S::Value>, Failure> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(Go::new(item, self.learned))
            .map(Some)
            .map_err(|e| e.at(Segment::Index(index)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.len - self.index)
    }
}

/// The fields of a JSON object, each read by Go's rules; for a struct, followed by the
/// fields learned to be missing from it, as `null`.
struct Fields<'a> {
    learned: &'a Learned,
    map: &'a serde_json::Map<String, Value>,
    entries: serde_json::map::Iter<'a>,
    /// For a struct: its name and fields, and the next of them to check once the
    /// entries are done.
    owner: Option<(&'static str, &'static [&'static str])>,
    next: usize,
    /// The entry (or missing field) whose value is to be read next.
    pending: Option<(&'a str, &'a Value)>,
}

impl<'a> Fields<'a> {
    fn new(
        parent: &Go<'a>,
        map: &'a serde_json::Map<String, Value>,
        owner: Option<(&'static str, &'static [&'static str])>,
    ) -> Self {
        Self {
            learned: parent.learned,
            map,
            entries: map.iter(),
            owner,
            next: 0,
            pending: None,
        }
    }

    /// The next field of the struct learned to be missing from the object.
    fn next_missing(&mut self) -> Option<&'static str> {
        let (owner, fields) = self.owner?;
        while let Some(field) = fields.get(self.next) {
            self.next += 1;
            if self.learned.contains(&(self::owner(owner, fields), *field)) && !self.map.contains_key(*field) {
                return Some(field);
            }
        }
        None
    }
}

/// What a missing field reads as: `null`, told apart from a `null` in the JSON by its
/// address, so that a type with no zero is said to be missing.
static ABSENT: Value = Value::Null;

impl<'a> de::MapAccess<'a> for Fields<'a> {
    type Error = Failure;

    fn next_key_seed<K: DeserializeSeed<'a>>(&mut self, seed: K) -> std::result::Result<Option<K::Value>, Failure> {
        let entry = match self.entries.next() {
            Some((key, value)) => (key.as_str(), value),
            None => match self.next_missing() {
                Some(field) => (field, &ABSENT),
                None => return Ok(None),
            },
        };
        self.pending = Some(entry);
        seed.deserialize(Key(entry.0)).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'a>>(&mut self, seed: S) -> std::result::Result<S::Value, Failure> {
        let (key, value) = self.pending.take().unwrap_or(("", &NULL));
        let owner = self.owner.map(|(name, fields)| self::owner(name, fields));
        seed.deserialize(Go::new(value, self.learned))
            .map_err(|e| match (owner, e.kind) {
                // A missing field whose type has no zero: said so, at the struct.
                (Some(owner), Kind::Other(_)) if std::ptr::eq(value, &ABSENT) && e.path.is_empty() => {
                    let field = self
                        .owner
                        .and_then(|(_, fields)| fields.iter().find(|f| **f == key).copied())
                        .unwrap_or("");
                    Failure {
                        kind: Kind::Missing {
                            owner: Some(owner),
                            field,
                        },
                        path: Vec::new(),
                    }
                }
                (_, kind) => Failure { kind, path: e.path }.at(Segment::Key(key.to_owned())),
            })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// An object's key, read as serde_json reads keys: a map keyed by numbers or booleans
/// (`{"1": 0.5}` as a `HashMap<u32, f64>`) parses them from the key's text.
struct Key<'a>(&'a str);

macro_rules! parsed_key {
    ($($method:ident => $visit:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
            match self.0.parse() {
                Ok(v) => visitor.$visit(v),
                Err(_) => visitor.visit_borrowed_str(self.0),
            }
        }
    )*};
}

impl<'a> Deserializer<'a> for Key<'a> {
    type Error = Failure;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        visitor.visit_borrowed_str(self.0)
    }

    parsed_key! {
        deserialize_bool => visit_bool,
        deserialize_i8 => visit_i8,
        deserialize_i16 => visit_i16,
        deserialize_i32 => visit_i32,
        deserialize_i64 => visit_i64,
        deserialize_i128 => visit_i128,
        deserialize_u8 => visit_u8,
        deserialize_u16 => visit_u16,
        deserialize_u32 => visit_u32,
        deserialize_u64 => visit_u64,
        deserialize_u128 => visit_u128,
        deserialize_f32 => visit_f32,
        deserialize_f64 => visit_f64,
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> std::result::Result<V::Value, Failure> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> std::result::Result<V::Value, Failure> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, Failure> {
        self.0.into_deserializer().deserialize_enum(name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        <W: Visitor<'a>>
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Condition {
        route: String,
        condition: bool,
    }

    #[derive(Debug, Default, PartialEq, Deserialize)]
    struct Input {
        context: Value,
        conditions: Vec<Condition>,
        count: u32,
        ratio: f64,
        note: Option<String>,
        pair: (i64, bool),
        inner: Condition,
        #[serde(default = "ten")]
        limit: u32,
    }

    fn ten() -> u32 {
        10
    }

    #[derive(Debug, PartialEq, Deserialize)]
    enum Method {
        Get,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct WithMethod {
        method: Method,
        n: u8,
    }

    #[test]
    fn null_and_missing_fields_take_their_zero_as_in_go() {
        let got: Input = decode(
            "input",
            &json!({"conditions": [{"route": "a", "condition": null}, {"route": null}], "count": null, "inner": null}),
        )
        .expect("decodes as Go does");
        assert_eq!(
            got,
            Input {
                conditions: vec![
                    Condition {
                        route: "a".into(),
                        condition: false
                    },
                    Condition::default()
                ],
                // A serde default still applies to a field the JSON lacks.
                limit: 10,
                ..Input::default()
            }
        );
        let null: Input = decode("input", &Value::Null).expect("a null message is the zero value");
        assert_eq!(
            null,
            Input {
                limit: 10,
                ..Input::default()
            }
        );
    }

    #[test]
    fn what_serde_decodes_is_decoded_by_serde() {
        let got: Input = decode(
            "input",
            &json!({"context": {"a": 1}, "conditions": [], "count": 3, "ratio": 0.5, "note": "n",
                    "pair": [-1, true], "inner": {"route": "r", "condition": true}, "limit": 2}),
        )
        .expect("decodes");
        assert_eq!((got.count, got.limit, got.pair), (3, 2, (-1, true)));
        assert_eq!(got.context, json!({"a": 1}));
    }

    #[test]
    fn a_wrong_type_does_not_decode_and_every_wrong_field_is_named() {
        let err = decode::<Input>(
            "input",
            &json!({"conditions": [{"route": "a", "condition": "yes"}], "count": -1, "note": null}),
        )
        .expect_err("a string is not a bool");
        assert_eq!(err.code(), Some(code::UNDECODABLE));
        let text = err.to_string();
        assert!(
            text.contains("port `input`: field `conditions[0].condition` does not decode: invalid type: string \"yes\", expected a boolean"),
            "{text}"
        );
        assert!(text.contains("field `count` does not decode"), "{text}");
        let root = decode::<Input>("input", &json!("text")).expect_err("not an object");
        assert!(
            root.to_string()
                .contains("port `input`: message does not decode: invalid type: string"),
            "{root}"
        );
    }

    #[test]
    fn a_null_float_does_not_decode_but_a_missing_one_is_zero() {
        let err = decode::<Input>("input", &json!({"ratio": null})).expect_err("NaN is not 0");
        assert_eq!(err.code(), Some(code::UNDECODABLE));
        assert!(
            err.to_string()
                .contains("field `ratio` does not decode: invalid type: null, expected f64"),
            "{err}"
        );
        let missing: Input = decode("input", &json!({"count": 2})).expect("a missing float is 0");
        assert_eq!((missing.count, missing.ratio), (2, 0.0));
    }

    #[test]
    fn maps_keyed_by_numbers_and_missing_float_tuples_decode() {
        #[derive(Debug, Deserialize)]
        struct Weights {
            weights: std::collections::BTreeMap<u32, f64>,
            name: String,
            point: (f64, f64),
        }
        let got: Weights = decode("input", &json!({"weights": {"1": 0.5}, "name": null})).expect("decodes");
        assert_eq!(
            (got.weights.get(&1), got.name.as_str(), got.point),
            (Some(&0.5), "", (0.0, 0.0))
        );
    }

    #[test]
    fn a_type_without_a_zero_still_needs_its_value() {
        let err = decode::<WithMethod>("input", &json!({"n": null})).expect_err("an enum has no zero");
        assert!(
            err.to_string()
                .contains("port `input`: message does not decode: missing field `method`"),
            "{err}"
        );
        let nested = decode::<Vec<WithMethod>>("input", &json!([{"method": "Get"}, {"method": null}]))
            .expect_err("nor a null one");
        assert!(
            nested
                .to_string()
                .contains("field `[1].method` does not decode: invalid type: null"),
            "{nested}"
        );
        let ok: WithMethod = decode("input", &json!({"method": "Get"})).expect("n is zero");
        assert_eq!(
            ok,
            WithMethod {
                method: Method::Get,
                n: 0
            }
        );
    }
}

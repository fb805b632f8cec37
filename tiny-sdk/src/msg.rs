//! The engine's currency: [`Msg`], a message as the typed value its port declared,
//! with its JSON made lazily, at most once, and only when something needs it.
//!
//! # Why
//!
//! A message used to travel as a `serde_json::Value` tree: every hop encoded the
//! sender's typed output into a tree and decoded the receiver's input out of it, even
//! when nothing read it as JSON. Now a message is one `Arc` holding one of:
//!
//! - a **typed** value `T` (what [`Output::emit`](crate::Output::emit) sends), with a
//!   `OnceLock` for its JSON;
//! - a **JSON** value (a signal, a test, an edge template's output, a reply), or the
//!   object an edge template made, kept as its fields' values beside the edge's names
//!   (`rendered`: the map is made only if something asks for the tree);
//! - **JSON bytes** from the wire, parsed only when something needs the tree.
//!
//! # Where JSON is made
//!
//! [`Msg::json`] builds the tree on first use and keeps it: an edge template that reads
//! the message, an observer (TinyTracker, the harness), a catch port's
//! [`ErrorMessage`](crate::ErrorMessage), and a receiver of another type. The wire
//! never needs the tree: [`Msg::to_json_bytes`] writes the typed value straight to
//! bytes, and a message that arrived as bytes is decoded straight into the receiving
//! port's type.
//!
//! # The fast path, and when it is sound
//!
//! A receiver gets what it would have decoded from the sender's JSON. When the
//! receiving port's type is the sender's type `T` *and* `T` is [`RoundTrip`]-exact
//! (`decode(encode(x)) == x` for every `x`), the value itself is handed over: moved out
//! of the `Arc` when the receiver holds the only reference, cloned when the message is
//! shared (a fan-out, an edge that may retry, an observer) and `T: Clone`. A handler
//! that borrows its input (`msg: &T`) is lent the shared value itself, with no copy.
//! Otherwise the receiver decodes from the (shared, lazily built) JSON, exactly as
//! before (a borrowing one borrows what was decoded).
//!
//! `#[derive(Schema)]` implements [`RoundTrip`] and reports a type exact only when none
//! of its serde attributes can make the trip lossy (`skip*`, `*_with`, `flatten`,
//! `untagged`, `from`/`into`, different serialise/deserialise names, ...) and every
//! field's type is exact in turn. Floats are not exact (NaN and infinities become
//! `null`), nor is a type the derive cannot see into. The derive assumes serde's
//! derives: a type with hand-written `Serialize`/`Deserialize` and `#[derive(Schema)]`
//! says `#[tiny(lossy)]`.
//!
//! # Without a handler
//!
//! A `Msg` needs nothing from a handler call: it is built from a value
//! ([`Msg::new`]), cloned cheaply, and sent by whoever holds a way out of a node (a
//! future owned emitter handle emits it as a handler's `emit` does).

mod body;
mod fields;
mod rendered;
mod slot;

use std::{
    any::{Any, TypeId},
    borrow::Cow,
    fmt,
    sync::{Arc, OnceLock},
};

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use body::Body;
pub(crate) use slot::{Placed, Placing, Slot};

use crate::{
    error::{Error, Result},
    portable::Message,
};

/// A message on its way through the flow: cheap to clone, JSON only on demand.
///
/// # As a port's type
///
/// A port of `Msg` (`Input<Msg>`, `Output<Msg>`) carries messages as they came, of any
/// shape, without decoding them: what a relay, a router or a recorder wants. The
/// receiver gets the very message the sender emitted (typed, JSON, or the wire's
/// bytes, not parsed), reads it as JSON only if it asks ([`Msg::json`],
/// [`Msg::decode`]), and can send it on, or answer with it, as it is. Its schema is
/// that of any JSON value, as for a port of `serde_json::Value`.
///
/// ```
/// use tiny_sdk::{prelude::*, Msg};
///
/// /// Answers with whatever it is sent, as it came.
/// #[derive(Debug, Default, Component)]
/// #[component(name = "echo")]
/// struct Echo {
///     input: Input<Msg>,
/// }
///
/// impl Echo {
///     async fn on_input(&self, _: &Ctx<Self>, msg: Msg) -> Reply {
///         Reply::msg(msg)
///     }
/// }
/// ```
#[derive(Clone)]
pub struct Msg(Arc<dyn Body>);

/// A typed value. `value` is `None` only after it was moved out, when no other
/// reference to the message is left.
struct Typed<T> {
    value: Option<T>,
    json: OnceLock<std::result::Result<Value, Error>>,
}

struct Json(Value);

struct Raw {
    bytes: Vec<u8>,
    json: OnceLock<std::result::Result<Value, Error>>,
}

fn not_serialised(e: serde_json::Error) -> Error {
    Error::permanent(format!("message does not serialise: {e}"))
}

fn moved() -> Error {
    Error::permanent("message was already handed over")
}

fn once(
    cell: &OnceLock<std::result::Result<Value, Error>>,
    make: impl FnOnce() -> std::result::Result<Value, Error>,
) -> Result<&Value> {
    cell.get_or_init(make).as_ref().map_err(Clone::clone)
}

impl<T: Serialize + Send + Sync + 'static> Body for Typed<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn json(&self) -> Result<&Value> {
        once(&self.json, || {
            let value = self.value.as_ref().ok_or_else(moved)?;
            serde_json::to_value(value).map_err(not_serialised)
        })
    }
    fn tree(&self, keys: Option<&[Box<str>]>) -> Result<(Cow<'_, Value>, bool)> {
        // A tree made already (an observer asked) serves as it is.
        if let Some(tree) = self.json.get() {
            return Ok((Cow::Borrowed(tree.as_ref().map_err(Clone::clone)?), false));
        }
        let value = self.value.as_ref().ok_or_else(moved)?;
        let (tree, whole) = match keys {
            Some(keys) => fields::project(value, keys),
            None => serde_json::to_value(value).map(|tree| (tree, false)),
        }
        .map_err(not_serialised)?;
        Ok((Cow::Owned(tree), whole))
    }
    fn tree_placing(
        &self,
        keys: &[Box<str>],
        placed: &Placing,
        spare: &mut Option<serde_json::Map<String, Value>>,
    ) -> Option<Result<Placed>> {
        if self.json.get().is_some() {
            return None;
        }
        let made = self.value.as_ref().ok_or_else(moved).and_then(|value| {
            fields::project_placing(value, keys, placed, spare.take())
                .map(|(tree, _, slots)| (tree, slots))
                .map_err(not_serialised)
        });
        Some(made)
    }
    fn to_bytes(&self) -> Result<Vec<u8>> {
        let value = self.value.as_ref().ok_or_else(moved)?;
        serde_json::to_vec(value).map_err(|e| Error::permanent(format!("message does not encode as JSON: {e}")))
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
}

impl Body for Json {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn json(&self) -> Result<&Value> {
        Ok(&self.0)
    }
    fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(&self.0).map_err(|e| Error::permanent(format!("message does not encode as JSON: {e}")))
    }
    fn type_name(&self) -> &'static str {
        "serde_json::Value"
    }
}

impl Body for Raw {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
    fn json(&self) -> Result<&Value> {
        once(&self.json, || parse_bytes(&self.bytes))
    }
    fn to_bytes(&self) -> Result<Vec<u8>> {
        Ok(self.bytes.clone())
    }
    fn raw(&self) -> Option<&[u8]> {
        Some(&self.bytes)
    }
    fn type_name(&self) -> &'static str {
        "JSON bytes"
    }
}

/// No bytes at all is `null` (what the Go SDK sends for an empty payload).
fn parse_bytes(bytes: &[u8]) -> std::result::Result<Value, Error> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes).map_err(|e| Error::permanent(format!("payload is not JSON: {e}")))
}

impl Msg {
    /// A message carrying `value` as it is; its JSON is made only if something asks.
    pub fn new<T: Message>(value: T) -> Self {
        // An `Output<Msg>` sends the message it is given, not one wrapped in another.
        let mut value = Some(value);
        if let Some(msg) = (&mut value as &mut dyn Any)
            .downcast_mut::<Option<Msg>>()
            .and_then(Option::take)
        {
            return msg;
        }
        Msg(Arc::new(Typed {
            value,
            json: OnceLock::new(),
        }))
    }

    /// A message that is JSON already.
    pub fn from_json(value: Value) -> Self {
        Msg(Arc::new(Json(value)))
    }

    /// The JSON object with the fields `names` (`Value::String`s) holding `values`, in
    /// that order, made into a map only if something asks for its tree (see
    /// [`rendered`]).
    pub(crate) fn from_fields(names: Arc<[Value]>, values: Vec<Slot>) -> Self {
        Msg(Arc::new(rendered::Rendered::new(names, values)))
    }

    /// A message from its JSON bytes (from the wire), parsed only when needed; no
    /// bytes at all is `null`.
    pub fn from_json_bytes(bytes: Vec<u8>) -> Self {
        Msg(Arc::new(Raw {
            bytes,
            json: OnceLock::new(),
        }))
    }

    /// The message as a JSON tree, made on first use and kept.
    pub fn json(&self) -> Result<&Value> {
        self.0.json()
    }

    /// The message as a JSON tree for an edge expression, holding at least the
    /// top-level fields `keys` (an expression that reads only those) or all of them.
    ///
    /// A typed message whose tree was not made yet serialises those fields into a tree
    /// of the caller's own, which the expression may move values out of (the typed
    /// value stays; a retry or another edge serialises again). Any other message lends
    /// the tree it keeps.
    ///
    /// The flag says the typed value was serialised here and `keys` named all of its
    /// fields: its tree was made whole, as `None` would have, only dearer.
    pub(crate) fn tree(&self, keys: Option<&[Box<str>]>) -> Result<(Cow<'_, Value>, bool)> {
        self.0.tree(keys)
    }

    /// For an edge template that places some of the message's fields whole in the object
    /// it makes: the tree of the fields `keys` but those in `placed`, and beside it the
    /// value of each of those, at the index `placed` gives (`None` where the value did
    /// not come as a struct's field). Made from a typed value whose tree is not made
    /// yet; `None` otherwise.
    ///
    /// `spare`, the map of a tree made so before (its values no longer needed), is taken
    /// to make the tree in when it is made: written over in place, the tree is the same
    /// as in a map of its own.
    pub(crate) fn tree_placing(
        &self,
        keys: &[Box<str>],
        placed: &Placing,
        spare: &mut Option<serde_json::Map<String, Value>>,
    ) -> Option<Result<Placed>> {
        self.0.tree_placing(keys, placed, spare)
    }

    /// The message as JSON bytes, written straight from the typed value (no tree).
    pub fn to_json_bytes(&self) -> Result<Vec<u8>> {
        self.0.to_bytes()
    }

    /// The typed value, when the message carries a `T` (for `T = Msg`, the message
    /// itself).
    pub fn get<T: 'static>(&self) -> Option<&T> {
        if is_msg::<T>() {
            return (self as &dyn Any).downcast_ref::<T>();
        }
        self.0.as_any().downcast_ref::<Typed<T>>()?.value.as_ref()
    }

    /// `true` when the message carries a typed `T` (not JSON).
    pub fn is<T: 'static>(&self) -> bool {
        self.get::<T>().is_some()
    }

    /// The Rust type it carries (`serde_json::Value` or `JSON bytes` when untyped).
    pub fn type_name(&self) -> &'static str {
        self.0.type_name()
    }

    /// Decodes the message into `T` the way JSON would: from the typed value's JSON,
    /// the JSON tree, or straight from the bytes it arrived as. `port` names where, in
    /// the error.
    pub fn decode<T: DeserializeOwned + 'static>(&self, port: &str) -> Result<T> {
        if is_msg::<T>()
            && let Some(m) = cast::<T, Msg>(self.clone())
        {
            return Ok(m);
        }
        if TypeId::of::<T>() == TypeId::of::<Value>()
            && let Some(Json(tree)) = self.0.as_any().downcast_ref::<Json>()
            && let Some(value) = cast::<T, Value>(tree.clone())
        {
            // What `Value::deserialize` would make of it, without walking it twice.
            return Ok(value);
        }
        if let Some(bytes) = self.0.raw()
            && !bytes.is_empty()
            && let Ok(v) = serde_json::from_slice(bytes)
        {
            return Ok(v);
        }
        if let Some(object) = self.0.as_any().downcast_ref::<rendered::Rendered>()
            && let Ok(v) = T::deserialize(object.deserializer())
        {
            return Ok(v);
        }
        // The tree path also words the errors (with the failing field's path).
        crate::decode::decode(port, self.json()?)
    }

    /// The value for a receiver of type `T`, where `T` is known to survive a JSON round
    /// trip unchanged (see the module docs): moved out when this is the only reference,
    /// else decoded.
    pub(crate) fn take_exact<T: DeserializeOwned + 'static>(self, port: &str) -> Result<T> {
        self.take_with(port, None)
    }

    /// [`take_exact`](Self::take_exact) for a `T: Clone`: a shared message is cloned,
    /// not decoded.
    pub(crate) fn take_exact_or_clone<T: DeserializeOwned + Clone + 'static>(self, port: &str) -> Result<T> {
        self.take_with(port, Some(T::clone))
    }

    fn take_with<T: DeserializeOwned + 'static>(mut self, port: &str, clone: Option<fn(&T) -> T>) -> Result<T> {
        // A port of `Msg` takes the message as it came.
        if is_msg::<T>() {
            return cast::<T, Msg>(self).ok_or_else(moved);
        }
        if let Some(body) = Arc::get_mut(&mut self.0) {
            let body = body.as_any_mut();
            if let Some(typed) = body.downcast_mut::<Typed<T>>()
                && let Some(value) = typed.value.take()
            {
                return Ok(value);
            }
            // A `Value` receiver of a JSON message: the tree itself.
            if TypeId::of::<T>() == TypeId::of::<Value>() {
                let tree = if let Some(Json(tree)) = body.downcast_mut::<Json>() {
                    Some(std::mem::take(tree))
                } else {
                    body.downcast_mut::<rendered::Rendered>().map(rendered::Rendered::take)
                };
                if let Some(value) = tree.and_then(cast::<T, Value>) {
                    return Ok(value);
                }
            }
        } else if let (Some(clone), Some(value)) = (clone, self.get::<T>()) {
            return Ok(clone(value));
        }
        self.decode(port)
    }
}

/// `v` as a `T`, when `T` is `V` (no allocation: the `Option` is downcast in place).
fn cast<T: 'static, V: 'static>(v: V) -> Option<T> {
    let mut slot = Some(v);
    (&mut slot as &mut dyn Any)
        .downcast_mut::<Option<T>>()
        .and_then(Option::take)
}

/// `true` when `T` is `Msg`: a port carrying messages as they came.
fn is_msg<T: 'static>() -> bool {
    TypeId::of::<T>() == TypeId::of::<Msg>()
}

/// As JSON: a `Msg` port's messages are any JSON value (see [`Msg`]).
impl Serialize for Msg {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.json().map_err(serde::ser::Error::custom)?.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Msg {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Value::deserialize(d).map(Msg::from_json)
    }
}

impl schemars::JsonSchema for Msg {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        Value::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        Value::schema_id()
    }
    fn inline_schema() -> bool {
        Value::inline_schema()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Value::json_schema(generator)
    }
}

/// Not exact: a `Msg` holding a typed value comes back from JSON as a JSON one
/// ([`Msg::get`] tells them apart), so a message type with a `Msg` inside travels
/// through JSON. A port of `Msg` itself never asks: it takes the message as it came.
impl RoundTrip for Msg {
    fn round_trip_exact(_: u32) -> bool {
        false
    }
    fn may_be_null() -> bool {
        true
    }
}

impl From<Value> for Msg {
    fn from(value: Value) -> Self {
        Msg::from_json(value)
    }
}

impl fmt::Debug for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A typed message is not encoded for this.
        if let Some(Json(v)) = self.0.as_any().downcast_ref::<Json>() {
            return write!(f, "Msg({v})");
        }
        if let Some(object) = self.0.as_any().downcast_ref::<rendered::Rendered>()
            && let Ok(text) = serde_json::to_string(&object.deserializer())
        {
            return write!(f, "Msg({text})");
        }
        match self.0.raw() {
            Some(bytes) => write!(f, "Msg({})", String::from_utf8_lossy(bytes)),
            None => write!(f, "Msg(<{}>)", self.0.type_name()),
        }
    }
}

/// Whether every value of a type survives `decode(encode(x))` through JSON unchanged,
/// so that the engine may hand the value itself to a receiver of the same type.
///
/// `#[derive(Schema)]` implements it; see the [module docs](self) for the rule.
pub trait RoundTrip {
    /// `true` when the round trip is exact. `depth` guards recursive types (which
    /// report `false` past a limit, the safe answer).
    fn round_trip_exact(depth: u32) -> bool;
    /// `true` when some value serialises as `null` (then `Option<Self>` is not exact:
    /// `Some(null)` comes back as `None`).
    fn may_be_null() -> bool {
        false
    }
}

/// How deep [`RoundTrip::round_trip_exact`] looks into nested types.
pub const ROUND_TRIP_DEPTH: u32 = 32;

macro_rules! exact {
    ($($t:ty),*) => {$(
        impl RoundTrip for $t {
            fn round_trip_exact(_: u32) -> bool { true }
        }
    )*};
}
exact!(bool, char, u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, String);

impl RoundTrip for () {
    fn round_trip_exact(_: u32) -> bool {
        true
    }
    fn may_be_null() -> bool {
        true
    }
}

impl RoundTrip for Value {
    fn round_trip_exact(_: u32) -> bool {
        true
    }
    fn may_be_null() -> bool {
        true
    }
}

impl<T: RoundTrip> RoundTrip for Option<T> {
    fn round_trip_exact(depth: u32) -> bool {
        depth < ROUND_TRIP_DEPTH && !T::may_be_null() && T::round_trip_exact(depth + 1)
    }
    fn may_be_null() -> bool {
        true
    }
}

impl<T: RoundTrip> RoundTrip for Box<T> {
    fn round_trip_exact(depth: u32) -> bool {
        depth < ROUND_TRIP_DEPTH && T::round_trip_exact(depth + 1)
    }
    fn may_be_null() -> bool {
        T::may_be_null()
    }
}

impl<T: RoundTrip> RoundTrip for Vec<T> {
    fn round_trip_exact(depth: u32) -> bool {
        depth < ROUND_TRIP_DEPTH && T::round_trip_exact(depth + 1)
    }
}

impl<V: RoundTrip> RoundTrip for std::collections::BTreeMap<String, V> {
    fn round_trip_exact(depth: u32) -> bool {
        depth < ROUND_TRIP_DEPTH && V::round_trip_exact(depth + 1)
    }
}

impl<V: RoundTrip, S> RoundTrip for std::collections::HashMap<String, V, S> {
    fn round_trip_exact(depth: u32) -> bool {
        // Key order is not part of a map's value.
        depth < ROUND_TRIP_DEPTH && V::round_trip_exact(depth + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_made_once_and_the_value_moves_when_unshared() {
        let m = Msg::new(vec!["a".to_owned()]);
        let first: *const Value = m.json().expect("json");
        let second: *const Value = m.json().expect("json");
        assert_eq!(first, second, "the tree is built once");
        let v: Vec<String> = m.take_exact("p").expect("moves");
        assert_eq!(v, ["a"]);
    }

    #[test]
    fn shared_messages_are_cloned_or_decoded() {
        let m = Msg::new(7u64);
        let other = m.clone();
        assert_eq!(m.take_exact_or_clone::<u64>("p").ok(), Some(7));
        assert_eq!(other.clone().take_exact::<u64>("p").ok(), Some(7));
        assert_eq!(other.take_exact::<u64>("p").ok(), Some(7));
    }

    #[test]
    fn bytes_decode_straight_into_the_type() {
        let m = Msg::from_json_bytes(br#"{"a":1}"#.to_vec());
        let v: std::collections::BTreeMap<String, u8> = m.decode("p").expect("decodes");
        assert_eq!(v.get("a"), Some(&1));
        let err = m.decode::<u8>("p").err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("port `p`"), "{err}");
        assert_eq!(Msg::from_json_bytes(Vec::new()).json().ok(), Some(&Value::Null));
    }
}

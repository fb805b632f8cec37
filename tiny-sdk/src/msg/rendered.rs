//! The object an edge template made, kept as its fields' names and values.
//!
//! A template like `{"status": "{{$.code}}", "body": "{{$.text}}"}` makes an object on
//! every hop. As a `serde_json::Value` that object is a map whose every key is copied
//! and hashed (SipHash), then walked once by the receiver's `Deserialize` and dropped.
//! Kept as the edge's shared names beside the rendered values, the receiver decodes
//! straight from them; the map is made only when something asks for JSON (an observer,
//! a port of `Value`, a relay's wire).
//!
//! Decoding is the JSON object's, exactly: the map is offered as serde_json offers an
//! object (same `visit_map`, same size hint, same "fewer elements in map" check), each
//! value is serde_json's own `&Value`, and every other request a `Deserialize` may make
//! (a string, an enum, a newtype) goes to the object itself. A field name is offered as
//! a JSON string, which a map with number keys does not take; whatever fails here is
//! decoded again from the object, where serde_json words the error.
//!
//! A struct that a typed message's field holds and the template places whole
//! (`"user": "{{$.user}}"`) is kept the same way, as a [`Struct`]: its own field names
//! (the `&'static str`s its `Serialize` writes) beside its values, each name once, so
//! that no map is built, no key copied and none hashed with SipHash only for the
//! receiver to walk the map and drop it.

use std::sync::{Arc, OnceLock};

use serde::{
    Deserializer, Serialize,
    de::{self, DeserializeSeed, MapAccess, Visitor},
    ser::SerializeMap as _,
};
use serde_json::{Map, Value};

use super::{
    Body,
    slot::{Slot, Struct},
};
use crate::error::{Error, Result};

/// An edge template's object: names shared by every message of the edge, values of
/// this one.
pub(super) struct Rendered {
    /// `Value::String`s, so that a name is offered to a `Deserialize` as JSON offers it.
    names: Arc<[Value]>,
    values: Vec<Slot>,
    json: OnceLock<Value>,
}

// A slot is written and read with this file's `Fields`, so those impls stay here (the
// types sit below, in `slot`, for `body` and `fields` to name).
impl Slot {
    /// The JSON it stands for, copied.
    fn to_value(&self) -> Value {
        match self {
            Slot::Json(v) => v.clone(),
            Slot::Struct(s) => s.fields().object(),
        }
    }
}

impl Struct {
    fn fields(&self) -> Fields<'_, &'static str> {
        Fields {
            names: &self.names,
            values: &self.values,
        }
    }
}

impl Serialize for Slot {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Slot::Json(v) => v.serialize(s),
            Slot::Struct(st) => st.fields().serialize(s),
        }
    }
}

impl Rendered {
    /// `values` in the order of `names`.
    pub(super) fn new(names: Arc<[Value]>, values: Vec<Slot>) -> Self {
        Rendered {
            names,
            values,
            json: OnceLock::new(),
        }
    }

    /// The object, its values moved into it (for the message's last holder).
    pub(super) fn take(&mut self) -> Value {
        if let Some(tree) = self.json.take() {
            return tree;
        }
        let map: Map<String, Value> = self
            .names
            .iter()
            .zip(self.values.drain(..))
            .map(|(name, value)| (name.as_str().unwrap_or_default().to_owned(), value.into_value()))
            .collect();
        Value::Object(map)
    }

    /// The fields, for a `Deserialize`.
    pub(super) fn deserializer(&self) -> Fields<'_, Value> {
        Fields {
            names: &self.names,
            values: &self.values,
        }
    }
}

impl Body for Rendered {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
    fn json(&self) -> Result<&Value> {
        Ok(self.json.get_or_init(|| self.deserializer().object()))
    }
    fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(&self.deserializer())
            .map_err(|e| Error::permanent(format!("message does not encode as JSON: {e}")))
    }
    fn type_name(&self) -> &'static str {
        "serde_json::Value"
    }
}

/// The fields of a [`Rendered`] object or of a [`Struct`], borrowed: written as a JSON
/// object, and read as one.
pub(super) struct Fields<'a, N> {
    names: &'a [N],
    values: &'a [Slot],
}

impl<N> Clone for Fields<'_, N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<N> Copy for Fields<'_, N> {}

/// A field's name: the edge's (`Value::String`) or a struct's own (`&'static str`).
pub(super) trait Name: Serialize {
    fn text(&self) -> &str;
    /// Offers the name to `seed` as serde_json offers a `Value::String` by reference.
    fn offer<'de, K: DeserializeSeed<'de>>(&'de self, seed: K) -> std::result::Result<K::Value, serde_json::Error>;
}

impl Name for Value {
    fn text(&self) -> &str {
        self.as_str().unwrap_or_default()
    }
    fn offer<'de, K: DeserializeSeed<'de>>(&'de self, seed: K) -> std::result::Result<K::Value, serde_json::Error> {
        seed.deserialize(self)
    }
}

impl Name for &'static str {
    fn text(&self) -> &str {
        self
    }
    fn offer<'de, K: DeserializeSeed<'de>>(&'de self, seed: K) -> std::result::Result<K::Value, serde_json::Error> {
        seed.deserialize(StaticName(self))
    }
}

impl<N: Name> Fields<'_, N> {
    /// The object itself.
    fn object(self) -> Value {
        let map: Map<String, Value> = self
            .names
            .iter()
            .zip(self.values)
            .map(|(name, value)| (name.text().to_owned(), value.to_value()))
            .collect();
        Value::Object(map)
    }
}

impl<N: Name> Serialize for Fields<'_, N> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.names.len()))?;
        for (name, value) in self.names.iter().zip(self.values) {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// A struct's field name offered as serde_json offers a `&Value::String`: the requests
/// a field's name meets (an identifier, a string) answered with the name itself, any
/// other by such a `Value`. (What a receiver that borrows could tell apart, a name
/// visited as borrowed or owned, no decoded message type can: they own their data.)
struct StaticName(&'static str);

/// The requests of a `Deserializer` that a field's name and an object answer as a
/// serde_json `Value` does, the one `self.$value()` makes: those written after `;`, and
/// every request neither answers itself.
macro_rules! as_value {
    (@each $value:ident; $($method:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> std::result::Result<V::Value, Self::Error> {
            self.$value().$method($($arg,)* visitor)
        })*
    };
    ($value:ident; $($also:ident($($also_arg:ident: $also_ty:ty),*);)*) => {
        as_value! { @each $value;
            $($also($($also_arg: $also_ty),*);)*
            deserialize_enum(name: &'static str, variants: &'static [&'static str]);
            deserialize_newtype_struct(name: &'static str);
            deserialize_unit_struct(name: &'static str);
            deserialize_tuple_struct(name: &'static str, len: usize);
            deserialize_bool();
            deserialize_i8();
            deserialize_i16();
            deserialize_i32();
            deserialize_i64();
            deserialize_i128();
            deserialize_u8();
            deserialize_u16();
            deserialize_u32();
            deserialize_u64();
            deserialize_u128();
            deserialize_f32();
            deserialize_f64();
            deserialize_char();
            deserialize_bytes();
            deserialize_byte_buf();
            deserialize_unit();
            deserialize_seq();
            deserialize_tuple(len: usize);
        }
    };
}

impl StaticName {
    /// The name as serde_json holds it.
    fn into_json(self) -> Value {
        Value::String(self.0.to_owned())
    }
}

impl<'de> Deserializer<'de> for StaticName {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> std::result::Result<V::Value, Self::Error> {
        visitor.visit_borrowed_str(self.0)
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> std::result::Result<V::Value, Self::Error> {
        visitor.visit_borrowed_str(self.0)
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> std::result::Result<V::Value, Self::Error> {
        visitor.visit_borrowed_str(self.0)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> std::result::Result<V::Value, Self::Error> {
        visitor.visit_borrowed_str(self.0)
    }

    as_value! { into_json;
        deserialize_option();
        deserialize_ignored_any();
        deserialize_map();
        deserialize_struct(name: &'static str, fields: &'static [&'static str]);
    }
}

impl<'de, N: Name> Deserializer<'de> for Fields<'de, N> {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> std::result::Result<V::Value, Self::Error> {
        // serde_json's `visit_object_ref`: a visitor that stops early is an error.
        let len = self.names.len();
        let mut access = Access {
            names: self.names.iter(),
            values: self.values.iter(),
            value: None,
        };
        let out = visitor.visit_map(&mut access)?;
        if access.names.len() == 0 {
            Ok(out)
        } else {
            Err(de::Error::invalid_length(len, &"fewer elements in map"))
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> std::result::Result<V::Value, Self::Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> std::result::Result<V::Value, Self::Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> std::result::Result<V::Value, Self::Error> {
        visitor.visit_some(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> std::result::Result<V::Value, Self::Error> {
        visitor.visit_unit()
    }

    // What serde_json does for an object, for the requests that are not a map: asked of
    // the object itself.
    as_value! { object;
        deserialize_str();
        deserialize_string();
        deserialize_identifier();
    }
}

/// The object's entries, as serde_json's `MapRefDeserializer` gives them.
struct Access<'de, N> {
    names: std::slice::Iter<'de, N>,
    values: std::slice::Iter<'de, Slot>,
    value: Option<&'de Slot>,
}

impl<'de, N: Name> MapAccess<'de> for Access<'de, N> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> std::result::Result<Option<K::Value>, Self::Error> {
        match (self.names.next(), self.values.next()) {
            (Some(name), Some(value)) => {
                self.value = Some(value);
                name.offer(seed).map(Some)
            }
            _ => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> std::result::Result<V::Value, Self::Error> {
        match self.value.take() {
            Some(Slot::Json(value)) => seed.deserialize(value),
            Some(Slot::Struct(s)) => seed.deserialize(s.fields()),
            None => Err(de::Error::custom("value is missing")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        match self.names.size_hint() {
            (lower, Some(upper)) if lower == upper => Some(upper),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        collections::{BTreeMap, HashMap},
        fmt::Debug,
    };

    use serde::{Deserialize, de::DeserializeOwned};
    use serde_json::json;

    use super::*;
    use crate::msg::Msg;

    #[derive(Debug, PartialEq, Deserialize)]
    struct S {
        a: i64,
        b: String,
        #[serde(default)]
        c: Option<Vec<u8>>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        a: i64,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Flat {
        a: i64,
        #[serde(flatten)]
        rest: BTreeMap<String, Value>,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Wrapper(S);

    #[derive(Debug, PartialEq, Deserialize)]
    enum External {
        A(i64),
        B { x: i64 },
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "type")]
    enum Tagged {
        One { a: i64 },
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(tag = "t", content = "c")]
    enum Adjacent {
        A(i64),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(untagged)]
    enum Untagged {
        S(S),
        Map(BTreeMap<String, Value>),
    }

    fn message(object: &Value) -> Msg {
        let Value::Object(map) = object else {
            panic!("not an object: {object}")
        };
        let names: Arc<[Value]> = map.keys().map(|k| Value::String(k.clone())).collect();
        Msg::from_fields(names, map.values().cloned().map(Slot::Json).collect())
    }

    /// `msg` decodes into `T` as `object` does, with the same error when it does not;
    /// its JSON and its bytes are the object's.
    fn same_as_object<T: DeserializeOwned + PartialEq + Debug + 'static>(msg: &Msg, object: &Value) {
        match (msg.decode::<T>("in"), crate::decode::decode::<T>("in", object)) {
            (Ok(fields), Ok(tree)) => assert_eq!(fields, tree, "{object}"),
            (Err(fields), Err(tree)) => assert_eq!(fields.to_string(), tree.to_string(), "{object}"),
            (fields, tree) => panic!(
                "{object} as {}: {fields:?} against {tree:?}",
                std::any::type_name::<T>()
            ),
        }
        assert_eq!(msg.json().ok(), Some(object));
        assert_eq!(msg.to_json_bytes().ok(), serde_json::to_vec(object).ok());
    }

    /// `object` kept as fields decodes into `T` as the object does ([`same_as_object`]).
    fn same<T: DeserializeOwned + PartialEq + Debug + 'static>(object: Value) {
        let msg = message(&object);
        same_as_object::<T>(&msg, &object);
        assert_eq!(format!("{msg:?}"), format!("{:?}", Msg::from_json(object.clone())));
    }

    #[test]
    fn a_value_port_takes_the_object_its_fields_make() {
        let object = json!({"a": 1, "b": {"c": [1, 2]}});
        assert_eq!(message(&object).take_exact::<Value>("in").ok(), Some(object.clone()));
        // Shared, it is decoded (a copy).
        let shared = message(&object);
        let _kept = shared.clone();
        assert_eq!(shared.take_exact::<Value>("in").ok(), Some(object));
    }

    #[test]
    fn fields_decode_as_the_object_they_stand_for() {
        let s = json!({"a": 1, "b": "x"});
        same::<S>(s.clone());
        same::<S>(json!({"a": 1, "b": "x", "c": [1, 2], "other": true}));
        same::<S>(json!({"a": "one", "b": 2}));
        same::<S>(json!({"b": "x"}));
        same::<Option<S>>(s.clone());
        same::<Wrapper>(s.clone());
        same::<Value>(s.clone());
        same::<HashMap<String, Value>>(s.clone());
        same::<Untagged>(s.clone());
        same::<Untagged>(json!({"z": 1}));
        same::<Flat>(json!({"a": 1, "x": [1], "y": null}));
        same::<Strict>(json!({"a": 1}));
        same::<Strict>(json!({"a": 1, "b": 2}));
        same::<External>(json!({"A": 7}));
        same::<External>(json!({"B": {"x": 1}}));
        same::<External>(json!({"A": 7, "B": {"x": 1}}));
        same::<Tagged>(json!({"type": "One", "a": 1}));
        same::<Adjacent>(json!({"t": "A", "c": 1}));
        same::<Adjacent>(json!({"c": 1, "t": "A"}));
        // Number keys: serde_json reads them out of the name; the fields give way to it.
        same::<BTreeMap<u32, i64>>(json!({"1": 10, "2": 20}));
        same::<HashMap<bool, i64>>(json!({"true": 1}));
        // Not an object's type: the object's own error.
        same::<String>(s.clone());
        same::<Vec<i64>>(s.clone());
        same::<(i64, String)>(s.clone());
        same::<bool>(s.clone());
        same::<()>(s.clone());
        same::<serde::de::IgnoredAny>(s);
    }

    /// `value` as a field placed whole would be kept: an object as a [`Struct`] (its
    /// names leaked to be `'static`, as a struct's are), anything else as JSON.
    fn slot(value: &Value) -> Slot {
        match value {
            Value::Object(map) => Slot::Struct(Struct {
                names: map.keys().map(|k| &*Box::leak(k.clone().into_boxed_str())).collect(),
                values: map.values().map(slot).collect(),
            }),
            other => Slot::Json(other.clone()),
        }
    }

    /// Every entry of an object as it is offered, in order.
    #[derive(Debug, PartialEq)]
    struct Entries(Vec<(String, Value)>);

    impl<'de> Deserialize<'de> for Entries {
        fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            struct All;
            impl<'de> Visitor<'de> for All {
                type Value = Entries;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Entries, A::Error> {
                    let mut all = Vec::new();
                    while let Some(entry) = map.next_entry()? {
                        all.push(entry);
                    }
                    Ok(Entries(all))
                }
            }
            d.deserialize_map(All)
        }
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Field<T> {
        f: T,
    }

    /// `inner` kept as a [`Struct`] in field `f` decodes into `T` as the object does
    /// ([`same_as_object`]).
    fn same_struct<T: DeserializeOwned + PartialEq + Debug + 'static>(inner: Value) {
        let object = json!({"f": inner});
        let msg = Msg::from_fields(Arc::from([json!("f")]), vec![slot(&inner)]);
        same_as_object::<Field<T>>(&msg, &object);
        assert_eq!(msg.take_exact::<Value>("in").ok(), Some(object));
    }

    #[test]
    fn a_struct_kept_as_its_fields_decodes_as_its_object() {
        let s = json!({"a": 1, "b": "x"});
        same_struct::<S>(s.clone());
        same_struct::<S>(json!({"a": 1, "b": "x", "c": [1, 2], "other": {"deep": true}}));
        same_struct::<S>(json!({"a": "one", "b": 2}));
        same_struct::<S>(json!({"b": "x"}));
        same_struct::<Option<S>>(s.clone());
        same_struct::<Wrapper>(s.clone());
        same_struct::<Value>(json!({"a": {"b": {"c": 1}}, "d": []}));
        same_struct::<Value>(json!({"name": "ada", "tags": ["x"], "nested": {"left": 1, "right": 2}}));
        same_struct::<Entries>(json!({"name": "ada", "nested": {"left": 1}}));
        same_struct::<HashMap<String, Value>>(s.clone());
        same_struct::<Untagged>(s.clone());
        same_struct::<Flat>(json!({"a": 1, "x": [1], "y": null}));
        same_struct::<Strict>(json!({"a": 1, "b": 2}));
        same_struct::<External>(json!({"B": {"x": 1}}));
        same_struct::<Tagged>(json!({"type": "One", "a": 1}));
        same_struct::<Adjacent>(json!({"c": 1, "t": "A"}));
        // A struct inside: its own names, offered the same way.
        same_struct::<Field<S>>(json!({"f": {"a": 2, "b": "y"}}));
        // Names a map with number or bool keys reads out of the text.
        same_struct::<BTreeMap<u32, i64>>(json!({"1": 10, "2": 20}));
        same_struct::<HashMap<bool, i64>>(json!({"true": 1}));
        // Not an object's type: the object's own error.
        same_struct::<String>(s.clone());
        same_struct::<Vec<i64>>(s.clone());
        same_struct::<bool>(s.clone());
        same_struct::<()>(s.clone());
        same_struct::<serde::de::IgnoredAny>(s);
    }
}

//! A typed message's JSON with only some of its top-level fields.
//!
//! An edge expression such as `{"body": "{{$.body}}"}` reads one field of the message;
//! building the whole tree to read it costs most of the hop when the message is large
//! (an HTTP request with its headers). [`project`] serialises the value through
//! [`Fields`], which hands a struct's or map's entries to serde_json only when their key
//! is wanted and never serialises the others. Anything that is not a struct or a map
//! (a string, a sequence, an enum's tuple variant) is serialised whole, exactly as
//! [`serde_json::to_value`] would: an expression reading a field of it fails the same way.

use std::{
    borrow::Cow,
    cell::{Cell, RefCell},
};

use serde::{
    Serialize,
    ser::{SerializeMap, SerializeStruct},
};
use serde_json::{Map, Value, value::Serializer as Tree};

use super::slot::{Placing, Slot, Struct};

type Error = serde_json::Error;

/// `value`'s JSON tree with only the top-level fields named in `keys` (in the order
/// `value` serialises them), or the whole tree when `value` is neither a struct nor a
/// map; and whether that is the whole tree (no field was left out).
pub(super) fn project<T: Serialize + ?Sized>(value: &T, keys: &[Box<str>]) -> Result<(Value, bool), Error> {
    project_placing(value, keys, &[], None).map(|(tree, whole, _)| (tree, whole))
}

/// [`project`], with a struct's field `keys[k]` serialised into slot `placed[k]`, when
/// that is given, instead of into the tree. A field that does not come that way (a
/// map's entry, a skipped field) goes into the tree as any other.
///
/// `spare`, a map an earlier projection made (its values no longer needed), is written
/// over in place when its keys come again in its order: no map allocated, no key copied
/// or hashed. The tree is the same either way (see [`Out`]).
pub(super) fn project_placing<T: Serialize + ?Sized>(
    value: &T,
    keys: &[Box<str>],
    placed: &Placing,
    spare: Option<Map<String, Value>>,
) -> Result<(Value, bool, Vec<Option<Slot>>), Error> {
    let spare = Cell::new(spare);
    let left_out = Cell::new(false);
    // One slot per place up to the last one used: none is grown while serialising.
    let places = placed.iter().flatten().max().map_or(0, |last| last + 1);
    let slots = RefCell::new(std::iter::repeat_with(|| None).take(places).collect());
    let tree = value.serialize(Fields {
        keys,
        left_out: &left_out,
        placed,
        slots: &slots,
        spare: &spare,
    })?;
    Ok((tree, !left_out.get(), slots.into_inner()))
}

/// The serializer of [`project`]: a struct or a map is filtered, everything else goes
/// to serde_json's own tree serializer.
struct Fields<'k> {
    keys: &'k [Box<str>],
    /// Set when a field is left out.
    left_out: &'k Cell<bool>,
    /// For each of `keys`, the slot a struct's field of that name goes in, if any.
    placed: &'k Placing,
    slots: &'k RefCell<Vec<Option<Slot>>>,
    /// A map to write the tree into, taken by the first struct or map (the top level).
    spare: &'k Cell<Option<Map<String, Value>>>,
}

/// The tree being made: a map of its own, or a spare one whose keys are the ones
/// written so far, in that order (`written` of them), whose values are written over.
/// A key that does not come where the spare has it turns what was written into a map of
/// its own, so that the tree is what a fresh map would hold: same keys, same order, a
/// key written twice keeping its first place and its last value.
enum Out {
    Fresh(Map<String, Value>),
    Reusing { map: Map<String, Value>, written: usize },
}

impl Out {
    fn insert(&mut self, key: Cow<'_, str>, value: Value) {
        match self {
            Out::Fresh(map) => {
                map.insert(key.into_owned(), value);
            }
            Out::Reusing { map, written } => {
                if let Some((k, v)) = map.iter_mut().nth(*written)
                    && **k == *key
                {
                    *v = value;
                    *written += 1;
                    return;
                }
                let mut fresh = Map::with_capacity(map.len().max(*written + 1));
                fresh.extend(std::mem::take(map).into_iter().take(*written));
                fresh.insert(key.into_owned(), value);
                *self = Out::Fresh(fresh);
            }
        }
    }

    fn finish(self) -> Map<String, Value> {
        match self {
            Out::Fresh(map) => map,
            Out::Reusing { map, written } if written == map.len() => map,
            // Cut to what was written, in place: collecting would hash every key again.
            Out::Reusing { mut map, written } => {
                let mut kept = 0;
                map.retain(|_, _| {
                    kept += 1;
                    kept <= written
                });
                map
            }
        }
    }
}

/// A struct or map being filtered: the fields kept so far, and for a map the key of
/// the entry whose value comes next (`None` to skip it).
struct Filtered<'k> {
    keys: &'k [Box<str>],
    left_out: &'k Cell<bool>,
    placed: &'k Placing,
    slots: &'k RefCell<Vec<Option<Slot>>>,
    out: Out,
    next: Option<String>,
}

impl<'k> Filtered<'k> {
    fn new(of: Fields<'k>, len: Option<usize>) -> Self {
        Filtered {
            keys: of.keys,
            left_out: of.left_out,
            placed: of.placed,
            slots: of.slots,
            out: match of.spare.take() {
                Some(map) => Out::Reusing { map, written: 0 },
                // As serde_json sizes a struct's map: growing it costs more than the fields.
                None => Out::Fresh(Map::with_capacity(len.unwrap_or(0).min(of.keys.len()))),
            },
            next: None,
        }
    }

    fn wants(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Where `key` is in `keys`, if it is wanted.
    fn position(&self, key: &str) -> Option<usize> {
        let at = self.keys.iter().position(|k| crate::name::same(k, key));
        if at.is_none() {
            self.left_out.set(true);
        }
        at
    }
}

/// A struct that serde_json treats as special (its `RawValue`, arbitrary-precision
/// numbers) is serialised by serde_json itself.
enum StructOut<'k> {
    Filtered(Filtered<'k>),
    Whole(<Tree as serde::Serializer>::SerializeStruct),
}

/// The `Serializer` methods of [`Fields`] and [`SlotOf`] for everything they do not
/// take apart (all but maps and structs): serde_json's tree serializer makes it, then
/// `$value` turns what it made into `$ok` and `$compound` wraps its compound
/// serializers. An option's value and a newtype's pass through, as serde_json's do.
macro_rules! to_tree {
    // The arms a call of its own reaches, before the one that makes them all.
    (@compound $compound:expr; $($name:ident($($arg:ident: $ty:ty),*) -> $out:ident;)*) => {
        $(fn $name(self, $($arg: $ty),*) -> Result<Self::$out, Error> {
            Tree.$name($($arg),*).map($compound)
        })*
    };
    (@each $ok:ty, $value:expr; $($name:ident($($arg:ident: $ty:ty),*);)*) => {
        $(fn $name(self, $($arg: $ty),*) -> Result<$ok, Error> {
            Tree.$name($($arg),*).map($value)
        })*
    };
    ($ok:ty, $value:expr, $compound:expr) => {
        to_tree! { @each $ok, $value;
            serialize_bool(v: bool);
            serialize_i8(v: i8);
            serialize_i16(v: i16);
            serialize_i32(v: i32);
            serialize_i64(v: i64);
            serialize_i128(v: i128);
            serialize_u8(v: u8);
            serialize_u16(v: u16);
            serialize_u32(v: u32);
            serialize_u64(v: u64);
            serialize_u128(v: u128);
            serialize_f32(v: f32);
            serialize_f64(v: f64);
            serialize_char(v: char);
            serialize_str(v: &str);
            serialize_bytes(v: &[u8]);
            serialize_none();
            serialize_unit();
            serialize_unit_struct(name: &'static str);
            serialize_unit_variant(name: &'static str, index: u32, variant: &'static str);
        }

        fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<$ok, Error> {
            value.serialize(self)
        }

        fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<$ok, Error> {
            value.serialize(self)
        }

        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            name: &'static str,
            index: u32,
            variant: &'static str,
            value: &T,
        ) -> Result<$ok, Error> {
            Tree.serialize_newtype_variant(name, index, variant, value).map($value)
        }

        to_tree! { @compound $compound;
            serialize_seq(len: Option<usize>) -> SerializeSeq;
            serialize_tuple(len: usize) -> SerializeTuple;
            serialize_tuple_struct(name: &'static str, len: usize) -> SerializeTupleStruct;
            serialize_tuple_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> SerializeTupleVariant;
            serialize_struct_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> SerializeStructVariant;
        }
    };
}

/// serde_json's own structs are named `$serde_json::private::...` (its `RawValue`,
/// arbitrary-precision numbers): they go to its tree whole.
fn serde_json_own(name: &str) -> bool {
    name.starts_with("$serde_json")
}

impl<'k> serde::Serializer for Fields<'k> {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = <Tree as serde::Serializer>::SerializeSeq;
    type SerializeTuple = <Tree as serde::Serializer>::SerializeTuple;
    type SerializeTupleStruct = <Tree as serde::Serializer>::SerializeTupleStruct;
    type SerializeTupleVariant = <Tree as serde::Serializer>::SerializeTupleVariant;
    type SerializeMap = Filtered<'k>;
    type SerializeStruct = StructOut<'k>;
    type SerializeStructVariant = <Tree as serde::Serializer>::SerializeStructVariant;

    // What serde_json makes, as it makes it.
    to_tree!(Value, std::convert::identity, std::convert::identity);

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Ok(Filtered::new(self, len))
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeStruct, Error> {
        if serde_json_own(name) {
            return Tree.serialize_struct(name, len).map(StructOut::Whole);
        }
        Ok(StructOut::Filtered(Filtered::new(self, Some(len))))
    }
}

impl SerializeStruct for StructOut<'_> {
    type Ok = Value;
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        match self {
            StructOut::Filtered(f) => {
                let Some(at) = f.position(key) else {
                    return Ok(());
                };
                match f.placed.get(at).copied().flatten() {
                    // `project_placing` made a slot for every place.
                    Some(i) => {
                        let value = value.serialize(SlotOf)?;
                        if let Some(slot) = f.slots.borrow_mut().get_mut(i) {
                            *slot = Some(value);
                        }
                    }
                    None => {
                        f.out.insert(Cow::Borrowed(key), serde_json::to_value(value)?);
                    }
                }
                Ok(())
            }
            StructOut::Whole(s) => s.serialize_field(key, value),
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), Error> {
        match self {
            StructOut::Filtered(_) => Ok(()),
            StructOut::Whole(s) => s.skip_field(key),
        }
    }

    fn end(self) -> Result<Value, Error> {
        match self {
            StructOut::Filtered(f) => Ok(Value::Object(f.out.finish())),
            StructOut::Whole(s) => SerializeStruct::end(s),
        }
    }
}

impl SerializeMap for Filtered<'_> {
    type Ok = Value;
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        // As serde_json: a key is a string, or a number or boolean written as one.
        let key = match key.serialize(Tree)? {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return Err(serde::ser::Error::custom("key must be a string")),
        };
        self.next = self.wants(&key).then_some(key);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        if let Some(key) = self.next.take() {
            self.out.insert(Cow::Owned(key), serde_json::to_value(value)?);
        }
        Ok(())
    }

    fn end(self) -> Result<Value, Error> {
        Ok(Value::Object(self.out.finish()))
    }
}

/// The most fields a struct placed whole is kept as [`Struct`] with: past it, finding a
/// name written twice costs more than the map.
const MAX_STRUCT_FIELDS: usize = 16;

/// A value placed whole, as a [`Slot`]: a struct (and a struct in it) as its fields, no
/// map made; anything else as serde_json's tree, exactly as `serde_json::to_value`.
struct SlotOf;

/// A struct being made into a [`Struct`]; serde_json's own map once a name comes twice
/// (a hand-written `Serialize`), where the last value written wins in the first place.
enum StructSlot {
    Fields(Struct),
    Map(<Tree as serde::Serializer>::SerializeStruct),
}

/// A compound serde_json makes, finished as a [`Slot`].
struct JsonSlot<S>(S);

/// [`JsonSlot`]'s impl of each compound whose elements come one way (`$add`).
macro_rules! json_slot {
    ($($compound:ident::$add:ident;)*) => {
        $(impl<S: serde::ser::$compound<Ok = Value, Error = Error>> serde::ser::$compound for JsonSlot<S> {
            type Ok = Slot;
            type Error = Error;
            fn $add<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.0.$add(value)
            }
            fn end(self) -> Result<Slot, Error> {
                self.0.end().map(Slot::Json)
            }
        })*
    };
}

json_slot! {
    SerializeSeq::serialize_element;
    SerializeTuple::serialize_element;
    SerializeTupleStruct::serialize_field;
    SerializeTupleVariant::serialize_field;
}

impl<S: SerializeMap<Ok = Value, Error = Error>> SerializeMap for JsonSlot<S> {
    type Ok = Slot;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.0.serialize_key(key)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.0.serialize_value(value)
    }
    fn end(self) -> Result<Slot, Error> {
        self.0.end().map(Slot::Json)
    }
}

impl<S: serde::ser::SerializeStructVariant<Ok = Value, Error = Error>> serde::ser::SerializeStructVariant
    for JsonSlot<S>
{
    type Ok = Slot;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.0.serialize_field(key, value)
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), Error> {
        self.0.skip_field(key)
    }
    fn end(self) -> Result<Slot, Error> {
        self.0.end().map(Slot::Json)
    }
}

impl serde::Serializer for SlotOf {
    type Ok = Slot;
    type Error = Error;
    type SerializeSeq = JsonSlot<<Tree as serde::Serializer>::SerializeSeq>;
    type SerializeTuple = JsonSlot<<Tree as serde::Serializer>::SerializeTuple>;
    type SerializeTupleStruct = JsonSlot<<Tree as serde::Serializer>::SerializeTupleStruct>;
    type SerializeTupleVariant = JsonSlot<<Tree as serde::Serializer>::SerializeTupleVariant>;
    type SerializeMap = JsonSlot<<Tree as serde::Serializer>::SerializeMap>;
    type SerializeStruct = StructSlot;
    type SerializeStructVariant = JsonSlot<<Tree as serde::Serializer>::SerializeStructVariant>;

    // What serde_json makes, as a `Slot::Json`.
    to_tree!(Slot, Slot::Json, JsonSlot);

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Tree.serialize_map(len).map(JsonSlot)
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeStruct, Error> {
        // serde_json's own structs, and large ones, as its tree.
        if serde_json_own(name) || len > MAX_STRUCT_FIELDS {
            return Tree.serialize_struct(name, len).map(StructSlot::Map);
        }
        Ok(StructSlot::Fields(Struct {
            names: Vec::with_capacity(len),
            values: Vec::with_capacity(len),
        }))
    }
}

impl SerializeStruct for StructSlot {
    type Ok = Slot;
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        match self {
            StructSlot::Fields(s) => {
                if s.names.len() >= MAX_STRUCT_FIELDS || s.names.iter().any(|n| crate::name::same(n, key)) {
                    // A name written twice, or more fields than the struct said: serde_json's
                    // map decides what is kept, from the fields so far.
                    let mut map = serde::Serializer::serialize_struct(Tree, "", s.names.len() + 1)?;
                    for (name, value) in s.names.drain(..).zip(s.values.drain(..)) {
                        map.serialize_field(name, &value)?;
                    }
                    map.serialize_field(key, value)?;
                    *self = StructSlot::Map(map);
                    return Ok(());
                }
                let value = value.serialize(SlotOf)?;
                s.names.push(key);
                s.values.push(value);
                Ok(())
            }
            StructSlot::Map(m) => m.serialize_field(key, value),
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), Error> {
        match self {
            StructSlot::Fields(_) => Ok(()),
            StructSlot::Map(m) => m.skip_field(key),
        }
    }

    fn end(self) -> Result<Slot, Error> {
        match self {
            StructSlot::Fields(s) => Ok(Slot::Struct(s)),
            StructSlot::Map(m) => SerializeStruct::end(m).map(Slot::Json),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;
    use serde_json::{Map, Value, json};

    use super::{Slot, project, project_placing};

    fn keys(k: &[&str]) -> Vec<Box<str>> {
        k.iter().map(|k| Box::from(*k)).collect()
    }

    fn whole_tree<T: Serialize>(value: &T) -> Value {
        serde_json::to_value(value).expect("serialises")
    }

    /// The projection is the whole tree with the other top-level fields left out.
    fn same_as_filtered<T: Serialize>(value: &T, wanted: &[&str]) {
        let whole = serde_json::to_value(value).expect("serialises");
        let expected = match &whole {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(k, _)| wanted.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            other => other.clone(),
        };
        let (got, whole) = project(value, &keys(wanted)).expect("projects");
        assert_eq!(whole, got == whole_tree(value), "{got}");
        assert_eq!(got, expected);
        // Key order too: what serde_json's tree would have.
        if let (Value::Object(g), Value::Object(e)) = (&got, &expected) {
            assert!(g.keys().eq(e.keys()));
        }
        // Made in a spare map: the one this projection made (its keys come again), one
        // with more keys, other keys, the same keys in another order, or none.
        let mut spares = vec![Map::new(), json_map(json!({"zz": 1, "a": 2, "b": 3}))];
        if let Value::Object(made) = got {
            let mut longer = made.clone();
            longer.insert("zz-extra".into(), json!(0));
            let reversed: Map<String, Value> = made.clone().into_iter().rev().collect();
            spares.extend([made, longer, reversed]);
        }
        for spare in spares {
            let before: Vec<String> = spare.keys().cloned().collect();
            let (got, _, _) = project_placing(value, &keys(wanted), &[], Some(spare)).expect("projects");
            assert_eq!(got, expected, "in a spare map with {before:?}");
            if let (Value::Object(g), Value::Object(e)) = (&got, &expected) {
                assert!(g.keys().eq(e.keys()), "in a spare map with {before:?}: {got}");
            }
        }
    }

    fn json_map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Request {
        path: String,
        request_params: BTreeMap<String, Vec<String>>,
        headers: Vec<(String, String)>,
        body: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        #[serde(flatten)]
        extra: BTreeMap<String, Value>,
    }

    #[derive(Serialize)]
    #[serde(tag = "kind")]
    enum Event {
        Click { x: i32, y: i32 },
        Key(Key),
    }

    #[derive(Serialize)]
    struct Key {
        code: u32,
        name: String,
    }

    #[derive(Serialize)]
    struct Wrapper(Key);

    fn request() -> Request {
        Request {
            path: "/a".into(),
            request_params: BTreeMap::from([("q".into(), vec!["1".into()])]),
            headers: vec![("Accept".into(), "*/*".into())],
            body: "hi".into(),
            note: None,
            extra: BTreeMap::from([("zone".into(), json!({"id": 1}))]),
        }
    }

    #[test]
    fn structs_maps_and_what_serde_makes_of_them() {
        let r = request();
        same_as_filtered(&r, &["body"]);
        same_as_filtered(&r, &["body", "path", "requestParams"]);
        // A skipped field, a flattened one, and one the type does not have.
        same_as_filtered(&r, &["note", "zone", "missing"]);
        same_as_filtered(&r, &[]);
        same_as_filtered(&r, &["path", "requestParams", "headers", "body", "zone"]);
        same_as_filtered(&Event::Click { x: 1, y: 2 }, &["kind", "y"]);
        same_as_filtered(
            &Event::Key(Key {
                code: 13,
                name: "enter".into(),
            }),
            &["name", "kind"],
        );
        same_as_filtered(
            &Wrapper(Key {
                code: 1,
                name: "a".into(),
            }),
            &["code"],
        );
        same_as_filtered(&Some(request()), &["headers"]);
        same_as_filtered(&BTreeMap::from([(1u8, "one"), (2, "two")]), &["2"]);
        same_as_filtered(&json!({"a": 1, "b": {"c": 2}}), &["b"]);
    }

    #[test]
    fn a_key_written_twice_keeps_its_first_place_and_its_last_value() {
        struct Twice;
        impl Serialize for Twice {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeStruct as _;
                let mut st = s.serialize_struct("Twice", 3)?;
                st.serialize_field("a", &1)?;
                st.serialize_field("b", &2)?;
                st.serialize_field("a", &3)?;
                st.end()
            }
        }
        same_as_filtered(&Twice, &["a", "b"]);
        same_as_filtered(&Twice, &["a"]);
    }

    #[test]
    fn what_is_not_a_struct_or_map_is_serialised_whole() {
        same_as_filtered(&"text", &["a"]);
        same_as_filtered(&vec![request()], &["body"]);
        same_as_filtered(&(1, "two"), &["a"]);
        same_as_filtered(&3.5f64, &["a"]);
        same_as_filtered(&(), &["a"]);
    }

    #[test]
    fn a_field_left_out_is_never_serialised() {
        /// Fails whenever it is serialised.
        struct Poison;
        impl Serialize for Poison {
            fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                Err(serde::ser::Error::custom("serialised"))
            }
        }
        #[derive(Serialize)]
        struct Big {
            body: String,
            headers: Poison,
        }
        let big = Big {
            body: "x".into(),
            headers: Poison,
        };
        let (tree, whole) = project(&big, &keys(&["body"])).expect("projects");
        assert_eq!(tree, json!({"body": "x"}));
        assert!(!whole, "headers were left out");
        assert!(project(&big, &keys(&["headers"])).is_err());
    }

    #[test]
    fn placed_fields_are_made_apart() {
        #[derive(Serialize)]
        struct M {
            a: u32,
            b: String,
            #[serde(skip_serializing_if = "Option::is_none")]
            c: Option<u32>,
            d: Vec<u8>,
        }
        let m = M {
            a: 1,
            b: "x".into(),
            c: None,
            d: vec![1],
        };
        // Parallel to the keys: `b` to slot 2, `c` to slot 0.
        let placed = [None, Some(2), Some(0)];
        let (tree, whole, slots) = project_placing(&m, &keys(&["a", "b", "c"]), &placed, None).expect("projects");
        // `b` is made apart, `c` is skipped (its slot stays empty), `d` is not read.
        assert_eq!(tree, json!({"a": 1}));
        assert!(!whole);
        let slots: Vec<Option<Value>> = slots.into_iter().map(|s| s.map(Slot::into_value)).collect();
        assert_eq!(slots, vec![None, None, Some(json!("x"))]);
        // A map's entries are not a struct's fields: they stay in the tree.
        let map = BTreeMap::from([("b", 2)]);
        let (tree, _, slots) = project_placing(&map, &keys(&["b"]), &[Some(0)], None).expect("projects");
        assert_eq!(tree, json!({"b": 2}));
        assert!(slots.iter().all(Option::is_none));
    }
}

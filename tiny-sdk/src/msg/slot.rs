//! The values an edge places whole, as the message's body, its typed fields'
//! projection and the template's object all hold them. Kept apart from those three so
//! that each imports it, and none another the wrong way (`body` below `fields` below
//! `rendered`).

use serde_json::Value;

/// A value of an edge template's object: JSON, or a struct placed whole from a typed
/// message, kept as its fields.
pub(crate) enum Slot {
    Json(Value),
    Struct(Struct),
}

/// A struct serialised as its fields' names (the `&'static str`s its `Serialize` gives)
/// and values, in order, each name once: the object serde_json would make of it, with
/// no map built, no key copied or hashed. Made by [`fields`](super::fields) for a field
/// an edge places whole (`"user": "{{$.user}}"`); a receiver decodes straight from it
/// (see [`rendered`](super::rendered)).
pub(crate) struct Struct {
    pub(super) names: Vec<&'static str>,
    pub(super) values: Vec<Slot>,
}

/// A tree of some of a message's fields, and the values of others made apart, by
/// their place in an object (see [`Msg::tree_placing`](super::Msg::tree_placing)).
pub(crate) type Placed = (Value, Vec<Option<Slot>>);

/// For each top-level field read (in the order of the keys given beside it), the index
/// in the object being made where it is to be placed whole, if it is.
pub(crate) type Placing = [Option<usize>];

impl Slot {
    /// The JSON it stands for, moved.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Slot::Json(v) => v,
            Slot::Struct(s) => Value::Object(
                s.names
                    .into_iter()
                    .zip(s.values)
                    .map(|(name, value)| (name.to_owned(), value.into_value()))
                    .collect(),
            ),
        }
    }
}

//! Objects decoded one at a time, so that one malformed object never fails a list.
//!
//! The API server accepts a TinyNode whose `configuration` is base64 of something that
//! is not JSON, or a TinySignal whose `data` is; it validates the base64, not what is
//! inside. Decoded straight into [`TinyNode`](super::TinyNode), such an object fails
//! the whole LIST it arrives in, and with it every node of every module that watches
//! the namespace. A [`Decoded<K>`] always decodes: the metadata (which the API server
//! guarantees) and the object's JSON are kept, and the typed object is decoded from
//! them on its own, its failure recorded with the path of the field that was wrong.

use std::{borrow::Cow, fmt, sync::Arc};

use kube::{Resource, api::ObjectMeta};
use serde::{Deserialize, Deserializer, Serialize, de::DeserializeOwned};
use serde_json::Value;

/// One object as the API server sent it: always its metadata, and its typed form when
/// that decodes.
#[derive(Clone)]
pub struct Decoded<K> {
    metadata: ObjectMeta,
    object: Result<Arc<K>, Undecodable>,
}

/// Why an object did not decode, with what can still be read of it.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{kind} `{name}` does not decode: {reason}")]
pub struct Undecodable {
    kind: &'static str,
    name: String,
    /// The field that failed (`spec.ports[0].configuration`) and why.
    reason: String,
    /// The object as JSON, to read fields of a malformed object by hand.
    raw: Arc<Value>,
}

impl Undecodable {
    /// The field that failed and why, e.g. "field `spec.data`: base64 content is not JSON".
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// A string field of the raw object by JSON pointer (`/spec/module`), if present.
    pub fn string_at(&self, pointer: &str) -> Option<&str> {
        self.raw.pointer(pointer).and_then(Value::as_str)
    }

    /// A part of the raw object by JSON pointer (`/status`), if it is there and decodes.
    pub fn decode_at<T: DeserializeOwned>(&self, pointer: &str) -> Option<T> {
        T::deserialize(self.raw.pointer(pointer)?).ok()
    }
}

impl<K> Decoded<K> {
    /// The typed object, or why there is none.
    pub fn object(&self) -> Result<&Arc<K>, &Undecodable> {
        self.object.as_ref()
    }

    /// The object's metadata (always present).
    pub fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }
}

impl<K> fmt::Debug for Decoded<K>
where
    K: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.object {
            Ok(o) => o.fmt(f),
            Err(e) => f.debug_tuple("Undecodable").field(&e.to_string()).finish(),
        }
    }
}

impl<'de, K> Deserialize<'de> for Decoded<K>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Through a `Value`: kube's watch events are adjacently tagged enums, whose
        // content serde may buffer, so borrowing the raw text is not always possible.
        let raw = Value::deserialize(d)?;
        let metadata: ObjectMeta = match raw.get("metadata") {
            Some(m) => ObjectMeta::deserialize(m).map_err(serde::de::Error::custom)?,
            None => ObjectMeta::default(),
        };
        let object = match serde_path_to_error::deserialize::<_, K>(&raw) {
            Ok(o) => Ok(Arc::new(o)),
            Err(e) => {
                let path = e.path().to_string();
                let reason = if path.is_empty() || path == "." {
                    e.inner().to_string()
                } else {
                    format!("field `{path}`: {}", e.inner())
                };
                Err(Undecodable {
                    kind: kind_name::<K>(),
                    name: metadata.name.clone().unwrap_or_default(),
                    reason,
                    raw: Arc::new(raw),
                })
            }
        };
        Ok(Self { metadata, object })
    }
}

fn kind_name<K: Resource<DynamicType = ()>>() -> &'static str {
    match K::kind(&()) {
        Cow::Borrowed(s) => s,
        Cow::Owned(_) => "object",
    }
}

impl<K: Serialize> Serialize for Decoded<K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.object {
            Ok(o) => o.serialize(s),
            Err(e) => e.raw.serialize(s),
        }
    }
}

impl<K> Resource for Decoded<K>
where
    K: Resource<DynamicType = ()>,
{
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::TinySignal;

    #[test]
    fn a_malformed_object_in_a_list_fails_alone() {
        let list = serde_json::json!([
            {"apiVersion": "operator.tinysystems.io/v1alpha1", "kind": "TinySignal",
             "metadata": {"name": "good"}, "spec": {"node": "a.b.c-1", "port": "in", "data": "eyJhIjoxfQ=="}},
            {"apiVersion": "operator.tinysystems.io/v1alpha1", "kind": "TinySignal",
             "metadata": {"name": "bad"}, "spec": {"node": "a.b.c-1", "port": "in", "data": "bm90IGpzb24="}}
        ]);
        let items: Vec<Decoded<TinySignal>> = serde_json::from_value(list).expect("the list decodes");
        assert!(items[0].object().is_ok());
        let bad = items[1].object().expect_err("the bad one does not");
        assert_eq!(items[1].name(), "bad");
        assert!(bad.reason().starts_with("field `spec.data`"), "{}", bad.reason());
        assert!(bad.reason().contains("not JSON"), "{}", bad.reason());
        assert_eq!(bad.string_at("/spec/node"), Some("a.b.c-1"));
        assert!(bad.to_string().starts_with("TinySignal `bad` does not decode"), "{bad}");
    }
}

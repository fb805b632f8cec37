use std::fmt;

use base64::{Engine as _, engine::general_purpose::STANDARD};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// JSON kept as the base64 text the API server stores (a Go `[]byte` field), decoded
/// only when read.
///
/// A TinyNode's status carries the schema of every port. The module writes it and never
/// reads it back, only compares it with what it would write; held as parsed JSON trees,
/// those schemas were most of a node's memory in the module's cache.
///
/// ```
/// use tiny_runtime::crd::EncodedJson;
/// let e = EncodedJson::encode(&serde_json::json!({"a": 1}));
/// assert_eq!(e.as_base64(), "eyJhIjoxfQ==");
/// assert_eq!(e.decode().unwrap(), serde_json::json!({"a": 1}));
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
pub struct EncodedJson(Box<str>);

/// Why an [`EncodedJson`] does not decode.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not base64.
    #[error("not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// Base64 of something that is not JSON.
    #[error("base64 content is not JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl EncodedJson {
    /// Encodes `value` as the Go SDK does (compact JSON, standard base64).
    pub fn encode(value: &Value) -> Self {
        // Writing a `Value` into a `Vec` cannot fail.
        let bytes = serde_json::to_vec(value).unwrap_or_default();
        Self(STANDARD.encode(bytes).into())
    }

    /// The base64 text.
    pub fn as_base64(&self) -> &str {
        &self.0
    }

    /// The JSON it holds.
    pub fn decode(&self) -> Result<Value, DecodeError> {
        let bytes = STANDARD.decode(self.0.trim())?;
        Ok(serde_json::from_slice(&bytes)?)
    }
}

impl fmt::Debug for EncodedJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncodedJson({} base64 bytes)", self.0.len())
    }
}

impl Serialize for EncodedJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for EncodedJson {
    /// Base64 text is kept as it is; inline JSON (hand-written YAML) is encoded.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(Self(s.into())),
            other => Ok(Self::encode(&other)),
        }
    }
}

impl schemars::JsonSchema for EncodedJson {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "EncodedJson".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "format": "byte" })
    }
}

use std::fmt;

use base64::{Engine as _, engine::general_purpose::STANDARD};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// JSON stored as bytes, like the Go CRD's `[]byte` fields (`schema`, `configuration`).
///
/// On the wire it is base64 text, as Kubernetes stores `format: byte`. When reading, it
/// also accepts inline JSON (an object, array, number, bool, or a string that is not
/// base64, such as `"{{$}}"`), so hand-written flow YAML reads the same in the harness
/// as `<module> render` makes it for a cluster. Base64 that does not hold JSON is an
/// error.
///
/// ```
/// use tiny_sdk::flow::RawJson;
/// let from_b64: RawJson = serde_json::from_str(r#""eyJhIjoxfQ==""#).unwrap();
/// let inline: RawJson = serde_json::from_str(r#"{"a":1}"#).unwrap();
/// assert_eq!(from_b64, inline);
/// let pass_through: RawJson = serde_json::from_str(r#""{{$}}""#).unwrap();
/// assert_eq!(pass_through.value(), "{{$}}");
/// assert_eq!(serde_json::to_string(&inline).unwrap(), r#""eyJhIjoxfQ==""#);
/// ```
#[derive(Clone, PartialEq, Default)]
pub struct RawJson(pub Value);

impl RawJson {
    /// The JSON value.
    pub fn value(&self) -> &Value {
        &self.0
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawJson({})", self.0)
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes = serde_json::to_vec(&self.0).map_err(serde::ser::Error::custom)?;
        s.serialize_str(&STANDARD.encode(bytes))
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            // Base64 is what the API server stores: it must hold JSON. A string that is
            // not base64 was written by hand (`configuration: "{{$}}"`) and is itself,
            // as `<module> render` reads it.
            Value::String(s) => match STANDARD.decode(s.trim()) {
                Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(RawJson(Value::Null)),
                Ok(bytes) => serde_json::from_slice(&bytes)
                    .map(RawJson)
                    .map_err(|e| serde::de::Error::custom(format!("base64 content is not JSON: {e}"))),
                Err(_) => Ok(RawJson(Value::String(s))),
            },
            other => Ok(RawJson(other)),
        }
    }
}

impl schemars::JsonSchema for RawJson {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RawJson".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "format": "byte" })
    }
}

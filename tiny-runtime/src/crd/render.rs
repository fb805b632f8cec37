//! Flows as people write them, and as the API server takes them.
//!
//! A TinyNode's `configuration` and `schema` and a TinySignal's `data` are `[]byte` in
//! the Go SDK's CRDs (`format: byte`): the API server takes only base64 there. People
//! write them as JSON, inline. [`render`] turns a YAML stream written that way into
//! what `kubectl apply -f -` accepts (base64 of the JSON, as Go encodes it), and
//! [`inline`] turns what `kubectl get -o yaml` prints back into readable YAML.
//!
//! ```
//! let written = "kind: TinySignal\nmetadata: { name: s }\nspec: { node: n, port: p, data: { a: 1 } }\n";
//! let applied = tiny_runtime::crd::render(written).unwrap();
//! assert!(applied.contains("data: eyJhIjoxfQ=="));
//! assert!(applied.contains("apiVersion: operator.tinysystems.io/v1alpha1"));
//! assert!(tiny_runtime::crd::inline(&applied).unwrap().contains("a: 1"));
//! ```

use base64::{Engine as _, engine::general_purpose::STANDARD};
use serde_yaml::Value;

/// Why a YAML stream could not be rendered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RenderError {
    /// A document is not YAML.
    #[error("YAML document {document}: {source}")]
    Yaml {
        /// Which document (1 for the first).
        document: usize,
        /// Why.
        #[source]
        source: serde_yaml::Error,
    },
    /// A field's value cannot be written as JSON.
    #[error("YAML document {document} ({kind} `{name}`), field `{field}`: not JSON: {reason}")]
    NotJson {
        /// Which document.
        document: usize,
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// The field.
        field: String,
        /// Why.
        reason: String,
    },
}

/// Which way a field goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    /// Inline JSON to base64.
    Encode,
    /// Base64 to inline JSON.
    Inline,
}

/// `yaml` (one or more documents) with every `[]byte` field of tiny's resources as
/// the API server takes it: base64 of the field's JSON. A value that is already
/// base64 of JSON is kept; anything else (a mapping, a list, a number, a string such
/// as `"{{$}}"`) is taken as the JSON it stands for. A document without `apiVersion`
/// gets `operator.tinysystems.io/v1alpha1`. A TinyComponent's `input` and `output`
/// written as YAML become the JSON text the CRD holds. Other kinds pass unchanged.
pub fn render(yaml: &str) -> Result<String, RenderError> {
    transform(yaml, Way::Encode)
}

/// The other way: what `kubectl get -o yaml` prints (a `List` included), with every
/// `[]byte` field that holds base64 of JSON shown as that JSON.
pub fn inline(yaml: &str) -> Result<String, RenderError> {
    transform(yaml, Way::Inline)
}

fn transform(yaml: &str, way: Way) -> Result<String, RenderError> {
    use serde::Deserialize as _;
    let mut out = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
        let document = i + 1;
        let mut value = Value::deserialize(doc).map_err(|source| RenderError::Yaml { document, source })?;
        if value.is_null() {
            continue;
        }
        object(&mut value, document, way)?;
        out.push(serde_yaml::to_string(&value).map_err(|source| RenderError::Yaml { document, source })?);
    }
    Ok(out.join("---\n"))
}

/// One object (or each item of a `List`).
fn object(value: &mut Value, document: usize, way: Way) -> Result<(), RenderError> {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
    if kind == "List" {
        if let Some(items) = value.get_mut("items").and_then(Value::as_sequence_mut) {
            for item in items {
                object(item, document, way)?;
            }
        }
        return Ok(());
    }
    let name = value
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let ours = matches!(kind.as_str(), "TinyNode" | "TinySignal" | "TinyComponent");
    if !ours {
        return Ok(());
    }
    if way == Way::Encode
        && let Some(map) = value.as_mapping_mut()
        && !map.contains_key("apiVersion")
    {
        // First, as kubectl writes it.
        let mut with = serde_yaml::Mapping::new();
        with.insert(
            "apiVersion".into(),
            format!("{}/{}", tiny_sdk::contract::GROUP, tiny_sdk::contract::VERSION).into(),
        );
        with.extend(std::mem::take(map));
        *map = with;
    }
    let fail = |field: &str, reason: String| RenderError::NotJson {
        document,
        kind: kind.clone(),
        name: name.clone(),
        field: field.to_owned(),
        reason,
    };
    let mut spec = value.get_mut("spec");
    match kind.as_str() {
        "TinyNode" => {
            let ports = spec.and_then(|s| s.get_mut("ports")).and_then(Value::as_sequence_mut);
            for (i, port) in ports.into_iter().flatten().enumerate() {
                for field in ["configuration", "schema"] {
                    if let Some(v) = port.get_mut(field) {
                        convert(v, way).map_err(|e| fail(&format!("spec.ports[{i}].{field}"), e))?;
                    }
                }
            }
        }
        // Its schemas are JSON text (strings in the CRD, as Go's): written as YAML,
        // they become that text.
        "TinyComponent" => {
            for field in ["input", "output"] {
                if way == Way::Encode
                    && let Some(v) = spec.as_deref_mut().and_then(|s| s.get_mut(field))
                    && !v.is_string()
                    && !v.is_null()
                {
                    let json: serde_json::Value =
                        serde_json::to_value(&*v).map_err(|e| fail(&format!("spec.{field}"), e.to_string()))?;
                    *v = Value::String(json.to_string());
                }
            }
        }
        _ => {
            if let Some(v) = spec.and_then(|s| s.get_mut("data")) {
                convert(v, way).map_err(|e| fail("spec.data", e))?;
            }
        }
    }
    Ok(())
}

/// The JSON a base64 string holds, if it holds JSON.
fn decoded(text: &str) -> Option<serde_json::Value> {
    let bytes = STANDARD.decode(text.trim()).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn convert(v: &mut Value, way: Way) -> Result<(), String> {
    match way {
        Way::Encode => {
            if v.as_str().and_then(decoded).is_some() || v.is_null() {
                return Ok(());
            }
            let json: serde_json::Value = serde_json::to_value(&*v).map_err(|e| e.to_string())?;
            let bytes = serde_json::to_vec(&json).map_err(|e| e.to_string())?;
            *v = Value::String(STANDARD.encode(bytes));
        }
        Way::Inline => {
            if let Some(json) = v.as_str().and_then(decoded) {
                *v = serde_yaml::to_value(json).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn inline_json_becomes_gos_base64_and_comes_back() {
        let written = r#"
kind: TinyNode
metadata: { name: f.m.c-1 }
spec:
  module: m
  component: c
  ports:
    - { port: _settings, configuration: { unit: K } }
    - { from: "f.m.a-1:out", port: input, configuration: "{{$}}" }
    - { from: "f.m.b-1:out", port: input, configuration: Int7JH19Ig== }
"#;
        let applied = render(written).unwrap();
        let doc: Value = serde_yaml::from_str(&applied).unwrap();
        assert_eq!(doc["apiVersion"], "operator.tinysystems.io/v1alpha1");
        let ports = &doc["spec"]["ports"];
        // {"unit":"K"}, then the pass-through template as a JSON string, kept when
        // already base64.
        assert_eq!(ports[0]["configuration"], STANDARD.encode(br#"{"unit":"K"}"#));
        assert_eq!(ports[1]["configuration"], "Int7JH19Ig==");
        assert_eq!(ports[2]["configuration"], "Int7JH19Ig==");
        // Rendering twice changes nothing; reading back gives the JSON.
        assert_eq!(render(&applied).unwrap(), applied);
        let back: Value = serde_yaml::from_str(&inline(&applied).unwrap()).unwrap();
        assert_eq!(back["spec"]["ports"][0]["configuration"]["unit"], "K");
        assert_eq!(back["spec"]["ports"][1]["configuration"], "{{$}}");
    }

    #[test]
    fn a_list_from_kubectl_reads_back_and_other_kinds_pass() {
        let list = "apiVersion: v1\nkind: List\nitems:\n- kind: TinySignal\n  metadata: {name: s}\n  spec: {node: n, port: p, data: eyJhIjoxfQ==}\n---\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n";
        let back = inline(list).unwrap();
        assert!(back.contains("a: 1"), "{back}");
        assert!(back.contains("k: v"), "{back}");
        let rendered = render("kind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n").unwrap();
        assert!(!rendered.contains("apiVersion"), "not ours: {rendered}");
    }

    #[test]
    fn bad_yaml_names_the_document() {
        let e = render("kind: TinyNode\n---\nkind: [\n").unwrap_err().to_string();
        assert!(e.starts_with("YAML document 2"), "{e}");
    }
}

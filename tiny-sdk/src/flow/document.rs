use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Node, NodeSpec, RawJson};
use crate::error::{Error, Result};

/// A flow: nodes and the signals that start it, as read from YAML.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flow {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// Signals to deliver once the nodes run.
    pub signals: Vec<Signal>,
}

/// A TinySignal: `data` for `node:port`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Signal {
    /// The signal's name.
    pub name: String,
    /// Target node.
    pub node: String,
    /// Target port.
    pub port: String,
    /// Payload.
    pub data: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Document {
    kind: String,
    #[serde(default)]
    metadata: Metadata,
    #[serde(default)]
    spec: serde_json::Value,
    #[serde(default)]
    status: Option<serde_json::Value>,
}

#[derive(Deserialize, Default)]
struct Metadata {
    #[serde(default)]
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct SignalSpec {
    node: String,
    port: String,
    #[serde(default)]
    data: Option<RawJson>,
}

impl Flow {
    /// Reads Kubernetes-style YAML documents (`---`-separated): `TinyNode`s become
    /// nodes, `TinySignal`s signals; other kinds (TinyFlow, TinyProject...) are skipped.
    /// `configuration`, `schema` and `data` may be base64 (as stored by Kubernetes) or
    /// inline JSON/YAML.
    ///
    /// ```
    /// let flow = tiny_sdk::flow::Flow::from_yaml(r#"
    /// apiVersion: operator.tinysystems.io/v1alpha1
    /// kind: TinyNode
    /// metadata: { name: greeter }
    /// spec:
    ///   module: examples
    ///   component: hello
    /// "#).unwrap();
    /// assert_eq!(flow.nodes[0].name, "greeter");
    /// ```
    pub fn from_yaml(yaml: &str) -> Result<Flow> {
        let mut flow = Flow::default();
        for (i, doc) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
            let value = serde_yaml::Value::deserialize(doc)
                .map_err(|e| Error::permanent(format!("flow YAML document {}: {e}", i + 1)))?;
            if value.is_null() {
                continue;
            }
            let doc: Document = serde_yaml::from_value(value)
                .map_err(|e| Error::permanent(format!("flow YAML document {}: {e}", i + 1)))?;
            let at = |e: &dyn std::fmt::Display| {
                Error::permanent(format!(
                    "{} `{}` (document {}): {e}",
                    doc.kind,
                    doc.metadata.name,
                    i + 1
                ))
            };
            if doc.metadata.name.is_empty() && matches!(doc.kind.as_str(), "TinyNode" | "TinySignal") {
                return Err(at(&"metadata.name is missing"));
            }
            match doc.kind.as_str() {
                "TinyNode" => {
                    let spec: NodeSpec = serde_path_to_error::deserialize(doc.spec.clone()).map_err(|e| at(&e))?;
                    let metadata = doc
                        .status
                        .as_ref()
                        .and_then(|s| s.get("metadata"))
                        .and_then(|m| serde_json::from_value(m.clone()).ok())
                        .unwrap_or_default();
                    flow.nodes.push(Node {
                        name: doc.metadata.name,
                        namespace: doc.metadata.namespace,
                        labels: doc.metadata.labels,
                        spec,
                        metadata,
                    });
                }
                "TinySignal" => {
                    let spec: SignalSpec = serde_path_to_error::deserialize(doc.spec.clone()).map_err(|e| at(&e))?;
                    flow.signals.push(Signal {
                        name: doc.metadata.name,
                        node: spec.node,
                        port: spec.port,
                        data: spec.data.map(|d| d.0).unwrap_or_default(),
                    });
                }
                _ => {}
            }
        }
        Ok(flow)
    }
}

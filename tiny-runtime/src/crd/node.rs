use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tiny_sdk::flow::NodeSpec;

use super::EncodedJson;

/// One component instance in a flow.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.tinysystems.io",
    version = "v1alpha1",
    kind = "TinyNode",
    namespaced,
    status = "TinyNodeStatus",
    printcolumn = r#"{"name":"Component","type":"string","jsonPath":".spec.component"}"#,
    printcolumn = r#"{"name":"Module","type":"string","jsonPath":".spec.module"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.status"}"#,
    printcolumn = r#"{"name":"Error","type":"boolean","jsonPath":".status.error","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(transparent)]
pub struct TinyNodeSpec(
    /// The SDK's node spec: one definition of the fields for the engine, the harness
    /// and the CRD, so they cannot drift apart.
    pub NodeSpec,
);

impl std::ops::Deref for TinyNodeSpec {
    type Target = NodeSpec;
    fn deref(&self) -> &NodeSpec {
        &self.0
    }
}

impl std::ops::DerefMut for TinyNodeSpec {
    fn deref_mut(&mut self) -> &mut NodeSpec {
        &mut self.0
    }
}

impl From<TinyNodeSpec> for NodeSpec {
    fn from(s: TinyNodeSpec) -> Self {
        s.0
    }
}

impl From<NodeSpec> for TinyNodeSpec {
    fn from(s: NodeSpec) -> Self {
        TinyNodeSpec(s)
    }
}

/// What the module reports about a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TinyNodeStatus {
    /// The spec generation this status describes.
    #[serde(default)]
    pub observed_generation: i64,
    /// The module running the node.
    #[serde(default)]
    pub module: ModuleStatus,
    /// The component's catalogue information.
    #[serde(default)]
    pub component: ComponentStatus,
    /// Ports, sorted by name, with schemas and current configuration.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortStatus>,
    /// `OK` or the error message.
    #[serde(default)]
    pub status: String,
    /// Component-persisted state.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    /// Whether `status` is an error.
    #[serde(default)]
    pub error: bool,
    /// Heartbeat of the module that runs the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// Kubernetes-style conditions; `Ready` says whether the node runs its spec.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `status.module`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleStatus {
    /// Module name.
    #[serde(default)]
    pub name: String,
    /// Module version.
    #[serde(default)]
    pub version: String,
    /// Version of the SDK the module was built with.
    #[serde(default)]
    pub sdk_version: String,
}

/// `status.component`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentStatus {
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Longer help.
    #[serde(default)]
    pub info: String,
    /// Tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// `status.ports[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortStatus {
    /// Port name.
    pub name: String,
    /// Label.
    #[serde(default)]
    pub label: String,
    /// 0=Top, 1=Right, 2=Bottom, 3=Left.
    #[serde(default)]
    pub position: i32,
    /// `true` for outputs.
    #[serde(default)]
    pub source: bool,
    /// JSON Schema (base64 of JSON, as the Go SDK's `[]byte`; decoded on demand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<EncodedJson>,
    /// Current configuration (base64 of JSON; decoded on demand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<EncodedJson>,
}

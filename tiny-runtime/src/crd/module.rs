use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tiny_sdk::flow::RawJson;

/// A module: its image, and (in status) where to reach it and what it offers.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.tinysystems.io",
    version = "v1alpha1",
    kind = "TinyModule",
    namespaced,
    status = "TinyModuleStatus",
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Address","type":"string","jsonPath":".status.addr"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TinyModuleSpec {
    /// `name:version`.
    #[serde(default)]
    pub image: String,
}

/// Written by the module's leader.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TinyModuleStatus {
    /// gRPC address other modules call.
    #[serde(default)]
    pub addr: String,
    /// Module name.
    #[serde(default)]
    pub name: String,
    /// Module version.
    #[serde(default)]
    pub version: String,
    /// SDK version.
    #[serde(default)]
    pub sdk_version: String,
    /// The components it offers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<ModuleComponent>,
    /// Kubernetes-style conditions; `Permitted` is `False` while the API server refuses
    /// an operation the module needs (a missing RBAC rule), saying which.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `status.components[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleComponent {
    /// Component name.
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Help text.
    #[serde(default)]
    pub info: String,
    /// Tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Ports with their schemas (system ports `_reconcile` and `_client` excluded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ModulePort>,
}

/// `status.components[].ports[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModulePort {
    /// Port name.
    pub name: String,
    /// Label.
    #[serde(default)]
    pub label: String,
    /// `true` for outputs.
    #[serde(default)]
    pub source: bool,
    /// 0=Top, 1=Right, 2=Bottom, 3=Left.
    #[serde(default)]
    pub position: i32,
    /// JSON Schema (base64 of JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<RawJson>,
}

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A flow: a name, a `project-name` label and a `flow-description` annotation; nodes
/// point to it with the `flow-name` label and an owner reference.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.tinysystems.io",
    version = "v1alpha1",
    kind = "TinyFlow",
    namespaced,
    status = "TinyFlowStatus"
)]
pub struct TinyFlowSpec {}

/// Empty, as in the Go SDK.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TinyFlowStatus {}

/// A project: flows point to it with the `project-name` label and an owner reference.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.tinysystems.io",
    version = "v1alpha1",
    kind = "TinyProject",
    namespaced,
    status = "TinyProjectStatus"
)]
pub struct TinyProjectSpec {
    /// Markdown description.
    #[serde(default)]
    pub description: String,
}

/// Empty, as in the Go SDK.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TinyProjectStatus {}

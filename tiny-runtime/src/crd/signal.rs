use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tiny_sdk::flow::RawJson;

/// Sends `data` to `node:port` once (the Go SDK's TinySignal, kept in tiny).
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.tinysystems.io",
    version = "v1alpha1",
    kind = "TinySignal",
    namespaced,
    status = "TinySignalStatus",
    printcolumn = r#"{"name":"Node","type":"string","jsonPath":".spec.node"}"#,
    printcolumn = r#"{"name":"Port","type":"string","jsonPath":".spec.port"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TinySignalSpec {
    /// Target node.
    pub node: String,
    /// Target port.
    pub port: String,
    /// Payload (base64 of JSON, or inline JSON when written by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<RawJson>,
    /// Trace to continue, if any.
    #[serde(default, rename = "traceID", skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Edge the signal stands for, if any.
    #[serde(default, rename = "edgeID", skip_serializing_if = "Option::is_none")]
    pub edge_id: Option<String>,
}

/// Delivery progress, written by the leader of the node's module.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TinySignalStatus {
    /// `Delivering` (claimed by `claimedBy`), `Delivered` or `Failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The replica that claimed the delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// Why delivery failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The flow's reply (base64 of JSON), when it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<RawJson>,
    /// When it was delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<Time>,
}

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// While one exists for a flow, the module records each hop of that flow in its status.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.tinysystems.io",
    version = "v1alpha1",
    kind = "TinyTracker",
    namespaced,
    status = "TinyTrackerStatus",
    printcolumn = r#"{"name":"Flow","type":"string","jsonPath":".spec.flowID"}"#,
    printcolumn = r#"{"name":"Hops","type":"integer","jsonPath":".status.total"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TinyTrackerSpec {
    /// The flow to track (the `tinysystems.io/flow-name` label of its nodes).
    #[serde(rename = "flowID")]
    pub flow_id: String,
    /// How many hops to keep (oldest dropped first); at most 500, default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_hops: Option<u32>,
}

/// The most recent hops.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TinyTrackerStatus {
    /// Hops seen since the tracker started (including dropped ones).
    #[serde(default)]
    pub total: u64,
    /// The latest hops, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hops: Vec<TrackedHop>,
}

/// One hop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrackedHop {
    /// Node.
    pub node: String,
    /// Port.
    pub port: String,
    /// `node:port` it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// When it started.
    pub time: Time,
    /// Handler time, including everything downstream, in microseconds.
    pub duration_us: u64,
    /// The error, if it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The input, as JSON text cut to 256 bytes.
    #[serde(default)]
    pub data: String,
    /// Edge expressions that failed making the input (each gave `null`, nothing, or its
    /// `{{...}}` text in a longer string, and the hop went on), one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expression_errors: Vec<String>,
}

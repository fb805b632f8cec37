use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::raw::RawJson;

/// A node: one component instance in a flow (the TinyNode resource, minus status).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Node {
    /// Unique name (the resource's `metadata.name`).
    pub name: String,
    /// Namespace (empty in-process).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Labels (`tinysystems.io/flow-name`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// What to run and how it is wired.
    pub spec: NodeSpec,
    /// Component-persisted state (`status.metadata`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// `TinyNode.spec`: field names and shapes as in the Go SDK.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    /// Module name.
    pub module: String,
    /// Component name inside the module.
    pub component: String,
    /// Per-port configuration: settings (empty `from`) and edge mappings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortConfig>,
    /// Outgoing edges.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<Edge>,
}

/// `TinyNodeSpec.ports[]`: a port's own configuration (empty `from`) or the mapping of
/// the edge arriving from `from`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PortConfig {
    /// `"<sourceNode>:<sourcePort>"` for an edge mapping; empty for the port's own.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from: String,
    /// The port on this node.
    pub port: String,
    /// The JSON Schema the editor authored for this port or edge (on the cluster, base64
    /// of the JSON, as the Go SDK's `[]byte`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<RawJson>,
    /// JSON whose strings may hold `{{...}}` expressions (on the cluster, base64 of the
    /// JSON, as the Go SDK's `[]byte`: `<module> render` turns inline JSON into that).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<RawJson>,
    /// The flow that authored this configuration.
    #[serde(default, rename = "flowID", skip_serializing_if = "String::is_empty")]
    pub flow_id: String,
}

/// `TinyNodeSpec.edges[]`: from one of this node's ports to `<node>:<port>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    /// Edge id, usually a UUID.
    pub id: String,
    /// The source port on this node.
    pub port: String,
    /// `"<targetNode>:<targetPort>"`.
    pub to: String,
    /// The flow the edge belongs to.
    #[serde(default, rename = "flowID")]
    pub flow_id: String,
    /// How to retry a failed hop along this edge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<RetryPolicy>,
}

/// `EdgeRetryPolicy`: how a failed hop is retried. Absent fields take the defaults
/// (3 attempts, 1 s doubling to a 30 s cap); permanent errors are never retried.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    /// Attempts in all, including the first (1 = no retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// Delay before the first retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_delay_ms: Option<u64>,
    /// Growth factor of the delay, as a string so YAML stays clean (`"2.0"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_coefficient: Option<String>,
    /// Cap of the delay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delay_ms: Option<u64>,
    /// Deadline for each attempt (0 or absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Error codes that stop retrying at once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub non_retryable_error_codes: Vec<String>,
}

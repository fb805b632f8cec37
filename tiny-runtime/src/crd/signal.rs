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
    /// Payload: base64 of JSON, as the API server takes a `[]byte` field (`<module> render`
    /// turns a file that writes it as inline JSON into that).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<RawJson>,
    /// Trace to continue, if any.
    #[serde(default, rename = "traceID", skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Edge the signal stands for, if any.
    #[serde(default, rename = "edgeID", skip_serializing_if = "Option::is_none")]
    pub edge_id: Option<String>,
}

/// Where a TinySignal's delivery stands: its `status.phase`.
///
/// ```
/// use tiny_runtime::crd::SignalPhase;
/// assert_eq!(SignalPhase::Delivered.as_str(), "Delivered");
/// assert_eq!(SignalPhase::parse("Failed"), Some(SignalPhase::Failed));
/// assert!(SignalPhase::Failed.is_final() && !SignalPhase::Delivering.is_final());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignalPhase {
    /// Claimed by a leader (`claimedBy`), being delivered.
    Delivering,
    /// Done; `reply` holds the flow's reply.
    Delivered,
    /// Not deliverable, or its delivery was interrupted; `error` says why.
    Failed,
}

impl SignalPhase {
    /// The phase as the status writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            SignalPhase::Delivering => "Delivering",
            SignalPhase::Delivered => "Delivered",
            SignalPhase::Failed => "Failed",
        }
    }

    /// The phase a status value names (`None` for anything else).
    pub fn parse(text: &str) -> Option<Self> {
        [SignalPhase::Delivering, SignalPhase::Delivered, SignalPhase::Failed]
            .into_iter()
            .find(|p| p.as_str() == text)
    }

    /// `Delivered` or `Failed`: the signal will not change any more.
    pub const fn is_final(self) -> bool {
        matches!(self, SignalPhase::Delivered | SignalPhase::Failed)
    }
}

impl std::fmt::Display for SignalPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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

impl TinySignalStatus {
    /// [`phase`](Self::phase) read as a [`SignalPhase`] (`None` without one, or for a
    /// value tiny does not write).
    pub fn signal_phase(&self) -> Option<SignalPhase> {
        self.phase.as_deref().and_then(SignalPhase::parse)
    }
}

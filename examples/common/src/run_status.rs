//! `run_status`: what became of a durable run, read from its ledger.

use serde_json::Value;
use tiny_sdk::{prelude::*, run};

/// What `request` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct RunStatusRequest {
    /// Passed through to the response.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// The run to ask about (what `run_start` answered).
    #[serde(rename = "runID")]
    #[tiny(title = "Run ID")]
    pub run_id: String,
}

/// One step of the run, as its record has it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct RunStep {
    /// The step's key.
    #[serde(rename = "stepKey")]
    pub step_key: String,
    /// The node that ran it.
    pub node: String,
    /// `done` or `failed`.
    pub status: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// When it ended (RFC 3339).
    #[serde(rename = "completedAt")]
    pub completed_at: String,
}

/// What `response` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct RunStatusResponse {
    /// The request's context (left out when it has none, as Go's).
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// The run asked about.
    #[serde(rename = "runID")]
    pub run_id: String,
    /// Whether any step of the run is recorded.
    pub found: bool,
    /// Found, nothing pending, nothing failed.
    pub complete: bool,
    /// Whether a step failed.
    pub failed: bool,
    /// Hops emitted and not recorded yet.
    #[serde(rename = "pendingSteps")]
    pub pending_steps: usize,
    /// The recorded steps, by key (left out when there are none, as Go's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<RunStep>,
}

/// Reports on a durable run: found, complete, failed, pending steps and each step's
/// record, read from the run ledger (`TINY_EXEC` on the JetStream transport).
#[derive(Component, Default, Debug)]
#[component(name = "run_status", description = "Run Status", tags("run", "status"))]
pub struct RunStatus {
    #[port(position = Left)]
    request: Input<RunStatusRequest>,
    #[port(position = Right)]
    response: Output<RunStatusResponse>,
}

impl RunStatus {
    async fn on_request(&self, ctx: &Ctx<Self>, msg: RunStatusRequest) -> Result<Reply> {
        if msg.run_id.trim().is_empty() {
            return Err(Error::permanent("runID is required: the id `run_start` answered with"));
        }
        let Some(store) = ctx.run_store() else {
            return Err(Error::permanent(
                "no run ledger here: durable runs need the JetStream transport (TINY_NATS_TRANSPORT=jetstream)",
            ));
        };
        let status = run::run_status(&*store, &msg.run_id).await?;
        let steps = status
            .steps
            .into_iter()
            .map(|s| RunStep {
                step_key: s.step_key,
                node: s.node,
                status: if s.status == run::StepStatus::Failed {
                    "failed"
                } else {
                    "done"
                }
                .to_owned(),
                error: s.error.unwrap_or_default(),
                completed_at: s.completed_at.to_string(),
            })
            .collect();
        self.response
            .emit(
                ctx,
                RunStatusResponse {
                    context: msg.context,
                    run_id: msg.run_id,
                    found: status.found,
                    complete: status.complete,
                    failed: status.failed,
                    pending_steps: status.pending_steps,
                    steps,
                },
            )
            .await
    }
}

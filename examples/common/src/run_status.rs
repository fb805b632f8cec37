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
    /// What the run's ledger says: the SDK's own answer, its fields at this level
    /// (`found`, `complete`, `failed`, `pendingSteps`, `steps`), as Go's.
    #[serde(flatten)]
    pub status: run::RunStatus,
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
        self.response
            .emit(
                ctx,
                RunStatusResponse {
                    context: msg.context,
                    run_id: msg.run_id,
                    status,
                },
            )
            .await
    }
}

//! `run_start`: starts a durable run and answers at once with its id (Go's front
//! door: the chain behind `out` runs durably, the caller gets `started`).

use serde_json::Value;
use tiny_sdk::prelude::*;

/// What `in` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct RunStartIn {
    /// What the run starts with: sent on Out.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// What `out` sends: the first hop of the run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct RunStartOut {
    /// The context, unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// What `started` answers with.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct RunStarted {
    /// The context, unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// The run's id: ask `run_status` about it.
    #[serde(rename = "runID")]
    #[tiny(title = "Run ID")]
    pub run_id: String,
}

/// Starts a durable run: emits the context on Out as the run's first hop (stored by
/// the broker; returns as soon as it is), then answers on Started with the run's id.
/// On the JetStream transport the chain behind Out survives a crash of any module
/// it crosses; elsewhere it runs as a classic chain, and Started waits for it.
#[derive(Component, Default, Debug)]
#[component(name = "run_start", description = "Start Run & Reply", tags("run", "reply"))]
pub struct RunStart {
    #[port(position = Left)]
    r#in: Input<RunStartIn>,
    #[port(position = Right)]
    out: Output<RunStartOut>,
    #[port(position = Bottom)]
    started: Output<RunStarted>,
}

impl RunStart {
    async fn on_in(&self, ctx: &Ctx<Self>, msg: RunStartIn) -> Result<Reply> {
        let (run, run_id) = ctx.begin_run();
        self.out
            .emit(
                &run,
                RunStartOut {
                    context: msg.context.clone(),
                },
            )
            .await?;
        self.started
            .emit(
                ctx,
                RunStarted {
                    context: msg.context,
                    run_id,
                },
            )
            .await
    }
}

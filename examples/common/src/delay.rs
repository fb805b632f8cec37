//! `delay`: a timed pause that blocks the caller.

use std::time::Duration;

use serde_json::Value;
use tiny_sdk::prelude::*;

/// What `in` takes.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
pub struct DelayRequest {
    /// Arbitrary message to be delayed.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// How long to wait, in milliseconds.
    #[tiny(title = "Delay (ms)")]
    pub delay: i64,
}

impl Default for DelayRequest {
    fn default() -> Self {
        Self {
            context: Value::Null,
            delay: 1000,
        }
    }
}

/// What `out` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct DelayOut {
    /// Passthrough: the message, unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// Timed pause: waits `delay` ms (the caller waits too), then emits the context on
/// Out and answers with what the flow downstream answered.
#[derive(Component, Default, Debug)]
#[component(name = "delay", description = "Delay", tags("SDK"))]
pub struct Delay {
    #[port(position = Left)]
    r#in: Input<DelayRequest>,
    #[port(position = Right)]
    out: Output<DelayOut>,
}

#[handlers]
impl Delay {
    async fn on_in(&self, ctx: &Ctx<Self>, msg: DelayRequest) -> Result<Reply> {
        let Ok(ms) = u64::try_from(msg.delay) else {
            return Err(Error::permanent(format!(
                "invalid delay {} ms: it must be above 0",
                msg.delay
            )));
        };
        if ms == 0 {
            return Err(Error::permanent("invalid delay 0 ms: it must be above 0"));
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(ms)) => {}
            () = ctx.cancelled() => return Err(Error::permanent("the delay was cancelled by its caller")),
        }
        self.out.emit(ctx, DelayOut { context: msg.context }).await
    }
}

//! `async`: answers at once and passes the message on in the background.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use tiny_sdk::prelude::*;
use tokio::sync::Semaphore;

/// The default (and the value of 0): 100 messages in flight at most.
const DEFAULT_CONCURRENCY: usize = 100;

/// Settings, as Go's async.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct AsyncSettings {
    /// How many messages may go on in the background at once; 0 means the default (100).
    #[tiny(title = "Max Concurrency")]
    pub max_concurrency: i64,
}

impl Default for AsyncSettings {
    fn default() -> Self {
        Self {
            max_concurrency: DEFAULT_CONCURRENCY as i64,
        }
    }
}

/// What `in` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct AsyncIn {
    /// Arbitrary message.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// What `out` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct AsyncOut {
    /// Passthrough: the message, unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// Non-blocking pass-through: answers at once and emits on Out in the background.
/// When `maxConcurrency` messages are already on their way it passes the message on
/// in the caller's time instead (backpressure).
#[derive(Component, Default, Debug)]
#[component(name = "async", description = "Async", tags("SDK"), settings = AsyncSettings, hooks)]
pub struct Async {
    #[port(position = Left)]
    r#in: Input<AsyncIn>,
    #[port(position = Right)]
    out: Output<AsyncOut>,
    /// Slots for background emits; replaced when the settings change, so messages
    /// already on their way keep (and release) the slots of the old limit.
    slots: Mutex<Option<Arc<Semaphore>>>,
}

#[handlers]
impl Async {
    fn slots(&self, settings: &AsyncSettings) -> Arc<Semaphore> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots
            .get_or_insert_with(|| Arc::new(Semaphore::new(limit(settings))))
            .clone()
    }

    async fn on_in(&self, ctx: &Ctx<Self>, msg: AsyncIn) -> Result<Reply> {
        let out = AsyncOut { context: msg.context };
        match self.slots(ctx.settings()).try_acquire_owned() {
            Ok(slot) => {
                let port = self.out;
                ctx.detach(move |ctx| async move {
                    let _slot = slot;
                    port.emit(&ctx, out).await.map(drop)
                });
                Ok(Reply::empty())
            }
            Err(_) => self.out.emit(ctx, out).await,
        }
    }
}

fn limit(settings: &AsyncSettings) -> usize {
    usize::try_from(settings.max_concurrency)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_CONCURRENCY)
}

impl Hooks for Async {
    async fn on_settings(&self, _: &Ctx<Self>, settings: &AsyncSettings) -> Result<()> {
        *self.slots.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(Semaphore::new(limit(settings))));
        Ok(())
    }
}

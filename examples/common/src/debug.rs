//! `debug`: shows the last message it received in its `_control` view; until then,
//! and again after its settings change, the settings' context (as Go's).

use serde_json::Value;
use tiny_sdk::prelude::*;

/// Settings, as Go's debug.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct DebugSettings {
    /// Component message.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// The dashboard: the last message, read-only.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct DebugControl {
    /// The last message received.
    #[tiny(title = "Context", readonly)]
    #[serde(default)]
    pub context: Value,
    /// Messages received since the node loaded on this replica (tiny only).
    #[tiny(title = "Received", readonly)]
    #[serde(default)]
    pub received: u64,
}

/// Message sink: shows the last message it received in its Control view.
#[derive(Component, Default, Debug)]
#[component(name = "debug", description = "Debug", tags("SDK"), settings = DebugSettings, control = DebugControl, hooks)]
pub struct Debug {
    /// Anything: the whole message is shown.
    #[port(position = Left)]
    r#in: Input<Value>,
    received: std::sync::atomic::AtomicU64,
}

#[handlers]
impl Debug {
    async fn on_in(&self, ctx: &Ctx<Self>, msg: Value) -> Result<()> {
        let received = self.received.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        ctx.show_control(&DebugControl { context: msg, received });
        Ok(())
    }
}

impl Hooks for Debug {
    async fn on_settings(&self, ctx: &Ctx<Self>, settings: &DebugSettings) -> Result<()> {
        // As Go: the view shows the settings' context until a message comes, and
        // new settings replace the message shown.
        ctx.show_control(&DebugControl {
            context: settings.context.clone(),
            received: self.received.load(std::sync::atomic::Ordering::Relaxed),
        });
        Ok(())
    }
}

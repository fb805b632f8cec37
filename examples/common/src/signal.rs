//! `signal`: a Send button that starts a flow.

use serde_json::Value;
use tiny_sdk::{PortShape, prelude::*};

/// Settings, as Go's signal.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct SignalSettings {
    /// Arbitrary message to send.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// The dashboard: the context to send and a Send button.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct SignalControl {
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    #[tiny(title = "Send", format = "button")]
    #[serde(default)]
    pub send: bool,
}

/// Fire-and-forget flow trigger: Send emits the context on Out once, without waiting
/// for the flow; there is nothing to stop.
#[derive(Component, Default, Debug)]
#[component(name = "signal", description = "Signal", tags("SDK"), settings = SignalSettings, control = SignalControl, hooks)]
pub struct Signal {
    /// The context, on each Send.
    #[port(position = Right)]
    out: Output<Value>,
}

impl Hooks for Signal {
    async fn on_control(&self, ctx: &Ctx<Self>, control: SignalControl) -> Result<Reply> {
        if !ctx.is_leader() || !control.send {
            return Ok(Reply::empty());
        }
        let payload = if control.context.is_null() {
            ctx.settings().context.clone()
        } else {
            control.context
        };
        let out = self.out;
        // The press is answered at once; the flow runs on its own.
        ctx.detach(move |ctx| async move { out.emit(&ctx, payload).await.map(drop) });
        Ok(Reply::empty())
    }

    fn shape_port(&self, settings: &SignalSettings, port: &mut PortShape) {
        if port.name == tiny_sdk::contract::port::CONTROL {
            port.configuration = serde_json::json!({ "context": settings.context, "send": false });
        }
    }
}

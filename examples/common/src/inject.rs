//! `inject`: configuration sent once, attached to every message that passes.
//!
//! The configuration is kept in node state under Go's key (`_state/config` in
//! `status.metadata`), read at message time, so that it survives restarts and a
//! node moved from the Go module keeps it.

use serde_json::Value;
use tiny_sdk::prelude::*;

/// The state key of the stored configuration (Go's).
pub const CONFIG_KEY: &str = "config";

/// Settings, as Go's inject.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct InjectSettings {
    /// Messages arriving before a configuration is set go to the error port instead
    /// of the output.
    #[tiny(title = "Config Required")]
    pub config_required: bool,
}

/// What `config` takes: the data to store.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct InjectConfig {
    /// Configuration data to inject into messages.
    #[tiny(configurable, title = "Data")]
    #[serde(default)]
    pub data: Value,
}

/// What `message` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct InjectMessage {
    /// Passthrough context for correlation.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// What `output` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct InjectOutput {
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// The injected configuration (null when none was set).
    #[tiny(title = "Config")]
    #[serde(default)]
    pub config: Value,
}

/// What `error` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct InjectError {
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    #[tiny(title = "Error")]
    pub error: String,
}

/// Injects stored configuration into passing messages: send a config once, and
/// every message through Message comes out with it on Output.
#[derive(Component, Default, Debug)]
#[component(
    name = "inject",
    description = "Inject",
    info = "Injects stored configuration into passing messages. Send config once, then every message passing through gets it attached. Config persists across pod restarts in the node's state.",
    tags("Data", "Config", "Enrich"),
    settings = InjectSettings
)]
pub struct Inject {
    #[port(label = "Config", position = Top)]
    config: Input<InjectConfig>,
    #[port(label = "Message", position = Left)]
    message: Input<InjectMessage>,
    #[port(label = "Output", position = Right)]
    output: Output<InjectOutput>,
    #[port(label = "Error", position = Bottom, enabled_by = config_required)]
    error: Output<InjectError>,
}

#[handlers]
impl Inject {
    async fn on_config(&self, ctx: &Ctx<Self>, msg: InjectConfig) -> Result<()> {
        ctx.state().set(CONFIG_KEY, &msg.data).await
    }

    async fn on_message(&self, ctx: &Ctx<Self>, msg: InjectMessage) -> Result<Reply> {
        // A stored value that is not JSON (another writer's bytes) counts as none, as
        // in Go.
        let config = ctx
            .state()
            .get::<Value>(CONFIG_KEY)
            .ok()
            .flatten()
            .unwrap_or(Value::Null);
        if config.is_null() && ctx.settings().config_required {
            let error = InjectError {
                context: msg.context,
                error: "config not set".into(),
            };
            return self.error.emit(ctx, error).await;
        }
        self.output
            .emit(
                ctx,
                InjectOutput {
                    context: msg.context,
                    config,
                },
            )
            .await
    }
}

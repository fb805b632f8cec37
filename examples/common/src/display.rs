//! `display`: one piece of markdown on the dashboard.
//!
//! The last text shown is kept in node state under Go's key (`_state/text`, the
//! text's own bytes, as Go writes them), so a panel keeps its answer across
//! restarts; until a message has come, the settings' text shows.

use tiny_sdk::{NodeState, prelude::*};

/// The state key of the last text shown (Go's).
pub const TEXT_KEY: &str = "text";

/// Settings, as Go's display.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
pub struct DisplaySettings {
    /// Shown until a message arrives: a readme or a placeholder that ships with the
    /// flow.
    #[tiny(title = "Text", format = "markdown")]
    pub text: String,
}

/// What `in` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct DisplayIn {
    /// What to show; markdown is rendered.
    #[tiny(title = "Text")]
    #[serde(default)]
    pub text: String,
}

/// The dashboard: the text, rendered, not editable.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct DisplayControl {
    #[tiny(title = "", description = "", readonly, format = "markdown")]
    #[serde(default)]
    pub text: String,
}

/// Shows one piece of text on the dashboard, rendered as markdown; a sink.
#[derive(Component, Default, Debug)]
#[component(
    name = "display",
    description = "Display",
    info = "Shows one piece of text on the dashboard, rendered as markdown. Wire the value a person reads into Text; for a panel of written text, wire nothing and set settings.text instead. Has no output ports.",
    tags("SDK", "dashboard"),
    settings = DisplaySettings,
    control = DisplayControl,
    hooks
)]
pub struct Display {
    #[port(label = "In", position = Left)]
    r#in: Input<DisplayIn>,
}

/// What to show: the last text received, else the authored one. A panel that has
/// shown an answer never goes back to its placeholder.
fn shown(state: &NodeState, settings: &DisplaySettings) -> String {
    match state.get_bytes(TEXT_KEY) {
        Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => settings.text.clone(),
    }
}

#[handlers]
impl Display {
    async fn on_in(&self, ctx: &Ctx<Self>, msg: DisplayIn) -> Result<()> {
        // Raw bytes, not JSON: Go's layout, so a node either module ran reads the same.
        ctx.state().set_bytes(TEXT_KEY, msg.text.as_bytes()).await?;
        ctx.show_control(&DisplayControl { text: msg.text });
        Ok(())
    }
}

impl Hooks for Display {
    async fn on_settings(&self, ctx: &Ctx<Self>, settings: &DisplaySettings) -> Result<()> {
        ctx.show_control(&DisplayControl {
            text: shown(ctx.state(), settings),
        });
        Ok(())
    }

    async fn on_reconcile(&self, ctx: &Ctx<Self>, _: &tiny_sdk::flow::Node) -> Result<()> {
        // Another replica may have shown a newer text: the view follows the state.
        ctx.show_control(&DisplayControl {
            text: shown(ctx.state(), ctx.settings()),
        });
        Ok(())
    }
}

//! `form`: a form on the dashboard that reports its outcome in place.
//!
//! Submit emits the filled values on Out; what the flow sends to Result shows
//! under the button. The result line and the values the flow writes back into the
//! fields (`prefill`) are kept in node state under Go's keys (`_state/result`, the
//! text's bytes; `_state/prefill`, JSON), so the widget still shows them after a
//! restart.

use serde_json::Value;
use tiny_sdk::{NodeState, prelude::*};

/// The state key of the result line (Go's).
pub const RESULT_KEY: &str = "result";
/// The state key of the values written back into the fields (Go's).
pub const PREFILL_KEY: &str = "prefill";

/// Settings, as Go's form.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
pub struct FormSettings {
    /// The form's fields.
    #[tiny(configurable, title = "Form")]
    pub context: Value,
}

/// The widget: the form, Submit, and the result line under it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct FormControl {
    #[tiny(configurable, title = "Form")]
    #[serde(default)]
    pub context: Value,
    #[tiny(title = "Submit", format = "button")]
    #[serde(default)]
    pub submit: bool,
    #[tiny(title = "", description = "", readonly, format = "markdown")]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub result: String,
}

/// What `result` takes: the flow's answer to a submission.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct FormResult {
    /// Outcome shown under the button; markdown is rendered.
    #[tiny(title = "Text")]
    #[serde(default)]
    pub text: String,
    /// Values written back into the form's fields; kept until overwritten.
    #[tiny(title = "Prefill")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub prefill: Value,
}

/// A form widget that reports its outcome in place: Submit emits the values on Out;
/// what the flow writes to Result appears under the button.
#[derive(Component, Default, Debug)]
#[component(
    name = "form",
    description = "Form",
    info = "A form widget that reports its outcome in place: a person fills the configured fields and presses Submit, the values emit on Out, and whatever the flow writes to Result appears under the button. The result line persists across restarts.",
    tags("SDK", "dashboard"),
    settings = FormSettings,
    control = FormControl,
    hooks
)]
pub struct Form {
    /// The filled values, on each Submit.
    #[port(label = "Out", position = Right)]
    out: Output<Value>,
    #[port(label = "Result", position = Left)]
    result: Input<FormResult>,
}

/// The view: the prefill the flow wrote back over the authored form, and the
/// result line.
fn view(state: &NodeState, settings: &FormSettings) -> FormControl {
    let prefill = state.get::<Value>(PREFILL_KEY).ok().flatten().filter(|v| !v.is_null());
    let result = match state.get_bytes(RESULT_KEY) {
        Ok(Some(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
        _ => String::new(),
    };
    FormControl {
        context: prefill.unwrap_or_else(|| settings.context.clone()),
        submit: false,
        result,
    }
}

#[handlers]
impl Form {
    /// Not leader-gated: results reach any replica and meet in the node's state.
    async fn on_result(&self, ctx: &Ctx<Self>, msg: FormResult) -> Result<()> {
        let state = ctx.state();
        state.set_bytes(RESULT_KEY, msg.text.as_bytes()).await?;
        if !msg.prefill.is_null() {
            state.set(PREFILL_KEY, &msg.prefill).await?;
        }
        ctx.show_control(&view(state, ctx.settings()));
        Ok(())
    }
}

impl Hooks for Form {
    async fn on_settings(&self, ctx: &Ctx<Self>, settings: &FormSettings) -> Result<()> {
        ctx.show_control(&view(ctx.state(), settings));
        Ok(())
    }

    async fn on_reconcile(&self, ctx: &Ctx<Self>, _: &tiny_sdk::flow::Node) -> Result<()> {
        ctx.show_control(&view(ctx.state(), ctx.settings()));
        Ok(())
    }

    async fn on_control(&self, ctx: &Ctx<Self>, control: FormControl) -> Result<Reply> {
        if !ctx.is_leader() || !control.submit {
            return Ok(Reply::empty());
        }
        let values = if control.context.is_null() {
            ctx.settings().context.clone()
        } else {
            control.context
        };
        // The last result described the last submission: cleared while this one
        // runs, so that it cannot read as this one's outcome.
        ctx.state().delete(RESULT_KEY).await?;
        ctx.show_control(&view(ctx.state(), ctx.settings()));
        let out = self.out;
        ctx.detach(move |ctx| async move { out.emit(&ctx, values).await.map(drop) });
        Ok(Reply::empty())
    }
}

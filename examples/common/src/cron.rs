//! `cron`: emits its context on a cron schedule between Start and Stop.
//!
//! Like the ticker, the loop is leader-only node work restarted from node state by
//! the next leader. Patterns have five fields (minute to weekday), as Go's; a sixth,
//! leading seconds field and `@hourly`-style aliases are accepted too.

use std::str::FromStr as _;

use serde_json::Value;
use tiny_sdk::{PortShape, flow::Node, prelude::*};

/// Settings, as Go's cron.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
pub struct CronSettings {
    /// Arbitrary message to send on each scheduled execution.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// Cron expression: minute hour day-of-month month day-of-week, e.g. `*/5 * * * *`.
    #[tiny(title = "Schedule")]
    pub schedule: String,
}

impl Default for CronSettings {
    fn default() -> Self {
        Self {
            context: Value::Null,
            schedule: "*/1 * * * *".into(),
        }
    }
}

/// The dashboard: Start while stopped; Stop, the next run, while running.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct CronControl {
    #[tiny(title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// Cron expression.
    #[tiny(title = "Schedule")]
    #[serde(default)]
    pub schedule: String,
    #[tiny(title = "Next Run", readonly)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_run: Option<String>,
    #[tiny(title = "Status", readonly)]
    #[serde(default)]
    pub status: String,
    #[tiny(title = "Start", format = "button")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<bool>,
    #[tiny(title = "Stop", format = "button")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<bool>,
}

/// Scheduled emitter: Start emits the context on Out at each time the schedule gives
/// (the first at the first scheduled time); Stop ends it. It survives restarts and
/// leadership changes.
#[derive(Component, Default, Debug)]
#[component(name = "cron", description = "Cron", tags("SDK"), settings = CronSettings, control = CronControl, hooks)]
pub struct Cron {
    /// The context, at each scheduled time.
    #[port(position = Right)]
    out: Output<Value>,
    /// When the loop runs next (for the view).
    next: std::sync::Arc<std::sync::Mutex<Option<String>>>,
}

const RUNNING: &str = "running";
const CONTEXT: &str = "context";
const SCHEDULE: &str = "schedule";
const ERROR: &str = "error";
const WORK: &str = "cron";

/// Parses a schedule, saying what is wrong with it.
pub fn parse(schedule: &str) -> std::result::Result<croner::Cron, Error> {
    croner::Cron::from_str(schedule.trim()).map_err(|e| Error::permanent(format!("invalid schedule {schedule:?}: {e}")))
}

impl Cron {
    fn show(&self, ctx: &Ctx<Self>) {
        Self::view(ctx, &self.next);
    }

    /// Shows the view for the state the node is in (also from the loop, which has
    /// no `self`, each time the next run changes).
    fn view(ctx: &Ctx<Self>, next: &std::sync::Mutex<Option<String>>) {
        let running = ctx.work_running(WORK);
        let state = ctx.state();
        let error: Option<String> = state.get(ERROR).ok().flatten();
        ctx.show_control(&CronControl {
            context: state
                .get(CONTEXT)
                .ok()
                .flatten()
                .unwrap_or_else(|| ctx.settings().context.clone()),
            schedule: state
                .get(SCHEDULE)
                .ok()
                .flatten()
                .unwrap_or_else(|| ctx.settings().schedule.clone()),
            next_run: running.then(|| next.lock().ok().and_then(|n| n.clone()).unwrap_or_default()),
            status: match (running, error) {
                (true, _) => "Running".into(),
                (false, Some(e)) => e,
                (false, None) => "Not running".into(),
            },
            start: (!running).then_some(true),
            stop: running.then_some(true),
        });
    }

    fn start(&self, ctx: &Ctx<Self>, schedule: croner::Cron) {
        let out = self.out;
        let shown = self.next.clone();
        ctx.spawn_on_leader(WORK, move |ctx| async move {
            loop {
                let now = jiff::Zoned::now();
                let at = schedule
                    .find_next_occurrence(&now, false)
                    .map_err(|e| Error::permanent(format!("schedule has no next time: {e}")))?;
                if let Ok(mut n) = shown.lock() {
                    *n = Some(at.timestamp().to_string());
                }
                // As Go's status refresh after each tick: the view shows the next run.
                Cron::view(&ctx, &shown);
                let wait = at.timestamp().duration_since(now.timestamp());
                let wait = std::time::Duration::try_from(wait).unwrap_or_default();
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = ctx.cancelled() => return Ok(()),
                }
                let context: Value = ctx
                    .state()
                    .get(CONTEXT)?
                    .unwrap_or_else(|| ctx.settings().context.clone());
                if let Err(e) = out.emit(&ctx, context).await {
                    tracing::debug!(node = ctx.node_name(), error = %e, "scheduled emit failed downstream");
                }
            }
        });
        self.show(ctx);
    }
}

impl Hooks for Cron {
    async fn on_reconcile(&self, ctx: &Ctx<Self>, _: &Node) -> Result<()> {
        if ctx.state().get::<bool>(RUNNING)?.unwrap_or(false) && !ctx.work_running(WORK) {
            let schedule: String = ctx
                .state()
                .get(SCHEDULE)?
                .unwrap_or_else(|| ctx.settings().schedule.clone());
            match parse(&schedule) {
                Ok(s) => self.start(ctx, s),
                Err(e) => ctx.state().set(ERROR, &e.to_string()).await?,
            }
        }
        self.show(ctx);
        Ok(())
    }

    async fn on_settings(&self, ctx: &Ctx<Self>, _: &CronSettings) -> Result<()> {
        // The view shown at load predates the settings: show their schedule and context.
        self.show(ctx);
        Ok(())
    }

    async fn on_control(&self, ctx: &Ctx<Self>, control: CronControl) -> Result<Reply> {
        if !ctx.is_leader() {
            return Ok(Reply::empty());
        }
        if control.stop == Some(true) {
            ctx.stop_work(WORK);
            ctx.state().set(RUNNING, &false).await?;
            self.show(ctx);
            return Ok(Reply::empty());
        }
        if ctx.work_running(WORK) {
            return Ok(Reply::empty());
        }
        let schedule = if control.schedule.trim().is_empty() {
            ctx.settings().schedule.clone()
        } else {
            control.schedule.clone()
        };
        match parse(&schedule) {
            Err(e) => {
                // As Go: the reason shows as the status; the press itself succeeded.
                ctx.state().set(ERROR, &e.to_string()).await?;
            }
            Ok(parsed) => {
                let state = ctx.state();
                state.delete(ERROR).await?;
                state.set(SCHEDULE, &schedule).await?;
                if !control.context.is_null() {
                    state.set(CONTEXT, &control.context).await?;
                }
                state.set(RUNNING, &true).await?;
                self.start(ctx, parsed);
            }
        }
        self.show(ctx);
        Ok(Reply::empty())
    }

    fn shape_port(&self, _: &CronSettings, port: &mut PortShape) {
        if port.name == tiny_sdk::contract::port::CONTROL && port.configuration.get("stop").is_some() {
            for path in ["$.context", "$.schedule"] {
                if let Some(p) = tiny_sdk::schema::at_path_mut(&mut port.schema, path) {
                    p["readonly"] = Value::Bool(true);
                }
            }
        }
    }
}

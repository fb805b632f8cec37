//! `cron`: emits its context on a cron schedule between Start and Stop.
//!
//! Like the ticker, the loop is leader-only node work restarted by the next leader
//! from what the node keeps, under Go's cron's `status.metadata` keys:
//! `cron-running` (`"true"`), `cron-schedule` (the pattern), `cron-context` (JSON
//! text) and `cron-error` (why the last Start was refused). A cron that ran under
//! the Go module carries on when this module takes its node over. Nodes this module
//! ran before it used Go's keys have `_state/running`, `_state/schedule`,
//! `_state/context` and `_state/error`: read when Go's are absent, removed at the
//! next Start or Stop.
//!
//! Patterns have five fields (minute to weekday), as Go's; a sixth, leading seconds
//! field and `@hourly`-style aliases are accepted too.

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

/// Go's metadata keys (common-module `components/cron/cron.go`).
const RUNNING: &str = "cron-running";
const SCHEDULE: &str = "cron-schedule";
const CONTEXT: &str = "cron-context";
const ERROR: &str = "cron-error";
/// Node state keys this module used before it used Go's (read as a fallback).
const OLD_RUNNING: &str = "running";
const OLD_SCHEDULE: &str = "schedule";
const OLD_CONTEXT: &str = "context";
const OLD_ERROR: &str = "error";
const WORK: &str = "cron";

/// Whether the node says the cron runs: Go's key, else this module's old one.
fn says_running(ctx: &Ctx<Cron>) -> Result<bool> {
    if ctx.metadata().get(RUNNING).is_some() {
        return Ok(true);
    }
    Ok(ctx.state().get::<bool>(OLD_RUNNING)?.unwrap_or(false))
}

/// The running (or last) schedule, else the settings'.
fn schedule(ctx: &Ctx<Cron>) -> String {
    ctx.metadata()
        .get(SCHEDULE)
        .filter(|s| !s.is_empty())
        .or_else(|| ctx.state().get(OLD_SCHEDULE).ok().flatten())
        .unwrap_or_else(|| ctx.settings().schedule.clone())
}

/// What each run sends: the running context, else the settings'.
fn context(ctx: &Ctx<Cron>) -> Value {
    // As Go: a context that is empty or does not decode is not restored.
    ctx.metadata()
        .get(CONTEXT)
        .and_then(|raw| serde_json::from_str(&raw).ok())
        .or_else(|| ctx.state().get(OLD_CONTEXT).ok().flatten())
        .unwrap_or_else(|| ctx.settings().context.clone())
}

/// Why the last Start was refused, if it was.
fn error(ctx: &Ctx<Cron>) -> Option<String> {
    ctx.metadata()
        .get(ERROR)
        .or_else(|| ctx.state().get(OLD_ERROR).ok().flatten())
}

async fn forget_old_keys(ctx: &Ctx<Cron>) -> Result<()> {
    for key in [OLD_RUNNING, OLD_SCHEDULE, OLD_CONTEXT, OLD_ERROR] {
        ctx.state().delete(key).await?;
    }
    Ok(())
}

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
        let error = error(ctx);
        ctx.show_control(&CronControl {
            context: context(ctx),
            schedule: schedule(ctx),
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
                if let Err(e) = out.emit(&ctx, context(&ctx)).await {
                    tracing::debug!(node = ctx.node_name(), error = %e, "scheduled emit failed downstream");
                }
            }
        });
        self.show(ctx);
    }
}

impl Hooks for Cron {
    async fn on_reconcile(&self, ctx: &Ctx<Self>, _: &Node) -> Result<()> {
        if says_running(ctx)? && !ctx.work_running(WORK) {
            match parse(&schedule(ctx)) {
                Ok(s) => self.start(ctx, s),
                Err(e) => ctx.metadata().set(ERROR, &e.to_string()).await?,
            }
        }
        self.show(ctx);
        Ok(())
    }

    async fn on_settings(&self, ctx: &Ctx<Self>, settings: &CronSettings) -> Result<()> {
        if ctx.work_running(WORK) {
            // As Go: new settings while it runs are the running ones: the next run
            // sends their context; their schedule applies from the next start (a
            // restart, another leader), as the loop keeps the one it started with.
            // A schedule that does not parse is not kept: it would stop the cron at
            // its next start.
            let context = serde_json::to_string(&settings.context)?;
            let schedule = parse(&settings.schedule).is_ok().then_some(settings.schedule.as_str());
            if schedule.is_none() {
                tracing::warn!(
                    node = ctx.node_name(),
                    schedule = %settings.schedule,
                    "new settings' schedule does not parse; the running one is kept"
                );
            }
            let mut writes = vec![(CONTEXT, Some(context.as_str()))];
            writes.extend(schedule.map(|s| (SCHEDULE, Some(s))));
            ctx.metadata().update(&writes).await?;
        }
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
            // As Go: stopping forgets the schedule, the context and the error.
            ctx.metadata()
                .update(&[(RUNNING, None), (SCHEDULE, None), (CONTEXT, None), (ERROR, None)])
                .await?;
            forget_old_keys(ctx).await?;
            self.show(ctx);
            return Ok(Reply::empty());
        }
        if ctx.work_running(WORK) {
            // As Go: a message without Stop while running brings a new context
            // (each run reads it), say a credential the user just typed.
            if control.context != context(ctx) {
                ctx.metadata()
                    .set(CONTEXT, &serde_json::to_string(&control.context)?)
                    .await?;
                self.show(ctx);
            }
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
                ctx.metadata().set(ERROR, &e.to_string()).await?;
                ctx.state().delete(OLD_ERROR).await?;
            }
            Ok(parsed) => {
                // As Go: the press's context is what each run sends, even none.
                let context = serde_json::to_string(&control.context)?;
                ctx.metadata()
                    .update(&[
                        (ERROR, None),
                        (RUNNING, Some("true")),
                        (SCHEDULE, Some(&schedule)),
                        (CONTEXT, Some(&context)),
                    ])
                    .await?;
                forget_old_keys(ctx).await?;
                // As the ticker's Start: `on_reconcile` may have started the loop from
                // the write's watch event already; starting again would replace it.
                if !ctx.work_running(WORK) {
                    self.start(ctx, parsed);
                }
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

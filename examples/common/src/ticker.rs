//! `ticker`: emits its context every `delay` milliseconds between Start and Stop.
//!
//! The loop is leader-only node work. What it needs to go on elsewhere is on the
//! node, where Go's ticker keeps it: `ticker-running` (`"true"` while running) and
//! `ticker-config` (the settings as JSON text, with the context Start gave) in the
//! TinyNode's `status.metadata`. So a ticker that ran under the Go module carries on
//! when this module takes its node over, and the new leader's `on_reconcile` starts
//! it again. The tick count (tiny's own) is node state, `_state/ticks`. With
//! `countTicks` on, a tick's count is stored in the cluster (one status patch) before
//! the tick is sent: a leader that dies in between skips a tick rather than let its
//! successor send one number twice.
//!
//! Nodes this module ran before it used Go's keys have `_state/running` and
//! `_state/context`: read when Go's keys are absent, removed at the next Start or
//! Stop.

use std::time::Duration;

use serde_json::{Value, json};
use tiny_sdk::{PortShape, flow::Node, prelude::*};

/// Settings, as Go's ticker.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct TickerSettings {
    /// Arbitrary message to be sent each period of time.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// Delay between signals, in milliseconds.
    #[tiny(title = "Delay (ms)")]
    pub delay: u64,
    /// Send `{"context": ..., "tick": n}` instead of the bare context (tiny only; off,
    /// a flow built for the Go module sees what Go sends).
    #[tiny(title = "Count ticks")]
    #[serde(default)]
    pub count_ticks: bool,
}

impl Default for TickerSettings {
    fn default() -> Self {
        Self {
            context: Value::Null,
            delay: 1000,
            count_ticks: false,
        }
    }
}

/// The dashboard: Start while stopped, Stop while running.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct TickerControl {
    /// What each tick sends.
    #[tiny(title = "Context")]
    #[serde(default)]
    pub context: Value,
    #[tiny(title = "Status", readonly)]
    #[serde(default)]
    pub status: String,
    #[tiny(title = "Start", format = "button")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<bool>,
    #[tiny(title = "Stop", format = "button")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<bool>,
    /// Ticks sent so far.
    #[tiny(title = "Ticks", readonly)]
    #[serde(default)]
    pub ticks: u64,
}

/// What `out` carries with `countTicks` on.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
pub struct Tick {
    #[tiny(title = "Context")]
    pub context: Value,
    /// 1 for the first tick after the ticker was first started.
    #[tiny(title = "Tick")]
    pub tick: u64,
}

/// Periodic emitter: Start sends the context on Out, then again every `delay` ms
/// (each send waits for the flow downstream); Stop ends it. It survives restarts and
/// moves to a new leader with its count.
#[derive(Component, Default, Debug)]
#[component(name = "ticker", description = "Ticker", tags("SDK"), settings = TickerSettings, control = TickerControl, hooks)]
pub struct Ticker {
    /// The context, each period.
    #[port(position = Right)]
    out: Output<Value>,
}

/// Go's metadata keys (common-module `components/ticker/ticker.go`): present while
/// running, with the value `"true"`.
const RUNNING: &str = "ticker-running";
/// Go's metadata key for the running ticker's settings: `{"context":..,"delay":..}`.
const CONFIG: &str = "ticker-config";
/// Node state keys this module used before it used Go's (read as a fallback).
const OLD_RUNNING: &str = "running";
const OLD_CONTEXT: &str = "context";
/// The tick count, node state (tiny only).
const TICKS: &str = "ticks";
const WORK: &str = "tick";

/// What Go keeps in `ticker-config`: its settings, the context being Start's.
#[derive(Debug, Serialize, Deserialize)]
struct GoConfig {
    #[serde(default)]
    context: Value,
    #[serde(default)]
    delay: u64,
}

/// Whether the node says the ticker runs: Go's key, else this module's old one.
fn says_running(ctx: &Ctx<Ticker>) -> Result<bool> {
    if ctx.metadata().get(RUNNING).is_some() {
        return Ok(true);
    }
    Ok(ctx.state().get::<bool>(OLD_RUNNING)?.unwrap_or(false))
}

/// What the ticks carry: the running context (Go's `ticker-config`, else this
/// module's old state), else the settings'.
fn context(ctx: &Ctx<Ticker>) -> Value {
    if let Some(raw) = ctx.metadata().get(CONFIG) {
        match serde_json::from_str::<GoConfig>(&raw) {
            Ok(config) => return config.context,
            // As Go: a config that does not decode is not restored.
            Err(e) => tracing::debug!(node = ctx.node_name(), error = %e, "`{CONFIG}` does not decode"),
        }
    }
    ctx.state()
        .get::<Value>(OLD_CONTEXT)
        .ok()
        .flatten()
        .unwrap_or_else(|| ctx.settings().context.clone())
}

/// Marks the ticker running with `context`, in Go's keys, and drops the old ones.
async fn persist_running(ctx: &Ctx<Ticker>, context: Value) -> Result<()> {
    let config = serde_json::to_string(&GoConfig {
        context,
        delay: ctx.settings().delay,
    })?;
    ctx.metadata()
        .update(&[(RUNNING, Some("true")), (CONFIG, Some(&config))])
        .await?;
    forget_old_keys(ctx).await
}

/// Marks the ticker stopped, as Go does: its keys go.
async fn persist_stopped(ctx: &Ctx<Ticker>) -> Result<()> {
    ctx.metadata().update(&[(RUNNING, None), (CONFIG, None)]).await?;
    forget_old_keys(ctx).await
}

async fn forget_old_keys(ctx: &Ctx<Ticker>) -> Result<()> {
    ctx.state().delete(OLD_RUNNING).await?;
    ctx.state().delete(OLD_CONTEXT).await
}

impl Ticker {
    /// The view for the state the node is in.
    fn show(ctx: &Ctx<Self>) {
        let running = ctx.work_running(WORK);
        let context = context(ctx);
        let ticks = ctx.state().get(TICKS).ok().flatten().unwrap_or(0);
        ctx.show_control(&TickerControl {
            context,
            status: if running { "Running" } else { "Not running" }.into(),
            start: (!running).then_some(true),
            stop: running.then_some(true),
            ticks,
        });
    }

    /// Starts the loop on the leader; `false` elsewhere.
    fn start(&self, ctx: &Ctx<Self>) -> bool {
        let out = self.out;
        let started = ctx.spawn_on_leader(WORK, move |ctx| async move {
            let delay = Duration::from_millis(ctx.settings().delay);
            loop {
                let n = ctx.state().get::<u64>(TICKS)?.unwrap_or(0) + 1;
                ctx.state().set(TICKS, &n).await?;
                Ticker::show(&ctx);
                let context = context(&ctx);
                let msg = if ctx.settings().count_ticks {
                    // The count is in the tick: stored before it is sent. A count
                    // the cluster did not take skips its tick (the write is tried
                    // again in the background).
                    if let Err(e) = ctx.state().flush().await {
                        tracing::warn!(node = ctx.node_name(), tick = n, error = %e, "tick skipped: its count is not stored");
                        None
                    } else {
                        Some(json!({ "context": context, "tick": n }))
                    }
                } else {
                    Some(context)
                };
                // As Go: a failure downstream is the flow's, not the ticker's.
                if let Some(msg) = msg
                    && let Err(e) = out.emit(&ctx, msg).await
                {
                    tracing::debug!(node = ctx.node_name(), error = %e, "tick failed downstream");
                }
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = ctx.cancelled() => return Ok(()),
                }
            }
        });
        Self::show(ctx);
        started
    }
}

impl Hooks for Ticker {
    async fn on_reconcile(&self, ctx: &Ctx<Self>, _: &Node) -> Result<()> {
        // The new leader (or a restarted one) picks up a ticker that was running.
        if says_running(ctx)? && !ctx.work_running(WORK) {
            self.start(ctx);
        } else {
            Self::show(ctx);
        }
        Ok(())
    }

    async fn on_settings(&self, ctx: &Ctx<Self>, _: &TickerSettings) -> Result<()> {
        // A running loop goes on with the new delay (kept in Go's config, as Go
        // does); a stopped one shows the new context (the view shown at load
        // predates the settings).
        if ctx.work_running(WORK) {
            if says_running(ctx)? {
                persist_running(ctx, context(ctx)).await?;
            }
            self.start(ctx);
        } else {
            Self::show(ctx);
        }
        Ok(())
    }

    async fn on_control(&self, ctx: &Ctx<Self>, control: TickerControl) -> Result<Reply> {
        if !ctx.is_leader() {
            return Ok(Reply::empty());
        }
        if control.stop == Some(true) {
            ctx.stop_work(WORK);
            persist_stopped(ctx).await?;
            Self::show(ctx);
            return Ok(Reply::empty());
        }
        if !ctx.work_running(WORK) {
            // As Go: the press's context is what the ticks carry, even none (the
            // editor sends the context its view shows).
            persist_running(ctx, control.context).await?;
            // The write's watch event can come before its answer, and `on_reconcile`
            // then starts the loop from it: starting again would replace that loop,
            // maybe mid-tick, and lose the tick it had counted.
            if !ctx.work_running(WORK) {
                self.start(ctx);
            }
        }
        Ok(Reply::empty())
    }

    async fn on_destroy(&self, ctx: &Ctx<Self>) -> Result<()> {
        ctx.stop_work(WORK);
        Ok(())
    }

    fn shape_port(&self, settings: &TickerSettings, port: &mut PortShape) {
        if port.name == "out" && settings.count_ticks {
            port.schema = tiny_sdk::schema::port_schema::<Tick>();
        }
        if port.name == tiny_sdk::contract::port::CONTROL && port.configuration.get("stop").is_some() {
            // Running: the context shows what is being sent, it is not edited.
            if let Some(context) = tiny_sdk::schema::at_path_mut(&mut port.schema, "$.context") {
                context["readonly"] = Value::Bool(true);
            }
        }
    }
}

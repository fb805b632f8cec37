//! `common-module`: the Go common module's components, all 23, written with tiny.
//!
//! Names, ports and settings keys are Go's, so a flow built for the Go module loads
//! unchanged, and the ticker and cron keep what they need on the node under Go's
//! `status.metadata` keys, so a node the Go module ran carries on here. Where tiny
//! does more (a ticker's tick count), the extra is opt-in or additive; the README
//! lists each component's ports and keys.
//!
//! | component | what it shows of the SDK |
//! |---|---|
//! | [`ticker`] | leader-only node work, Go's metadata keys (`ctx.metadata()`), node state, a Start/Stop `_control` view |
//! | [`cron`] | the same on a cron schedule, with the next run in the view |
//! | [`signal`] | detached emits from a control button |
//! | [`debug`] | a `_control` view of the last message |
//! | [`delay`] | a blocking pause that the caller can cancel |
//! | [`router`] | a port family from settings (`out_<route>`), a port switched by settings, a schema from settings |
//! | [`array_split`] | several emits per input |
//! | [`async`](mod@asynchronous) | detached emits with bounded concurrency |
//! | [`kv`] | node state as a store, a settings-switched ack port |
//! | [`run_start`] | a durable run begun from a component (`ctx.begin_run()`), answered at once |
//! | [`run_status`] | the run ledger read back (`ctx.run_store()`) |
//! | [`array_filter`] | a JSONPath predicate per item, a settings-switched error port |
//! | [`array_get`] | one item by number, a settings-switched error port |
//! | [`group_by`] | buckets by a field path |
//! | [`transform`] | a passthrough for edge mappings (Go's `modify`) |
//! | [`budget_guard`] | ceilings carried in the message, settings checked when applied |
//! | [`retry`] | a backoff wait, then an emit; attempts carried in the message |
//! | [`chat`] | a conversation in node state: a widget schema of Go's (`format: chat`), detached emits from the widget, expiry on reconcile |
//! | [`collect`] | fan-in across messages: groups in node state, a timeout, a cap |
//! | [`display`] | a `_control` view kept in node state, refreshed on reconcile |
//! | [`form`] | a Submit button, a result line and prefill kept in node state |
//! | [`inject`] | a value kept in node state (Go's `_state/config`), attached to each message |
//! | [`flow_telemetry`] | a gRPC client of the platform's otel-collector, settings checked when applied, a bounded paged scan |

pub mod array_filter;
pub mod array_get;
pub mod array_split;
pub mod asynchronous;
pub mod budget_guard;
pub mod chat;
pub mod collect;
pub mod cron;
pub mod debug;
pub mod delay;
pub mod display;
pub mod flow_telemetry;
pub mod form;
pub mod group_by;
pub mod inject;
pub mod kv;
pub mod retry;
pub mod router;
pub mod run_start;
pub mod run_status;
pub mod signal;
pub mod ticker;
pub mod transform;

/// Every component of the module.
pub fn registry() -> tiny_sdk::engine::Registry {
    let mut r = tiny_sdk::engine::Registry::default();
    r.register::<ticker::Ticker>()
        .register::<cron::Cron>()
        .register::<signal::Signal>()
        .register::<debug::Debug>()
        .register::<delay::Delay>()
        .register::<router::Router>()
        .register::<array_split::ArraySplit>()
        .register::<asynchronous::Async>()
        .register::<kv::Kv>()
        .register::<run_start::RunStart>()
        .register::<run_status::RunStatus>()
        .register::<array_filter::ArrayFilter>()
        .register::<array_get::ArrayGet>()
        .register::<group_by::GroupBy>()
        .register::<transform::Transform>()
        .register::<budget_guard::BudgetGuard>()
        .register::<retry::Retry>()
        .register::<collect::Collect>()
        .register::<inject::Inject>()
        .register::<display::Display>()
        .register::<form::Form>()
        .register::<chat::Chat>()
        .register::<flow_telemetry::FlowTelemetry>();
    r
}

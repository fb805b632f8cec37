//! Flow engine benchmark: messages per second and latency per hop for a 10-node chain,
//! a 1-to-10 fan-out and a 5-hop request/response chain, optionally beside Node-RED
//! running the same flows in the same command (`-- --peer`).
//!
//! `cargo bench -p tiny-sdk --bench flow [--features fast-alloc] -- [--peer] [--n N] [--lat-n N] [--only NAME] [--max-attempts N]`
//!
//! `-- --instructions --n N [--json] [--expr] [--traced]` only sends N messages through
//! the 10-node chain (with `--expr`, chain10_expr's; with `--traced`, every hop span
//! recorded), for `tools/callgrind-hop.sh`
//! (`make bench-instructions`) to count instructions per hop.
//!
//! With `--features fast-alloc` the binary runs on mimalloc, as a module binary may
//! choose to ([`tiny_sdk::FastAlloc`]); `make bench-flow` runs both.
//!
//! The chains' edges have the default retry policy (3 attempts): each edge keeps the
//! message for a retry, so its receiver gets a copy. `--max-attempts 1` measures edges
//! that hand the value itself over.
//!
//! It also measures what tracing costs on the 10-node chain (`--only tracing`): no
//! subscriber against the runtime's subscriber when no `OTEL_*` exporter is set (the
//! figure that must stay within 5%), and against every hop span recorded.
//!
//! Messages enter as JSON, as a signal sends them; `msgs_per_sec_typed_in` is the
//! same with the payload sent as its Rust type (as a component's emit, or Node-RED's
//! inject of a JS object, makes it).
//!
//! Node-RED is single-threaded, so the comparison figures run tiny on one thread too
//! (a current-thread runtime); the two-worker figure is printed beside them.

#[cfg(feature = "fast-alloc")]
#[global_allocator]
static ALLOC: tiny_sdk::FastAlloc = tiny_sdk::FastAlloc;

use std::{
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};
use tiny_testkit::components::{Payload, Step, User};

use futures::{StreamExt as _, stream};
use serde_json::{Value, json};
use tiny_sdk::{
    Msg,
    engine::{Delivery, Engine},
    flow::{Flow, FlowBuilder, RetryPolicy},
    prelude::*,
};

/// One hop whose work is all in the edge expression.
#[derive(Debug, Component, Default)]
#[component(name = "pass")]
struct Pass {
    input: Input<Payload>,
    out: Output<Payload>,
}

impl Pass {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Payload) -> Result<Reply> {
        self.out.emit(ctx, msg).await
    }
}

/// The end of a chain; answers with `v`. It only reads the message, so it borrows it:
/// a message shared by a fan-out's branches, or kept by an edge for a retry, is not
/// copied for it.
#[derive(Debug, Component, Default)]
#[component(name = "sink")]
struct Sink {
    input: Input<Payload>,
}

impl Sink {
    async fn on_input(&self, _: &Ctx<Self>, msg: &Payload) -> Reply {
        Reply::value(json!(msg.v))
    }
}

/// [`Sink`] taking the message by value: each receiver of a shared message gets a copy.
#[derive(Debug, Component, Default)]
#[component(name = "sink_owned")]
struct SinkOwned {
    input: Input<Payload>,
}

impl SinkOwned {
    async fn on_input(&self, _: &Ctx<Self>, msg: Payload) -> Reply {
        Reply::value(json!(msg.v))
    }
}

const PASS_THROUGH: &str = "{{$}}";

/// A chain of `hops` nodes and a sink; `max_attempts` sets the edges' retry policy
/// (none: the default, 3 attempts, so each edge keeps a copy for a retry).
fn chain(component: &str, hops: usize, mapping: &Value, max_attempts: Option<u32>) -> Flow {
    let mut b = FlowBuilder::new();
    for i in 0..hops {
        b = b.node(&format!("s{i}"), component);
    }
    b = b.node("sink", "sink");
    for i in 0..hops {
        let to = if i + 1 == hops {
            "sink:input".to_owned()
        } else {
            format!("s{}:input", i + 1)
        };
        let retry = max_attempts.map(|n| RetryPolicy {
            max_attempts: Some(n),
            ..RetryPolicy::default()
        });
        b = b.edge_with(&format!("s{i}:out"), &to, mapping.clone(), retry);
    }
    b.build()
}

/// `s0` feeding `width` sinks of component `sink`.
fn fanout(width: usize, sink: &str) -> Flow {
    let mut b = FlowBuilder::new().node("s0", "step");
    for i in 0..width {
        b = b
            .node(&format!("t{i}"), sink)
            .edge("s0:out", &format!("t{i}:input"), json!(PASS_THROUGH));
    }
    b.build()
}

async fn engine(flow: Flow) -> Engine {
    let e = Engine::builder()
        .register::<Step>()
        .register::<Pass>()
        .register::<Sink>()
        .register::<SinkOwned>()
        .build();
    for node in flow.nodes {
        if let Err(err) = e.apply(node).await {
            panic!("bench flow does not load: {err}");
        }
    }
    e
}

fn payload(i: u64) -> Value {
    json!({"n": i, "v": 0, "user": {"name": "ada", "tags": ["a", "b"]}, "text": "hello world"})
}

/// The same payload typed, as a component (or Node-RED's inject, a JS object) makes it.
fn typed_payload(i: u64) -> Payload {
    Payload {
        n: i,
        v: 0,
        user: User {
            name: "ada".into(),
            tags: vec!["a".into(), "b".into()],
        },
        text: "hello world".into(),
    }
}

/// One message into `s0:input`: JSON as a signal sends it, or the typed value.
async fn send(e: &Engine, i: u64, typed: bool) -> tiny_sdk::Result<Reply> {
    if typed {
        e.deliver(Delivery::to("s0:input", Msg::new(typed_payload(i))).expect("an address"))
            .await
    } else {
        e.send("s0:input", payload(i)).await
    }
}

/// Throughput with `window` messages in flight; returns messages per second.
async fn throughput(e: &Engine, n: u64, window: usize) -> f64 {
    throughput_of(e, n, window, false).await
}

async fn throughput_of(e: &Engine, n: u64, window: usize, typed: bool) -> f64 {
    let start = Instant::now();
    let sends = stream::iter(0..n).map(|i| send(e, i, typed)).buffer_unordered(window);
    let failed = sends.filter(|r| std::future::ready(r.is_err())).count().await;
    assert_eq!(failed, 0, "every message must arrive");
    n as f64 / start.elapsed().as_secs_f64()
}

/// Latency with one message in flight; returns sorted durations.
async fn latencies(e: &Engine, n: u64) -> Vec<Duration> {
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let t = Instant::now();
        let reply = e.send("s0:input", payload(i)).await;
        out.push(t.elapsed());
        assert!(reply.is_ok(), "{reply:?}");
    }
    out.sort();
    out
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(i).map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

struct Args {
    only: Option<String>,
    peer: bool,
    n: u64,
    lat_n: u64,
    window: usize,
    max_attempts: Option<u32>,
    /// Only send `n` messages through the 10-node chain, typed (or JSON with
    /// `--json`), and print nothing else: what `tools/callgrind-hop.sh` counts.
    instructions: bool,
    /// With `--instructions`: chain10_expr's edges instead of pass-through ones.
    expr: bool,
    /// With `--instructions`: every hop span recorded (the recording subscriber of
    /// `--only tracing`).
    traced: bool,
    json: bool,
}

fn args() -> Args {
    let mut a = Args {
        only: None,
        peer: false,
        n: 200_000,
        lat_n: 20_000,
        window: 256,
        max_attempts: None,
        instructions: false,
        expr: false,
        traced: false,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--peer" => a.peer = true,
            "--only" => a.only = it.next(),
            "--n" => a.n = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.n),
            "--lat-n" => a.lat_n = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.lat_n),
            "--window" => a.window = it.next().and_then(|v| v.parse().ok()).unwrap_or(a.window),
            "--max-attempts" => a.max_attempts = it.next().and_then(|v| v.parse().ok()),
            "--instructions" => a.instructions = true,
            "--expr" => a.expr = true,
            "--traced" => a.traced = true,
            "--json" => a.json = true,
            _ => {} // cargo bench passes `--bench`
        }
    }
    a
}

struct Figures {
    name: &'static str,
    hops: u32,
    msgs_per_sec: f64,
    /// The same with the payload sent typed (no JSON into the first node).
    msgs_per_sec_typed: f64,
    msgs_per_sec_2t: f64,
    p50: f64,
    p99: f64,
}

async fn scenario(name: &'static str, hops: u32, flow: Flow, a: &Args) -> Figures {
    let e = engine(flow).await;
    throughput(&e, a.n / 10, a.window).await; // warm-up
    let msgs_per_sec = throughput(&e, a.n, a.window).await;
    let msgs_per_sec_typed = throughput_of(&e, a.n, a.window, true).await;
    let lat = latencies(&e, a.lat_n).await;
    Figures {
        name,
        hops,
        msgs_per_sec,
        msgs_per_sec_typed,
        msgs_per_sec_2t: 0.0,
        p50: pct(&lat, 0.5),
        p99: pct(&lat, 0.99),
    }
}

/// The cost of a 1-to-10 fan-out to `sink`s per source message over a single send,
/// measured in alternating rounds so that both see the same machine load.
async fn fanout_ratio(a: &Args, sink: &str) -> (f64, f64, f64) {
    let (single, fan) = (engine(fanout(1, sink)).await, engine(fanout(10, sink)).await);
    let n = (a.n / 5).max(1000);
    let mut ratios = Vec::new();
    for _ in 0..5 {
        let s = throughput(&single, n, a.window).await;
        let f = throughput(&fan, n, a.window).await;
        ratios.push(s / f);
    }
    ratios.sort_by(f64::total_cmp);
    (ratios[2], ratios[0], ratios[4])
}

/// A subscriber as `tiny-runtime` installs it when no `OTEL_*` variable names an
/// exporter: logs at `info`, the flow's span target `tiny::flow` off.
fn runtime_subscriber_without_exporter() -> impl tracing::Subscriber + Send + Sync {
    use tracing_subscriber::layer::SubscriberExt as _;
    let filter = tracing_subscriber::EnvFilter::new("info,kube=warn,tower=warn,h2=warn,hyper=warn,tiny::flow=off");
    tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink))
}

/// The runtime's hop spans to OpenTelemetry span data: its own code, compiled here.
#[allow(dead_code, reason = "the runtime's file as it is; the bench uses a part")]
#[path = "../../tiny-runtime/src/telemetry/hop.rs"]
mod hop;

/// An exporter that sends nothing: the batch processor's hand-off and its worker
/// thread are as in a module, the network is not in the figure.
#[derive(Debug)]
struct NoExport;

impl opentelemetry_sdk::trace::SpanExporter for NoExport {
    async fn export(&self, batch: Vec<opentelemetry_sdk::trace::SpanData>) -> opentelemetry_sdk::error::OTelSdkResult {
        std::hint::black_box(batch);
        Ok(())
    }
}

/// Runs `f` with every hop span recorded as the runtime records them: its hop spans'
/// sink ([`hop::HopExport`]) installed, handing them to a batch processor (whose
/// exporter sends nothing), and its subscriber with the OpenTelemetry layer for the
/// spans it makes with `tracing`.
fn recording<R>(f: impl FnOnce() -> R) -> R {
    use opentelemetry_sdk::trace::BatchSpanProcessor;
    static EXPORT: std::sync::OnceLock<hop::HopExport<BatchSpanProcessor>> = std::sync::OnceLock::new();
    let export = EXPORT.get_or_init(|| {
        hop::HopExport::new(
            Arc::new(BatchSpanProcessor::builder(NoExport).build()),
            opentelemetry::InstrumentationScope::builder("bench").build(),
        )
    });
    tiny_sdk::engine::set_hop_spans(Some(export));
    let result = tracing::subscriber::with_default(runtime_subscriber_recording(), f);
    tiny_sdk::engine::set_hop_spans(None);
    result
}

/// The runtime's subscriber with an OpenTelemetry layer for the spans it makes with
/// `tracing` (spans are built and dropped: no exporter, so no network in the figure).
fn runtime_subscriber_recording() -> impl tracing::Subscriber + Send + Sync {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::{Layer as _, filter::FilterExt as _, layer::SubscriberExt as _};
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let otel = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("bench"))
        // As the runtime's layer (`telemetry::init`).
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_context_activation(false)
        .with_filter(tracing_subscriber::filter::filter_fn(|m| {
            m.target().starts_with(tiny_sdk::engine::TRACE_TARGET) && *m.level() <= tracing::Level::INFO
        }));
    let filter = tracing_subscriber::EnvFilter::new("info,tiny::flow=info");
    // As the runtime's: no colours (a pod's stderr is no terminal), and neither the
    // flow's span events nor its spans (whose fields its line format never prints).
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::sink)
        .with_ansi(false)
        .with_filter(
            tracing_subscriber::filter::filter_fn(|m| !m.target().starts_with(tiny_sdk::engine::TRACE_TARGET))
                .and(filter),
        );
    tracing_subscriber::registry().with(otel).with(logs)
}

/// The cost of tracing on the 10-node chain: throughput with tracing off (no
/// subscriber wants anything) against the runtime's subscriber without an exporter,
/// and against spans recorded; alternating rounds on one engine, so all see the same
/// load. Returns the time-per-message ratios without-exporter/off and recorded/off,
/// each of the best round of either (the figure least disturbed by other work on the
/// machine), and the median and range of the per-round without-exporter/off ratios.
fn tracing_ratio(rt: &tokio::runtime::Runtime, a: &Args) -> TracingCost {
    let e = rt.block_on(engine(chain("step", 10, &json!(PASS_THROUGH), a.max_attempts)));
    let n = (a.n / 5).max(1000);
    rt.block_on(throughput(&e, n / 5, a.window)); // warm-up
    let (mut off, mut without, mut recorded, mut rounds) = (0.0f64, 0.0f64, 0.0f64, Vec::new());
    for _ in 0..9 {
        // Off: a subscriber that wants nothing, so the level check in every `tracing`
        // macro fails at once, as in a process that never installed one. (Each
        // subscriber is registered afresh, so no round inherits another's cached
        // interest in the flow's spans.)
        let o = tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
            rt.block_on(throughput(&e, n, a.window))
        });
        let w = tracing::subscriber::with_default(runtime_subscriber_without_exporter(), || {
            rt.block_on(throughput(&e, n, a.window))
        });
        let r = recording(|| rt.block_on(throughput(&e, n, a.window)));
        (off, without, recorded) = (off.max(o), without.max(w), recorded.max(r));
        rounds.push(o / w);
    }
    rounds.sort_by(f64::total_cmp);
    TracingCost {
        without_exporter: off / without,
        recorded: off / recorded,
        median: rounds[rounds.len() / 2],
        range: (rounds[0], rounds[rounds.len() - 1]),
    }
}

/// What [`tracing_ratio`] measured: time per message relative to tracing off.
struct TracingCost {
    without_exporter: f64,
    recorded: f64,
    median: f64,
    range: (f64, f64),
}

fn two_threads(flow: Flow, a: &Args) -> f64 {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let e = Arc::new(engine(flow).await);
        let per_task = a.n / 2;
        let start = Instant::now();
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let e = e.clone();
                let window = a.window / 2;
                tokio::spawn(async move { throughput(&e, per_task, window).await })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
        (per_task * 2) as f64 / start.elapsed().as_secs_f64()
    })
}

fn peer() -> Vec<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/node-red/run.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("--scenarios=chain10,chain10_jsonata,single,fanout10")
        .output();
    match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
        Ok(o) => {
            eprintln!("node-red peer failed: {}", String::from_utf8_lossy(&o.stderr));
            Vec::new()
        }
        Err(e) => {
            eprintln!("node-red peer could not start: {e}");
            Vec::new()
        }
    }
}

/// chain10_expr's edges: each field of the payload through an expression.
fn expr_mapping() -> Value {
    json!({"n": "{{$.n}}", "v": "{{$.v + 1}}", "user": "{{$.user}}", "text": "{{$.text}}"})
}

fn main() {
    let a = args();
    if a.instructions {
        // One thread, no warm-up and no clock: the same work for any `n` but the
        // messages themselves, so two counts' difference is the messages' cost.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let e = if a.expr {
            rt.block_on(engine(chain("pass", 10, &expr_mapping(), a.max_attempts)))
        } else {
            rt.block_on(engine(chain("step", 10, &json!(PASS_THROUGH), a.max_attempts)))
        };
        if a.traced {
            recording(|| rt.block_on(throughput_of(&e, a.n, a.window, !a.json)));
        } else {
            rt.block_on(throughput_of(&e, a.n, a.window, !a.json));
        }
        println!("sent {} messages through chain10", a.n);
        return;
    }
    println!(
        "allocator: {}",
        if cfg!(feature = "fast-alloc") {
            "mimalloc (`--features fast-alloc`)"
        } else {
            "the system's (glibc malloc)"
        }
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let expr = expr_mapping();
    let flows: Vec<(&'static str, u32, Flow)> = vec![
        ("chain10", 10, chain("step", 10, &json!(PASS_THROUGH), a.max_attempts)),
        ("chain10_expr", 10, chain("pass", 10, &expr, a.max_attempts)),
        ("single", 1, fanout(1, "sink")),
        ("fanout10", 1, fanout(10, "sink")),
        ("rr5", 5, chain("step", 5, &json!(PASS_THROUGH), a.max_attempts)),
    ];
    let mut figures = Vec::new();
    for (name, hops, flow) in flows {
        if a.only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let mut f = rt.block_on(scenario(name, hops, flow.clone(), &a));
        f.msgs_per_sec_2t = two_threads(flow, &a);
        println!(
            "{{\"engine\":\"tiny\",\"scenario\":\"{}\",\"hops\":{},\"msgs_per_sec\":{:.1},\"msgs_per_sec_typed_in\":{:.1},\"msgs_per_sec_2_threads\":{:.1},\"p50_us\":{:.2},\"p99_us\":{:.2},\"per_hop_p50_us\":{:.3},\"per_hop_p99_us\":{:.3}}}",
            f.name,
            f.hops,
            f.msgs_per_sec,
            f.msgs_per_sec_typed,
            f.msgs_per_sec_2t,
            f.p50,
            f.p99,
            f.p50 / f64::from(f.hops),
            f.p99 / f64::from(f.hops)
        );
        figures.push(f);
    }
    let get = |n: &str| figures.iter().find(|f| f.name == n);
    if a.only.as_deref().is_none_or(|o| o == "fanout10") {
        for (sink, what) in [("sink", "borrowing sinks"), ("sink_owned", "sinks taking the value")] {
            let (median, min, max) = rt.block_on(fanout_ratio(&a, sink));
            println!(
                "tiny fanout10 cost per source message / single send, {what}: {median:.2}x (median of 5 alternating rounds; {min:.2}..{max:.2})"
            );
        }
    }
    if a.only.as_deref().is_none_or(|o| o == "tracing") {
        let c = tracing_ratio(&rt, &a);
        println!(
            "tiny chain10 with tracing, no exporter configured / tracing off: {:.3}x time per message ({:+.1}%; best of 9 alternating rounds each; per-round median {:.3}, {:.3}..{:.3}); with every hop span recorded: {:.2}x",
            c.without_exporter,
            (c.without_exporter - 1.0) * 100.0,
            c.median,
            c.range.0,
            c.range.1,
            c.recorded
        );
    }
    if !a.peer {
        return;
    }
    let peers = peer();
    let node = |s: &str, k: &str| peers.iter().find(|p| p["scenario"] == s).and_then(|p| p[k].as_f64());
    for (tiny, red) in [("chain10", "chain10"), ("chain10_expr", "chain10_jsonata")] {
        if let (Some(t), Some(r)) = (get(tiny), node(red, "msgs_per_sec")) {
            println!(
                "{tiny}: tiny {:.0} msg/s (1 thread) vs node-red {red} {:.0} msg/s: {:.1}x",
                t.msgs_per_sec,
                r,
                t.msgs_per_sec / r
            );
            // Node-RED's messages enter as JS objects, not as JSON text to parse.
            println!(
                "{tiny}: tiny with the payload sent typed {:.0} msg/s vs node-red {:.0} msg/s: {:.1}x",
                t.msgs_per_sec_typed,
                r,
                t.msgs_per_sec_typed / r
            );
        }
        if let (Some(t), Some(r)) = (get(tiny), node(red, "p50_us")) {
            println!(
                "{tiny}: p50 {:.1} us vs node-red {:.1} us: {:.1}x faster",
                t.p50,
                r,
                r / t.p50
            );
        }
    }
    if let Some(r) = node("fanout10", "fanout_cost_ratio") {
        println!("node-red fanout10 cost per source message / single send: {r:.2}x");
    }
}

//! Durable runs through a 3-step flow on one module, beside a bare async-nats program
//! doing the same JetStream work, on a real `nats-server` with JetStream.
//!
//! - tiny: module `tiny` on JetStream (`tiny_testkit::durable_module`), flow
//!   `first` (labelled durable: it starts the run) → `second` → `third`. A run enters
//!   as a message stored in `module-edges` for `first`; each of the three steps is a
//!   stored message taken by the module's pull consumer, the ledger read (a
//!   redelivery is skipped), the handler, the next hop stored (its PubAck awaited),
//!   the step record written to `TINY_EXEC`, then the ack.
//! - bare: the same per hop with async-nats alone, on subject `tinymodule.bare.msg`:
//!   a pull consumer configured as Go's business consumer, one task per message, KV
//!   get of `exec/<run>/step/<key>`, a JetStream publish of the next hop with Go's
//!   durable headers (`x-from`, `x-to`, `x-edge-id`, `x-run-id`, `x-step-key`,
//!   `Nats-Msg-Id`, `x-message-depth`) awaiting its PubAck, KV put of a record the
//!   size tiny writes for that step, ack.
//!
//! Both enter each run the same way (one JetStream publish, PubAck awaited), with the
//! same payload (a ~200-byte JSON object) and the same number of runs in flight.
//! A measurement ends when every run's last step ran and the consumer has nothing
//! pending or unacked. Printed: runs/s of each and tiny/bare (goal >= 0.5); then the
//! cost of a durable hop beside tiny's core NATS hop (hop.rs's `--nats` hop, a's
//! node → edge → b's node over request/reply, on a second broker without JetStream,
//! since `module-edges` would capture its subjects), at the same concurrency and
//! one at a time.
//!
//! `make bench-durable` (`cargo bench -p tiny-runtime --bench durable`).
//! `DURABLE_SCALE=0.2` for a quicker run; `DURABLE_ONLY=tiny|bare` runs one side
//! alone (for a profiler).

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use async_nats::{
    HeaderMap,
    jetstream::{
        self, Message,
        consumer::{AckPolicy, Consumer, DeliverPolicy, ReplayPolicy, pull},
        kv,
    },
};
use bytes::Bytes;
use futures::StreamExt as _;
use serde_json::{Value, json};
use tiny_sdk::{
    engine::{EXECUTION_MODE_LABEL, Engine, Registry},
    flow::{Flow, FlowBuilder},
    harness::Relay,
    prelude::*,
    run::{EmitRecord, StepRecord, Timestamp},
};
use tiny_testenv::NatsServer;
use tiny_testkit::{DurableModule, components::Answer, durable_module};
use tokio::sync::{Notify, Semaphore};

/// Runs (or core hops) in flight during a throughput measurement.
const IN_FLIGHT: usize = 64;
/// The flow's three nodes, in order, for module `m`: `bench.<m>.<name>-1`.
const STEPS: [&str; 3] = ["first", "second", "third"];

/// Runs finished, and the slots of runs that may start.
struct Tally {
    /// One permit per run that may start; a finished run gives its slot back.
    slots: Semaphore,
    /// Last steps run since the measurement began.
    done: AtomicUsize,
    /// Woken at every finished run.
    finished: Notify,
}

impl Tally {
    /// The last step of a run ran.
    fn finish(&self) {
        self.done.fetch_add(1, Ordering::SeqCst);
        self.slots.add_permits(1);
        self.finished.notify_one();
    }

    /// Waits until `n` runs finished.
    async fn until(&self, n: usize) {
        while self.done.load(Ordering::SeqCst) < n {
            self.finished.notified().await;
        }
    }
}

static TALLY: Tally = Tally {
    slots: Semaphore::const_new(0),
    done: AtomicUsize::new(0),
    finished: Notify::const_new(),
};

/// tiny's last step: counts the run as finished.
#[derive(Debug, Component, Default)]
#[component(name = "finish")]
struct Finish {
    input: Input<Value>,
}

impl Finish {
    async fn on_input(&self, _: &Ctx<Self>, _: Value) -> Reply {
        TALLY.finish();
        Reply::empty()
    }
}

fn payload() -> Value {
    json!({
        "context": {"requestId": "6f1c2a9e-4b7d-4c1e-9a43-2d8f5e7b1c30", "attempt": 1},
        "user": {"id": 48213, "name": "Ada Lovelace", "email": "ada@example.com"},
        "items": [{"sku": "A-100", "qty": 2}, {"sku": "B-220", "qty": 1}],
        "note": "deliver after 5pm"
    })
}

fn node(module: &str, step: usize) -> String {
    format!("bench.{module}.{}-1", STEPS[step])
}

fn edge_id(module: &str, step: usize) -> String {
    format!("{}:out->{}:input", node(module, step), node(module, step + 1))
}

/// `first` (durable) → `second` → `third` in module `module`.
fn flow(module: &str) -> Flow {
    let mut flow = FlowBuilder::new()
        .module(module)
        .node(&node(module, 0), "relay")
        .node(&node(module, 1), "relay")
        .node(&node(module, 2), "finish")
        .edge(
            &format!("{}:out", node(module, 0)),
            &format!("{}:input", node(module, 1)),
            json!("{{$}}"),
        )
        .edge(
            &format!("{}:out", node(module, 1)),
            &format!("{}:input", node(module, 2)),
            json!("{{$}}"),
        )
        .build();
    for n in &mut flow.nodes {
        if n.name == node(module, 0) {
            n.labels.insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        }
    }
    flow
}

/// How runs enter one side: a message for its first node, stored in `module-edges`.
#[derive(Clone)]
struct Entry {
    js: jetstream::Context,
    subject: String,
    headers: HeaderMap,
    payload: Bytes,
    /// The side's consumer, to see that nothing is left pending.
    consumer: Consumer<pull::Config>,
}

impl Entry {
    async fn new(js: jetstream::Context, module: &str) -> Self {
        let mut headers = HeaderMap::new();
        headers.insert("x-to", format!("{}:input", node(module, 0)).as_str());
        headers.insert("x-from", "signal");
        let consumer = js
            .get_stream("module-edges")
            .await
            .expect("module-edges")
            .get_consumer(module)
            .await
            .expect("the side's consumer");
        Entry {
            js,
            subject: format!("tinymodule.{module}.msg"),
            headers,
            payload: serde_json::to_vec(&payload()).expect("json").into(),
            consumer,
        }
    }

    /// Starts one run: the message is stored when this returns.
    async fn start(&self) {
        self.js
            .publish_with_headers(self.subject.clone(), self.headers.clone(), self.payload.clone())
            .await
            .expect("publishes")
            .await
            .expect("stored");
    }

    /// Waits until the consumer has nothing pending and nothing unacked.
    async fn drained(&self) {
        let mut consumer = self.consumer.clone();
        loop {
            let info = consumer.info().await.expect("consumer info");
            if info.num_pending == 0 && info.num_ack_pending == 0 {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// `total` runs with `in_flight` at a time: runs per second, until the last is acked.
async fn runs_per_second(entry: &Entry, total: usize, in_flight: usize) -> f64 {
    TALLY.done.store(0, Ordering::SeqCst);
    TALLY.slots.add_permits(in_flight);
    let started_runs = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let starters: Vec<_> = (0..in_flight)
        .map(|_| {
            let (entry, started_runs) = (entry.clone(), started_runs.clone());
            tokio::spawn(async move {
                while started_runs.fetch_add(1, Ordering::SeqCst) < total {
                    TALLY.slots.acquire().await.expect("slots").forget();
                    entry.start().await;
                }
            })
        })
        .collect();
    for s in starters {
        s.await.expect("starter");
    }
    TALLY.until(total).await;
    entry.drained().await;
    let rate = total as f64 / began.elapsed().as_secs_f64();
    TALLY
        .slots
        .acquire_many(in_flight as u32)
        .await
        .expect("slots")
        .forget();
    rate
}

/// `n` runs one at a time: the p50 from entry to the last step's handler.
async fn run_latency(entry: &Entry, n: usize) -> Duration {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let before = TALLY.done.load(Ordering::SeqCst);
        let t = Instant::now();
        entry.start().await;
        TALLY.until(before + 1).await;
        samples.push(t.elapsed());
    }
    entry.drained().await;
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// The bare program: Go's consumer, its messages each on a task.
struct Bare {
    js: jetstream::Context,
    kv: kv::Store,
    /// The step record written for each step (the bytes tiny writes, sized alike).
    records: [Bytes; 3],
    /// For a bare run id.
    runs: AtomicUsize,
}

async fn bare(broker: &NatsServer) -> tokio::task::JoinHandle<()> {
    let client = async_nats::ConnectOptions::with_token(broker.token().to_owned())
        .connect(broker.address())
        .await
        .expect("the bare program connects");
    let js = jetstream::new(client);
    let kv = js.get_key_value("TINY_EXEC").await.expect("TINY_EXEC");
    let consumer: Consumer<pull::Config> = js
        .get_stream("module-edges")
        .await
        .expect("module-edges")
        .create_consumer(pull::Config {
            durable_name: Some("bare".to_owned()),
            filter_subject: "tinymodule.bare.msg".to_owned(),
            deliver_policy: DeliverPolicy::All,
            ack_policy: AckPolicy::Explicit,
            ack_wait: Duration::from_secs(30),
            max_deliver: 3,
            replay_policy: ReplayPolicy::Instant,
            ..Default::default()
        })
        .await
        .expect("the bare consumer");
    let mut messages = consumer.messages().await.expect("messages");
    let bare = Arc::new(Bare {
        js,
        kv,
        records: std::array::from_fn(record),
        runs: AtomicUsize::new(0),
    });
    tokio::spawn(async move {
        while let Some(message) = messages.next().await {
            if let Ok(message) = message {
                tokio::spawn(bare_step(bare.clone(), message));
            }
        }
    })
}

/// One message of the bare program: what tiny does for a step of a run.
async fn bare_step(bare: Arc<Bare>, message: Message) {
    let header = |name: &str| message.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str());
    let to = header("x-to").expect("x-to");
    let step = STEPS
        .iter()
        .position(|s| to.starts_with(&format!("bench.bare.{s}-1")))
        .expect("one of the flow's nodes");
    let (run_id, step_key) = match header("x-run-id") {
        Some(run) => (run.to_owned(), header("x-step-key").expect("x-step-key").to_owned()),
        None => {
            let n = bare.runs.fetch_add(1, Ordering::Relaxed);
            let run = format!("00000000-0000-4000-8000-{n:012x}");
            let root = format!("{run}.root");
            (run, root)
        }
    };
    let key = format!("exec/{run_id}/step/{step_key}");
    if bare.kv.get(&key).await.expect("kv get").is_some() {
        message.ack().await.expect("ack");
        return;
    }
    if step + 1 < STEPS.len() {
        let next_key = format!(
            "{run_id}.{:016x}",
            fnv1a(&[&step_key, "|", &edge_id("bare", step), "|0"])
        );
        let mut headers = HeaderMap::new();
        headers.insert("x-to", format!("{}:input", node("bare", step + 1)).as_str());
        headers.insert("x-from", format!("{}:out", node("bare", step)).as_str());
        headers.insert("x-edge-id", edge_id("bare", step).as_str());
        headers.insert("Nats-Msg-Id", next_key.as_str());
        headers.insert("x-message-depth", (step + 1).to_string().as_str());
        headers.insert("x-run-id", run_id.as_str());
        headers.insert("x-step-key", next_key.as_str());
        bare.js
            .publish_with_headers("tinymodule.bare.msg", headers, message.payload.clone())
            .await
            .expect("publishes")
            .await
            .expect("stored");
    } else {
        TALLY.finish();
    }
    bare.kv.put(&key, bare.records[step].clone()).await.expect("kv put");
    message.ack().await.expect("ack");
}

/// FNV-1a 64 over the parts, as a step key is derived.
fn fnv1a(parts: &[&str]) -> u64 {
    parts
        .iter()
        .flat_map(|p| p.bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// The record tiny writes for step `step` of a run (its emit, if any, included).
fn record(step: usize) -> Bytes {
    let run = "2f1c6a1e-8c5b-4d3e-9a7f-0b1c2d3e4f50";
    let emits = if step + 1 < STEPS.len() {
        vec![EmitRecord {
            to: format!("{}:input", node("tiny", step + 1)),
            from: format!("{}:out", node("tiny", step)),
            edge_id: edge_id("tiny", step),
            step_key: format!("{run}.d48c93a48f6993f3"),
            data: serde_json::to_vec(&payload()).expect("json").into(),
            ..EmitRecord::default()
        }]
    } else {
        Vec::new()
    };
    let record = StepRecord::finished(node("tiny", step), None, emits, Timestamp::now());
    record.to_json_bytes().expect("a step record").into()
}

/// tiny's core NATS hop (hop.rs `--nats`): a's relay emits to b's answer, a request
/// on `tinymodule.b.msg` answered over core NATS.
async fn core_hop(broker: &NatsServer) -> (Engine, tiny_runtime::nats::Receiver) {
    use tiny_runtime::nats::{Link, NatsRouter, listen};
    let link = async || {
        let link = Link::connect(&broker.url()).await.expect("a NATS URL");
        assert!(link.wait_up(Duration::from_secs(10)).await, "connects");
        link
    };
    let (link_a, link_b) = (link().await, link().await);
    let engine = |module: &str, link: &Link| {
        Engine::builder()
            .module(module)
            .register::<Relay>()
            .register::<Answer>()
            .router(Arc::new(NatsRouter::new(link.clone())))
            .build()
    };
    let (a, b) = (engine("a", &link_a), engine("b", &link_b));
    let flow = FlowBuilder::new()
        .module("a")
        .node("f.a.ask-1", "relay")
        .module("b")
        .node("f.b.answer-1", "answer")
        .edge("f.a.ask-1:out", "f.b.answer-1:input", json!("{{$}}"))
        .build();
    for node in flow.nodes {
        let target = if node.spec.module == "a" { &a } else { &b };
        target.apply(node).await.expect("node loads");
    }
    let receiver = listen(link_b.client().clone(), b, None).await.expect("subscribes");
    link_b.client().flush().await.expect("flushes");
    (a, receiver)
}

/// Core hops per second with `in_flight` at a time, and the p50 of `sequential`
/// one at a time.
async fn core_figures(engine: &Engine, sequential: usize, in_flight: usize, total: usize) -> (f64, Duration) {
    let call = async |engine: &Engine| {
        let reply = engine.send("f.a.ask-1:input", payload()).await;
        assert!(reply.is_ok_and(|r| !r.is_empty()), "core hop failed");
    };
    let mut samples = Vec::with_capacity(sequential);
    for _ in 0..sequential {
        let t = Instant::now();
        call(engine).await;
        samples.push(t.elapsed());
    }
    samples.sort_unstable();
    let per_task = total / in_flight;
    let began = Instant::now();
    let tasks: Vec<_> = (0..in_flight)
        .map(|_| {
            let engine = engine.clone();
            tokio::spawn(async move {
                for _ in 0..per_task {
                    call(&engine).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("worker");
    }
    let rate = (per_task * in_flight) as f64 / began.elapsed().as_secs_f64();
    (rate, samples[samples.len() / 2])
}

async fn tiny_module(broker: &NatsServer) -> DurableModule {
    let mut registry = Registry::default();
    registry.register::<Relay>().register::<Finish>();
    durable_module(broker, "tiny", registry, &flow("tiny")).await
}

async fn bench(total: usize, sequential: usize) {
    let broker = NatsServer::start_with(&["--jetstream"])
        .await
        .expect("nats-server starts");
    let tiny = tiny_module(&broker).await;
    let bare_task = bare(&broker).await;
    let driver = async_nats::ConnectOptions::with_token(broker.token().to_owned())
        .connect(broker.address())
        .await
        .expect("the driver connects");
    let js = jetstream::new(driver);
    // tiny binds its consumer in the background: wait for it.
    let tiny_entry = loop {
        if let Ok(stream) = js.get_stream("module-edges").await
            && stream.get_consumer::<pull::Config>("tiny").await.is_ok()
        {
            break Entry::new(js.clone(), "tiny").await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let bare_entry = Entry::new(js.clone(), "bare").await;
    // Warm up both sides (connections, consumers' pulls, the bucket's first keys).
    let warm = (total / 10).max(50);
    runs_per_second(&tiny_entry, warm, IN_FLIGHT).await;
    runs_per_second(&bare_entry, warm, IN_FLIGHT).await;
    match std::env::var("DURABLE_ONLY").as_deref() {
        Ok("tiny") => {
            let rate = runs_per_second(&tiny_entry, total, IN_FLIGHT).await;
            println!("tiny: {rate:.0} runs/s @{IN_FLIGHT}");
            return;
        }
        Ok("bare") => {
            let rate = runs_per_second(&bare_entry, total, IN_FLIGHT).await;
            println!("bare: {rate:.0} runs/s @{IN_FLIGHT}");
            return;
        }
        _ => {}
    }
    println!(
        "3-step durable flow on one module; payload {} bytes of JSON; step records {:?} bytes; {total} runs with {IN_FLIGHT} in flight, best of 3 alternating rounds; {sequential} runs one at a time; 2 worker threads; nats-server (JetStream, file storage) on loopback",
        serde_json::to_vec(&payload()).map(|v| v.len()).unwrap_or(0),
        std::array::from_fn::<usize, 3, _>(|s| record(s).len()),
    );
    let (mut tiny_rate, mut bare_rate) = (0f64, 0f64);
    for _ in 0..3 {
        tiny_rate = tiny_rate.max(runs_per_second(&tiny_entry, total, IN_FLIGHT).await);
        bare_rate = bare_rate.max(runs_per_second(&bare_entry, total, IN_FLIGHT).await);
    }
    let tiny_p50 = run_latency(&tiny_entry, sequential).await;
    let bare_p50 = run_latency(&bare_entry, sequential).await;

    // tiny's core NATS hop, on a broker without JetStream.
    let core_broker = NatsServer::start().await.expect("nats-server starts");
    let (core, receiver) = core_hop(&core_broker).await;
    let hops = total * STEPS.len();
    core_figures(&core, sequential / 10, IN_FLIGHT, hops / 10).await;
    let (mut core_rate, mut core_p50) = (0f64, Duration::MAX);
    for _ in 0..3 {
        let (rate, p50) = core_figures(&core, sequential, IN_FLIGHT, hops).await;
        core_rate = core_rate.max(rate);
        core_p50 = core_p50.min(p50);
    }

    let ratio = tiny_rate / bare_rate;
    println!("\n{:<52} {:>10} {:>14}", "", "runs/s @64", "p50 run (1)");
    println!(
        "{:<52} {bare_rate:>10.0} {:>12.0}µs",
        "bare async-nats (publish+PubAck, get, put, ack) x3",
        micros(bare_p50)
    );
    println!(
        "{:<52} {tiny_rate:>10.0} {:>12.0}µs",
        "tiny durable run (3 steps, 3 stored hops)",
        micros(tiny_p50)
    );
    println!();
    println!(
        "runs/s tiny/bare            {ratio:.2}  (goal >= 0.50: {})",
        if ratio >= 0.5 { "met" } else { "MISSED" }
    );
    println!("p50 run tiny/bare           {:.2}", micros(tiny_p50) / micros(bare_p50));
    // A run is three stored hops: a hop's share of the wall time at 64 in flight,
    // and of one run's latency.
    let durable_hop = 1e6 / (tiny_rate * STEPS.len() as f64);
    let core_hop = 1e6 / core_rate;
    println!("\n{:<52} {:>10} {:>14}", "one hop", "µs @64", "p50 (1)");
    println!(
        "{:<52} {core_hop:>10.1} {:>12.0}µs",
        "tiny core NATS hop (request/reply, hop.rs --nats)",
        micros(core_p50)
    );
    println!(
        "{:<52} {durable_hop:>10.1} {:>12.0}µs",
        "tiny durable hop (a run / 3)",
        micros(tiny_p50) / STEPS.len() as f64
    );
    println!(
        "durable hop / core hop      {:.2} @64, {:.2} one at a time",
        durable_hop / core_hop,
        micros(tiny_p50) / STEPS.len() as f64 / micros(core_p50)
    );
    receiver.stop().await;
    tiny.receiver.stop().await;
    bare_task.abort();
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let scale: f64 = std::env::var("DURABLE_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let total = ((5000.0 * scale) as usize).max(IN_FLIGHT * 4);
    let sequential = ((500.0 * scale) as usize).max(20);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(bench(total, sequential));
}

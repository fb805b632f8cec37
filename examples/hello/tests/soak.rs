//! The soak: mixed traffic for `SOAK_SECONDS` on a real control plane and real brokers,
//! with one fault every few minutes, the module processes' memory and live tasks
//! printed as it goes, and every piece of acknowledged work accounted for at the end.
//!
//! - **Core NATS hops**: alpha (two replicas, one leads) `hello` -> beta `shout` -> alpha
//!   `respond`, requested over NATS as the platform does (`send` with a wait).
//! - **Durable runs**: runa `tally` -> runb `tally` -> runa `tally` on a second broker
//!   with JetStream (a broker runs one transport), each run published and stored.
//! - **TinySignals** into alpha's flow, delivered by alpha's leader.
//!
//! Faults, one every `SOAK_FAULT_EVERY` seconds, in turn: alpha's leader SIGKILLed (and
//! a replica started in its place, as a Deployment would); the API server paused
//! (SIGSTOP) for `SOAK_PAUSE_SECONDS`; both brokers SIGKILLed and restarted on their
//! stores. After the last second the traffic stops and the work drains; then:
//!
//! - a request is answered (with its own answer) or fails with an error its sender is
//!   told; a wrong answer fails the soak;
//! - every run the broker acknowledged finishes, and every run that started finishes;
//! - every TinySignal the API server took ends `Delivered` (with its own reply) or
//!   `Failed`: none is left pending;
//! - no module process went above `SOAK_RSS_MIB` of resident memory, and a process that
//!   lived through the whole soak grew by at most `SOAK_RSS_GROWTH_MIB` and
//!   `SOAK_TASKS_GROWTH` live tasks (`tiny_tasks_alive`) from its first reading under
//!   traffic to its last, after the drain.
//!
//! `cargo test` runs the short form (60 s, one fault of each kind); `make soak` runs
//! 30 minutes (`SOAK_SECONDS=1800`) and prints the same figures. `docs/testing.md`
//! says more.

mod common;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Duration,
};

use common::{Replica, create_flow, env, eventually, hello, nodes_ready, round_trip, rss_kib};
use kube::{
    Api, ResourceExt as _,
    api::{ListParams, PostParams},
};
use serde_json::json;
use tiny_runtime::{
    crd::{SignalPhase, TinySignal, TinySignalSpec},
    jetstream::JetStream,
    nats::{Link, SendOptions, send, wire},
};
use tiny_sdk::flow::RawJson;
use tiny_testenv::{Component, NatsServer};
use tokio::{task::JoinSet, time::Instant};

/// The namespace of both flows.
const NS: &str = "soak";
/// Where the core requests and the signals go in.
const CORE_ENTRY: &str = "soak.alpha-v0.hello-1";
/// The durable flow's modules, step by step.
const RUN_MODULES: [&str; 3] = ["runa-v0", "runb-v0", "runa-v0"];

/// A request, a run and a signal are sent this often.
const CORE_EVERY: Duration = Duration::from_millis(200);
const RUN_EVERY: Duration = Duration::from_millis(500);
const SIGNAL_EVERY: Duration = Duration::from_secs(2);
/// How long a core request waits for its answer.
const CORE_WAIT: Duration = Duration::from_secs(15);
/// Each broker outage: from the kill to every module ready again (`None` until then).
/// A core request sent in one, or just before it ([`IN_FLIGHT`]), lost its reply with
/// the broker (core NATS keeps nothing) or went to a module not back yet, which is what
/// a kill gives, not a loss.
static OUTAGES: Mutex<Vec<(Instant, Option<Instant>)>> = Mutex::new(Vec::new());
/// How long before a kill a request may have been sent and still be in flight when the
/// broker died: many times a core request's latency under a loaded CI machine's soak.
/// One sent earlier should have had its answer before the kill, so its `TIMEOUT` is a
/// loss, however long its [`CORE_WAIT`] ran on past the kill.
const IN_FLIGHT: Duration = Duration::from_secs(2);
/// The code a core request's `TIMEOUT` is counted under when it was sent in an outage
/// or within [`IN_FLIGHT`] before one.
const CUT_BY_KILL: &str = "TIMEOUT across a broker kill";

/// Whether `sent` falls in a broker outage, or within [`IN_FLIGHT`] before one.
fn cut_by_kill(sent: Instant) -> bool {
    let within = |&(killed, ready): &(Instant, Option<Instant>)| {
        killed.saturating_duration_since(sent) <= IN_FLIGHT && ready.is_none_or(|ready| sent <= ready)
    };
    OUTAGES
        .lock()
        .map(|outages| outages.iter().any(within))
        .unwrap_or(false)
}

/// How long the work may take to drain once the traffic stops: a durable hop held by a
/// broker that died is redelivered after JetStream's 30 s ack wait at worst.
const DRAIN: Duration = Duration::from_secs(180);

/// What the soak is told by its environment.
#[derive(Debug, Clone, Copy)]
struct Knobs {
    seconds: u64,
    fault_every: u64,
    pause_seconds: u64,
    broker_down_seconds: u64,
    rss_mib: u64,
    rss_growth_mib: u64,
    tasks_growth: u64,
}

/// `name`'s value as a whole number, or `default` when unset; a value that is not one
/// stops the soak, naming the variable.
fn knob(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Err(_) => default,
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a whole number of the unit it counts")),
    }
}

fn knobs() -> Knobs {
    // Unset, the short form: one fault of each kind in a minute.
    let seconds = knob("SOAK_SECONDS", 60);
    assert!(seconds >= 20, "SOAK_SECONDS={seconds}: at least 20, for three faults");
    Knobs {
        seconds,
        // Three faults of each kind in 30 minutes; in the short form, each a quarter in.
        fault_every: knob("SOAK_FAULT_EVERY", (seconds / 4).min(180)).max(5),
        pause_seconds: knob("SOAK_PAUSE_SECONDS", 6),
        broker_down_seconds: knob("SOAK_BROKER_DOWN_SECONDS", 2),
        rss_mib: knob("SOAK_RSS_MIB", 160),
        rss_growth_mib: knob("SOAK_RSS_GROWTH_MIB", 48),
        tasks_growth: knob("SOAK_TASKS_GROWTH", 64),
    }
}

/// What happened to the work of one kind.
#[derive(Debug, Default)]
struct Counts {
    sent: AtomicU64,
    answered: AtomicU64,
    failed: AtomicU64,
    /// Failures by error code (`none` without one).
    codes: Mutex<BTreeMap<String, u64>>,
    /// Answers that were not the request's own, with the first few.
    wrong: AtomicU64,
    wrong_examples: Mutex<Vec<String>>,
}

impl Counts {
    fn failed_with(&self, code: Option<&str>) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut codes) = self.codes.lock() {
            *codes.entry(code.unwrap_or("none").to_owned()).or_default() += 1;
        }
    }

    fn wrong(&self, what: String) {
        self.wrong.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut examples) = self.wrong_examples.lock()
            && examples.len() < 5
        {
            examples.push(what);
        }
    }

    fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// Failures that are losses: every one but what a broker kill gives, an
    /// `UNREACHABLE` or a request sent while they were away or just before
    /// ([`CUT_BY_KILL`]). Any other dropped request comes back as a `TIMEOUT`, so
    /// counting it as failed would hide it.
    fn lost_failures(&self) -> u64 {
        let by_kills = self
            .codes
            .lock()
            .map(|c| {
                [tiny_sdk::error::code::UNREACHABLE, CUT_BY_KILL]
                    .iter()
                    .map(|k| c.get(*k).copied().unwrap_or(0))
                    .sum::<u64>()
            })
            .unwrap_or(0);
        Self::get(&self.failed).saturating_sub(by_kills)
    }

    fn codes(&self) -> String {
        let codes = self.codes.lock().map(|c| c.clone()).unwrap_or_default();
        let list: Vec<String> = codes.iter().map(|(c, n)| format!("{c} {n}")).collect();
        if list.is_empty() {
            String::new()
        } else {
            format!(" ({})", list.join(", "))
        }
    }
}

/// The durable runs' publishes.
#[derive(Debug, Default)]
struct Publishes {
    sent: AtomicU64,
    /// Stored: the broker acknowledged them.
    stored: AtomicU64,
    /// Refused before the broker had them (it was away).
    refused: AtomicU64,
    /// Sent, but the acknowledgement never came: stored or not, nobody knows.
    unsure: AtomicU64,
}

/// One module process's readings.
#[derive(Debug, Clone)]
struct Reading {
    rss_kib: Option<u64>,
    tasks: Option<u64>,
}

/// The first and the last readings of a process, and its highest resident memory.
#[derive(Debug, Clone)]
struct History {
    identity: String,
    first: Reading,
    last: Reading,
    max_rss_kib: u64,
    /// Still running at the end (not killed by the soak).
    lived: bool,
}

/// Everything the soak runs.
struct Soak {
    env: tiny_testkit::cluster::Cluster,
    core_broker: NatsServer,
    run_broker: NatsServer,
    core_link: Link,
    run_link: Link,
    ledger: Arc<JetStream>,
    dir: tempfile::TempDir,
    alphas: Vec<Replica>,
    others: Vec<Replica>,
    started_alphas: usize,
    history: BTreeMap<u32, History>,
    began: Instant,
}

impl Soak {
    async fn new() -> Self {
        let env = env().await;
        let core_broker = NatsServer::start().await.expect("nats-server starts");
        let run_broker = NatsServer::start_with(&["--jetstream"])
            .await
            .expect("nats-server with JetStream starts");
        env.create_namespace(NS).await.expect("namespace");
        let dir = tempfile::Builder::new()
            .prefix("tiny-soak-")
            .tempdir()
            .expect("a folder");
        let core_link = connect(&core_broker).await;
        let run_link = connect(&run_broker).await;
        // The streams exist before the first run, whoever starts first.
        let ledger = JetStream::new(run_link.clone(), "soak-test", "soak-test-0");
        ledger.ensure().await.expect("Go's streams and TINY_EXEC");
        let mut soak = Self {
            env,
            core_broker,
            run_broker,
            core_link,
            run_link,
            ledger,
            dir,
            alphas: Vec::new(),
            others: Vec::new(),
            started_alphas: 0,
            history: BTreeMap::new(),
            began: Instant::now(),
        };
        let retry = r#"{ maxAttempts: 3, initialDelayMs: 100, backoffCoefficient: "1.0", timeoutMs: 4000 }"#;
        let client = soak.env.client();
        let core = create_flow(&client, NS, &round_trip(NS, Some(retry))).await;
        create_flow(&client, NS, &soak.run_flow()).await;
        for _ in 0..2 {
            soak.start_alpha();
        }
        let beta = soak.replica("beta-v0", "beta-0", &soak.core_broker.url(), false);
        let runa = soak.replica("runa-v0", "runa-0", &soak.run_broker.url(), true);
        let runb = soak.replica("runb-v0", "runb-0", &soak.run_broker.url(), true);
        soak.others = vec![beta, runa, runb];
        let mut names: Vec<String> = core.nodes.iter().map(|n| n.name.clone()).collect();
        names.extend((1..=RUN_MODULES.len()).map(run_node));
        nodes_ready(&client, NS, &names).await;
        for (replica, nodes) in soak
            .alphas
            .iter()
            .map(|r| (r, 2))
            .chain(soak.others.iter().zip([1, 2, 1]))
        {
            eventually(
                &format!("{} to run its {nodes} nodes", replica.identity),
                Duration::from_secs(90),
                || async {
                    replica
                        .metric(r#"tiny_nodes{state="running"}"#)
                        .await
                        .filter(|n| *n >= nodes)
                },
            )
            .await;
        }
        tiny_testkit::the_leader(&soak.alphas).await;
        soak
    }

    /// The durable flow: three tally steps across runa and runb, the first one
    /// durable, each writing its calls to the soak's tally file.
    fn run_flow(&self) -> String {
        let file = self.tally_file();
        let file = file.display();
        let mut docs = Vec::new();
        for (i, module) in RUN_MODULES.iter().enumerate() {
            let step = i + 1;
            let durable = if step == 1 {
                ", tinysystems.io/execution-mode: durable"
            } else {
                ""
            };
            let mut doc = format!(
                "kind: TinyNode\nmetadata: {{ name: {}, labels: {{ tinysystems.io/flow-name: runs{durable} }} }}\n\
                 spec:\n  module: {module}\n  component: tally\n  ports:\n    \
                 - {{ port: _settings, configuration: {{ file: \"{file}\", delay: 0 }} }}\n",
                run_node(step)
            );
            if step > 1 {
                doc += &format!(
                    "    - {{ from: \"{}:out\", port: input, configuration: \"{{{{$}}}}\" }}\n",
                    run_node(step - 1)
                );
            }
            if step < RUN_MODULES.len() {
                doc += &format!(
                    "  edges:\n    - {{ id: runs-e{step}, port: out, to: \"{}:input\", flowID: runs }}\n",
                    run_node(step + 1)
                );
            }
            docs.push(doc);
        }
        docs.join("---\n")
    }

    fn tally_file(&self) -> PathBuf {
        self.dir.path().join("calls")
    }

    /// Starts a module process, its logs in the soak's folder.
    fn replica(&self, module: &str, identity: &str, url: &str, jetstream: bool) -> Replica {
        let mut builder = hello(&self.env, NS, identity, module)
            .nats(url)
            .logs(self.dir.path().join(format!("{identity}.log")));
        if jetstream {
            builder = builder.args(["--nats-transport", "jetstream"]);
        }
        tokio::task::block_in_place(|| builder.start())
    }

    /// Starts one more alpha replica (the first two, or one in place of a killed one).
    fn start_alpha(&mut self) {
        let identity = format!("alpha-{}", self.started_alphas);
        self.started_alphas += 1;
        let replica = self.replica("alpha-v0", &identity, &self.core_broker.url(), false);
        self.alphas.push(replica);
    }

    /// Reads every running process's memory and live tasks, and prints them.
    async fn read_processes(&mut self) -> String {
        let mut out = Vec::new();
        for replica in self.alphas.iter().chain(&self.others) {
            let reading = Reading {
                rss_kib: rss_kib(replica.pid()),
                tasks: replica.metric("tiny_tasks_alive").await,
            };
            let entry = self.history.entry(replica.pid()).or_insert_with(|| History {
                identity: replica.identity.clone(),
                first: reading.clone(),
                last: reading.clone(),
                max_rss_kib: 0,
                lived: true,
            });
            entry.last = reading.clone();
            entry.max_rss_kib = entry.max_rss_kib.max(reading.rss_kib.unwrap_or(0));
            out.push(format!(
                "{} {} MiB {} tasks",
                replica.identity,
                reading
                    .rss_kib
                    .map_or("?".into(), |k| format!("{:.1}", k as f64 / 1024.0)),
                reading.tasks.map_or("?".into(), |t| t.to_string())
            ));
        }
        out.join(", ")
    }

    /// SIGKILLs alpha's leader and starts a replica in its place.
    async fn kill_leader(&mut self) -> String {
        let i = tiny_testkit::the_leader(&self.alphas).await;
        let victim = self.alphas.remove(i);
        if let Some(h) = self.history.get_mut(&victim.pid()) {
            h.lived = false;
        }
        let said = format!("alpha's leader {} (pid {}) SIGKILLed", victim.identity, victim.pid());
        let killed = Instant::now();
        drop(victim);
        self.start_alpha();
        let next = tiny_testkit::the_leader(&self.alphas).await;
        format!(
            "{said}; {} leads {:.1} s later",
            self.alphas[next].identity,
            killed.elapsed().as_secs_f64()
        )
    }

    async fn pause_api_server(&self, seconds: u64) -> String {
        self.env.pause(Component::ApiServer).expect("the API server stops");
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        self.env.resume(Component::ApiServer).expect("the API server goes on");
        format!("the API server paused for {seconds} s")
    }

    async fn kill_brokers(&mut self, down: u64) -> String {
        // The guard ends here, not held across the outage's awaits.
        let outage = OUTAGES.lock().ok().map(|mut outages| {
            outages.push((Instant::now(), None));
            outages.len() - 1
        });
        self.core_broker.kill();
        self.run_broker.kill();
        tokio::time::sleep(Duration::from_secs(down)).await;
        self.core_broker.restart().await.expect("the core broker restarts");
        self.run_broker.restart().await.expect("the JetStream broker restarts");
        let back = Instant::now();
        for link in [&self.core_link, &self.run_link] {
            assert!(
                link.wait_up(Duration::from_secs(60)).await,
                "the test reaches the brokers again"
            );
        }
        for replica in self.alphas.iter().chain(&self.others) {
            eventually(
                &format!("{} ready again", replica.identity),
                Duration::from_secs(60),
                || async { replica.probe("/readyz").await.filter(|(code, _)| *code == 200) },
            )
            .await;
        }
        if let (Some(at), Ok(mut outages)) = (outage, OUTAGES.lock())
            && let Some((_, ready)) = outages.get_mut(at)
        {
            *ready = Some(Instant::now());
        }
        format!(
            "both brokers SIGKILLed, restarted {down} s later; every module ready {:.1} s after that",
            back.elapsed().as_secs_f64()
        )
    }

    fn elapsed(&self) -> String {
        format!("{:>6.1} s", self.began.elapsed().as_secs_f64())
    }
}

fn run_node(step: usize) -> String {
    format!("runs.{}.tally-{step}", RUN_MODULES[step - 1])
}

async fn connect(broker: &NatsServer) -> Link {
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(
        link.wait_up(Duration::from_secs(20)).await,
        "the test reaches {}",
        broker.address()
    );
    link
}

/// The runs the tally file shows started (a call of the first step) and finished (a
/// call of the last).
fn runs_seen(file: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let (first, last) = (run_node(1), run_node(RUN_MODULES.len()));
    let (mut started, mut finished) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines() {
        let mut fields = line.split(' ');
        let (Some(node), Some(run)) = (fields.next(), fields.next()) else {
            continue;
        };
        if node == first {
            started.insert(run.to_owned());
        } else if node == last {
            finished.insert(run.to_owned());
        }
    }
    (started, finished)
}

/// Core requests, every [`CORE_EVERY`] until `stop`.
async fn core_traffic(link: Link, stop: Arc<AtomicBool>, counts: Arc<Counts>) {
    let mut tick = tokio::time::interval(CORE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut inflight = JoinSet::new();
    for n in 0u64.. {
        tick.tick().await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        while inflight.try_join_next().is_some() {}
        counts.sent.fetch_add(1, Ordering::Relaxed);
        let (client, counts) = (link.client().clone(), counts.clone());
        inflight.spawn(async move {
            let name = format!("c{n}");
            let data = serde_json::to_vec(&json!({ "name": name })).unwrap_or_default();
            let opts = SendOptions {
                wait: Some(CORE_WAIT),
                ..SendOptions::default()
            };
            let sent = Instant::now();
            match send(&client, CORE_ENTRY, "input", data, &opts).await {
                Ok(reply) => {
                    let got = reply.and_then(tiny_sdk::Reply::into_value);
                    let want = json!({ "answer": format!("HELLO, C{n}!") });
                    if got.as_ref() == Some(&want) {
                        counts.answered.fetch_add(1, Ordering::Relaxed);
                    } else {
                        counts.wrong(format!("request {n}: {got:?}"));
                    }
                }
                Err(e) => {
                    let cut = e.code() == Some(tiny_sdk::error::code::TIMEOUT) && cut_by_kill(sent);
                    counts.failed_with(if cut { Some(CUT_BY_KILL) } else { e.code() });
                }
            }
        });
    }
    while inflight.join_next().await.is_some() {}
}

/// Durable runs, one published every [`RUN_EVERY`] until `stop`, each waited for
/// until the broker stores it.
async fn run_traffic(ledger: Arc<JetStream>, stop: Arc<AtomicBool>, counts: Arc<Publishes>) {
    let mut tick = tokio::time::interval(RUN_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut inflight = JoinSet::new();
    for n in 0u64.. {
        tick.tick().await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        while inflight.try_join_next().is_some() {}
        counts.sent.fetch_add(1, Ordering::Relaxed);
        let (js, counts) = (ledger.context(), counts.clone());
        inflight.spawn(async move {
            let mut headers = async_nats::HeaderMap::new();
            headers.insert(wire::header::TO, format!("{}:input", run_node(1)).as_str());
            headers.insert(wire::header::FROM, wire::FROM_SIGNAL);
            let data = serde_json::to_vec(&json!({ "n": n })).unwrap_or_default();
            match js
                .publish_with_headers(wire::subject(RUN_MODULES[0]), headers, data.into())
                .await
            {
                Err(_) => counts.refused.fetch_add(1, Ordering::Relaxed),
                Ok(ack) => match ack.await {
                    Ok(_) => counts.stored.fetch_add(1, Ordering::Relaxed),
                    Err(_) => counts.unsure.fetch_add(1, Ordering::Relaxed),
                },
            };
        });
    }
    while inflight.join_next().await.is_some() {}
}

/// TinySignals into alpha's flow, one every [`SIGNAL_EVERY`] until `stop`; whether
/// the API server took each is read back at the end.
async fn signal_traffic(client: kube::Client, stop: Arc<AtomicBool>, counts: Arc<Counts>) {
    let signals: Api<TinySignal> = Api::namespaced(client, NS);
    let mut tick = tokio::time::interval(SIGNAL_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut inflight = JoinSet::new();
    for n in 0u64.. {
        tick.tick().await;
        if stop.load(Ordering::Relaxed) {
            break;
        }
        while inflight.try_join_next().is_some() {}
        counts.sent.fetch_add(1, Ordering::Relaxed);
        let signals = signals.clone();
        inflight.spawn(async move {
            let spec = TinySignalSpec {
                node: CORE_ENTRY.into(),
                port: "input".into(),
                data: Some(RawJson(json!({ "name": format!("s{n}") }))),
                ..Default::default()
            };
            // Refused or not, what counts is whether it exists afterwards.
            let _ = signals
                .create(&PostParams::default(), &TinySignal::new(&format!("s{n}"), spec))
                .await;
        });
    }
    while inflight.join_next().await.is_some() {}
}

/// The signals' outcomes so far: delivered with their own reply, failed, still
/// pending, delivered with another reply (the first few named).
#[derive(Debug, Default)]
struct SignalOutcomes {
    taken: u64,
    delivered: u64,
    failed: u64,
    /// The first few failed signals and their errors.
    failed_examples: Vec<String>,
    pending: Vec<String>,
    wrong: Vec<String>,
}

async fn signal_outcomes(client: &kube::Client) -> Option<SignalOutcomes> {
    let signals: Api<TinySignal> = Api::namespaced(client.clone(), NS);
    let list = tokio::time::timeout(Duration::from_secs(20), signals.list(&ListParams::default()))
        .await
        .ok()?
        .ok()?;
    let mut out = SignalOutcomes::default();
    for s in list.items {
        out.taken += 1;
        let name = s.name_any();
        let status = s.status.unwrap_or_default();
        match status.signal_phase() {
            Some(SignalPhase::Delivered) => {
                let want = json!({ "answer": format!("HELLO, {}!", name.to_uppercase()) });
                if status.reply.map(|r| r.0) == Some(want) {
                    out.delivered += 1;
                } else {
                    out.wrong.push(name);
                }
            }
            Some(SignalPhase::Failed) => {
                out.failed += 1;
                if out.failed_examples.len() < 5 {
                    out.failed_examples
                        .push(format!("{name}: {}", status.error.unwrap_or_default()));
                }
            }
            _ => out.pending.push(name),
        }
    }
    Some(out)
}

/// One line of figures: the work so far.
struct Figures<'a> {
    core: &'a Counts,
    runs: &'a Publishes,
    signals: &'a Counts,
}

impl Figures<'_> {
    fn line(&self, file: &Path, signals: Option<&SignalOutcomes>) -> String {
        let g = Counts::get;
        let (started, finished) = runs_seen(file);
        let core_pending =
            g(&self.core.sent).saturating_sub(g(&self.core.answered) + g(&self.core.failed) + g(&self.core.wrong));
        let signals = signals.map_or("signals: not listed (the API server did not answer)".to_owned(), |s| {
            format!(
                "signals: {} sent, {} taken, {} delivered, {} failed, {} pending, {} wrong",
                g(&self.signals.sent),
                s.taken,
                s.delivered,
                s.failed,
                s.pending.len(),
                s.wrong.len()
            )
        });
        format!(
            "core: {} sent, {} answered, {} failed{} ({} lost: not what a broker kill gives), {} wrong, {core_pending} waiting | \
             runs: {} sent, {} stored, {} refused, {} unsure, {} started, {} finished | {signals}",
            g(&self.core.sent),
            g(&self.core.answered),
            g(&self.core.failed),
            self.core.codes(),
            self.core.lost_failures(),
            g(&self.core.wrong),
            g(&self.runs.sent),
            g(&self.runs.stored),
            g(&self.runs.refused),
            g(&self.runs.unsure),
            started.len(),
            finished.len(),
        )
    }
}

#[derive(Debug, Clone, Copy)]
enum Fault {
    LeaderKill,
    ApiServerPause,
    BrokerKill,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_traffic_survives_broker_kills_api_server_pauses_and_leader_kills() {
    let knobs = knobs();
    let mut soak = Soak::new().await;
    eprintln!(
        "soak: {} s of traffic, a fault every {} s (leader kill, API server pause of {} s, broker kill of {} s, in \
         turn); logs in {}",
        knobs.seconds,
        knobs.fault_every,
        knobs.pause_seconds,
        knobs.broker_down_seconds,
        soak.dir.path().display()
    );
    let stop = Arc::new(AtomicBool::new(false));
    let (core, runs, signals) = (
        Arc::new(Counts::default()),
        Arc::new(Publishes::default()),
        Arc::new(Counts::default()),
    );
    let traffic = [
        tokio::spawn(core_traffic(soak.core_link.clone(), stop.clone(), core.clone())),
        tokio::spawn(run_traffic(soak.ledger.clone(), stop.clone(), runs.clone())),
        tokio::spawn(signal_traffic(soak.env.client(), stop.clone(), signals.clone())),
    ];
    soak.began = Instant::now();
    let end = soak.began + Duration::from_secs(knobs.seconds);
    let client = soak.env.client();
    let figures = Figures {
        core: &core,
        runs: &runs,
        signals: &signals,
    };
    let faults = [Fault::LeaderKill, Fault::ApiServerPause, Fault::BrokerKill];
    let mut done: BTreeMap<&str, u32> = BTreeMap::new();
    for k in 1u64.. {
        let at = soak.began + Duration::from_secs(k * knobs.fault_every);
        if at >= end {
            break;
        }
        // Pacing, not synchronisation: the fault comes when its time comes.
        tokio::time::sleep_until(at).await;
        let processes = soak.read_processes().await;
        let outcomes = signal_outcomes(&client).await;
        eprintln!("{} | {processes}", soak.elapsed());
        eprintln!(
            "{} | {}",
            soak.elapsed(),
            figures.line(&soak.tally_file(), outcomes.as_ref())
        );
        let fault = faults[((k - 1) % 3) as usize];
        let said = match fault {
            Fault::LeaderKill => soak.kill_leader().await,
            Fault::ApiServerPause => soak.pause_api_server(knobs.pause_seconds).await,
            Fault::BrokerKill => soak.kill_brokers(knobs.broker_down_seconds).await,
        };
        *done
            .entry(match fault {
                Fault::LeaderKill => "leader kills",
                Fault::ApiServerPause => "API server pauses",
                Fault::BrokerKill => "broker kills",
            })
            .or_default() += 1;
        eprintln!("{} | fault: {said}", soak.elapsed());
    }
    tokio::time::sleep_until(end).await;
    stop.store(true, Ordering::Relaxed);
    for t in traffic {
        t.await.expect("the traffic task ends");
    }
    eprintln!("{} | traffic stopped; draining", soak.elapsed());

    // The drain: every signal final, every stored run finished and every started one.
    let file = soak.tally_file();
    let deadline = Instant::now() + DRAIN;
    let outcomes = loop {
        let outcomes = signal_outcomes(&client).await;
        let (started, finished) = runs_seen(&file);
        let runs_done = finished.len() as u64 >= Counts::get(&runs.stored) && started.is_subset(&finished);
        let signals_done = outcomes.as_ref().is_some_and(|o| o.pending.is_empty());
        if (runs_done && signals_done) || Instant::now() > deadline {
            break outcomes;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let processes = soak.read_processes().await;
    eprintln!("{} | {processes}", soak.elapsed());
    eprintln!("{} | {}", soak.elapsed(), figures.line(&file, outcomes.as_ref()));
    for failed in outcomes.iter().flat_map(|o| &o.failed_examples) {
        eprintln!("failed signal {failed}");
    }

    // The verdict.
    let mut problems = Vec::new();
    let g = Counts::get;
    if g(&core.wrong) > 0 {
        problems.push(format!(
            "{} core requests got another answer than their own, e.g. {:?}",
            g(&core.wrong),
            core.wrong_examples.lock().map(|e| e.clone()).unwrap_or_default()
        ));
    }
    let unanswered = g(&core.sent).saturating_sub(g(&core.answered) + g(&core.failed) + g(&core.wrong));
    let lost_core = unanswered + core.lost_failures();
    if lost_core > 0 {
        problems.push(format!(
            "{lost_core} core requests lost: {unanswered} neither answered nor failed, {} failed otherwise than \
             a broker kill fails them (UNREACHABLE, or a TIMEOUT of one sent in a broker outage or just before it){}",
            core.lost_failures(),
            core.codes()
        ));
    }
    if g(&core.answered) == 0 {
        problems.push("no core request was answered".into());
    }
    let (started, finished) = runs_seen(&file);
    let stored = g(&runs.stored);
    let lost_runs = stored.saturating_sub(finished.len() as u64);
    let stuck: Vec<&String> = started.difference(&finished).collect();
    if lost_runs > 0 {
        problems.push(format!(
            "{lost_runs} runs lost: {stored} stored by the broker, {} finished",
            finished.len()
        ));
    }
    if !stuck.is_empty() {
        problems.push(format!(
            "{} runs started and never finished, e.g. {:?}",
            stuck.len(),
            stuck.first()
        ));
    }
    if finished.len() as u64 > stored + g(&runs.unsure) {
        problems.push(format!(
            "{} runs finished, more than the {stored} stored and {} unsure: a run started twice",
            finished.len(),
            g(&runs.unsure)
        ));
    }
    match &outcomes {
        None => problems.push("the signals could not be listed at the end".into()),
        Some(o) => {
            if !o.pending.is_empty() {
                problems.push(format!(
                    "{} signals lost (taken, never delivered nor failed), e.g. {:?}",
                    o.pending.len(),
                    &o.pending[..o.pending.len().min(5)]
                ));
            }
            if !o.wrong.is_empty() {
                problems.push(format!("signals delivered with another reply: {:?}", o.wrong));
            }
            if o.delivered == 0 {
                problems.push("no signal was delivered".into());
            }
        }
    }
    let kinds = done.len();
    if kinds < 3 {
        problems.push(format!(
            "only {kinds} kinds of fault happened: {done:?}; give SOAK_SECONDS more room"
        ));
    }
    eprintln!("\nprocess        first RSS  last RSS   max RSS   first tasks  last tasks");
    for h in soak.history.values() {
        let mib = |k: Option<u64>| k.map_or("?".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
        eprintln!(
            "{:<14} {:>9} {:>9} {:>9} {:>12} {:>11}{}",
            h.identity,
            mib(h.first.rss_kib),
            mib(h.last.rss_kib),
            mib(Some(h.max_rss_kib)),
            h.first.tasks.map_or("?".into(), |t| t.to_string()),
            h.last.tasks.map_or("?".into(), |t| t.to_string()),
            if h.lived { "" } else { "  (killed)" }
        );
        if h.max_rss_kib > knobs.rss_mib * 1024 {
            problems.push(format!(
                "{} reached {} KiB of resident memory, above SOAK_RSS_MIB={}",
                h.identity, h.max_rss_kib, knobs.rss_mib
            ));
        }
        if h.lived {
            let grew = h.last.rss_kib.unwrap_or(0).saturating_sub(h.first.rss_kib.unwrap_or(0));
            if grew > knobs.rss_growth_mib * 1024 {
                problems.push(format!(
                    "{} grew by {grew} KiB from its first reading to its last, above SOAK_RSS_GROWTH_MIB={}",
                    h.identity, knobs.rss_growth_mib
                ));
            }
            let tasks = h
                .last
                .tasks
                .unwrap_or(u64::MAX)
                .saturating_sub(h.first.tasks.unwrap_or(0));
            if tasks > knobs.tasks_growth {
                problems.push(format!(
                    "{} has {tasks} more live tasks after the drain than under traffic at first ({:?} -> {:?}), above \
                     SOAK_TASKS_GROWTH={}",
                    h.identity, h.first.tasks, h.last.tasks, knobs.tasks_growth
                ));
            }
        }
    }
    eprintln!("faults: {done:?}");
    if !problems.is_empty() {
        let kept = soak.dir.keep();
        panic!(
            "the soak failed (logs kept in {}):\n- {}",
            kept.display(),
            problems.join("\n- ")
        );
    }
}

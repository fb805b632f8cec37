//! Durable runs on JetStream for real: a real control plane, a real `nats-server` with
//! JetStream, and the module binaries as processes (`--nats-transport jetstream`). A
//! five-step flow crosses two modules, alpha and beta, and its first node is labelled
//! `tinysystems.io/execution-mode=durable`, so each message sent to it is a run.
//!
//! Each step is a `tally` node: a handler call appends `<node> <runID> <stepKey> <pid>
//! <unix ms>` to a file before it waits and passes the message on, so the calls are
//! counted across SIGKILLs. The calls, the processes killed (and when), and the
//! ledger in `TINY_EXEC` say together whether every run completed, whether each step
//! ran once, and which steps ran twice and why.
//!
//! - A module is SIGKILLed three times (and started again) while 200 runs go through
//!   (`TINY_CRASH_RUNS` to change the count).
//! - The broker is killed mid-run and restarted.
//! - A run's next module is down past the reconciler's stale threshold: the run is
//!   re-driven and completes when the module returns; with the module gone for good,
//!   the run ends failed after three re-drives, with Go's message. (Within the
//!   broker's 2 min duplicate window a re-drive of a hop still in the stream is
//!   dropped as a copy, its step key being its `Nats-Msg-Id`: the module that returns
//!   takes the stored hop.)
//!
//! About a minute in all (`make durable` runs them one after another and prints the
//! figures): a message the killed process held is delivered again after Go's 30 s
//! ack wait.

mod common;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use common::{Replica, create_flow, env, eventually, hello, nodes_ready};
use serde_json::json;
use tiny_runtime::{
    jetstream::JetStream,
    nats::{Link, SendOptions, send, wire},
};
use tiny_sdk::run::{self, LedgerKind, RunStatus, RunStore as _, StepRecord, StepStatus};
use tiny_testenv::NatsServer;

/// The module of each step, in order: alpha's entry, then back and forth.
const MODULES: [&str; 5] = ["alpha-v0", "beta-v0", "alpha-v0", "beta-v0", "alpha-v0"];

/// Go's message for a hop that was re-driven three times and never completed.
const GIVEN_UP: &str = "re-drive limit reached after 3 attempts — hop never completed (is the target module on an SDK >= v0.11 with durable support?)";

/// Now, in Unix milliseconds (the tally lines' clock).
fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// One handler call, as a tally line has it.
#[derive(Debug, Clone)]
struct Call {
    node: String,
    run: String,
    step: String,
    pid: u32,
    at_ms: u128,
}

/// A control plane, a broker with JetStream, a namespace with the five-step flow, a
/// folder for the tally file and the logs, and the ledger read from the test.
struct Scene {
    env: tiny_testkit::cluster::Cluster,
    broker: NatsServer,
    ns: String,
    dir: tempfile::TempDir,
    link: Link,
    ledger: Arc<JetStream>,
}

impl Scene {
    /// Each step waits `delay` ms between its tally line and its emit (the window in
    /// which a kill leaves a step done but not recorded).
    async fn new(ns: &str, delay: u64) -> Self {
        let env = env().await;
        let broker = NatsServer::start_with(&["--jetstream"])
            .await
            .expect("nats-server starts");
        env.create_namespace(ns).await.expect("namespace");
        let dir = tempfile::Builder::new()
            .prefix(&format!("tiny-durable-{ns}-"))
            .tempdir()
            .expect("a folder");
        let link = Link::connect(&broker.url()).await.expect("a NATS URL");
        assert!(
            link.wait_up(Duration::from_secs(20)).await,
            "the test reaches the broker"
        );
        // The streams and the bucket exist before the first message, whoever starts
        // first; the test reads the ledger through the same handle a module uses.
        let ledger = JetStream::new(link.clone(), "durable-test", "durable-test-0");
        ledger.ensure().await.expect("Go's streams and TINY_EXEC");
        let scene = Self {
            env,
            broker,
            ns: ns.to_owned(),
            dir,
            link,
            ledger,
        };
        create_flow(&scene.env.client(), ns, &scene.flow(delay)).await;
        scene
    }

    /// The node of step `step` (1 to 5).
    fn node(&self, step: usize) -> String {
        format!("{}.{}.tally-{step}", self.ns, MODULES[step - 1])
    }

    fn tally_file(&self) -> PathBuf {
        self.dir.path().join("calls")
    }

    fn flow(&self, delay: u64) -> String {
        let (ns, file) = (&self.ns, self.tally_file());
        let file = file.display();
        let mut docs = Vec::new();
        for (i, module) in MODULES.iter().enumerate() {
            let step = i + 1;
            let name = self.node(step);
            let durable = if step == 1 {
                ", tinysystems.io/execution-mode: durable"
            } else {
                ""
            };
            let mut doc = format!(
                "kind: TinyNode\nmetadata: {{ name: {name}, labels: {{ tinysystems.io/flow-name: {ns}{durable} }} }}\n\
                 spec:\n  module: {module}\n  component: tally\n  ports:\n    \
                 - {{ port: _settings, configuration: {{ file: \"{file}\", delay: {delay} }} }}\n"
            );
            if step > 1 {
                let prev = self.node(step - 1);
                doc += &format!("    - {{ from: \"{prev}:out\", port: input, configuration: \"{{{{$}}}}\" }}\n");
            }
            if step < MODULES.len() {
                let next = self.node(step + 1);
                doc +=
                    &format!("  edges:\n    - {{ id: {ns}-e{step}, port: out, to: \"{next}:input\", flowID: {ns} }}\n");
            }
            docs.push(doc);
        }
        docs.join("---\n")
    }

    /// Starts a replica of `module` on JetStream, its logs in the scene's folder.
    fn module(&self, module: &str, identity: &str, vars: &[(&str, &str)]) -> Replica {
        let builder = hello(&self.env, &self.ns, identity, module)
            .nats(&self.broker.url())
            .args(["--nats-transport", "jetstream"])
            .envs(vars.iter().copied())
            .env("RUST_LOG", "warn,tiny_runtime::jetstream=info")
            .logs(self.dir.path().join(format!("{identity}.log")));
        tokio::task::block_in_place(|| builder.start())
    }

    /// Waits until the flow's nodes are Ready and each replica runs its nodes.
    async fn ready(&self, replicas: &[(&Replica, u64)]) {
        let names: Vec<String> = (1..=MODULES.len()).map(|s| self.node(s)).collect();
        nodes_ready(&self.env.client(), &self.ns, &names).await;
        for (r, nodes) in replicas {
            eventually(
                &format!("{} to run its {nodes} nodes", r.identity),
                Duration::from_secs(60),
                || async { r.metric(r#"tiny_nodes{state="running"}"#).await.filter(|n| n >= nodes) },
            )
            .await;
        }
    }

    /// Starts run `n`: a message to the durable entry node over NATS, as the platform
    /// sends it (a core publish, which `module-edges` stores).
    async fn start_run(&self, n: usize) {
        let data = serde_json::to_vec(&json!({ "n": n })).unwrap_or_default();
        send(
            self.link.client(),
            &self.node(1),
            "input",
            data,
            &SendOptions::default(),
        )
        .await
        .expect("sent");
    }

    /// Starts run `n` as [`start_run`](Self::start_run) does, but published on
    /// JetStream and waited for until the broker has stored it: a core publish just
    /// before the broker dies may be lost with it (it is at most once), and the
    /// broker test counts the runs that were sent.
    async fn start_run_stored(&self, n: usize) {
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(wire::header::TO, format!("{}:input", self.node(1)).as_str());
        headers.insert(wire::header::FROM, wire::FROM_SIGNAL);
        let data = serde_json::to_vec(&json!({ "n": n })).unwrap_or_default();
        self.ledger
            .context()
            .publish_with_headers(wire::subject("alpha-v0"), headers, data.into())
            .await
            .expect("published")
            .await
            .expect("stored");
    }

    /// Every handler call so far.
    fn calls(&self) -> Vec<Call> {
        let text = std::fs::read_to_string(self.tally_file()).unwrap_or_default();
        text.lines()
            .map(|line| {
                let f: Vec<&str> = line.split(' ').collect();
                assert_eq!(f.len(), 5, "a tally line has five fields: {line:?}");
                Call {
                    node: f[0].to_owned(),
                    run: f[1].to_owned(),
                    step: f[2].to_owned(),
                    pid: f[3].parse().expect("a pid"),
                    at_ms: f[4].parse().expect("a time"),
                }
            })
            .collect()
    }

    /// Waits until process `pid` has started an entry step after the first `after`
    /// calls: polled every millisecond, so that the step is still under way (in its
    /// delay, not recorded) when this returns.
    async fn entry_under_way(&self, pid: u32, after: usize) {
        let entry = self.node(1);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.calls().iter().skip(after).any(|c| c.node == entry && c.pid == pid) {
            assert!(
                Instant::now() < deadline,
                "process {pid} took no entry step within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Every run's step records, by run id.
    async fn runs(&self) -> BTreeMap<String, Vec<(String, StepRecord)>> {
        let mut runs: BTreeMap<String, Vec<(String, StepRecord)>> = BTreeMap::new();
        for key in self.ledger.keys("exec/").await.expect("the ledger lists its keys") {
            let Some(parsed) = run::parse_ledger_key(&key) else {
                continue;
            };
            if parsed.kind != LedgerKind::Step {
                continue;
            }
            let Some(value) = self.ledger.get(&key).await.expect("the ledger answers") else {
                continue;
            };
            let record = StepRecord::from_json_slice(&value).expect("a step record as Go writes it");
            runs.entry(parsed.run_id).or_default().push((parsed.step_key, record));
        }
        runs
    }

    /// The business consumers' counts, for a failure's message.
    async fn consumers(&self) -> String {
        let mut out = Vec::new();
        for module in ["alpha-v0", "beta-v0"] {
            let info = async {
                let stream = self.ledger.context().get_stream("module-edges").await.ok()?;
                let i = stream.consumer_info(module).await.ok()?;
                Some(format!(
                    "{module}: {} pending, {} waiting for their ack, {} redelivered",
                    i.num_pending, i.num_ack_pending, i.num_redelivered
                ))
            };
            out.push(info.await.unwrap_or_else(|| format!("{module}: no consumer info")));
        }
        out.join("; ")
    }

    /// Every replica's log lines that mention `needle`, for a failure's message.
    fn log_lines(&self, needle: &str) -> String {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(self.dir.path()).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "log") {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.extend(
                    text.lines()
                        .filter(|l| l.contains(needle))
                        .map(|l| format!("{name}: {l}")),
                );
            }
        }
        if out.is_empty() {
            format!("no log line mentions {needle}")
        } else {
            out.join("\n")
        }
    }

    /// A replica's log, for a failure's message.
    fn log(&self, identity: &str) -> String {
        let path = self.dir.path().join(format!("{identity}.log"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("{}:\n{}", path.display(), tail.join("\n"))
    }
}

/// How many runs the crash tests send: `TINY_CRASH_RUNS`, else 200 (the issue's).
fn run_count() -> usize {
    std::env::var("TINY_CRASH_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|n| *n >= 4)
        .unwrap_or(200)
}

/// Waits (up to `limit`) until the ledger holds at least `runs` runs, all complete; the
/// runs. Says what is missing if they do not.
async fn all_complete(
    scene: &Scene,
    runs: usize,
    limit: Duration,
    logs: &[&str],
) -> BTreeMap<String, Vec<(String, StepRecord)>> {
    let deadline = Instant::now() + limit;
    loop {
        let ledger = scene.runs().await;
        let statuses: Vec<RunStatus> = ledger.values().map(|r| RunStatus::from_records(r)).collect();
        let complete = statuses.iter().filter(|s| s.complete).count();
        if ledger.len() >= runs && complete == ledger.len() {
            return ledger;
        }
        if Instant::now() > deadline {
            let failed: Vec<String> = ledger
                .iter()
                .filter(|(_, r)| !RunStatus::from_records(r).complete)
                .map(|(id, r)| format!("{id}: {:?}", RunStatus::from_records(r)))
                .take(3)
                .collect();
            let pending: Vec<String> = ledger
                .iter()
                .flat_map(|(id, r)| {
                    run::frontier(r)
                        .into_iter()
                        .map(move |hop| format!("{id}: {} {}", hop.to, hop.step_key))
                        .collect::<Vec<_>>()
                })
                .take(5)
                .collect();
            let logs: Vec<String> = logs.iter().map(|l| scene.log(l)).collect();
            panic!(
                "after {limit:?}: {} runs in the ledger ({runs} sent), {complete} complete; incomplete: {failed:#?}; \
                 pending: {pending:#?}; {}\n{}",
                ledger.len(),
                scene.consumers().await,
                logs.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What the calls and the ledger say together, once every run completed.
#[derive(Debug, Default)]
struct Tally {
    /// Steps recorded.
    steps: usize,
    /// Handler calls.
    calls: usize,
    /// Steps whose handler ran twice (or more).
    twice: usize,
    /// The earlier calls of those steps.
    repeated_calls: Vec<Call>,
}

impl Tally {
    /// How many steps of each node ran again, e.g. `tally-1: 2, tally-3: 1`.
    fn by_node(&self) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for call in &self.repeated_calls {
            let node = call.node.rsplit('.').next().unwrap_or(&call.node);
            *counts.entry(node).or_default() += 1;
        }
        let counts: Vec<String> = counts.iter().map(|(n, c)| format!("{n}: {c}")).collect();
        if counts.is_empty() {
            "none".into()
        } else {
            counts.join(", ")
        }
    }
}

/// Checks that `runs` runs completed, each with its five steps recorded done by the
/// right nodes, that every handler call belongs to a recorded step and every recorded
/// step had a call, and that a step's handler ran more than once only where
/// `explains` accepts the earlier call (the process died between the call and its
/// record). Returns the counts.
fn check(
    scene: &Scene,
    runs: usize,
    ledger: &BTreeMap<String, Vec<(String, StepRecord)>>,
    explains: impl Fn(&Call) -> bool,
) -> Tally {
    let nodes: BTreeSet<String> = (1..=MODULES.len()).map(|s| scene.node(s)).collect();
    assert_eq!(
        ledger.len(),
        runs,
        "one run for each message sent: none lost, none started twice"
    );
    let mut recorded: BTreeSet<(String, String)> = BTreeSet::new();
    for (run_id, records) in ledger {
        let status = RunStatus::from_records(records);
        assert!(status.complete && status.pending_steps == 0, "{run_id}: {status:?}");
        assert!(
            records.iter().any(|(k, _)| *k == run::root_step_key(run_id)),
            "{run_id} has its root step (the entry node's call): {records:?}"
        );
        let ran: BTreeSet<String> = records.iter().map(|(_, r)| r.node.clone()).collect();
        assert_eq!(ran, nodes, "{run_id} went through the five nodes");
        assert_eq!(records.len(), MODULES.len(), "{run_id}: five steps, each recorded once");
        for (step, record) in records {
            assert_eq!(record.status, StepStatus::Done, "{run_id} {step}: {record:?}");
            recorded.insert((run_id.clone(), step.clone()));
        }
    }
    let calls = scene.calls();
    let mut by_step: BTreeMap<(String, String), Vec<Call>> = BTreeMap::new();
    for call in &calls {
        assert!(
            nodes.contains(&call.node) && call.run != "-",
            "every call is a step of a run: {call:?}"
        );
        by_step
            .entry((call.run.clone(), call.step.clone()))
            .or_default()
            .push(call.clone());
    }
    let unrecorded: Vec<&(String, String)> = by_step.keys().filter(|k| !recorded.contains(*k)).collect();
    assert!(
        unrecorded.is_empty(),
        "{} handler calls belong to no recorded step, e.g. {:?}",
        unrecorded.len(),
        unrecorded.first()
    );
    let uncounted: Vec<&(String, String)> = recorded.iter().filter(|k| !by_step.contains_key(*k)).collect();
    assert!(
        uncounted.is_empty(),
        "{} recorded steps have no handler call, e.g. {:?}",
        uncounted.len(),
        uncounted.first()
    );
    let mut tally = Tally {
        steps: recorded.len(),
        calls: calls.len(),
        ..Tally::default()
    };
    for ((run_id, step), calls) in &by_step {
        let (last, earlier) = calls.split_last().expect("at least one call");
        if earlier.is_empty() {
            continue;
        }
        tally.twice += 1;
        for call in earlier {
            assert!(
                explains(call),
                "{run_id} {step} ran again after {call:?} (then {last:?}), and no crash explains it; the logs \
                 on its run:\n{}",
                scene.log_lines(run_id)
            );
            tally.repeated_calls.push(call.clone());
        }
    }
    tally
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_complete_and_steps_run_once_while_a_module_is_sigkilled_three_times() {
    let runs = run_count();
    let scene = Scene::new("crash", 200).await;
    let mut alpha = Some(scene.module("alpha-v0", "alpha-0", &[]));
    let beta = scene.module("beta-v0", "beta-0", &[]);
    scene.ready(&[(alpha.as_ref().expect("alpha"), 3), (&beta, 2)]).await;

    // 200 runs over about 10 s, each step taking 200 ms; alpha (the entry node, steps
    // 1, 3 and 5) is SIGKILLed after a quarter, a half and three quarters of them, each
    // time while it holds the entry step of the run just sent, and started again at
    // once.
    let started = Instant::now();
    let mut killed: BTreeMap<u32, u128> = BTreeMap::new();
    let mut incarnation = 0;
    for n in 0..runs {
        let calls_before = scene.calls().len();
        scene.start_run(n).await;
        if n > 0 && n % (runs / 4) == 0 && killed.len() < 3 {
            let victim = alpha.take().expect("alpha runs");
            scene.entry_under_way(victim.pid(), calls_before).await;
            killed.insert(victim.pid(), now_ms());
            drop(victim); // SIGKILL
            incarnation += 1;
            alpha = Some(scene.module("alpha-v0", &format!("alpha-{incarnation}"), &[]));
        }
        tokio::time::sleep(Duration::from_millis(50)).await; // paces the load; waits for nothing
    }
    let sent = started.elapsed();
    let mut logs: Vec<String> = (0..=incarnation).map(|i| format!("alpha-{i}")).collect();
    logs.push("beta-0".into());
    let log_names: Vec<&str> = logs.iter().map(String::as_str).collect();
    let ledger = all_complete(&scene, runs, Duration::from_secs(120), &log_names).await;
    let done = started.elapsed();
    let tally = check(&scene, runs, &ledger, |call| {
        killed.get(&call.pid).is_some_and(|at| call.at_ms <= *at)
    });
    let in_killed = scene.calls().iter().filter(|c| killed.contains_key(&c.pid)).count();
    eprintln!(
        "crash: {runs} runs of 5 steps (alpha: steps 1, 3, 5; beta: 2, 4) sent in {sent:.1?}, alpha SIGKILLed 3 times \
         and restarted; all complete after {done:.1?}. {} steps recorded, {} handler calls ({in_killed} in the killed \
         processes): {} steps ran twice ({}), each killed between its work and its record; every other step ran once",
        tally.steps,
        tally.calls,
        tally.twice,
        tally.by_node()
    );
    assert_eq!(killed.len(), 3);
    assert_eq!(
        tally.repeated_calls.len(),
        tally.twice,
        "a step ran at most twice (no kill caught a step twice)"
    );
    let entries_again = tally.repeated_calls.iter().filter(|c| c.node == scene.node(1)).count();
    assert!(
        entries_again >= 3,
        "each kill caught an entry step under way, which ran again in its run: {entries_again}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_complete_and_steps_run_once_across_a_broker_restart() {
    let runs = run_count();
    let mut scene = Scene::new("bounce", 200).await;
    let mut alpha = scene.module("alpha-v0", "alpha-0", &[]);
    let mut beta = scene.module("beta-v0", "beta-0", &[]);
    scene.ready(&[(&alpha, 3), (&beta, 2)]).await;

    let started = Instant::now();
    let mut outage = None;
    for n in 0..runs {
        scene.start_run_stored(n).await;
        if n == runs / 3 {
            // The broker dies with runs in flight, and comes back (on the same store)
            // once both modules say they have lost it. Runs are sent again once both
            // modules are back.
            let down = now_ms();
            scene.broker.kill();
            for r in [&alpha, &beta] {
                eventually("/readyz to say the broker is gone", Duration::from_secs(30), || async {
                    r.probe("/readyz").await.filter(|(code, _)| *code == 503)
                })
                .await;
            }
            scene.broker.restart().await.expect("the broker restarts");
            assert!(scene.link.wait_up(Duration::from_secs(30)).await);
            for r in [&alpha, &beta] {
                eventually("/readyz ready again", Duration::from_secs(30), || async {
                    r.probe("/readyz").await.filter(|(code, _)| *code == 200)
                })
                .await;
            }
            outage = Some((down, now_ms()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await; // paces the load; waits for nothing
    }
    let sent = started.elapsed();
    let (down, up) = outage.expect("the broker was restarted");
    // Said before the check, so that a step that ran again is placed against it.
    eprintln!("the broker went at {down} ms and both modules were ready again at {up} ms");
    let ledger = all_complete(&scene, runs, Duration::from_secs(120), &["alpha-0", "beta-0"]).await;
    let done = started.elapsed();
    // A step runs again only if its first call was under way when the broker went
    // (its record could not be written): within its delay before the kill, or while
    // the broker was away.
    let tally = check(&scene, runs, &ledger, |call| {
        call.at_ms + 2_000 >= down && call.at_ms <= up
    });
    eprintln!(
        "broker restart: {runs} runs of 5 steps sent in {sent:.1?}, the broker killed after a third and back {:.1} s \
         later; all complete after {done:.1?}. {} steps recorded, {} handler calls: {} steps ran twice, each under way \
         when the broker died ({}); every other step ran once",
        (up - down) as f64 / 1000.0,
        tally.steps,
        tally.calls,
        tally.twice,
        tally.by_node()
    );
    assert!(alpha.running() && beta.running(), "no module restarted");
    assert_eq!(tally.repeated_calls.len(), tally.twice, "a step ran at most twice");
}

/// The reconciler's timings for the stuck-run test: a pass every 2 s, a run stale 3 s
/// after its last step, three re-drives.
const QUICK_RECONCILER: [(&str, &str); 3] = [
    ("TINY_RUN_RECONCILE_INTERVAL", "2"),
    ("TINY_RUN_STALE_AFTER", "3"),
    ("TINY_RUN_MAX_REDRIVES", "3"),
];

/// The run of the entry node's call that is not among `known`.
async fn new_run(scene: &Scene, known: &BTreeSet<String>) -> String {
    let entry = scene.node(1);
    eventually("the entry step runs", Duration::from_secs(30), || async {
        scene
            .calls()
            .into_iter()
            .find(|c| c.node == entry && !known.contains(&c.run))
            .map(|c| c.run)
    })
    .await
}

/// The re-drive counter of the hop run `run_id`'s root step emitted.
async fn counter_key(scene: &Scene, run_id: &str) -> String {
    let root = eventually("the root step is recorded", Duration::from_secs(30), || async {
        let value = scene
            .ledger
            .get(&run::step_record_key(run_id, &run::root_step_key(run_id)))
            .await
            .ok()??;
        StepRecord::from_json_slice(&value).ok()
    })
    .await;
    assert_eq!(root.emits.len(), 1, "{root:?}");
    run::redrive_key(run_id, &root.emits[0].step_key)
}

async fn counter(scene: &Scene, key: &str) -> Option<String> {
    let value = scene.ledger.get(key).await.expect("the ledger answers")?;
    Some(String::from_utf8_lossy(&value).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_run_is_redriven_when_its_module_returns_and_fails_with_gos_message_when_it_never_does() {
    let scene = Scene::new("stuck", 0).await;
    let alpha = scene.module("alpha-v0", "alpha-0", &QUICK_RECONCILER);
    let beta = scene.module("beta-v0", "beta-0", &QUICK_RECONCILER);
    scene.ready(&[(&alpha, 3), (&beta, 2)]).await;
    eventually(
        "alpha to lead (its leader reconciles)",
        Duration::from_secs(30),
        || async { alpha.leads().await.then_some(()) },
    )
    .await;

    // beta goes away; a run starts: alpha's first step is recorded, its hop to beta
    // waits in the stream, and nothing completes.
    drop(beta);
    let started = Instant::now();
    scene.start_run(0).await;
    let first = new_run(&scene, &BTreeSet::new()).await;
    let key = counter_key(&scene, &first).await;
    // Past the stale threshold the leader re-drives the hop.
    eventually("the pending hop to be re-driven", Duration::from_secs(30), || async {
        counter(&scene, &key).await.filter(|c| c == "1")
    })
    .await;
    let redriven = started.elapsed();
    assert!(
        redriven >= Duration::from_secs(3),
        "not before the run is stale: {redriven:?}"
    );
    let status = run::run_status(&*scene.ledger, &first).await.expect("status");
    assert!(
        !status.complete && !status.failed && status.pending_steps == 1,
        "{status:?}"
    );

    // beta returns: the run completes, each step's handler called once.
    let beta = scene.module("beta-v0", "beta-1", &QUICK_RECONCILER);
    let status = eventually("the run to complete", Duration::from_secs(30), || async {
        let s = run::run_status(&*scene.ledger, &first).await.ok()?;
        (s.complete || s.failed).then_some(s)
    })
    .await;
    let completed = started.elapsed();
    assert!(status.complete, "{status:?}\n{}", scene.log("alpha-0"));
    assert_eq!(status.steps.len(), MODULES.len(), "{status:?}");
    let redrives = counter(&scene, &key).await.unwrap_or_default();
    assert!(
        ["1", "2", "3"].contains(&redrives.as_str()),
        "re-driven, and not given up on: {redrives}"
    );
    let calls: Vec<Call> = scene.calls().into_iter().filter(|c| c.run == first).collect();
    let steps: BTreeSet<&str> = calls.iter().map(|c| c.step.as_str()).collect();
    assert_eq!(
        (calls.len(), steps.len()),
        (MODULES.len(), MODULES.len()),
        "each step ran once: {calls:?}"
    );

    // beta goes for good: the next run's hop is re-driven three times, then the run
    // ends failed, the failed step named after the hop's target, with Go's message.
    drop(beta);
    let again = Instant::now();
    scene.start_run(1).await;
    let second = new_run(&scene, &BTreeSet::from([first.clone()])).await;
    let key = counter_key(&scene, &second).await;
    let status = eventually("the run to fail", Duration::from_secs(40), || async {
        let s = run::run_status(&*scene.ledger, &second).await.ok()?;
        s.failed.then_some(s)
    })
    .await;
    let failed_after = again.elapsed();
    assert!(!status.complete && status.pending_steps == 0, "{status:?}");
    let failed: Vec<_> = status.steps.iter().filter(|s| s.status == StepStatus::Failed).collect();
    assert_eq!(failed.len(), 1, "{status:?}");
    assert_eq!(failed[0].node, format!("{}:input", scene.node(2)));
    assert_eq!(failed[0].error.as_deref(), Some(GIVEN_UP));
    assert_eq!(counter(&scene, &key).await.as_deref(), Some("3"), "three re-drives");
    assert!(
        scene.calls().iter().all(|c| c.run != second || c.node == scene.node(1)),
        "nothing ran beyond the entry step"
    );
    eprintln!(
        "stuck run: beta down, re-driven {redriven:.1?} after the run started (stale after 3 s, a pass every 2 s), \
         beta back: complete after {completed:.1?} ({redrives} re-drive(s), each step once); beta gone for good: \
         failed after {failed_after:.1?} with Go's message"
    );
    assert!(alpha.leads().await);
}

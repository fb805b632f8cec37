//! The JetStream transport and durable runs against a real `nats-server` with
//! JetStream on: two modules in this process, each with its consumers and its router,
//! sharing Go's streams and the ledger bucket `TINY_EXEC`.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tiny_runtime::{
    jetstream::{self, JetStream, JetStreamRouter},
    nats::{Link, SendOptions, send, wire},
};
use tiny_sdk::{
    engine::{Delivery, EXECUTION_MODE_LABEL, Engine, Registry, RemoteRouter},
    flow::{Flow, FlowBuilder},
    prelude::*,
    run::{self, RunStore as _},
};
use tiny_testkit::{DurableModule, NatsServer, durable_module, eventually};

const WAIT: Duration = Duration::from_secs(20);

/// Handler calls per node, and the runs each call belonged to.
static CALLS: Mutex<Vec<(String, Option<String>)>> = Mutex::new(Vec::new());

fn calls(node: &str) -> usize {
    CALLS.lock().expect("calls").iter().filter(|(n, _)| n == node).count()
}

fn runs_of(node: &str) -> Vec<String> {
    CALLS
        .lock()
        .expect("calls")
        .iter()
        .filter(|(n, _)| n == node)
        .filter_map(|(_, r)| r.clone())
        .collect()
}

/// Counts its calls, adds one to `n` and passes the message on.
#[derive(Debug, Component, Default)]
#[component(name = "step")]
struct Step {
    input: Input<Value>,
    #[port(position = Right)]
    out: Output<Value>,
}

impl Step {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        CALLS
            .lock()
            .expect("calls")
            .push((ctx.node_name().to_owned(), ctx.run_id().map(str::to_owned)));
        let n = msg.get("n").and_then(Value::as_i64).unwrap_or(0);
        self.out.emit(ctx, json!({ "n": n + 1, "tag": msg.get("tag") })).await
    }
}

/// Answers with its input doubled (a blocking hop's answer).
#[derive(Debug, Component, Default)]
#[component(name = "double")]
struct Double {
    input: Input<i64>,
}

impl Double {
    async fn on_input(&self, _: &Ctx<Self>, n: i64) -> Reply {
        Reply::value(json!(n * 2))
    }
}

/// A front door: begins a run whose answer comes back to its `response` port, sends
/// its input down the run, and answers its caller with the run's answer.
#[derive(Debug, Component, Default)]
#[component(name = "front")]
struct Front {
    input: Input<Value>,
    response: Input<Value>,
    #[port(position = Right)]
    out: Output<Value>,
}

impl Front {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let target = format!("{}:response", ctx.node_name());
        let (run, run_id, answer) = ctx.begin_run_answered(&target, WAIT).await?;
        self.out.emit(&run, msg).await?;
        let answer: Value = serde_json::from_slice(&answer.await?).map_err(Error::permanent)?;
        Ok(Reply::value(json!({ "run": run_id, "answer": answer })))
    }

    async fn on_response(&self, _: &Ctx<Self>, _: Value) -> Reply {
        // The answer hop goes to the waiting replica's inbox, not here.
        Reply::empty()
    }
}

async fn module(broker: &NatsServer, name: &str, flow: &Flow) -> DurableModule {
    let mut registry = Registry::default();
    registry
        .register::<Front>()
        .register::<Put>()
        .register::<Take>()
        .register::<Step>()
        .register::<Double>()
        .register::<tiny_sdk::harness::Relay>();
    durable_module(broker, name, registry, flow).await
}

/// `f.a.first-1` (durable) → `f.b.middle-1` → `f.a.last-1`, each a `step`.
fn chain(flow: &str) -> Flow {
    let node = |m: &str, n: &str| format!("{flow}.{m}.{n}-1");
    let mut flow_def = FlowBuilder::new()
        .module("a")
        .node(&node("a", "first"), "step")
        .module("b")
        .node(&node("b", "middle"), "step")
        .module("a")
        .node(&node("a", "last"), "step")
        .edge(
            &format!("{}:out", node("a", "first")),
            &format!("{}:input", node("b", "middle")),
            json!("{{$}}"),
        )
        .edge(
            &format!("{}:out", node("b", "middle")),
            &format!("{}:input", node("a", "last")),
            json!("{{$}}"),
        )
        .build();
    for n in &mut flow_def.nodes {
        if n.name == node("a", "first") {
            n.labels.insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        }
    }
    flow_def
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_durable_run_crosses_two_modules_each_step_once_and_recorded_as_go_records_it() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let flow = chain("dur");
    let a = module(&broker, "a", &flow).await;
    let b = module(&broker, "b", &flow).await;

    // The entry node is durable: the message starts a run there, and the send
    // returns once the first step is recorded (its hop stored), not when the run ends.
    a.engine
        .send("dur.a.first-1:input", json!({"n": 0}))
        .await
        .expect("the first step runs");
    let run_id = runs_of("dur.a.first-1").pop().expect("the first step ran in a run");

    let status = eventually("the run completes", WAIT, || async {
        let s = run::run_status(&*a.js, &run_id).await.ok()?;
        (s.complete).then_some(s)
    })
    .await;
    assert!(
        status.found && !status.failed && status.pending_steps == 0,
        "{status:?}"
    );
    let nodes: Vec<&str> = status.steps.iter().map(|s| s.node.as_str()).collect();
    assert_eq!(nodes.len(), 3, "three steps recorded: {nodes:?}");
    for node in ["dur.a.first-1", "dur.b.middle-1", "dur.a.last-1"] {
        assert!(nodes.contains(&node), "{node} recorded: {nodes:?}");
        assert_eq!(calls(node), 1, "{node} ran once");
        assert_eq!(runs_of(node), vec![run_id.clone()], "{node} ran in the run");
    }
    // The root record lists the hop it stored, keyed as Go derives it.
    let root =
        a.js.get(&run::step_record_key(&run_id, &run::root_step_key(&run_id)))
            .await
            .expect("the ledger answers")
            .expect("the root step is recorded");
    let root: Value = serde_json::from_slice(&root).expect("JSON");
    let emits = root["emits"].as_array().expect("emits");
    assert_eq!(emits.len(), 1, "{root}");
    let edge_id = emits[0]["edgeID"].as_str().expect("edgeID");
    assert_eq!(
        emits[0]["stepKey"],
        json!(run::child_step_key(&run_id, &run::root_step_key(&run_id), edge_id, 0))
    );
    assert_eq!(emits[0]["to"], json!("dur.b.middle-1:input"));
    assert_eq!(root["status"], json!("done"));
    a.receiver.stop().await;
    b.receiver.stop().await;
}

/// The JetStream router, except that the first `fail` hops of durable runs are not
/// stored, as when the broker does not answer.
struct Unstored {
    router: JetStreamRouter,
    fail: AtomicU32,
}

impl RemoteRouter for Unstored {
    fn route(&self, module: &str, d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        if d.hop.run.is_some()
            && self
                .fail
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            let e = Error::transient("the broker does not answer").with_code(tiny_sdk::error::code::UNREACHABLE);
            return Box::pin(std::future::ready(Err(e)));
        }
        self.router.route(module, d)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_that_started_a_run_and_came_again_continues_that_run() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let flow = chain("again");
    // Module a's first step cannot store its hop on any of its edge's 3 attempts: it
    // is not recorded, its message is nak'ed and comes again, and then it is.
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await);
    let js = JetStream::new(link.clone(), "a", "a-0");
    js.ensure().await.expect("streams");
    let mut registry = Registry::default();
    registry.register::<Step>();
    let router = Unstored {
        router: JetStreamRouter::new(js.clone()),
        fail: AtomicU32::new(3),
    };
    let engine = Engine::builder()
        .module("a")
        .node_wait(Duration::from_millis(200))
        .registry(registry)
        .router(Arc::new(router))
        .runs(js.clone())
        .build();
    for node in flow.nodes.iter().filter(|n| n.spec.module == "a") {
        engine.apply(node.clone()).await.expect("node loads");
    }
    let a = jetstream::listen(js.clone(), engine, Some(Arc::new(|| true)));
    let b = module(&broker, "b", &flow).await;
    // The message that starts the run, as the platform sends it (stored by the stream).
    send(
        link.client(),
        "again.a.first-1",
        "input",
        br#"{"n":0}"#.to_vec(),
        &SendOptions::default(),
    )
    .await
    .expect("sent");
    let run_id = eventually("the first step to run twice", WAIT, || async {
        let runs = runs_of("again.a.first-1");
        (runs.len() == 2).then(|| runs[0].clone())
    })
    .await;
    assert_eq!(
        runs_of("again.a.first-1"),
        vec![run_id.clone(), run_id.clone()],
        "the second delivery continued the run the first started"
    );
    let status = eventually("the run completes", WAIT, || async {
        let s = run::run_status(&*js, &run_id).await.ok()?;
        (s.complete || s.failed).then_some(s)
    })
    .await;
    assert!(status.complete, "{status:?}");
    assert_eq!(calls("again.b.middle-1"), 1);
    assert_eq!(calls("again.a.last-1"), 1);
    let runs: std::collections::BTreeSet<String> = js
        .keys("exec/")
        .await
        .expect("keys")
        .iter()
        .filter_map(|k| run::parse_ledger_key(k).map(|k| k.run_id))
        .collect();
    assert_eq!(runs, std::collections::BTreeSet::from([run_id]), "one run");
    a.stop().await;
    b.receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_redelivered_step_whose_record_exists_is_skipped() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let flow = FlowBuilder::new().module("c").node("skip.c.only-1", "step").build();
    let c = module(&broker, "c", &flow).await;
    let client = c.js.link().client().clone();
    let js = async_nats::jetstream::new(client);
    let run_id = run::new_run_id();
    let step_key = run::child_step_key(&run_id, &run::root_step_key(&run_id), "e1", 0);
    // The same step twice, as a redelivery brings it (a second message id, so the
    // broker's own deduplication does not hide it).
    for copy in ["1", "2"] {
        let mut h = async_nats::HeaderMap::new();
        h.insert(wire::header::TO, "skip.c.only-1:input");
        h.insert(wire::header::FROM, "skip.x.up-1:out");
        h.insert(wire::header::EDGE_ID, "e1");
        h.insert(wire::header::RUN_ID, run_id.as_str());
        h.insert(wire::header::STEP_KEY, step_key.as_str());
        h.insert(wire::header::MSG_ID, format!("{step_key}-{copy}").as_str());
        js.publish_with_headers("tinymodule.c.msg", h, "{\"n\":1}".into())
            .await
            .expect("published")
            .await
            .expect("stored");
        eventually("the step is recorded", WAIT, || async {
            c.js.get(&run::step_record_key(&run_id, &step_key)).await.ok().flatten()
        })
        .await;
    }
    // Give the second copy time to be taken and acked.
    eventually("both copies taken", WAIT, || async {
        let left = js
            .get_stream("module-edges")
            .await
            .ok()?
            .info()
            .await
            .ok()?
            .state
            .messages;
        (left == 0).then_some(())
    })
    .await;
    assert_eq!(calls("skip.c.only-1"), 1, "the copy of a recorded step did not run");
    c.receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_blocking_hop_over_jetstream_returns_the_handlers_answer() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let flow = FlowBuilder::new()
        .module("d")
        .node("blk.d.ask-1", "relay")
        .module("e")
        .node("blk.e.double-1", "double")
        .edge("blk.d.ask-1:out", "blk.e.double-1:input", json!("{{$}}"))
        .build();
    let d = module(&broker, "d", &flow).await;
    let e = module(&broker, "e", &flow).await;
    let reply = d.engine.send("blk.d.ask-1:input", json!(21)).await.expect("answered");
    assert_eq!(
        reply.into_value(),
        Some(json!(42)),
        "the handler's answer, not the broker's ack"
    );
    d.receiver.stop().await;
    e.receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_read_the_broker_never_answers_fails_after_the_api_timeout_and_the_ledger_works_again() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await);
    let js = JetStream::new(link.clone(), "p", "p-0");
    js.ensure().await.expect("streams");
    let key = run::step_record_key("r", &run::root_step_key("r"));

    // The broker hangs with the read in flight: its answer never comes.
    broker.pause().expect("SIGSTOP");
    let started = std::time::Instant::now();
    let read = tokio::time::timeout(jetstream::config::API_TIMEOUT * 3, js.get(&key)).await;
    let waited = started.elapsed();
    broker.resume().expect("SIGCONT");
    let e = read
        .expect("the read gives up rather than waiting forever")
        .expect_err("no answer");
    assert!(e.is_retryable(), "the step is tried again: {e}");
    assert_eq!(e.code(), Some(tiny_sdk::error::code::RUN_STORE), "{e}");
    assert!(
        waited >= jetstream::config::API_TIMEOUT - Duration::from_millis(100),
        "it waited the API timeout first: {waited:?}"
    );

    js.put(&key, bytes::Bytes::from_static(b"{}")).await.expect("written");
    assert_eq!(
        js.get(&key).await.expect("read").as_deref(),
        Some(&b"{}"[..]),
        "the ledger answers again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_core_module_is_refused_on_a_broker_with_jetstream_modules() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await);
    jetstream::refuse_core_beside_jetstream(&link, "g")
        .await
        .expect("no JetStream module yet: core is fine");
    JetStream::new(link.clone(), "h", "h-0")
        .ensure()
        .await
        .expect("streams");
    let refused = jetstream::refuse_core_beside_jetstream(&link, "g")
        .await
        .expect_err("core beside module-edges is refused");
    let text = refused.to_string();
    assert!(
        text.contains("module-edges") && text.contains("TINY_NATS_TRANSPORT=jetstream"),
        "{text}"
    );
}

/// Passes that treat every run as stale at once.
fn eager() -> run::ReconcileSettings {
    run::ReconcileSettings {
        stale: Duration::ZERO,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stuck_run_fails_with_gos_message_after_three_redrives_when_its_module_never_comes() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let flow = chain("gone");
    let a = module(&broker, "a", &flow).await;
    a.engine
        .send("gone.a.first-1:input", json!({"n": 0}))
        .await
        .expect("the first step runs");
    let run_id = runs_of("gone.a.first-1").pop().expect("a run");
    for n in 1..=3 {
        let pass = jetstream::reconciler::pass(&a.js, &eager()).await.expect("a pass");
        assert_eq!(
            (pass.redriven, pass.failed),
            (1, 0),
            "pass {n}: the pending hop is sent again"
        );
        let counter =
            a.js.get(&run::redrive_key(
                &run_id,
                &run::child_step_key(&run_id, &run::root_step_key(&run_id), &edge_of(&a.js, &run_id).await, 0),
            ))
            .await
            .expect("the ledger answers");
        assert_eq!(
            counter.as_deref(),
            Some(n.to_string().as_bytes()),
            "pass {n}: Go's counter"
        );
    }
    let pass = jetstream::reconciler::pass(&a.js, &eager()).await.expect("a pass");
    assert_eq!((pass.redriven, pass.failed), (0, 1), "the fourth pass gives up");
    let status = run::run_status(&*a.js, &run_id).await.expect("status");
    assert!(status.found && status.failed && !status.complete, "{status:?}");
    let failed = status
        .steps
        .iter()
        .find(|s| s.status == run::StepStatus::Failed)
        .expect("a failed step");
    assert_eq!(
        failed.node, "gone.b.middle-1:input",
        "Go names the hop's target, with its port"
    );
    assert_eq!(
        failed.error.as_deref(),
        Some(
            "re-drive limit reached after 3 attempts — hop never completed (is the target module on an SDK >= v0.11 with durable support?)"
        )
    );
    // Nothing more to do for a failed run until it is old enough to be removed.
    let pass = jetstream::reconciler::pass(&a.js, &eager()).await.expect("a pass");
    assert_eq!(pass, jetstream::reconciler::Pass::default());
    a.receiver.stop().await;
}

/// The edge id of the run's first hop, from its root record.
async fn edge_of(js: &JetStream, run_id: &str) -> String {
    let root = js
        .get(&run::step_record_key(run_id, &run::root_step_key(run_id)))
        .await
        .expect("the ledger answers")
        .expect("a root record");
    let root = run::StepRecord::from_json_slice(&root).expect("a record");
    root.emits[0].edge_id.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stuck_run_is_redriven_and_completes_when_its_module_returns_each_step_once() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let flow = chain("back");
    let a = module(&broker, "a", &flow).await;
    a.engine
        .send("back.a.first-1:input", json!({"n": 0}))
        .await
        .expect("the first step runs");
    let run_id = runs_of("back.a.first-1").pop().expect("a run");
    let pass = jetstream::reconciler::pass(&a.js, &eager()).await.expect("a pass");
    assert_eq!(pass.redriven, 1, "the hop for the absent module is sent again");
    // Module b comes back, runs the hop once (a re-drive within the broker's 2 min
    // window is dropped as a duplicate; a later one is a copy the ledger skips) and
    // the run completes.
    let b = module(&broker, "b", &flow).await;
    let status = eventually("the run completes", WAIT, || async {
        let s = run::run_status(&*a.js, &run_id).await.ok()?;
        s.complete.then_some(s)
    })
    .await;
    assert_eq!(status.steps.len(), 3, "{status:?}");
    assert_eq!(calls("back.b.middle-1"), 1, "the re-driven copy was skipped");
    assert_eq!(calls("back.a.last-1"), 1);
    a.receiver.stop().await;
    b.receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_send_that_waits_gets_the_nodes_answer_not_the_streams_ack() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let flow = FlowBuilder::new().module("w").node("wait.w.double-1", "double").build();
    let w = module(&broker, "w", &flow).await;
    // The stream captures the signal and acknowledges it on the native reply subject
    // first; the answer is the handler's.
    let reply = tiny_runtime::nats::send(
        w.js.link().client(),
        "wait.w.double-1",
        "input",
        b"21".to_vec(),
        &tiny_runtime::nats::SendOptions::default().wait(),
    )
    .await
    .expect("answered")
    .expect("a reply");
    assert_eq!(reply.into_value(), Some(json!(42)));
    w.receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_answers_the_replica_that_began_it_and_its_answer_hop_is_recorded() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let flow = FlowBuilder::new()
        .module("a")
        .node("ans.a.front-1", "front")
        .module("b")
        .node("ans.b.middle-1", "step")
        .edge("ans.a.front-1:out", "ans.b.middle-1:input", json!("{{$}}"))
        .edge("ans.b.middle-1:out", "ans.a.front-1:response", json!("{{$}}"))
        .build();
    let a = module(&broker, "a", &flow).await;
    let b = module(&broker, "b", &flow).await;
    let reply = a
        .engine
        .send("ans.a.front-1:input", json!({"n": 41, "tag": "t"}))
        .await
        .expect("answered")
        .into_value()
        .expect("a value");
    assert_eq!(
        reply["answer"],
        json!({"n": 42, "tag": "t"}),
        "the run's answer: {reply}"
    );
    let run_id = reply["run"].as_str().expect("run id").to_owned();
    assert_eq!(runs_of("ans.b.middle-1"), vec![run_id.clone()]);
    // Better than Go: the answer hop has a record, so the run is complete and no
    // reconciler re-drives it.
    let status = eventually("the run completes", WAIT, || async {
        let s = run::run_status(&*a.js, &run_id).await.ok()?;
        s.complete.then_some(s)
    })
    .await;
    let nodes: Vec<&str> = status.steps.iter().map(|s| s.node.as_str()).collect();
    assert!(nodes.contains(&"ans.a.front-1:response"), "{nodes:?}");
    let pass = jetstream::reconciler::pass(&a.js, &eager()).await.expect("a pass");
    assert_eq!(pass.redriven, 0, "nothing pending");
    a.receiver.stop().await;
    b.receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn run_state_is_shared_by_a_runs_steps_across_modules() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let flow = {
        let mut f = FlowBuilder::new()
            .module("a")
            .node("st.a.put-1", "put")
            .node("st.a.plain-1", "put")
            .module("b")
            .node("st.b.take-1", "take")
            .edge("st.a.put-1:out", "st.b.take-1:input", json!("{{$}}"))
            .build();
        f.nodes[0]
            .labels
            .insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        f
    };
    let a = module(&broker, "a", &flow).await;
    let b = module(&broker, "b", &flow).await;
    a.engine
        .send("st.a.put-1:input", json!("secret sauce"))
        .await
        .expect("put");
    let run_id = eventually("the run completes", WAIT, || async {
        TAKEN.lock().expect("taken").clone()
    })
    .await;
    let (run, value) = run_id;
    assert_eq!(
        value,
        json!("secret sauce"),
        "the second step read what the first wrote"
    );
    let state = run::RunState::new(a.js.clone(), &run);
    assert_eq!(
        state
            .list("")
            .await
            .expect("keys")
            .iter()
            .filter(|k| !k.starts_with("step/") && !k.starts_with("entry/"))
            .collect::<Vec<_>>(),
        vec!["my_key"],
        "Go's sanitising: `my key` is `my_key`"
    );
    // Outside a run (a node not labelled durable) it is refused, by name.
    let e = a
        .engine
        .send("st.a.plain-1:outside", json!(null))
        .await
        .expect_err("no run");
    assert_eq!(e.code(), Some(tiny_sdk::error::code::NO_RUN), "{e}");
    a.receiver.stop().await;
    b.receiver.stop().await;
}

static TAKEN: Mutex<Option<(String, Value)>> = Mutex::new(None);

/// Writes its input to the run's state, then goes on.
#[derive(Debug, Component, Default)]
#[component(name = "put")]
struct Put {
    input: Input<Value>,
    outside: Input<Value>,
    #[port(position = Right)]
    out: Output<Value>,
}

impl Put {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        ctx.run_state()?.set("my key", &msg).await?;
        self.out.emit(ctx, json!(null)).await
    }

    async fn on_outside(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        ctx.run_state()?;
        Ok(Reply::empty())
    }
}

/// Reads what `put` wrote, in the same run, on another module.
#[derive(Debug, Component, Default)]
#[component(name = "take")]
struct Take {
    input: Input<Value>,
}

impl Take {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        let state = ctx.run_state()?;
        let value: Option<Value> = state.get("my key").await?;
        *TAKEN.lock().expect("taken") = Some((state.run_id().to_owned(), value.unwrap_or_default()));
        Ok(Reply::empty())
    }
}

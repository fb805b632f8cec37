//! Capturing, replaying and re-driving durable runs on the engine with an in-memory
//! ledger and a transport that stores each hop and hands it out again, as
//! JetStream's does (issue 46's review): the first message kept under its own key
//! and sent along the edge it came by, outside call names that come back as they
//! were written, a re-driven run that replays as the run it became, and a re-drive
//! that does not make a recorded outside call again.

use std::{
    collections::{HashSet, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use futures::{FutureExt as _, future::BoxFuture};
use serde_json::{Value, json};
use tiny_sdk::{
    Hop, Msg,
    engine::{Delivery, EXECUTION_MODE_LABEL, Engine, Registry, RemoteRouter, Source},
    flow::{Flow, FlowBuilder},
    harness::{Harness, HarnessBuilder, Relay, ReplayOptions},
    prelude::*,
    run::{
        self, EmitRecord, LedgerKind, LedgerScan, MemoryRunStore, ReconcileSettings, RunEntry, RunStep, StepRecord,
        StepStatus, Timestamp,
    },
};

/// A hop the transport stored, to hand out.
struct Stored {
    run_id: String,
    step_key: String,
    to: String,
    from: String,
    edge_id: String,
    data: Bytes,
}

/// Stores each hop of a run (notes it on the step that emitted it, as the JetStream
/// router does) and keeps it for [`pump`].
#[derive(Default)]
struct Broker {
    queue: Mutex<VecDeque<Stored>>,
}

impl RemoteRouter for Broker {
    fn route(&self, _module: &str, d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        if let Some(step) = &d.hop.run {
            let (from, edge_id) = match d.source {
                Source::Edge { from, edge_id } => (from.to_owned(), edge_id.to_owned()),
                Source::Signal => (String::new(), String::new()),
            };
            let data = Bytes::from(d.msg.to_json_bytes().expect("JSON"));
            let hop = EmitRecord {
                to: format!("{}:{}", d.node, d.port),
                from,
                edge_id,
                step_key: step.step_key().to_owned(),
                data,
                ..EmitRecord::default()
            };
            step.stored(hop.clone());
            self.queue.lock().expect("queue").push_back(Stored {
                run_id: step.run_id().to_owned(),
                step_key: hop.step_key,
                to: hop.to,
                from: hop.from,
                edge_id: hop.edge_id,
                data: hop.data,
            });
        }
        futures::future::ready(Ok(Reply::empty())).boxed()
    }
}

impl Broker {
    fn push(&self, run_id: &str, hop: &EmitRecord) {
        self.queue.lock().expect("queue").push_back(Stored {
            run_id: run_id.to_owned(),
            step_key: hop.step_key.clone(),
            to: hop.to.clone(),
            from: hop.from.clone(),
            edge_id: hop.edge_id.clone(),
            data: hop.data.clone(),
        });
    }

    /// Delivers every stored hop (and those they store) as the receiver does.
    async fn pump(&self, engine: &Engine) {
        loop {
            let Some(h) = self.queue.lock().expect("queue").pop_front() else {
                return;
            };
            let (node, port) = h.to.rsplit_once(':').expect("an address");
            let source = if h.from.is_empty() {
                Source::Signal
            } else {
                Source::Edge {
                    from: &h.from,
                    edge_id: &h.edge_id,
                }
            };
            let hop = Hop {
                run: Some(Arc::new(RunStep::continued(&h.run_id, &h.step_key, None))),
                ..Hop::default()
            };
            let msg = Msg::from_json(serde_json::from_slice(&h.data).expect("JSON"));
            // A failed step is recorded as such: part of the run.
            let _ = engine.deliver(Delivery::new(node, port, source, msg).hop(hop)).await;
        }
    }
}

/// Outside calls really made, per node and name.
static MADE: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
/// Nodes that fail after their calls.
static FAILING: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn failing(node: &str, fails: bool) {
    let mut f = FAILING.lock().expect("failing");
    let set = f.get_or_insert_with(HashSet::new);
    if fails {
        set.insert(node.to_owned());
    } else {
        set.remove(node);
    }
}

fn made(node: &str) -> Vec<String> {
    MADE.lock()
        .expect("made")
        .iter()
        .filter(|(n, _)| n == node)
        .map(|(_, c)| c.clone())
        .collect()
}

/// Makes the outside calls its input's `calls` names (each answering its own name),
/// then fails if its node is failing, else emits the answers.
#[derive(Debug, Component, Default)]
#[component(name = "charge")]
struct Charge {
    input: Input<Value>,
    out: Output<Value>,
}

impl Charge {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let mut answers = serde_json::Map::new();
        for name in msg["calls"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            let node = ctx.node_name().to_owned();
            let answer: String = ctx
                .outside(name, async {
                    MADE.lock().expect("made").push((node, name.to_owned()));
                    Ok(format!("answer of {name}"))
                })
                .await?;
            answers.insert(name.to_owned(), Value::String(answer));
        }
        let fails = FAILING
            .lock()
            .expect("failing")
            .as_ref()
            .is_some_and(|f| f.contains(ctx.node_name()));
        if fails {
            return Err(Error::permanent("the gate is shut"));
        }
        self.out.emit(ctx, Value::Object(answers)).await
    }
}

fn registry() -> Registry {
    let mut r = Registry::default();
    r.register::<Relay>().register::<Charge>();
    r
}

fn replayer(flow: &Flow) -> HarnessBuilder {
    Harness::builder()
        .register::<Relay>()
        .register::<Charge>()
        .flow(flow.clone())
}

/// `flow`'s nodes named in `durable` labelled durable.
fn labelled(mut flow: Flow, durable: &[&str]) -> Flow {
    for n in &mut flow.nodes {
        if durable.contains(&n.name.as_str()) {
            n.labels.insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        }
    }
    flow
}

async fn engine(broker: Arc<Broker>, store: Arc<MemoryRunStore>, flow: &Flow) -> Engine {
    let engine = Engine::builder()
        .module("a")
        .registry(registry())
        .router(broker)
        .runs(store)
        .build();
    for node in &flow.nodes {
        engine.apply(node.clone()).await.expect("node loads");
    }
    engine
}

/// The one run in `store`.
fn the_run(store: &MemoryRunStore) -> String {
    let runs: HashSet<String> = store
        .entries()
        .into_iter()
        .filter_map(|(k, _)| run::parse_ledger_key(&k).map(|k| k.run_id))
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs.into_iter().next().expect("a run")
}

fn value(store: &MemoryRunStore, key: &str) -> Option<Bytes> {
    store.entries().into_iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

#[tokio::test]
async fn the_first_message_has_a_key_of_its_own_and_a_too_large_one_is_left_out_and_noted() {
    let flow = labelled(
        FlowBuilder::new()
            .module("a")
            .node("big.a.first-1", "relay")
            .node("big.a.next-1", "relay")
            .edge("big.a.first-1:out", "big.a.next-1:input", json!("{{$}}"))
            .build(),
        &["big.a.first-1"],
    );
    for (size, kept) in [(600_000, true), (1_100_000, false)] {
        let store = Arc::new(MemoryRunStore::new());
        let broker = Arc::new(Broker::default());
        let engine = engine(broker.clone(), store.clone(), &flow).await;
        let payload = json!({"blob": "a".repeat(size)});
        engine
            .send("big.a.first-1:input", payload.clone())
            .await
            .expect("the first step runs");
        broker.pump(&engine).await;
        let run_id = the_run(&store);
        // The root record lists its emit (base64, 4/3 of it) and nothing more: Go's
        // size, not the message twice.
        let root = value(&store, &run::step_record_key(&run_id, &run::root_step_key(&run_id))).expect("root record");
        assert!(
            root.len() < size * 3 / 2,
            "root record {} bytes for a {size}-byte message",
            root.len()
        );
        let entry = value(&store, &run::entry_key(&run_id)).expect("the entry key");
        let entry = RunEntry::from_json_slice(&entry).expect("reads");
        let captured = run::capture_run(&*store, &run_id).await.expect("captured");
        if kept {
            assert_eq!(entry.data.as_ref(), Some(&payload));
            assert_eq!(captured.entry.as_ref().map(|e| &e.data), Some(&payload));
            assert!(captured.notes.is_empty(), "{:?}", captured.notes);
        } else {
            assert_eq!(entry.data, None);
            assert!(entry.omitted.is_some_and(|n| n as usize > size));
            assert!(captured.entry.is_none());
            assert!(
                captured.notes.iter().any(|n| n.contains("too large")),
                "{:?}",
                captured.notes
            );
        }
        engine.shutdown();
    }
}

#[tokio::test]
async fn a_run_entered_along_a_mapped_edge_replays_and_redrives_along_it() {
    // relay-1 (not durable) -> relay-2 (durable) over {"x": "{{$.raw}}"} -> charge-1.
    let flow = labelled(
        FlowBuilder::new()
            .module("a")
            .node("map.a.relay-1", "relay")
            .node("map.a.relay-2", "relay")
            .node("map.a.charge-1", "charge")
            .edge("map.a.relay-1:out", "map.a.relay-2:input", json!({"x": "{{$.raw}}"}))
            .edge(
                "map.a.relay-2:out",
                "map.a.charge-1:input",
                json!({"x": "{{$.x}}", "calls": ["stripe:charge"]}),
            )
            .build(),
        &["map.a.relay-2"],
    );
    let store = Arc::new(MemoryRunStore::new());
    let broker = Arc::new(Broker::default());
    let engine = engine(broker.clone(), store.clone(), &flow).await;
    failing("map.a.charge-1", true);
    let _ = engine.send("map.a.relay-1:input", json!({"raw": 7})).await;
    broker.pump(&engine).await;
    let run_id = the_run(&store);
    let status = run::run_status(&*store, &run_id).await.expect("status");
    assert!(status.failed, "{status:?}");
    assert_eq!(made("map.a.charge-1"), ["stripe:charge"], "the real run charged once");

    // Re-driven from the first step (the sink), as `<module> redrive --at` does:
    // the gate open now. The sink's message goes along its edge again, so that the
    // mapping makes `{"x": 7}` of it, and the gate's charge is the one recorded.
    failing("map.a.charge-1", false);
    let records = run::read_run(&*store, &run_id).await.expect("records");
    let entry = RunEntry::from_json_slice(&value(&store, &run::entry_key(&run_id)).expect("entry")).expect("reads");
    let plan = run::plan_redrive(&run_id, &records, Some(&entry), Some("map.a.relay-2:input")).expect("a plan");
    assert_eq!(
        (plan.hop.from.as_str(), plan.hop.data.as_ref()),
        ("map.a.relay-1:out", &br#"{"raw":7}"#[..])
    );
    use tiny_sdk::run::RunStore as _;
    store
        .put(
            &run::step_record_key(&run_id, &plan.attempt_key),
            plan.attempt.to_json_bytes().expect("JSON").into(),
        )
        .await
        .expect("written");
    broker.push(&run_id, &plan.hop);
    broker.pump(&engine).await;
    let status = run::run_status(&*store, &run_id).await.expect("status");
    assert!(status.complete && !status.failed, "{status:?}");
    let records = run::read_run(&*store, &run_id).await.expect("records");
    let gate_got: Vec<Value> = records
        .iter()
        .flat_map(|(_, r)| &r.emits)
        .filter(|e| e.to == "map.a.charge-1:input")
        .map(|e| serde_json::from_slice(&e.data).expect("JSON"))
        .collect();
    assert_eq!(
        gate_got,
        [json!({"x": 7}), json!({"x": 7})],
        "the mapping ran on the re-drive too"
    );

    // Captured: the run as it became (the superseded steps and the attempt left
    // out), its first message with the edge it came by; the replay sends it along
    // that edge (the sink gets `{"x": 7}`, not `{"raw": 7}`) and is green.
    let captured = run::capture_run(&*store, &run_id).await.expect("captured");
    let first = captured.entry.as_ref().expect("the first message");
    assert_eq!(
        (first.to.as_str(), first.from.as_str(), &first.data),
        ("map.a.relay-2:input", "map.a.relay-1:out", &json!({"raw": 7}))
    );
    assert!(
        captured.steps.iter().all(|s| s.status == StepStatus::Done),
        "{:?}",
        captured.steps
    );
    let report = replayer(&flow)
        .replay(&captured, ReplayOptions { values: true })
        .await
        .expect("replays");
    assert!(report.is_green(), "{report}");
    engine.shutdown();
}

#[tokio::test]
async fn a_redriven_step_gets_its_recorded_outside_answers_and_does_not_call_again() {
    let flow = labelled(
        FlowBuilder::new()
            .module("a")
            .node("pay.a.relay-1", "relay")
            .node("pay.a.charge-1", "charge")
            .node("pay.a.relay-2", "relay")
            .edge("pay.a.relay-1:out", "pay.a.charge-1:input", json!("{{$}}"))
            .edge("pay.a.charge-1:out", "pay.a.relay-2:input", json!("{{$}}"))
            .build(),
        &["pay.a.relay-1"],
    );
    let store = Arc::new(MemoryRunStore::new());
    let broker = Arc::new(Broker::default());
    let engine = engine(broker.clone(), store.clone(), &flow).await;
    failing("pay.a.charge-1", true);
    let names = ["stripe:charge", "GET /users", "a b", "a_b"];
    engine
        .send("pay.a.relay-1:input", json!({"calls": names}))
        .await
        .expect("the first step runs");
    broker.pump(&engine).await;
    let run_id = the_run(&store);
    assert_eq!(made("pay.a.charge-1"), names, "each call made once");

    failing("pay.a.charge-1", false);
    let records = run::read_run(&*store, &run_id).await.expect("records");
    let plan = run::plan_redrive(&run_id, &records, None, None).expect("a plan");
    let copied = run::carry_calls(&*store, &run_id, &plan.target, &plan.hop.step_key)
        .await
        .expect("carried");
    assert_eq!(copied, names.len());
    use tiny_sdk::run::RunStore as _;
    store
        .put(
            &run::step_record_key(&run_id, &plan.attempt_key),
            plan.attempt.to_json_bytes().expect("JSON").into(),
        )
        .await
        .expect("written");
    // Until it runs, the re-driven hop is pending, and a capture says so.
    let captured = run::capture_run(&*store, &run_id).await.expect("captured");
    assert!(
        captured
            .notes
            .iter()
            .any(|n| n.contains(&plan.hop.step_key) && n.contains("is pending")),
        "{:?}",
        captured.notes
    );
    broker.push(&run_id, &plan.hop);
    broker.pump(&engine).await;
    assert!(run::run_status(&*store, &run_id).await.expect("status").complete);
    assert_eq!(made("pay.a.charge-1"), names, "the re-drive made no call again");

    // Each name comes back as it was written, with its own answer ("a b" and
    // "a_b" two calls), and the replay answers each from the recording.
    let captured = run::capture_run(&*store, &run_id).await.expect("captured");
    let charge = captured
        .steps
        .iter()
        .find(|s| s.node == "pay.a.charge-1")
        .expect("the charge step");
    let mut got: Vec<(String, Value)> = charge
        .calls
        .iter()
        .map(|c| (c.name.clone(), c.answer.clone()))
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    let mut want: Vec<(String, Value)> = names
        .iter()
        .map(|n| ((*n).to_owned(), json!(format!("answer of {n}"))))
        .collect();
    want.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got, want);
    assert_eq!(
        captured.steps[2].arrived,
        Some(
            json!({"stripe:charge": "answer of stripe:charge", "GET /users": "answer of GET /users", "a b": "answer of a b", "a_b": "answer of a_b"})
        )
    );
    let report = replayer(&flow)
        .replay(&captured, ReplayOptions { values: true })
        .await
        .expect("replays");
    assert!(report.is_green(), "{report}");
    assert_eq!(report.calls_answered, names.len());
    assert_eq!(made("pay.a.charge-1"), names, "the replay made no call");
    engine.shutdown();
}

#[test]
fn a_redrive_sends_a_hop_whose_answer_nobody_waits_for_any_more_as_a_background_one() {
    let run_id = "r";
    let root = run::root_step_key(run_id);
    let hop = |deadline: i64| EmitRecord {
        to: "f.a.b-1:input".into(),
        from: "f.a.a-1:out".into(),
        edge_id: "e".into(),
        step_key: "r.0001".into(),
        data: Bytes::from_static(b"{}"),
        reply_subject: "_INBOX.x".into(),
        reply_target: "f.a.c-1:input".into(),
        reply_deadline_unix_ms: deadline,
    };
    let now_ms = Timestamp::now().unix_seconds() * 1000;
    for (deadline, kept) in [(now_ms - 60_000, false), (now_ms + 3_600_000, true)] {
        let records = vec![
            (
                root.clone(),
                StepRecord::finished("f.a.a-1".into(), None, vec![hop(deadline)], Timestamp::now()),
            ),
            (
                "r.0001".to_owned(),
                StepRecord::finished(
                    "f.a.b-1".into(),
                    Some(&Error::permanent("no")),
                    Vec::new(),
                    Timestamp::now(),
                ),
            ),
        ];
        let plan = run::plan_redrive(run_id, &records, None, None).expect("a plan");
        assert_eq!(plan.target, "r.0001");
        assert_eq!(!plan.hop.reply_subject.is_empty(), kept, "{plan:?}");
        assert_eq!(!plan.hop.reply_target.is_empty(), kept, "{plan:?}");
        assert_eq!(plan.hop.reply_deadline_unix_ms != 0, kept, "{plan:?}");
    }
}

#[test]
fn outside_answers_and_the_first_message_of_a_run_without_records_go_after_gc_after() {
    let settings = ReconcileSettings::default();
    let now = Timestamp::now();
    let ago = |d: Duration| Timestamp::from_unix(now.unix_seconds() - d.as_secs() as i64, 0).expect("a time");
    let old = ago(settings.gc_after + Duration::from_secs(3600));
    let young = ago(Duration::from_secs(3600));
    let call = run::call_key("gone", "gone.root", "stripe:charge", 0);
    let entry = run::entry_key("gone");
    let live_call = run::call_key("live", "live.root", "stripe:charge", 0);
    let mut scan = LedgerScan::of_module("a");
    scan.add_written(&call, b"\"x\"", 1, Some(old));
    scan.add_written(&entry, br#"{"port":"input","data":{}}"#, 2, Some(old));
    // A run whose first step is still running: its answer is young.
    scan.add_written(&live_call, b"\"x\"", 3, Some(young));
    // Unknown times are never taken as old.
    scan.add(&run::call_key("unknown", "unknown.root", "n", 0), b"1", 4);
    let plan = scan.plan(now, &settings);
    let mut deleted = plan.delete.clone();
    deleted.sort();
    let mut want = vec![call, entry];
    want.sort();
    assert_eq!(deleted, want);
    assert_eq!(
        run::parse_ledger_key(&run::entry_key("gone")).map(|k| k.kind),
        Some(LedgerKind::Entry)
    );
}

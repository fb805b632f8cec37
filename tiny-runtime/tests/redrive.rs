//! `<module> redrive` on a real `nats-server`: a durable run that failed at its
//! middle step, re-driven from that step once the flow is fixed, completes; the
//! ledger keeps both attempts, the gate's outside call is not made again, and the
//! run's capture replays green as the run it became (issue 46).

mod support;

use std::sync::{
    Mutex,
    atomic::{AtomicUsize, Ordering},
};

use serde_json::{Value, json};
use support::runs::{durable, module_a, status_once};
use tiny_runtime::jetstream;
use tiny_sdk::{
    engine::Registry,
    error::code,
    flow::{Flow, FlowBuilder},
    harness::{Harness, Relay, ReplayOptions},
    prelude::*,
    run::{self, StepStatus},
};

/// Handler calls, by node, with the run each was in.
static CALLS: Mutex<Vec<(String, Option<String>)>> = Mutex::new(Vec::new());

/// Charges really made by the gate (its outside call).
static CHARGED: AtomicUsize = AtomicUsize::new(0);

fn calls(node: &str) -> usize {
    CALLS.lock().expect("calls").iter().filter(|(n, _)| n == node).count()
}

/// A gate's settings: closed, it fails every message.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
struct GateSettings {
    open: bool,
}

/// Passes messages on while its settings say `open`.
#[derive(Debug, Component, Default)]
#[component(name = "gate", settings = GateSettings)]
struct Gate {
    input: Input<Value>,
    out: Output<Value>,
}

impl Gate {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        CALLS
            .lock()
            .expect("calls")
            .push((ctx.node_name().to_owned(), ctx.run_id().map(str::to_owned)));
        let receipt: String = ctx
            .outside("stripe:charge", async {
                CHARGED.fetch_add(1, Ordering::SeqCst);
                Ok("ch_1".to_owned())
            })
            .await?;
        if !ctx.settings().open {
            return Err(Error::permanent("the gate is closed"));
        }
        self.out.emit(ctx, json!({"n": msg["n"], "receipt": receipt})).await
    }
}

/// Counts its calls and passes the message on.
#[derive(Debug, Component, Default)]
#[component(name = "count")]
struct Count {
    input: Input<Value>,
    out: Output<Value>,
}

impl Count {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        CALLS
            .lock()
            .expect("calls")
            .push((ctx.node_name().to_owned(), ctx.run_id().map(str::to_owned)));
        self.out.emit(ctx, msg).await
    }
}

/// `red.a.count-1` (durable) → `red.a.gate-1` (open or not) → `red.a.relay-1`.
fn flow(open: bool) -> Flow {
    let flow = FlowBuilder::new()
        .module("a")
        .node("red.a.count-1", "count")
        .node("red.a.gate-1", "gate")
        .settings(json!({ "open": open }))
        .node("red.a.relay-1", "relay")
        .edge("red.a.count-1:out", "red.a.gate-1:input", json!({"n": "{{$.n}}"}))
        .edge("red.a.gate-1:out", "red.a.relay-1:input", json!("{{$}}"))
        .build();
    durable(flow, "red.a.count-1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_run_redriven_from_its_middle_step_completes_on_the_fixed_flow_with_both_attempts_recorded() {
    let mut registry = Registry::default();
    registry.register::<Count>().register::<Gate>().register::<Relay>();
    let (_broker, a) = module_a(registry, &flow(false)).await;
    a.engine
        .send("red.a.count-1:input", json!({"n": 5}))
        .await
        .expect("the first step runs");
    let run_id = CALLS.lock().expect("calls")[0].1.clone().expect("in a run");
    let status = status_once(&*a.js, &run_id, "the run fails at the gate", |s| {
        s.failed && s.pending_steps == 0
    })
    .await;
    assert_eq!(status.steps.len(), 2, "{status:?}");
    // Only a failed run is re-driven, and only from a step it has.
    let err = jetstream::redrive(&a.js, &run_id, Some("red.a.nowhere-1:input"))
        .await
        .expect_err("no such step");
    assert_eq!(err.code(), Some(code::INVALID), "{err}");
    assert!(err.to_string().contains("no step at `red.a.nowhere-1:input`"), "{err}");

    // The flow fixed (the gate opened), the run re-driven from the gate.
    for node in flow(true).nodes.iter().filter(|n| n.name == "red.a.gate-1") {
        a.engine.apply(node.clone()).await.expect("the gate reloads");
    }
    let plan = jetstream::redrive(&a.js, &run_id, Some("red.a.gate-1:input"))
        .await
        .expect("re-driven");
    let status = status_once(&*a.js, &run_id, "the re-driven run completes", |s| s.complete).await;
    assert!(!status.failed && status.pending_steps == 0, "{status:?}");
    assert_eq!(calls("red.a.count-1"), 1, "the first step did not run again");
    assert_eq!(calls("red.a.gate-1"), 2, "the gate ran twice: failed, then open");
    assert_eq!(
        CHARGED.load(Ordering::SeqCst),
        1,
        "the attempt got the failed step's recorded charge"
    );

    // Both attempts in the ledger: the failed step as it was, the attempt naming
    // it, and the steps of the new attempt.
    let records = run::read_run(&*a.js, &run_id).await.expect("the ledger");
    let gate: Vec<StepStatus> = records
        .iter()
        .filter(|(_, r)| r.node == "red.a.gate-1" && r.redrive_of.is_empty())
        .map(|(_, r)| r.status)
        .collect();
    assert_eq!(gate.len(), 2, "{records:#?}");
    assert!(gate.contains(&StepStatus::Failed) && gate.contains(&StepStatus::Done));
    let (_, failed) = records
        .iter()
        .find(|(k, _)| *k == plan.target)
        .expect("the failed step's record stays");
    assert_eq!(
        (failed.status, failed.error.as_deref()),
        (StepStatus::Failed, Some("the gate is closed"))
    );
    let attempt = records
        .iter()
        .find(|(k, _)| *k == plan.attempt_key)
        .map(|(_, r)| r)
        .expect("the attempt's record");
    assert_eq!(attempt.redrive_of, plan.target);
    // The relay (which counts nothing itself) ran once, on the gate's message.
    let relay: Vec<_> = records.iter().filter(|(_, r)| r.node == "red.a.relay-1").collect();
    assert_eq!(relay.len(), 1, "{records:#?}");
    assert_eq!(relay[0].1.status, StepStatus::Done);
    let to_relay: Vec<Value> = records
        .iter()
        .flat_map(|(_, r)| &r.emits)
        .filter(|e| e.step_key == relay[0].0)
        .map(|e| serde_json::from_slice(&e.data).expect("JSON"))
        .collect();
    assert_eq!(to_relay, [json!({"n": 5, "receipt": "ch_1"})]);

    // Captured, the run is the one it became (the failed attempt left out), and it
    // replays green on the fixed flow, the charge answered from the recording.
    let captured = run::capture_run(&*a.js, &run_id).await.expect("captured");
    assert_eq!(captured.steps.len(), 3, "{captured:#?}");
    let report = Harness::builder()
        .register::<Count>()
        .register::<Gate>()
        .register::<Relay>()
        .flow(flow(true))
        .replay(&captured, ReplayOptions { values: true })
        .await
        .expect("replays");
    assert!(report.is_green(), "{report}");
    assert_eq!(report.calls_answered, 1);

    // Complete now: nothing to re-drive.
    let err = jetstream::redrive(&a.js, &run_id, None).await.expect_err("not failed");
    assert!(err.to_string().contains("has no failed step"), "{err}");
    a.receiver.stop().await;
}

//! A durable run on a real `nats-server` captured from its ledger (`TINY_EXEC`) and
//! replayed in the harness: green on the same build, red with the structural diff on
//! a build whose component changed an output, and no outside call made by a replay
//! (issue 46).

mod support;

use std::sync::{
    Mutex,
    atomic::{AtomicUsize, Ordering},
};

use serde_json::{Value, json};
use support::runs::{durable, module_a, recorded_run, status_once};
use tiny_sdk::{
    engine::Registry,
    flow::{Flow, FlowBuilder},
    harness::{Harness, HarnessBuilder, Relay, ReplayDiff, ReplayOptions, ShapeChange, replay_runs},
    prelude::*,
    run::{self, CapturedRun},
};

/// How many times the outside call was really made.
static OUTSIDE: AtomicUsize = AtomicUsize::new(0);
/// The runs `fetch` ran in.
static RUNS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Asks an outside service for a price (counted in `OUTSIDE`) and passes it on.
#[derive(Debug, Component, Default)]
#[component(name = "fetch")]
struct Fetch {
    input: Input<Value>,
    out: Output<Value>,
}

impl Fetch {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        if let Some(run) = ctx.run_id() {
            RUNS.lock().expect("runs").push(run.to_owned());
        }
        let price: Value = ctx
            .outside("price", async {
                OUTSIDE.fetch_add(1, Ordering::SeqCst);
                Ok(json!({"amount": 42, "currency": "EUR"}))
            })
            .await?;
        self.out.emit(ctx, json!({"n": msg["n"], "price": price})).await
    }
}

/// Formats the price: `{text, amount}`.
#[derive(Debug, Component, Default)]
#[component(name = "format")]
struct Format {
    input: Input<Value>,
    out: Output<Value>,
}

impl Format {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let amount = msg["price"]["amount"].clone();
        let text = format!("#{}: {} {}", msg["n"], amount, msg["price"]["currency"]);
        self.out.emit(ctx, json!({"text": text, "amount": amount})).await
    }
}

/// The next build of `format`: `text` renamed `label`, `amount` now a string.
#[derive(Debug, Component, Default)]
#[component(name = "format")]
struct FormatRenamed {
    input: Input<Value>,
    out: Output<Value>,
}

impl FormatRenamed {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let amount = msg["price"]["amount"].to_string();
        let label = format!("#{}: {amount}", msg["n"]);
        self.out.emit(ctx, json!({"label": label, "amount": amount})).await
    }
}

/// `cap.a.fetch-1` (durable) → `cap.a.format-1` → `cap.a.relay-1`.
fn flow() -> Flow {
    let flow = FlowBuilder::new()
        .module("a")
        .node("cap.a.fetch-1", "fetch")
        .node("cap.a.format-1", "format")
        .node("cap.a.relay-1", "relay")
        .edge("cap.a.fetch-1:out", "cap.a.format-1:input", json!("{{$}}"))
        .edge("cap.a.format-1:out", "cap.a.relay-1:input", json!("{{$}}"))
        .build();
    durable(flow, "cap.a.fetch-1")
}

fn this_build() -> HarnessBuilder {
    Harness::builder()
        .register::<Fetch>()
        .register::<Format>()
        .register::<Relay>()
        .flow(flow())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_captured_run_replays_green_on_its_build_and_red_on_a_changed_output_without_outside_calls() {
    let mut registry = Registry::default();
    registry.register::<Fetch>().register::<Format>().register::<Relay>();
    let (_broker, a) = module_a(registry, &flow()).await;
    a.engine
        .send("cap.a.fetch-1:input", json!({"n": 7}))
        .await
        .expect("the first step runs");
    let run_id = RUNS.lock().expect("runs").first().cloned().expect("fetch ran in a run");
    let status = status_once(&*a.js, &run_id, "the run completes", |s| s.complete || s.failed).await;
    assert!(status.complete && status.steps.len() == 3, "{status:?}");
    assert_eq!(
        OUTSIDE.load(Ordering::SeqCst),
        1,
        "the real run made the outside call once"
    );

    // Captured from the ledger: the first message, each step's arrival and emits,
    // and the outside call's answer.
    let captured = run::capture_run(&*a.js, &run_id).await.expect("captured");
    a.receiver.stop().await;
    let entry = captured.entry.as_ref().expect("the first message is in the ledger");
    assert_eq!(
        (entry.to.as_str(), &entry.data),
        ("cap.a.fetch-1:input", &json!({"n": 7}))
    );
    let nodes: Vec<(&str, &str)> = captured
        .steps
        .iter()
        .map(|s| (s.node.as_str(), s.port.as_str()))
        .collect();
    assert_eq!(
        nodes,
        [
            ("cap.a.fetch-1", "input"),
            ("cap.a.format-1", "input"),
            ("cap.a.relay-1", "input")
        ]
    );
    assert_eq!(captured.steps[0].calls.len(), 1, "{captured:?}");
    assert_eq!(
        (
            captured.steps[0].calls[0].name.as_str(),
            &captured.steps[0].calls[0].answer
        ),
        ("price", &json!({"amount": 42, "currency": "EUR"}))
    );
    assert_eq!(
        captured.steps[2].arrived,
        Some(json!({"text": "#7: 42 \"EUR\"", "amount": 42}))
    );
    assert!(captured.notes.is_empty(), "{:?}", captured.notes);
    // The file reads back as written.
    let text = captured.to_json().expect("JSON");
    let captured = CapturedRun::from_json(&text).expect("reads back");

    // The same build: green, values too, and the call answered from the recording.
    let report = this_build()
        .replay(&captured, ReplayOptions { values: true })
        .await
        .expect("replays");
    assert!(report.is_green(), "{report}");
    assert_eq!(report.calls_answered, 1);
    assert_eq!(OUTSIDE.load(Ordering::SeqCst), 1, "the replay made no outside call");

    // The same, as a module's one-line test: every file under a folder.
    let dir = std::env::temp_dir().join(format!("tiny-runs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    std::fs::write(dir.join("price.json"), &text).expect("written");
    let reports = replay_runs(this_build, &dir).await;
    assert_eq!(reports.len(), 1);

    // A build whose `format` changed its output: red, naming the port and fields.
    let changed = Harness::builder()
        .register::<Fetch>()
        .register::<FormatRenamed>()
        .register::<Relay>()
        .flow(flow());
    let report = changed
        .replay(&captured, ReplayOptions::default())
        .await
        .expect("replays");
    assert!(!report.is_green());
    assert_eq!(
        report.diffs,
        vec![ReplayDiff::ShapeChanged {
            port: "cap.a.relay-1:input".to_owned(),
            index: 0,
            changes: vec![
                ShapeChange {
                    path: "$.amount".to_owned(),
                    recorded: "number",
                    replayed: "string"
                },
                ShapeChange {
                    path: "$.label".to_owned(),
                    recorded: "missing",
                    replayed: "string"
                },
                ShapeChange {
                    path: "$.text".to_owned(),
                    recorded: "string",
                    replayed: "missing"
                },
            ],
        }],
        "{report}"
    );
    // The folder's one-liner fails on it, with the diff.
    let red = tokio::spawn(async move {
        replay_runs(
            || {
                Harness::builder()
                    .register::<Fetch>()
                    .register::<FormatRenamed>()
                    .register::<Relay>()
                    .flow(flow())
            },
            &dir,
        )
        .await
    })
    .await
    .expect_err("a red replay fails the test");
    assert!(red.is_panic());
    assert_eq!(OUTSIDE.load(Ordering::SeqCst), 1, "no replay made the outside call");
}

/// Whether `call-1` fails after its calls (the flow "broken").
static CALL_FAILS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
/// Outside calls `call-1` really made, by name.
static MADE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Makes outside calls whose names a KV key cannot hold as they are, each answering
/// its own name; fails while `CALL_FAILS`; else passes on its input and the answers.
#[derive(Debug, Component, Default)]
#[component(name = "call")]
struct Call {
    input: Input<Value>,
    out: Output<Value>,
}

impl Call {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let mut answers = serde_json::Map::new();
        for name in ["GET /users", "a b", "a_b", "weather api"] {
            let answer: String = ctx
                .outside(name, async {
                    MADE.lock().expect("made").push(name.to_owned());
                    Ok(format!("answer of {name}"))
                })
                .await?;
            answers.insert(name.to_owned(), Value::String(answer));
        }
        if CALL_FAILS.load(Ordering::SeqCst) {
            return Err(Error::permanent("not yet"));
        }
        self.out.emit(ctx, json!({"got": msg, "answers": answers})).await
    }
}

/// `edge.a.relay-1` (not durable) → `edge.a.call-1` (durable) over a mapping →
/// `edge.a.relay-2`.
fn mapped_flow() -> Flow {
    let flow = FlowBuilder::new()
        .module("a")
        .node("edge.a.relay-1", "relay")
        .node("edge.a.call-1", "call")
        .node("edge.a.relay-2", "relay")
        .edge("edge.a.relay-1:out", "edge.a.call-1:input", json!({"x": "{{$.raw}}"}))
        .edge("edge.a.call-1:out", "edge.a.relay-2:input", json!("{{$}}"))
        .build();
    durable(flow, "edge.a.call-1")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_entered_over_a_mapped_edge_redrives_and_replays_along_it_with_every_call_name_kept() {
    let mut registry = Registry::default();
    registry.register::<Call>().register::<Relay>();
    let (_broker, a) = module_a(registry, &mapped_flow()).await;
    let _ = a.engine.send("edge.a.relay-1:input", json!({"raw": 7})).await;
    let run_id = recorded_run(&*a.js).await;
    status_once(&*a.js, &run_id, "the run fails", |s| s.failed).await;
    let names = ["GET /users", "a b", "a_b", "weather api"];
    assert_eq!(
        *MADE.lock().expect("made"),
        names,
        "each call made once, none taken for another"
    );

    // Re-driven from its first step: along the edge it came by (the mapping makes
    // `{"x": 7}` again), the calls answered from the failed attempt.
    CALL_FAILS.store(false, Ordering::SeqCst);
    tiny_runtime::jetstream::redrive(&a.js, &run_id, Some("edge.a.call-1:input"))
        .await
        .expect("re-driven");
    let status = status_once(&*a.js, &run_id, "the re-driven run completes", |s| s.complete).await;
    assert!(!status.failed, "{status:?}");
    assert_eq!(*MADE.lock().expect("made"), names, "the re-drive made no call again");
    let captured = run::capture_run(&*a.js, &run_id).await.expect("captured");
    a.receiver.stop().await;
    let relayed = captured
        .steps
        .iter()
        .find(|s| s.node == "edge.a.relay-2")
        .and_then(|s| s.arrived.clone())
        .expect("relay-2 ran");
    assert_eq!(relayed["got"], json!({"x": 7}), "the mapping ran on the re-drive");
    let answers: Vec<(&str, &Value)> = relayed["answers"]
        .as_object()
        .expect("answers")
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    assert_eq!(answers.len(), names.len(), "{answers:?}");
    for (name, answer) in answers {
        assert_eq!(answer, &json!(format!("answer of {name}")));
    }
    let entry = captured.entry.as_ref().expect("the first message");
    assert_eq!(
        (entry.from.as_str(), &entry.data),
        ("edge.a.relay-1:out", &json!({"raw": 7}))
    );

    // Replayed: green, values too, every call answered by its own name.
    let report = Harness::builder()
        .register::<Call>()
        .register::<Relay>()
        .flow(mapped_flow())
        .replay(&captured, ReplayOptions { values: true })
        .await
        .expect("replays");
    assert!(report.is_green(), "{report}");
    assert_eq!(report.calls_answered, names.len());
    assert_eq!(MADE.lock().expect("made").len(), names.len(), "the replay made no call");
}

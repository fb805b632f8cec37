//! A durable run on a real `nats-server` captured from its ledger (`TINY_EXEC`) and
//! replayed in the harness: green on the same build, red with the structural diff on
//! a build whose component changed an output, and no outside call made by a replay
//! (issue 46).

use std::{
    sync::{
        Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tiny_sdk::{
    engine::{EXECUTION_MODE_LABEL, Registry},
    flow::{Flow, FlowBuilder},
    harness::{Harness, HarnessBuilder, Relay, ReplayDiff, ReplayOptions, ShapeChange, replay_runs},
    prelude::*,
    run::{self, CapturedRun},
};
use tiny_testkit::{NatsServer, durable_module, eventually};

const WAIT: Duration = Duration::from_secs(20);

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
    let mut flow = FlowBuilder::new()
        .module("a")
        .node("cap.a.fetch-1", "fetch")
        .node("cap.a.format-1", "format")
        .node("cap.a.relay-1", "relay")
        .edge("cap.a.fetch-1:out", "cap.a.format-1:input", json!("{{$}}"))
        .edge("cap.a.format-1:out", "cap.a.relay-1:input", json!("{{$}}"))
        .build();
    for n in &mut flow.nodes {
        if n.name == "cap.a.fetch-1" {
            n.labels.insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        }
    }
    flow
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
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let mut registry = Registry::default();
    registry.register::<Fetch>().register::<Format>().register::<Relay>();
    let a = durable_module(&broker, "a", registry, &flow()).await;
    a.engine
        .send("cap.a.fetch-1:input", json!({"n": 7}))
        .await
        .expect("the first step runs");
    let run_id = RUNS.lock().expect("runs").first().cloned().expect("fetch ran in a run");
    let status = eventually("the run completes", WAIT, || async {
        let s = run::run_status(&*a.js, &run_id).await.ok()?;
        (s.complete || s.failed).then_some(s)
    })
    .await;
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

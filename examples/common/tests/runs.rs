//! `run_start` and `run_status` on a real broker with JetStream: a run begun from a
//! component, its durable chain, and its ledger read back as Go's `run_status` does.

use std::time::Duration;

use serde_json::{Value, json};
use tiny_sdk::flow::{Flow, FlowBuilder};
use tiny_testkit::{NatsServer, components::Answer, durable_module, eventually};

const WAIT: Duration = Duration::from_secs(20);

/// `run_start` → `delay` → `debug`, its `started` answered by an `answer`; beside
/// it `run_status`, its response answered by another.
fn flow(delay: i64) -> Flow {
    FlowBuilder::new()
        .module("common")
        .node("runs.common.run-start-1", "run_start")
        .node("runs.common.delay-1", "delay")
        .node("runs.common.debug-1", "debug")
        .node("runs.common.answer-1", "answer")
        .node("runs.common.run-status-1", "run_status")
        .node("runs.common.answer-2", "answer")
        .edge(
            "runs.common.run-start-1:out",
            "runs.common.delay-1:in",
            json!({"context": "{{$.context}}", "delay": delay}),
        )
        .edge("runs.common.delay-1:out", "runs.common.debug-1:in", json!("{{$}}"))
        .edge(
            "runs.common.run-start-1:started",
            "runs.common.answer-1:input",
            json!("{{$}}"),
        )
        .edge(
            "runs.common.run-status-1:response",
            "runs.common.answer-2:input",
            json!("{{$}}"),
        )
        .build()
}

async fn status(engine: &tiny_sdk::engine::Engine, run_id: &str) -> Value {
    engine
        .send(
            "runs.common.run-status-1:request",
            json!({"runID": run_id, "context": "asked"}),
        )
        .await
        .expect("run_status answers")
        .into_value()
        .expect("a response")
}

async fn common(broker: &NatsServer, flow: &Flow) -> tiny_testkit::DurableModule {
    let mut registry = tiny_example_common::registry();
    registry.register::<Answer>();
    durable_module(broker, "common", registry, flow).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn run_start_answers_at_once_and_run_status_follows_the_run_to_complete() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    // A delay long enough that a loaded machine cannot make the run look finished
    // before the test asks: `started` answers while the delay behind `out` still runs.
    let flow = flow(3000);
    let m = common(&broker, &flow).await;
    let reply = m
        .engine
        .send("runs.common.run-start-1:in", json!({"context": {"order": 7}}))
        .await
        .expect("run_start answers")
        .into_value()
        .expect("started");
    assert_eq!(reply["context"], json!({"order": 7}));
    let run_id = reply["runID"].as_str().expect("runID").to_owned();
    assert_eq!(run_id.len(), 36, "a UUID: {run_id}");
    let now = status(&m.engine, &run_id).await;
    assert_eq!(
        now["complete"],
        json!(false),
        "started was answered after the run finished: {now}"
    );

    let done = eventually("the run completes", WAIT, || async {
        let s = status(&m.engine, &run_id).await;
        (s["complete"] == json!(true)).then_some(s)
    })
    .await;
    assert_eq!(done["context"], json!("asked"));
    assert_eq!(done["runID"], json!(run_id));
    assert_eq!(done["found"], json!(true));
    assert_eq!(done["failed"], json!(false));
    assert_eq!(done["pendingSteps"], json!(0));
    let steps = done["steps"].as_array().expect("steps");
    let nodes: Vec<&str> = steps.iter().filter_map(|s| s["node"].as_str()).collect();
    assert_eq!(
        steps.len(),
        2,
        "delay and debug (run_start writes no record, as Go): {done}"
    );
    assert!(
        nodes.contains(&"runs.common.delay-1") && nodes.contains(&"runs.common.debug-1"),
        "{done}"
    );
    for step in steps {
        assert_eq!(step["status"], json!("done"));
        assert!(
            step["stepKey"]
                .as_str()
                .is_some_and(|k| k.starts_with(&format!("{run_id}."))),
            "{step}"
        );
        assert!(
            step.get("error").is_none(),
            "no error field on a done step (omitempty): {step}"
        );
    }
    m.receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn run_status_reports_a_failed_step_and_an_unknown_run() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    // A delay of -1 ms fails the step.
    let flow = flow(-1);
    let m = common(&broker, &flow).await;
    let unknown = status(&m.engine, "00000000-0000-4000-8000-000000000000").await;
    assert_eq!(
        (
            unknown["found"].clone(),
            unknown["complete"].clone(),
            unknown["pendingSteps"].clone()
        ),
        (json!(false), json!(false), json!(0)),
        "{unknown}"
    );
    // As Go's: no steps, so the key is left out.
    assert!(unknown.get("steps").is_none(), "{unknown}");
    let reply = m
        .engine
        .send("runs.common.run-start-1:in", json!({"context": 1}))
        .await
        .expect("run_start answers")
        .into_value()
        .expect("started");
    let run_id = reply["runID"].as_str().expect("runID").to_owned();
    let failed = eventually("the run fails", WAIT, || async {
        let s = status(&m.engine, &run_id).await;
        (s["failed"] == json!(true)).then_some(s)
    })
    .await;
    assert_eq!(
        (failed["found"].clone(), failed["complete"].clone()),
        (json!(true), json!(false))
    );
    let step = &failed["steps"][0];
    assert_eq!(step["node"], json!("runs.common.delay-1"));
    assert_eq!(step["status"], json!("failed"));
    assert!(
        step["error"]
            .as_str()
            .is_some_and(|e| e.contains("invalid delay -1 ms")),
        "{step}"
    );
    let empty = m
        .engine
        .send("runs.common.run-status-1:request", json!({"runID": ""}))
        .await
        .expect_err("an empty runID is refused");
    assert!(empty.to_string().contains("runID is required"), "{empty}");
    m.receiver.stop().await;
}

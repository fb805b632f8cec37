//! Recorded runs replayed before shipping (docs/guide.md, "Replay a recorded run"):
//! every capture under `tests/runs/` against this build, and `guide-module
//! capture-run` reading a durable run of the guide's flow on a real `nats-server`.

use std::{process::Command, sync::Arc, time::Duration};

use serde_json::json;
use tiny_example_guide::Convert;
use tiny_runtime::{
    jetstream::{self, JetStream, JetStreamRouter},
    nats::Link,
};
use tiny_sdk::{
    engine::{EXECUTION_MODE_LABEL, Engine},
    flow::Flow,
    harness::{Harness, replay_runs},
    run::{self, RunStore as _},
};
use tiny_testenv::{NatsServer, eventually};

/// The TinyNode and TinySignal documents a cluster gets, as they are.
const FLOW: &str = include_str!("../flows/convert.yaml");

#[tokio::test]
async fn recorded_runs_replay_as_recorded() {
    replay_runs(|| Harness::builder().register::<Convert>().yaml(FLOW), "tests/runs").await;
}

const WAIT: Duration = Duration::from_secs(20);

/// The guide's flow run durably (convert-1 labelled durable) on a broker, captured by
/// the binary and replayed green. With `TINY_UPDATE_RUNS=1` the capture also
/// replaces `tests/runs/weather.json`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_captures_a_durable_run() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects to {}", broker.url());
    let js = JetStream::new(link, "guide-v0", "guide-v0-0");
    js.ensure().await.expect("the streams and the run bucket");
    let engine = Engine::builder()
        .module("guide-v0")
        .registry(tiny_example_guide::registry())
        .router(Arc::new(JetStreamRouter::new(js.clone())))
        .runs(js.clone())
        .build();
    let mut flow = Flow::from_yaml(FLOW).expect("the flow");
    for node in &mut flow.nodes {
        if node.name == "weather.guide-v0.convert-1" {
            node.labels
                .insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        }
        engine.apply(node.clone()).await.expect("the node loads");
    }
    let receiver = jetstream::listen(js.clone(), engine.clone(), Some(Arc::new(|| true)));
    engine
        .send(
            "weather.guide-v0.convert-1:input",
            json!({"celsius": 21.5, "context": {"station": "north"}}),
        )
        .await
        .expect("the first step runs");
    let run_id = eventually("the run is recorded", WAIT, || async {
        let keys = js.keys("exec/").await.ok()?;
        keys.iter().find_map(|k| run::parse_ledger_key(k).map(|k| k.run_id))
    })
    .await;
    eventually("the run completes", WAIT, || async {
        let s = run::run_status(&*js, &run_id).await.ok()?;
        s.complete.then_some(())
    })
    .await;
    receiver.stop().await;

    let dir = tempfile::tempdir().expect("a folder");
    let file = dir.path().join("weather.json");
    let out = Command::new(env!("CARGO_BIN_EXE_guide-module"))
        .args(["capture-run", &run_id, "-o"])
        .arg(&file)
        .env("TINY_NATS_URL", broker.url())
        .output()
        .expect("guide-module runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reports = replay_runs(|| Harness::builder().register::<Convert>().yaml(FLOW), dir.path()).await;
    assert_eq!(reports[0].run_id, run_id);
    if std::env::var_os("TINY_UPDATE_RUNS").is_some() {
        std::fs::create_dir_all("tests/runs").expect("tests/runs");
        std::fs::copy(&file, "tests/runs/weather.json").expect("copied");
    }
}

//! `hello-module capture-run`: a durable run on a real `nats-server` read from the
//! ledger into a file by the module binary, and the file replayed green by the
//! harness's `replay_runs`, as a module's `tests/runs/` is (issue 46).

use std::{
    process::{Command, Output},
    time::Duration,
};

use serde_json::json;
use tiny_example_hello::{Hello, Respond, Shout};
use tiny_sdk::{
    engine::EXECUTION_MODE_LABEL,
    flow::{Flow, FlowBuilder},
    harness::{Harness, HarnessBuilder, replay_runs},
    run::{self, CapturedRun, RunStatus, RunStore as _},
};
use tiny_testkit::{DurableModule, NatsServer, durable_module, eventually};

const WAIT: Duration = Duration::from_secs(20);

/// `cap.hello.hello-1` (durable) → `cap.hello.shout-1` → `cap.hello.respond-1`.
fn flow() -> Flow {
    let mut flow = FlowBuilder::new()
        .module("hello")
        .node("cap.hello.hello-1", "hello")
        .node("cap.hello.shout-1", "shout")
        .node("cap.hello.respond-1", "respond")
        .edge(
            "cap.hello.hello-1:greeting",
            "cap.hello.shout-1:input",
            json!({"text": "{{$.greeting}}"}),
        )
        .edge("cap.hello.shout-1:out", "cap.hello.respond-1:response", json!("{{$}}"))
        .build();
    for n in &mut flow.nodes {
        if n.name == "cap.hello.hello-1" {
            n.labels.insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        }
    }
    flow
}

fn this_build() -> HarnessBuilder {
    Harness::builder()
        .register::<Hello>()
        .register::<Shout>()
        .register::<Respond>()
        .flow(flow())
}

/// `hello-module <command> <args>` against `broker`, run to its end.
fn hello_module(broker: &NatsServer, command: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hello-module"))
        .arg(command)
        .args(args)
        .env("TINY_NATS_URL", broker.url())
        .env("RUST_LOG", "warn")
        .output()
        .expect("hello-module runs")
}

/// A broker of the test's own, with JetStream, and the hello module on it, `flow()`
/// loaded.
async fn hello_on_broker() -> (NatsServer, DurableModule) {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let module = durable_module(&broker, "hello", tiny_example_hello::registry(), &flow()).await;
    (broker, module)
}

/// The run of the first step record in the ledger, once there is one.
async fn recorded_run(module: &DurableModule) -> String {
    eventually("the run is recorded", WAIT, || async {
        let keys = module.js.keys("exec/").await.ok()?;
        keys.iter().find_map(|k| run::parse_ledger_key(k).map(|k| k.run_id))
    })
    .await
}

/// Waits until run `run_id`'s status says `settled` (waiting for `what`).
async fn status_once(module: &DurableModule, run_id: &str, what: &str, settled: impl Fn(&RunStatus) -> bool) {
    eventually(what, WAIT, || async {
        run::run_status(&*module.js, run_id).await.ok().filter(|s| settled(s))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn capture_run_writes_a_file_that_replays_green() {
    let (broker, module) = hello_on_broker().await;
    module
        .engine
        .send("cap.hello.hello-1:input", json!({"name": "Ada"}))
        .await
        .expect("the first step runs");
    let run_id = recorded_run(&module).await;
    status_once(&module, &run_id, "the run completes", |s| s.complete).await;
    module.receiver.stop().await;

    let dir = tempfile::tempdir().expect("a folder");
    let file = dir.path().join("greet.json");
    let out = hello_module(
        &broker,
        "capture-run",
        &[&run_id, "-o", file.to_str().expect("a UTF-8 path")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("run {run_id}: 3 step(s) captured")),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let captured = CapturedRun::from_json(&std::fs::read_to_string(&file).expect("the file")).expect("a capture");
    assert_eq!(
        captured.entry.as_ref().map(|e| (e.to.as_str(), e.data.clone())),
        Some(("cap.hello.hello-1:input", json!({"name": "Ada"})))
    );
    let shout = captured
        .steps
        .iter()
        .find(|s| s.node == "cap.hello.shout-1")
        .expect("shout's step");
    assert_eq!(shout.port, "input");
    assert_eq!(
        shout.arrived.as_ref().map(|a| a["greeting"].clone()),
        Some(json!("Hello, Ada!"))
    );

    // The module's one-line test over its runs folder: green.
    let reports = replay_runs(this_build, dir.path()).await;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].run_id, run_id);

    // A run the ledger does not have: a clear error and a failing exit status.
    let out = hello_module(&broker, "capture-run", &["no-such-run"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("run `no-such-run` has no records in the ledger"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redrive_runs_a_failed_run_again_as_a_new_attempt() {
    let (broker, module) = hello_on_broker().await;
    // An empty name fails the first step: the run fails there.
    module
        .engine
        .send("cap.hello.hello-1:input", json!({"name": ""}))
        .await
        .expect_err("the greeting fails");
    let run_id = recorded_run(&module).await;
    status_once(&module, &run_id, "the run fails", |s| s.failed).await;

    let out = hello_module(&broker, "redrive", &[&run_id, "--at", "cap.hello.shout-1:input"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has no step at `cap.hello.shout-1:input`"), "{stderr}");

    let out = hello_module(&broker, "redrive", &[&run_id]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "run {run_id}: step {run_id}.root re-driven to cap.hello.hello-1:input"
        )),
        "{stdout}"
    );
    // The same message on the same flow fails again: a second failed attempt,
    // beside the first, and the run failed still.
    let records = eventually("the attempt runs", WAIT, || async {
        let records = run::read_run(&*module.js, &run_id).await.ok()?;
        let failed = records
            .iter()
            .filter(|(_, r)| r.node == "cap.hello.hello-1" && r.is_failed())
            .count();
        (failed == 2).then_some(records)
    })
    .await;
    assert!(
        records.iter().any(|(_, r)| r.redrive_of == run::root_step_key(&run_id)),
        "{records:#?}"
    );
    let status = run::run_status(&*module.js, &run_id).await.expect("status");
    assert!(status.failed && !status.complete, "{status:?}");
    module.receiver.stop().await;
}

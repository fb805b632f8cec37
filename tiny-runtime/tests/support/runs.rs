//! Durable runs on a real `nats-server`: a flow with a durable node, module `a` on a
//! JetStream broker of its own, and the run read back from the ledger as it settles.

use std::time::Duration;

use tiny_sdk::{
    engine::{EXECUTION_MODE_LABEL, Registry},
    flow::Flow,
    run::{self, RunStatus, RunStore},
};
use tiny_testkit::{DurableModule, NatsServer, durable_module, eventually};

/// How long a run gets to reach what a test waits for.
pub const WAIT: Duration = Duration::from_secs(20);

/// `flow` with node `node` made durable: its steps, and those after it, are a run in
/// the ledger.
pub fn durable(mut flow: Flow, node: &str) -> Flow {
    let n = flow
        .nodes
        .iter_mut()
        .find(|n| n.name == node)
        .unwrap_or_else(|| panic!("node `{node}` in the flow"));
    n.labels.insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
    flow
}

/// A JetStream broker of the test's own, and module `a` with `registry`'s components on
/// it, its nodes of `flow` loaded; the broker lives as long as the value kept.
pub async fn module_a(registry: Registry, flow: &Flow) -> (NatsServer, DurableModule) {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let a = durable_module(&broker, "a", registry, flow).await;
    (broker, a)
}

/// The run of the first step record in the ledger, once there is one.
pub async fn recorded_run<S: RunStore + ?Sized>(store: &S) -> String {
    eventually("the run is recorded", WAIT, || async {
        let keys = store.keys("exec/").await.ok()?;
        keys.iter().find_map(|k| run::parse_ledger_key(k).map(|k| k.run_id))
    })
    .await
}

/// Run `run_id`'s status once `settled` says so (waiting for `what`).
pub async fn status_once<S: RunStore + ?Sized>(
    store: &S,
    run_id: &str,
    what: &str,
    settled: impl Fn(&RunStatus) -> bool,
) -> RunStatus {
    eventually(what, WAIT, || async {
        run::run_status(store, run_id).await.ok().filter(|s| settled(s))
    })
    .await
}

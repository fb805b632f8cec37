//! A control plane for a test, and what tests do on it: apply flows, send TinySignals
//! and wait for their outcome, wait for nodes to be Ready, read a node's port views.

use std::time::Duration;

use kube::{Api, Client, api::PostParams};
use serde_json::Value;
use tiny_runtime::crd::{SignalPhase, TinyNode, TinySignal, TinySignalSpec};
use tiny_sdk::flow::{Flow, RawJson};
use tiny_testenv::{TestEnv, eventually};

/// The CRDs, as generated into the repository's `crds/`.
pub const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../crds");

/// How long a signal may take to finish before the test fails.
pub const SIGNAL_WAIT: Duration = Duration::from_secs(60);

/// A local control plane with tiny's CRDs installed, for one test at a time.
///
/// The test harness runs a binary's tests on as many threads as there are cores; two
/// cluster tests side by side on a 2-core machine are two API servers, two brokers and
/// up to four module processes against timeouts of seconds, and fail by load. So a
/// cluster test waits for the one before it: the control plane comes with a slot that
/// is held until the test drops it.
pub async fn env() -> Cluster {
    static SLOT: std::sync::OnceLock<std::sync::Arc<tokio::sync::Mutex<()>>> = std::sync::OnceLock::new();
    let slot = SLOT.get_or_init(Default::default).clone().lock_owned().await;
    let env = TestEnv::builder()
        .crds_dir(CRDS)
        .start()
        .await
        .expect("the control plane starts");
    Cluster { env, _slot: slot }
}

/// A test's control plane ([`env()`]) and its turn: dropped, the next cluster test of the
/// binary starts.
#[derive(Debug)]
pub struct Cluster {
    env: TestEnv,
    _slot: tokio::sync::OwnedMutexGuard<()>,
}

impl std::ops::Deref for Cluster {
    type Target = TestEnv;
    fn deref(&self) -> &TestEnv {
        &self.env
    }
}

impl std::ops::DerefMut for Cluster {
    fn deref_mut(&mut self) -> &mut TestEnv {
        &mut self.env
    }
}

/// Creates the TinyNodes of a flow written as tiny's flow YAML ([`Flow::from_yaml`]).
pub async fn create_flow(client: &Client, ns: &str, yaml: &str) -> Flow {
    let flow = Flow::from_yaml(yaml).expect("flow YAML");
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    for n in &flow.nodes {
        let mut node = TinyNode::new(&n.name, n.spec.clone().into());
        node.metadata.labels = Some(n.labels.clone());
        nodes.create(&PostParams::default(), &node).await.expect("node created");
    }
    flow
}

/// Creates the TinyNodes of a YAML stream of whole objects, as `kubectl apply` would.
pub async fn apply_yaml(client: &Client, ns: &str, yaml: &str) {
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    for doc in yaml.split("\n---\n").filter(|d| !d.trim().is_empty()) {
        let node: TinyNode = serde_yaml::from_str(doc).expect("a TinyNode");
        nodes.create(&PostParams::default(), &node).await.expect("node created");
    }
}

/// Sends `data` to `node:port` through a TinySignal named `name` and waits (up to
/// [`SIGNAL_WAIT`]) until it is `Delivered` or `Failed`.
pub async fn signal(client: &Client, ns: &str, name: &str, node: &str, port: &str, data: Value) -> TinySignal {
    let signals: Api<TinySignal> = Api::namespaced(client.clone(), ns);
    let spec = TinySignalSpec {
        node: node.into(),
        port: port.into(),
        data: Some(RawJson(data)),
        ..Default::default()
    };
    signals
        .create(&PostParams::default(), &TinySignal::new(name, spec))
        .await
        .expect("signal created");
    eventually(&format!("signal {name} to finish"), SIGNAL_WAIT, || {
        let signals = signals.clone();
        async move {
            let s = signals.get(name).await.ok()?;
            s.status.as_ref()?.signal_phase()?.is_final().then_some(s)
        }
    })
    .await
}

/// The signal's phase.
pub fn phase(signal: &TinySignal) -> Option<SignalPhase> {
    signal.status.as_ref()?.signal_phase()
}

/// Asserts that the signal was delivered (showing its error if not); its reply.
#[track_caller]
pub fn delivered(signal: &TinySignal) -> Option<Value> {
    let status = signal.status.clone().unwrap_or_default();
    assert_eq!(
        status.signal_phase(),
        Some(SignalPhase::Delivered),
        "signal {:?}: {:?}",
        signal.metadata.name,
        status.error
    );
    status.reply.map(|r| r.0)
}

/// Asserts that the signal failed; its error.
#[track_caller]
pub fn failed(signal: &TinySignal) -> String {
    let status = signal.status.clone().unwrap_or_default();
    assert_eq!(
        status.signal_phase(),
        Some(SignalPhase::Failed),
        "signal {:?}",
        signal.metadata.name
    );
    status.error.unwrap_or_default()
}

/// The node's `Ready` condition: `Some(true)` when it is `True`.
pub fn ready(node: &TinyNode) -> Option<bool> {
    let c = node.status.as_ref()?.conditions.iter().find(|c| c.type_ == "Ready")?;
    Some(c.status == "True")
}

/// Waits (up to 60 s each) until every node in `names` is Ready.
pub async fn nodes_ready(client: &Client, ns: &str, names: &[impl AsRef<str>]) {
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    for name in names.iter().map(AsRef::as_ref) {
        eventually(&format!("{name} to be Ready"), Duration::from_secs(60), || {
            let nodes = nodes.clone();
            async move { nodes.get(name).await.ok().filter(|n| ready(n) == Some(true)) }
        })
        .await;
    }
}

/// The configuration `node`'s status shows for `port` (its `_control` view, a
/// port's settings), decoded.
pub fn port_config(node: &TinyNode, port: &str) -> Option<Value> {
    let p = node.status.as_ref()?.ports.iter().find(|p| p.name == port)?;
    p.configuration.as_ref()?.decode().ok()
}

/// Starts module `config` with `registry` in-process against the control plane of
/// `client`, with nothing else ([`Options::new`](tiny_runtime::runtime::Options::new)):
/// what most cluster tests run beside their flows.
pub async fn start_module(
    client: &Client,
    config: tiny_runtime::config::ModuleConfig,
    registry: tiny_sdk::engine::Registry,
) -> tiny_runtime::runtime::Runtime {
    tiny_runtime::runtime::Runtime::start(client.clone(), tiny_runtime::runtime::Options::new(config, registry))
        .await
        .expect("the module starts")
}

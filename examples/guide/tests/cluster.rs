//! The guide's module on the local control plane (etcd, kube-apiserver and
//! kube-controller-manager from tiny-testenv): the binary runs as the guide says,
//! and the flow file's TinySignal is delivered.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};
use tiny_runtime::crd::SignalPhase;

use kube::{Api, api::PostParams};
use tiny_runtime::crd::{TinyNode, TinySignal};
use tiny_sdk::flow::Flow;

const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crds");
const FLOW: &str = include_str!("../flows/convert.yaml");

/// Kills the module when the test ends, passed or not.
struct Module(Child);

impl Drop for Module {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_module_runs_on_the_local_control_plane() {
    let env = tiny_testenv::TestEnv::builder()
        .crds_dir(CRDS)
        .start()
        .await
        .expect("the control plane starts");
    let ns = "tinysystems";
    env.create_namespace(ns).await.expect("namespace");

    // `guide-module run --name guide --version 0.1.0 --namespace tinysystems`, against
    // the control plane's kubeconfig; gRPC on a free port, as other tests may run.
    let _module = Module(
        Command::new(env!("CARGO_BIN_EXE_guide-module"))
            .args(["run", "--name", "guide", "--version", "0.1.0", "--namespace", ns])
            .args(["--grpc-server-bind-address", "127.0.0.1:0"])
            .env("KUBECONFIG", env.kubeconfig_path())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("guide-module starts"),
    );

    // What `kubectl apply -f flows/convert.yaml` does.
    let client = env.client();
    let flow = Flow::from_yaml(FLOW).expect("flow YAML");
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    for n in &flow.nodes {
        let mut node = TinyNode::new(&n.name, n.spec.clone().into());
        node.metadata.labels = Some(n.labels.clone());
        nodes.create(&PostParams::default(), &node).await.expect("node created");
    }
    let signals: Api<TinySignal> = Api::namespaced(client.clone(), ns);
    for s in &flow.signals {
        let spec = tiny_runtime::crd::TinySignalSpec {
            node: s.node.clone(),
            port: s.port.clone(),
            data: Some(tiny_sdk::flow::RawJson(s.data.clone())),
            ..Default::default()
        };
        signals
            .create(&PostParams::default(), &TinySignal::new(&s.name, spec))
            .await
            .expect("signal created");
    }

    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        let s = signals.get("weather-now").await.expect("the signal").status;
        if let Some(s) = s.filter(|s| matches!(s.signal_phase(), Some(SignalPhase::Delivered | SignalPhase::Failed))) {
            break s;
        }
        assert!(Instant::now() < deadline, "the signal was not delivered within 90 s");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        status.signal_phase(),
        Some(SignalPhase::Delivered),
        "{:?}",
        status.error
    );

    // The node's status lists its ports, as the editor shows them.
    let node = nodes.get("weather.guide-v0.convert-1").await.expect("the node");
    let ports: Vec<String> = node.status.expect("status").ports.into_iter().map(|p| p.name).collect();
    for port in ["_settings", "input", "output"] {
        assert!(ports.iter().any(|p| p == port), "{port} in {ports:?}");
    }
}

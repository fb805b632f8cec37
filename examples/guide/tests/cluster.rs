//! The guide's module on the local control plane (etcd, kube-apiserver and
//! kube-controller-manager from tiny-testenv): the binary runs as the guide says,
//! and the flow file's TinySignal is delivered.

use std::{
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};
use tiny_runtime::crd::SignalPhase;

use kube::Api;
use tiny_runtime::crd::{TinyNode, TinySignal};

const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crds");
const FLOW: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/flows/convert.yaml");

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

    // `guide-module run --name guide-v0 --version 0.1.0 --namespace tinysystems`, against
    // the control plane's kubeconfig (gRPC takes any free port by default).
    let _module = Module(
        Command::new(env!("CARGO_BIN_EXE_guide-module"))
            .args(["run", "--name", "guide-v0", "--version", "0.1.0", "--namespace", ns])
            .env("KUBECONFIG", env.kubeconfig_path())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("guide-module starts"),
    );

    // `guide-module render flows/convert.yaml | kubectl apply -n tinysystems -f -`.
    let client = env.client();
    let kubectl = tiny_testenv::kubectl().await.expect("kubectl");
    let applied = Command::new("bash")
        .args([
            "-o",
            "pipefail",
            "-c",
            r#""$MODULE" render "$FLOW" | "$KUBECTL" apply -n "$NS" -f -"#,
        ])
        .env("MODULE", env!("CARGO_BIN_EXE_guide-module"))
        .env("FLOW", FLOW)
        .env("KUBECTL", &kubectl)
        .env("KUBECONFIG", env.kubeconfig_path())
        .env("NS", ns)
        .output()
        .expect("bash runs");
    assert!(applied.status.success(), "{}", String::from_utf8_lossy(&applied.stderr));
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let signals: Api<TinySignal> = Api::namespaced(client.clone(), ns);

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

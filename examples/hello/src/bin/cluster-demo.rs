//! The whole path on a real control plane: starts etcd, kube-apiserver and
//! kube-controller-manager (built from Debian's packages, cached per user), installs
//! the CRDs, runs the hello module against them, applies the example flow and its
//! TinySignal, and prints the signal's reply and each node's status.

use std::{process::ExitCode, time::Duration};

use kube::{Api, ResourceExt as _, api::PostParams};
use tiny_example_hello::{GREET_FLOW, registry};
use tiny_runtime::{
    config::ModuleConfig,
    crd::{TinyNode, TinySignal, TinySignalSpec},
    runtime::{Options, Runtime},
};
use tiny_sdk::flow::{Flow, RawJson};

const NAMESPACE: &str = "tinysystems";

#[tokio::main]
async fn main() -> ExitCode {
    match demo().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cluster-demo: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    eprintln!("starting the local control plane (the first run builds it: several minutes)...");
    let crds = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crds");
    let env = tiny_testenv::TestEnv::builder().crds_dir(crds).start().await?;
    env.create_namespace(NAMESPACE).await?;
    let client = env.client();
    eprintln!(
        "control plane up at {}; kubeconfig: {}",
        env.server_url(),
        env.kubeconfig_path().display()
    );

    let runtime = Runtime::start(
        client.clone(),
        Options {
            config: ModuleConfig::new("examples", "0.1.0", NAMESPACE, "demo-0"),
            registry: registry(),
            lease_duration: None,
            probe_addr: None,
            discovery: None,
            router: None,
            transport: None,
        },
    )
    .await?;

    let flow = Flow::from_yaml(GREET_FLOW)?;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), NAMESPACE);
    for n in &flow.nodes {
        let mut node = TinyNode::new(&n.name, n.spec.clone().into());
        node.metadata.labels = Some(n.labels.clone());
        nodes.create(&PostParams::default(), &node).await?;
    }
    let signals: Api<TinySignal> = Api::namespaced(client.clone(), NAMESPACE);
    let mut last = None;
    for s in &flow.signals {
        let spec = TinySignalSpec {
            node: s.node.clone(),
            port: s.port.clone(),
            data: Some(RawJson(s.data.clone())),
            ..Default::default()
        };
        let created = signals
            .create(&PostParams::default(), &TinySignal::new(&s.name, spec))
            .await?;
        last = Some(created.name_any());
    }
    let Some(name) = last else {
        return Err("the flow has no signal".into());
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        let s = signals.get(&name).await?.status.unwrap_or_default();
        if matches!(s.phase.as_deref(), Some("Delivered" | "Failed")) {
            break s;
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("signal {name} not delivered within 60 s").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    match status.phase.as_deref() {
        Some("Delivered") => {
            let reply = status.reply.map(|r| r.0).unwrap_or_default();
            println!("signal {name}: delivered; reply {reply}");
        }
        _ => println!("signal {name}: failed: {}", status.error.unwrap_or_default()),
    }
    for n in nodes.list(&Default::default()).await? {
        let s = n.status.clone().unwrap_or_default();
        let ready = s
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| c.status.clone())
            .unwrap_or_default();
        let ports: Vec<_> = s.ports.iter().map(|p| p.name.as_str()).collect();
        println!(
            "node {}: status {} ready {} ports {:?}",
            n.name_any(),
            s.status,
            ready,
            ports
        );
    }
    runtime.stop().await;
    Ok(())
}

//! The whole path as a current TinySystems cluster runs it: starts etcd,
//! kube-apiserver and kube-controller-manager (built from Debian's packages, cached
//! per user) and a `nats-server` beside them, installs the CRDs, runs the hello module
//! on NATS against them, applies the example flow, sends its signal over NATS (as the
//! platform does) and prints the reply, the transport that carried it, and each
//! node's status.

use std::{process::ExitCode, time::Duration};

use std::sync::Arc;

use kube::{Api, ResourceExt as _, api::PostParams};
use tiny_example_hello::{GREET_FLOW, registry};
use tiny_runtime::{
    carrier::Carrier,
    config::ModuleConfig,
    crd::{TinyModule, TinyNode},
    grpc::Pool,
    nats::{Broker, Credentials, NatsRouter, SendOptions, listen, send, wire},
    runtime::{Options, Runtime},
    transport::{Routes, Transport},
};
use tiny_sdk::flow::Flow;

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

    let broker = tiny_testenv::NatsServer::start().await?;
    eprintln!("nats-server up at {} (token auth)", broker.address());
    let config = ModuleConfig::new("examples-v0", "0.1.0", NAMESPACE, "demo-0");
    let module = config.name.clone();
    // On NATS only (no gRPC server): the broker's carrier beside an empty gRPC pool.
    let on_nats = Arc::new(Broker::connect(&module, &broker.url(), Ok(Credentials::Url)).await);
    let link = on_nats.link().ok_or("no NATS link")?.clone();
    let transport = Arc::new(Transport::beside("", on_nats.clone()));
    let routes = Arc::new(
        Routes::over([
            Arc::new(Pool::default()) as Arc<dyn Carrier>,
            Arc::new(NatsRouter::new(link.clone())),
        ])
        .advertising(transport.clone()),
    );
    let runtime = Runtime::start(
        client.clone(),
        Options {
            carrier: Some(routes),
            ..Options::new(config, registry())
        },
    )
    .await?;
    let receiver = listen(link.client().clone(), runtime.engine().clone(), None).await?;

    let flow = Flow::from_yaml(GREET_FLOW)?;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), NAMESPACE);
    for n in &flow.nodes {
        let mut node = TinyNode::new(&n.name, n.spec.clone().into());
        node.metadata.labels = Some(n.labels.clone());
        nodes.create(&PostParams::default(), &node).await?;
    }
    let Some(signal) = flow.signals.last() else {
        return Err("the flow has no signal".into());
    };
    // As the platform sends it: `x-from: signal` on the module's subject, waiting for
    // the reply. The node may still be loading: the module waits for it.
    let reply = send(
        link.client(),
        &signal.node,
        &signal.port,
        serde_json::to_vec(&signal.data)?,
        &SendOptions::default().wait(),
    )
    .await?;
    let reply = reply
        .and_then(tiny_sdk::Reply::into_value)
        .unwrap_or(serde_json::Value::Null);
    println!(
        "signal to {}:{} carried over NATS on `{}`; reply {reply}",
        signal.node,
        signal.port,
        wire::subject(&module)
    );
    let modules: Api<TinyModule> = Api::namespaced(client.clone(), NAMESPACE);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let status = modules.get(&module).await?.status.unwrap_or_default();
        if let Some(c) = status.conditions.iter().find(|c| c.type_ == "Transport") {
            println!(
                "TinyModule {module}: addr {}; Transport {} ({})",
                status.addr, c.status, c.message
            );
            break;
        }
        if tokio::time::Instant::now() > deadline {
            println!("TinyModule {module}: no Transport condition yet");
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
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
    receiver.stop().await;
    runtime.stop().await;
    Ok(())
}

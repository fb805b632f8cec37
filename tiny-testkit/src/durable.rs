//! A module on JetStream in this process: an engine with the JetStream router, the
//! run ledger and its consumers, on a real broker (started with `--jetstream`).

use std::{sync::Arc, time::Duration};

use tiny_runtime::{
    jetstream::{self, JetStream, JetStreamRouter},
    nats::{Link, Receiver},
};
use tiny_sdk::{
    engine::{Engine, Registry},
    flow::Flow,
};
use tiny_testenv::NatsServer;

/// One module on JetStream: its engine, its JetStream handle (the ledger), its
/// consumers.
#[derive(Debug)]
pub struct DurableModule {
    /// The engine, with `flow`'s nodes of the module loaded.
    pub engine: Engine,
    /// The streams, the consumers' names and the run ledger.
    pub js: Arc<JetStream>,
    /// The consumers: [`stop`](Receiver::stop) them to take the module away.
    pub receiver: Receiver,
}

/// Starts module `name` with `registry`'s components on `broker`, loads its nodes of
/// `flow` and binds its consumers (this replica leads). Panics if the broker does
/// not answer within 20 s.
pub async fn durable_module(broker: &NatsServer, name: &str, registry: Registry, flow: &Flow) -> DurableModule {
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(
        link.wait_up(Duration::from_secs(20)).await,
        "connects to {}",
        broker.url()
    );
    let js = JetStream::new(link, name, &format!("{name}-0"));
    js.ensure().await.expect("Go's streams and the run bucket");
    let engine = Engine::builder()
        .module(name)
        .node_wait(Duration::from_millis(200))
        .registry(registry)
        .router(Arc::new(JetStreamRouter::new(js.clone())))
        .runs(js.clone())
        .answers(js.clone())
        .build();
    for node in flow.nodes.iter().filter(|n| n.spec.module == name) {
        engine.apply(node.clone()).await.expect("node loads");
    }
    let receiver = jetstream::listen(js.clone(), engine.clone(), Some(Arc::new(|| true)));
    DurableModule { engine, js, receiver }
}

//! A flow used the moment it is created answers: a TinyNode created and a message sent
//! to it over NATS in the same instant, a hundred times, while the module's watch may
//! not have seen the node yet. The module asks the API server before it says a node does
//! not exist, so the message waits for the node instead of failing for good.

mod common;

use std::time::Duration;

use common::{env, eventually, hello};
use kube::{Api, api::PostParams};
use serde_json::json;
use tiny_runtime::{
    crd::{TinyNode, TinyNodeSpec},
    nats::{Link, SendOptions, send},
};
use tiny_testenv::NatsServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_created_and_sent_to_at_once_answers_every_time() {
    let env = env().await;
    let client = env.client();
    let ns = "fresh";
    env.create_namespace(ns).await.expect("namespace");
    let broker = NatsServer::start().await.expect("nats-server starts");
    let module = hello(&env, ns, "fresh-0", "examples-v0").nats(&broker.url()).start();
    let link = Link::connect(&broker.url()).await.expect("a URL");
    assert!(link.wait_up(Duration::from_secs(10)).await);
    eventually("the module to listen on NATS", Duration::from_secs(60), || async {
        module.probe("/readyz").await.filter(|(status, _)| *status == 200)
    })
    .await;

    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let nats = link.client().clone();
    let (post, wait) = (PostParams::default(), SendOptions::default().wait());
    let mut answered = 0;
    for i in 0..100 {
        let name = format!("fresh.examples-v0.respond-{i}");
        let node = TinyNode::new(
            &name,
            TinyNodeSpec(tiny_sdk::flow::NodeSpec {
                module: "examples".into(),
                component: "respond".into(),
                ports: vec![],
                edges: vec![],
            }),
        );
        let data = serde_json::to_vec(&json!({"n": i})).unwrap_or_default();
        // Created and sent at once: whichever reaches the module first, the
        // message must be answered.
        let (created, reply) = tokio::join!(nodes.create(&post, &node), send(&nats, &name, "response", data, &wait),);
        created.expect("created");
        let reply = reply.unwrap_or_else(|e| panic!("message {i} to a node created at once failed: {e}"));
        let value = reply.and_then(|r| r.into_value());
        assert_eq!(value, Some(json!({"n": i})), "message {i}");
        answered += 1;
    }
    assert_eq!(answered, 100);

    // A node that does not exist, on the API server either, still fails at once: read
    // from the error's kind, not a clock. Permanent is the API server's answer; a module
    // that waited for the node to load would say transient, after the wait.
    let err = send(
        &nats,
        "fresh.examples-v0.respond-999",
        "response",
        b"{}".to_vec(),
        &wait,
    )
    .await
    .expect_err("no such node");
    assert_eq!(err.code(), Some(tiny_sdk::error::code::NODE_NOT_FOUND), "{err}");
    assert_eq!(err.kind(), tiny_sdk::error::ErrorKind::Permanent, "{err}");
}

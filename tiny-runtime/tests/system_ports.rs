//! `--system-ports-from` (issue 48): a message from the wire to a system port is taken
//! only from the senders the module is told to take it from. Over a real `nats-server`
//! and real gRPC sockets, module `b`'s node gets `_settings` from the platform (`x-from:
//! signal`, on `b`'s system subject; a gRPC call without a sender node) and from a node
//! of module `a` (along an edge: on `b`'s business subject, or a gRPC call naming the
//! node). With `platform` the module's are refused (FORBIDDEN, counted) and the
//! platform's taken; with `any`, as in Go, both are taken.
//!
//! The setting is process-wide, so this binary holds one test.

mod support;

use std::{sync::Arc, time::Duration};

use async_nats::HeaderMap;
use serde_json::{Value, json};
use support::tag::Tag;
use tiny_runtime::{
    config::SystemPortsFrom,
    grpc::{Pool, PoolOptions, ServerOptions, spawn},
    metrics,
    nats::{Link, SendOptions, listen, send, wire},
};
use tiny_sdk::{
    Hop,
    engine::{Engine, Source},
    error::code,
    flow::{FlowBuilder, PortAddress},
    prelude::*,
};
use tiny_testkit::NatsServer;

const NODE: &str = "f.b.tag-1";
const FROM_A: &str = "f.a.ask-1:out";
const WAIT: Duration = Duration::from_secs(10);

/// What module `b`'s node answers now (asked by the platform, over NATS).
async fn tag(platform: &Link) -> Option<Value> {
    send(
        platform.client(),
        NODE,
        "input",
        b"{}".to_vec(),
        &SendOptions::default().wait(),
    )
    .await
    .expect("the node answers")
    .and_then(|r| r.into_value())
}

/// `_settings` from the platform over NATS (`hello-module send`'s way: the system
/// subject, `x-from: signal`).
async fn platform_over_nats(platform: &Link, tag: u32) -> Result<(), String> {
    send(
        platform.client(),
        NODE,
        "_settings",
        serde_json::to_vec(&json!({ "tag": tag })).unwrap_or_default(),
        &SendOptions::default().wait(),
    )
    .await
    .map(|_| ())
    .map_err(|e| e.code().unwrap_or_default().to_owned())
}

/// `_settings` from module `a`'s node over NATS, as its edge sends it: a request on `b`'s
/// business subject; the error code of the answer, if it is one.
async fn module_over_nats(link: &Link, tag: u32) -> Result<(), String> {
    let mut headers = HeaderMap::new();
    headers.insert(wire::header::TO, format!("{NODE}:_settings").as_str());
    headers.insert(wire::header::FROM, FROM_A);
    headers.insert(wire::header::EDGE_ID, "to-settings");
    let answer = tokio::time::timeout(
        WAIT,
        link.client().request_with_headers(
            wire::subject("b"),
            headers,
            serde_json::to_vec(&json!({ "tag": tag })).unwrap_or_default().into(),
        ),
    )
    .await
    .expect("answered in time")
    .expect("answered");
    match wire::get(answer.headers.as_ref(), wire::header::ERROR_CODE) {
        Some(code) => Err(code.to_owned()),
        None => Ok(()),
    }
}

/// `_settings` over gRPC, from `source`.
async fn over_grpc(pool: &Pool, source: Source<'_>, tag: u32) -> Result<(), String> {
    let to = PortAddress::parse(&format!("{NODE}:_settings")).expect("an address");
    pool.send("b", &to, source, &json!({ "tag": tag }), Hop::default())
        .await
        .map(|_| ())
        .map_err(|e| e.code().unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_ports_are_taken_only_from_whom_system_ports_from_names() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let b_link = Link::connect(&broker.url()).await.expect("a NATS URL");
    let platform = Link::connect(&broker.url()).await.expect("a NATS URL");
    let a_link = Link::connect(&broker.url()).await.expect("a NATS URL");
    for link in [&b_link, &platform, &a_link] {
        assert!(link.wait_up(WAIT).await, "connects to {}", broker.url());
    }
    let b = Engine::builder().module("b").register::<Tag>().build();
    let flow = FlowBuilder::new()
        .module("b")
        .node(NODE, "tag")
        .settings(json!({ "tag": 1 }))
        .build();
    for node in flow.nodes {
        b.apply(node).await.expect("node loads");
    }
    let leader: Arc<dyn Fn() -> bool + Send + Sync> = Arc::new(|| true);
    let receiver = listen(b_link.client().clone(), b.clone(), Some(leader.clone()))
        .await
        .expect("subscribes");
    // The receiver answers on b's subject before anything is sent.
    b_link
        .client()
        .request(wire::subject("b"), Vec::new().into())
        .await
        .expect("b's subject answers");
    let server = spawn(
        b.clone(),
        ([127, 0, 0, 1], 0).into(),
        ServerOptions {
            leader: Some(leader),
            ..ServerOptions::default()
        },
    )
    .await
    .expect("gRPC binds");
    let pool = Pool::new(PoolOptions::default());
    pool.register("b", &server.addr().to_string()).expect("b's address");
    let edge = Source::Edge {
        from: FROM_A,
        edge_id: "to-settings",
    };
    assert_eq!(tag(&platform).await, Some(json!(1)));

    // `platform`: the module's messages are refused, naming the reason by code, counted,
    // and change nothing; the platform's are taken.
    SystemPortsFrom::Platform.install();
    let refused_before = metrics::system_port_refusals();
    assert_eq!(module_over_nats(&a_link, 2).await, Err(code::FORBIDDEN.to_owned()));
    assert_eq!(over_grpc(&pool, edge, 3).await, Err(code::FORBIDDEN.to_owned()));
    assert_eq!(metrics::system_port_refusals() - refused_before, 2);
    assert_eq!(
        tag(&platform).await,
        Some(json!(1)),
        "a refused message changed nothing"
    );
    // The platform's word on the business subject, where modules publish, is not the platform's.
    let mut headers = HeaderMap::new();
    headers.insert(wire::header::TO, format!("{NODE}:_settings").as_str());
    headers.insert(wire::header::FROM, wire::FROM_SIGNAL);
    let forged = a_link
        .client()
        .request_with_headers(wire::subject("b"), headers, b"{\"tag\":4}".to_vec().into())
        .await
        .expect("answered");
    assert_eq!(
        wire::get(forged.headers.as_ref(), wire::header::ERROR_CODE),
        Some(code::FORBIDDEN)
    );
    assert_eq!(platform_over_nats(&platform, 5).await, Ok(()));
    assert_eq!(tag(&platform).await, Some(json!(5)));
    assert_eq!(over_grpc(&pool, Source::Signal, 6).await, Ok(()));
    assert_eq!(tag(&platform).await, Some(json!(6)));

    // `any`, as the Go SDK: a module's are taken too.
    SystemPortsFrom::Any.install();
    assert_eq!(module_over_nats(&a_link, 7).await, Ok(()));
    assert_eq!(tag(&platform).await, Some(json!(7)));
    assert_eq!(over_grpc(&pool, edge, 8).await, Ok(()));
    assert_eq!(tag(&platform).await, Some(json!(8)));
    assert_eq!(platform_over_nats(&platform, 9).await, Ok(()));
    assert_eq!(tag(&platform).await, Some(json!(9)));

    receiver.stop().await;
    server.stop().await.expect("gRPC stops");
}

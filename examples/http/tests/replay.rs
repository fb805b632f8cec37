//! A durable run of `http_request` on a real `nats-server`, captured from its ledger
//! and replayed in the harness: the response comes from the recording, so the real
//! HTTP server on loopback sees the original request and none from the replay
//! (issue 46).

use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Response, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tiny_example_http::client::HttpRequest;
use tiny_runtime::{
    jetstream::{self, JetStream, JetStreamRouter},
    nats::Link,
};
use tiny_sdk::{
    engine::{EXECUTION_MODE_LABEL, Engine, Registry},
    flow::{Flow, FlowBuilder},
    harness::{Harness, Relay, ReplayOptions},
    run::{self, RunStore as _},
};
use tiny_testenv::{NatsServer, eventually};

const WAIT: Duration = Duration::from_secs(20);

/// A real HTTP server on loopback answering every request with a price; returns its
/// port and how many requests it received.
async fn price_server() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let port = listener.local_addr().expect("bound").port();
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counted = counted.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_req| {
                    counted.fetch_add(1, Ordering::SeqCst);
                    async { Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(br#"{"price":42}"#)))) }
                });
                // A connection the client drops is no failure of the test.
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (port, hits)
}

/// `rep.http-v0.http-request-1` (durable) → `rep.http-v0.relay-1`.
fn flow() -> Flow {
    let mut flow = FlowBuilder::new()
        .module("http-v0")
        .node("rep.http-v0.http-request-1", "http_request")
        .node("rep.http-v0.relay-1", "relay")
        .edge(
            "rep.http-v0.http-request-1:response",
            "rep.http-v0.relay-1:input",
            json!("{{$}}"),
        )
        .build();
    for n in &mut flow.nodes {
        if n.name == "rep.http-v0.http-request-1" {
            n.labels.insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        }
    }
    flow
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_http_request_sends_no_request() {
    let (port, hits) = price_server().await;
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects to {}", broker.url());
    let js = JetStream::new(link, "http-v0", "http-v0-0");
    js.ensure().await.expect("the streams and the run bucket");
    let mut registry = Registry::default();
    registry.register::<HttpRequest>().register::<Relay>();
    let engine = Engine::builder()
        .module("http-v0")
        .registry(registry)
        .router(Arc::new(JetStreamRouter::new(js.clone())))
        .runs(js.clone())
        .build();
    for node in flow().nodes {
        engine.apply(node).await.expect("the node loads");
    }
    let receiver = jetstream::listen(js.clone(), engine.clone(), Some(Arc::new(|| true)));
    let url = format!("http://127.0.0.1:{port}/price");
    engine
        .send(
            "rep.http-v0.http-request-1:request",
            json!({"url": url, "method": "GET", "timeout": 5, "context": {"order": 7}}),
        )
        .await
        .expect("the first step runs");
    let run_id = eventually("the run is recorded", WAIT, || async {
        let keys = js.keys("exec/").await.ok()?;
        keys.iter().find_map(|k| run::parse_ledger_key(k).map(|k| k.run_id))
    })
    .await;
    eventually("the run completes", WAIT, || async {
        let s = run::run_status(&*js, &run_id).await.ok()?;
        s.complete.then_some(())
    })
    .await;
    receiver.stop().await;
    assert_eq!(hits.load(Ordering::SeqCst), 1, "the real run sent the request");

    let captured = run::capture_run(&*js, &run_id).await.expect("captured");
    let call = &captured.steps[0].calls;
    assert_eq!(call.len(), 1, "the response is recorded: {captured:?}");
    assert_eq!(call[0].name, "http");
    assert_eq!(call[0].answer["statusCode"], 200);
    assert_eq!(call[0].answer["body"], r#"{"price":42}"#);

    let report = Harness::builder()
        .register::<HttpRequest>()
        .register::<Relay>()
        .flow(flow())
        .replay(&captured, ReplayOptions { values: true })
        .await
        .expect("replays");
    assert!(report.is_green(), "{report}");
    assert_eq!(report.calls_answered, 1);
    assert_eq!(hits.load(Ordering::SeqCst), 1, "the replay sent no request");
}

//! What a handler sends over NATS carries its hop's trace context, against a real
//! `nats-server`: the hop's span is made by the engine, not by `tracing`, so the span
//! current in `tracing` is not the sender. (A file of its own: the hop spans' sink is
//! the process's.)

mod support;

use std::{
    sync::{Mutex, PoisonError},
    time::Duration,
};

use futures::StreamExt as _;
use serde_json::json;
use tiny_runtime::nats::Link;
use tiny_sdk::{
    engine::{EndedHop, Engine, HopSpans, SpanIds, SpanParent, set_hop_spans},
    flow::FlowBuilder,
};
use tiny_testkit::NatsServer;

use support::sender::{CLIENT, Sender};

/// Keeps the ids of each hop span.
#[derive(Default)]
struct Hops(Mutex<Vec<SpanIds>>);

impl HopSpans for Hops {
    fn parent(&self) -> Option<SpanParent> {
        None
    }

    fn ended(&self, hop: EndedHop<'_>) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push(hop.ids);
    }
}

/// The message a handler sends names the handler's hop as its parent
/// (`Traceparent`, as a Go module reads it).
#[tokio::test]
async fn a_handler_sending_over_nats_names_its_hop_as_the_parent() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(Duration::from_secs(30)).await, "connects");
    let client = link.client().clone();
    let mut sent = client.subscribe(">").await.expect("subscribes");
    client.flush().await.expect("subscribed");
    CLIENT.set(client).expect("set once");
    let hops: &'static Hops = Box::leak(Box::default());
    set_hop_spans(Some(hops));

    let engine = Engine::builder().register::<Sender>().build();
    for node in FlowBuilder::new().node("sender-1", "sender").build().nodes {
        engine.apply(node).await.expect("node loads");
    }
    engine.send("sender-1:input", json!({})).await.expect("sends");

    let message = tokio::time::timeout(Duration::from_secs(10), sent.next())
        .await
        .expect("the handler's message comes in time")
        .expect("the handler's message");
    let hop = hops.0.lock().unwrap_or_else(PoisonError::into_inner).clone();
    assert_eq!(hop.len(), 1, "{hop:?}");
    let traceparent = message
        .headers
        .as_ref()
        .and_then(|h| h.get("Traceparent"))
        .map(|v| v.as_str().to_owned());
    assert_eq!(
        traceparent,
        Some(format!("00-{:032x}-{:016x}-01", hop[0].trace_id, hop[0].span_id)),
        "the sending hop is the parent"
    );
}

//! What a hop carries to bound the work behind it, on a real `nats-server` (issue 48):
//! Go's `x-reply-deadline`, set from an edge's timeout and honoured by the receiver
//! (work past it is dropped unrun, with a typed error, and counted), and tiny's
//! `x-message-hops`, which carries the root message's hop budget across modules.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use async_nats::HeaderMap;
use futures::StreamExt as _;
use serde_json::json;
use tiny_runtime::nats::{Link, NatsRouter, listen};
use tiny_sdk::{
    engine::Engine,
    error::code,
    flow::{Flow, FlowBuilder, RetryPolicy},
    harness::Relay,
    prelude::*,
};
use tiny_testkit::{NatsServer, components::Answer};

const WAIT: Duration = Duration::from_secs(10);

/// Calls of [`Counted`] so far.
static CALLS: AtomicU32 = AtomicU32::new(0);

/// `counted`: counts its calls and answers its input.
#[derive(Debug, Component, Default)]
#[component(name = "counted")]
struct Counted {
    input: Input<serde_json::Value>,
}

impl Counted {
    async fn on_input(&self, _: &Ctx<Self>, msg: serde_json::Value) -> Reply {
        CALLS.fetch_add(1, Ordering::SeqCst);
        Reply::value(msg)
    }
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970");
    u64::try_from(since.as_millis()).expect("fits")
}

async fn link(broker: &NatsServer) -> Link {
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects");
    link
}

/// Module `b` listening on the broker with the nodes of `flow` that are its own.
async fn module_b(broker: &NatsServer, flow: &Flow, budget: u32) -> (Engine, tiny_runtime::nats::Receiver, Link) {
    let link = link(broker).await;
    let b = Engine::builder()
        .module("b")
        .register::<Relay>()
        .register::<Counted>()
        .register::<Answer>()
        .hop_budget(budget)
        .build();
    for node in flow.nodes.iter().filter(|n| n.spec.module == "b") {
        b.apply(node.clone()).await.expect("loads");
    }
    let receiver = listen(link.client().clone(), b.clone(), None)
        .await
        .expect("subscribes");
    link.client()
        .request("tinymodule.b.msg", Vec::new().into())
        .await
        .expect("the receiver answers");
    (b, receiver, link)
}

fn request(to: &str, extra: &[(&str, String)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("x-to", to);
    h.insert("x-from", "");
    h.insert("x-edge-id", "");
    for (k, v) in extra {
        h.insert(*k, v.as_str());
    }
    h
}

fn header<'a>(msg: &'a async_nats::Message, name: &str) -> Option<&'a str> {
    msg.headers.as_ref()?.get(name).map(|v| v.as_str())
}

#[tokio::test]
async fn an_edge_timeout_sends_its_deadline_and_the_root_s_hops() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    // Module b is the test itself: it reads a's request raw and answers it.
    let raw = link(&broker).await;
    let mut requests = raw.client().subscribe("tinymodule.b.msg").await.expect("subscribes");
    raw.client().flush().await.expect("flushed");
    let a_link = link(&broker).await;
    let a = Engine::builder()
        .module("a")
        .register::<Relay>()
        .router(Arc::new(NatsRouter::new(a_link.clone())))
        .build();
    let timeout = Some(RetryPolicy {
        max_attempts: Some(1),
        timeout_ms: Some(5_000),
        ..RetryPolicy::default()
    });
    let flow = FlowBuilder::new()
        .module("a")
        .node("f.a.first-1", "relay")
        .node("f.a.side-1", "relay")
        .node("f.a.ask-1", "relay")
        // A branch: the root's hops pass its depth, so they travel in `x-message-hops`.
        .edge("f.a.first-1:out", "f.a.side-1:input", json!("{{$}}"))
        .edge("f.a.first-1:out", "f.a.ask-1:input", json!("{{$}}"))
        .module("b")
        .node("f.b.answer-1", "answer")
        .edge_with("f.a.ask-1:out", "f.b.answer-1:input", json!("{{$}}"), timeout)
        .build();
    for node in flow.nodes.iter().filter(|n| n.spec.module == "a") {
        a.apply(node.clone()).await.expect("loads");
    }
    let before = now_ms();
    let sent = tokio::spawn({
        let a = a.clone();
        async move { a.send("f.a.first-1:input", json!({"q": 1})).await }
    });
    let msg = tokio::time::timeout(WAIT, requests.next())
        .await
        .expect("a's request arrives")
        .expect("the subscription lives");
    let after = now_ms();
    let deadline: u64 = header(&msg, "x-reply-deadline")
        .expect("an edge with a timeout sends Go's deadline header")
        .parse()
        .expect("base-10 Unix ms");
    assert!(
        (before + 5_000..=after + 5_000).contains(&deadline),
        "deadline {deadline}, sent between {before} and {after}"
    );
    // Two hops deep (first -> ask -> b), three made by then (first -> side as well).
    assert_eq!(header(&msg, "x-message-depth"), Some("2"));
    assert_eq!(header(&msg, "x-message-hops"), Some("3"));
    let reply = msg.reply.clone().expect("a request has a reply subject");
    raw.client().publish(reply, "\"ok\"".into()).await.expect("answered");
    let answer = sent.await.expect("joins").expect("a's send gets b's answer");
    assert_eq!(answer.as_value(), Some(&json!("ok")));
}

#[tokio::test]
async fn work_past_its_deadline_is_dropped_and_counted() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let flow = FlowBuilder::new().module("b").node("f.b.counted-1", "counted").build();
    let (_b, _receiver, _link) = module_b(&broker, &flow, 100).await;
    let client = link(&broker).await.client().clone();
    let (calls, expired) = (CALLS.load(Ordering::SeqCst), tiny_runtime::metrics::expired_messages());

    let past = request(
        "f.b.counted-1:input",
        &[("x-reply-deadline", (now_ms() - 1_000).to_string())],
    );
    let reply = client
        .request_with_headers("tinymodule.b.msg", past, "1".into())
        .await
        .expect("answered");
    assert_eq!(header(&reply, "x-error-code"), Some(code::EXPIRED), "{reply:?}");
    let text = header(&reply, "x-error").unwrap_or_default();
    assert!(
        text.contains("`f.b.counted-1:input`") && text.contains("deadline"),
        "{text}"
    );
    assert_eq!(CALLS.load(Ordering::SeqCst), calls, "the handler did not run");
    assert_eq!(
        tiny_runtime::metrics::expired_messages(),
        expired + 1,
        "the drop is counted"
    );

    let future = request(
        "f.b.counted-1:input",
        &[("x-reply-deadline", (now_ms() + 60_000).to_string())],
    );
    let reply = client
        .request_with_headers("tinymodule.b.msg", future, "2".into())
        .await
        .expect("answered");
    assert_eq!(header(&reply, "x-error"), None, "{reply:?}");
    assert_eq!(reply.payload.as_ref(), b"2");
    assert_eq!(CALLS.load(Ordering::SeqCst), calls + 1);
}

#[tokio::test]
async fn the_hop_budget_carries_across_modules() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let flow = FlowBuilder::new()
        .module("b")
        .node("f.b.relay-1", "relay")
        .node("f.b.answer-1", "answer")
        .edge("f.b.relay-1:out", "f.b.answer-1:input", json!("{{$}}"))
        .build();
    let (_b, _receiver, _link) = module_b(&broker, &flow, 10).await;
    let client = link(&broker).await.client().clone();
    // Nine hops made elsewhere: the relay's one more is the tenth, within the budget.
    let within = request("f.b.relay-1:input", &[("x-message-hops", "9".to_owned())]);
    let reply = client
        .request_with_headers("tinymodule.b.msg", within, "1".into())
        .await
        .expect("answered");
    assert_eq!(header(&reply, "x-error"), None, "{reply:?}");
    // Ten made elsewhere: the relay's hop is past the budget.
    let spent = request("f.b.relay-1:input", &[("x-message-hops", "10".to_owned())]);
    let reply = client
        .request_with_headers("tinymodule.b.msg", spent, "1".into())
        .await
        .expect("answered");
    assert_eq!(header(&reply, "x-error-code"), Some(code::HOP_BUDGET), "{reply:?}");
    let text = header(&reply, "x-error").unwrap_or_default();
    assert!(
        text.contains("made 10 hops (the limit)") && text.contains("`f.b.relay-1:out`"),
        "{text}"
    );
    // A count that is not a number is refused, naming the header.
    let garbage = request("f.b.relay-1:input", &[("x-message-hops", "many".to_owned())]);
    let reply = client
        .request_with_headers("tinymodule.b.msg", garbage, "1".into())
        .await
        .expect("answered");
    assert_eq!(header(&reply, "x-error-code"), Some(code::INVALID_MESSAGE), "{reply:?}");
    assert!(
        header(&reply, "x-error").unwrap_or_default().contains("x-message-hops"),
        "{reply:?}"
    );
}

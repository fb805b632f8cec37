//! The NATS wire against a real `nats-server`, checked byte for byte against the Go
//! SDK's (`shared/reference/go-nats.md` §2, §4): a raw client that speaks the protocol
//! by hand sends what a Go module sends and reads what tiny answers; tiny's own
//! requests are captured raw and read header by header. Then two tiny modules over
//! the broker, replicas sharing a queue group, bad input, and a broker that dies.

mod support;

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};
use support::tag::Tag;
use tiny_runtime::nats::{Link, NatsRouter, Receiver, SendOptions, listen, send};
use tiny_sdk::{
    ErrorKind,
    engine::Engine,
    error::code,
    flow::{Flow, FlowBuilder, RetryPolicy},
    harness::Relay,
    prelude::*,
};
use tiny_testkit::{
    NatsServer, RawMessage, RawNats,
    components::{Flaky, Located, Whoami},
};

/// Takes a number; answers nothing.
#[derive(Debug, Component, Default)]
#[component(name = "sink")]
struct Sink {
    input: Input<i64>,
}

impl Sink {
    async fn on_input(&self, _: &Ctx<Self>, _: i64) -> Reply {
        Reply::empty()
    }
}

/// Answers with a string of as many bytes as its input says.
#[derive(Debug, Component, Default)]
#[component(name = "big")]
struct Big {
    input: Input<usize>,
}

impl Big {
    async fn on_input(&self, _: &Ctx<Self>, size: usize) -> Reply {
        Reply::value(json!("x".repeat(size)))
    }
}

/// Answers the id of the tokio task its handler runs on.
#[derive(Debug, Component, Default)]
#[component(name = "task")]
struct Task {
    input: Input<Value>,
}

impl Task {
    async fn on_input(&self, _: &Ctx<Self>, _: Value) -> Reply {
        // Read before any await: where the handler's synchronous part runs.
        Reply::value(json!(tokio::task::try_id().map(|id| id.to_string())))
    }
}

/// Lets one waiting `gate` message through (a permit kept when none waits yet).
static GATE: tokio::sync::Notify = tokio::sync::Notify::const_new();
/// Told when a `gate` message starts waiting.
static AT_GATE: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// `{"open": false}` waits (awaiting, not working) until an `{"open": true}` arrives.
#[derive(Debug, Component, Default)]
#[component(name = "gate")]
struct Gate {
    input: Input<Value>,
}

impl Gate {
    async fn on_input(&self, _: &Ctx<Self>, msg: Value) -> Reply {
        if msg["open"] == json!(true) {
            GATE.notify_one();
            return Reply::value(json!("opened"));
        }
        AT_GATE.notify_one();
        GATE.notified().await;
        Reply::value(json!("passed"))
    }
}

const WAIT: Duration = Duration::from_secs(10);

fn engine(module: &str, router: Option<NatsRouter>) -> Engine {
    let mut b = Engine::builder()
        .module(module)
        .node_wait(Duration::from_millis(100))
        .register::<Relay>()
        .register::<Located>()
        .register::<Sink>()
        .register::<Flaky>()
        .register::<Whoami>()
        .register::<Big>()
        .register::<Task>()
        .register::<Gate>()
        .register::<Tag>();
    if let Some(r) = router {
        b = b.router(Arc::new(r));
    }
    b.build()
}

async fn link(broker: &NatsServer) -> Link {
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects to {}", broker.url());
    link
}

/// Returns once the broker routes `module`'s business subject to its receiver: a
/// request from the module's own connection (which the broker handles after its
/// subscription) gets the receiver's answer (a message without `x-to` is refused).
/// A flush alone only writes the subscription out; another connection's first request
/// could still find no responder.
async fn listening(link: &Link, module: &str) {
    let subject = format!("tinymodule.{module}.msg");
    link.client()
        .request(subject.clone(), Vec::new().into())
        .await
        .unwrap_or_else(|e| panic!("{subject} answers: {e}"));
}

/// Module `b` on the broker: its nodes of `flow` loaded, listening, leading.
async fn module_b(broker: &NatsServer, flow: &Flow) -> (Engine, Receiver, Link) {
    let link = link(broker).await;
    let b = engine("b", Some(NatsRouter::new(link.clone())));
    for node in flow.nodes.iter().filter(|n| n.spec.module == "b") {
        b.apply(node.clone()).await.expect("node loads");
    }
    let receiver = listen(link.client().clone(), b.clone(), Some(Arc::new(|| true)))
        .await
        .expect("subscribes");
    listening(&link, "b").await;
    (b, receiver, link)
}

/// `f.a.ask-1` (module a) wired to each of b's nodes, so that b's nodes have the
/// edges Go's requests name.
fn flow_b() -> Flow {
    FlowBuilder::new()
        .module("a")
        .node("f.a.ask-1", "relay")
        .module("b")
        .node("f.b.answer-1", "answer")
        .node("f.b.sink-1", "sink")
        .node("f.b.flaky-1", "flaky")
        .settings(json!({"failures": 1000, "permanent": true, "code": "DECLINED"}))
        .node("f.b.whoami-1", "whoami")
        .node("f.b.big-1", "big")
        .edge("f.a.ask-1:out", "f.b.answer-1:input", json!("{{$}}"))
        .build()
}

async fn raw(broker: &NatsServer) -> RawNats {
    RawNats::connect(broker.port(), broker.token())
        .await
        .expect("raw client connects")
}

/// Sends `headers` and `payload` as a Go module does, and returns the reply.
async fn ask_raw(c: &mut RawNats, subject: &str, headers: &[(&str, &str)], payload: &[u8]) -> RawMessage {
    c.publish(subject, Some("_INBOX.raw.1"), Some(headers), payload)
        .await
        .expect("publishes");
    c.next(WAIT).await.expect("a reply")
}

#[tokio::test]
async fn go_requests_get_go_replies_byte_for_byte() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let (_b, _receiver, _link) = module_b(&broker, &flow_b()).await;
    let mut c = raw(&broker).await;
    c.subscribe("_INBOX.raw.>", None).await.expect("subscribes");

    // A hop along an edge, as Go's core sender writes it.
    let value = ask_raw(
        &mut c,
        "tinymodule.b.msg",
        &[
            ("x-from", "f.a.ask-1:out"),
            ("x-to", "f.b.answer-1:input"),
            ("x-edge-id", "f.a.ask-1:out->f.b.answer-1:input"),
            ("Nats-Msg-Id", "f.a.ask-1:out->f.b.answer-1:input"),
            ("x-message-depth", "3"),
        ],
        br#"{"q":1}"#,
    )
    .await;
    // A value: its JSON and no headers at all (MSG, not HMSG).
    assert_eq!(value.header_block, None, "{value:?}");
    assert_eq!(
        String::from_utf8_lossy(&value.payload),
        r#"{"answer":{"q":1},"depth":3,"node":"f.b.answer-1"}"#
    );

    // A signal: `x-from: signal`, no depth, the payload taken as it is.
    let signal = ask_raw(
        &mut c,
        "tinymodule.b.msg",
        &[("x-to", "f.b.answer-1:input"), ("x-from", "signal")],
        br#"{"q":2}"#,
    )
    .await;
    assert_eq!(
        String::from_utf8_lossy(&signal.payload),
        r#"{"answer":{"q":2},"depth":0,"node":"f.b.answer-1"}"#
    );

    // Nothing: `x-empty: 1` and an empty body, exactly that header block.
    let nothing = ask_raw(
        &mut c,
        "tinymodule.b.msg",
        &[("x-to", "f.b.sink-1:input"), ("x-from", "signal")],
        b"7",
    )
    .await;
    assert_eq!(
        nothing.header_block.as_deref(),
        Some(&b"NATS/1.0\r\nx-empty: 1\r\n\r\n"[..])
    );
    assert!(nothing.payload.is_empty());

    // The ports Go swallows from the wire run nothing and answer nothing, on any replica.
    for port in ["_reconcile", "_client", "_identity"] {
        let swallowed = ask_raw(
            &mut c,
            "tinymodule.b.msg",
            &[("x-to", &format!("f.b.answer-1:{port}")), ("x-from", "signal")],
            b"{}",
        )
        .await;
        assert_eq!(
            swallowed.header_block.as_deref(),
            Some(&b"NATS/1.0\r\nx-empty: 1\r\n\r\n"[..]),
            "{port}"
        );
    }

    // An error: `x-error` (one line, as Go's header writer makes it) and `x-error-code`;
    // the body is empty.
    let failed = ask_raw(
        &mut c,
        "tinymodule.b.msg",
        &[("x-to", "f.b.flaky-1:input"), ("x-from", "signal")],
        b"{}",
    )
    .await;
    assert!(failed.payload.is_empty());
    assert_eq!(failed.header("x-error-code").as_deref(), Some("DECLINED"));
    let text = failed.header("x-error").unwrap_or_default();
    // The component's message alone, as a Go module's `err.Error()` (issue 47): the
    // node and the code are headers of their own.
    assert_eq!(text, "attempt 1 failed");
    // tiny's additions, which a Go sender ignores.
    assert_eq!(failed.header("x-error-kind").as_deref(), Some("permanent"));
    // Header names are lower case, exactly as Go's `nats.Header` keeps them.
    for (name, _) in failed.headers() {
        assert_eq!(name, name.to_lowercase(), "{name}");
    }
}

#[tokio::test]
async fn bad_input_gets_a_clear_x_error_and_nothing_else_breaks() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let (_b, _receiver, _link) = module_b(&broker, &flow_b()).await;
    let mut c = raw(&broker).await;
    c.subscribe("_INBOX.raw.>", None).await.expect("subscribes");
    let signal = |to: &'static str| vec![("x-to", to), ("x-from", "signal")];
    /// What is wrong, the headers and body sent, the code and words the error must have.
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a [u8], Option<&'a str>, &'a str);
    let cases: Vec<Case> = vec![
        (
            "unknown node",
            signal("f.b.nope-1:input"),
            b"{}",
            Some(code::NODE_NOT_FOUND),
            "f.b.nope-1",
        ),
        (
            "undeclared port",
            signal("f.b.answer-1:nope"),
            b"{}",
            Some(code::UNKNOWN_PORT),
            "nope",
        ),
        (
            "body not JSON",
            signal("f.b.answer-1:input"),
            b"{\"q\":",
            Some(code::INVALID_MESSAGE),
            "not JSON",
        ),
        (
            "body not the port's type",
            signal("f.b.sink-1:input"),
            br#""seven""#,
            Some(code::UNDECODABLE),
            "port `input`",
        ),
        (
            "depth over 256",
            vec![
                ("x-to", "f.b.answer-1:input"),
                ("x-from", "signal"),
                ("x-message-depth", "257"),
            ],
            b"{}",
            Some(code::CYCLE),
            "cycle guard",
        ),
        (
            "depth not a number",
            vec![("x-to", "f.b.answer-1:input"), ("x-message-depth", "many")],
            b"{}",
            Some(code::INVALID_MESSAGE),
            "`x-message-depth: many`",
        ),
        (
            "x-to missing",
            vec![("x-from", "signal")],
            b"{}",
            Some(code::INVALID_MESSAGE),
            "no `x-to` header",
        ),
        (
            "x-to without a port",
            signal("f.b.answer-1"),
            b"{}",
            Some(code::INVALID_MESSAGE),
            "f.b.answer-1",
        ),
        (
            "another module's node",
            signal("f.c.answer-1:input"),
            b"{}",
            Some(code::NODE_NOT_FOUND),
            "belongs to module `c`",
        ),
    ];
    for (what, headers, payload, want_code, want_text) in cases {
        let reply = ask_raw(&mut c, "tinymodule.b.msg", &headers, payload).await;
        let text = reply.header("x-error").unwrap_or_default();
        assert!(text.contains(want_text), "{what}: x-error is {text:?}");
        assert_eq!(reply.header("x-error-code").as_deref(), want_code, "{what}: {text}");
        assert!(reply.payload.is_empty(), "{what}");
    }
    // The module still answers.
    let ok = ask_raw(&mut c, "tinymodule.b.msg", &signal("f.b.answer-1:input"), b"5").await;
    assert_eq!(
        String::from_utf8_lossy(&ok.payload),
        r#"{"answer":5,"depth":0,"node":"f.b.answer-1"}"#
    );
}

#[tokio::test]
async fn system_subjects_reach_every_replica_and_say_who_leads() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let (_b, _receiver, _link) = module_b(&broker, &flow_b()).await;
    let mut c = raw(&broker).await;
    c.subscribe("_INBOX.raw.>", None).await.expect("subscribes");
    let headers = [("x-to", "f.b.whoami-1:input"), ("x-from", "signal")];
    let on_sys = ask_raw(&mut c, "tinymodule.b.sysmsg", &headers, b"{}").await;
    assert_eq!(String::from_utf8_lossy(&on_sys.payload), r#"{"leader":true}"#);
    // A business message is handled without leadership, as in Go.
    let on_msg = ask_raw(&mut c, "tinymodule.b.msg", &headers, b"{}").await;
    assert_eq!(String::from_utf8_lossy(&on_msg.payload), r#"{"leader":false}"#);
}

#[tokio::test]
async fn tinys_requests_carry_gos_headers_and_read_gos_replies() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    // The raw client stands in for module b: it takes b's queue group.
    let mut peer = raw(&broker).await;
    peer.subscribe("tinymodule.b.msg", Some("b")).await.expect("subscribes");
    let flow = FlowBuilder::new()
        .module("a")
        .node("f.a.ask-1", "relay")
        .module("b")
        .node("f.b.comp-1", "relay")
        .edge_with(
            "f.a.ask-1:out",
            "f.b.comp-1:input",
            json!("{{$}}"),
            Some(RetryPolicy {
                max_attempts: Some(1),
                ..Default::default()
            }),
        )
        .build();
    let link = link(&broker).await;
    let a = engine("a", Some(NatsRouter::new(link.clone())));
    a.apply(flow.nodes[0].clone()).await.expect("loads");

    let ask = |data: Value| {
        let a = a.clone();
        tokio::spawn(async move { a.send("f.a.ask-1:input", data).await })
    };
    // A value comes back as the chain's reply.
    let call = ask(json!({"q": 1}));
    let req = peer.next(WAIT).await.expect("a request");
    assert_eq!(req.subject, "tinymodule.b.msg");
    let mut headers = req.headers();
    headers.sort();
    let edge = "f.a.ask-1:out->f.b.comp-1:input";
    assert_eq!(
        headers,
        [
            ("Nats-Msg-Id", edge),
            ("x-edge-id", edge),
            ("x-from", "f.a.ask-1:out"),
            ("x-message-depth", "1"),
            ("x-to", "f.b.comp-1:input"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
    );
    let block = req.header_block.clone().unwrap_or_default();
    assert!(block.starts_with(b"NATS/1.0\r\n") && block.ends_with(b"\r\n\r\n"));
    assert_eq!(req.payload, br#"{"q":1}"#);
    let inbox = req.reply.clone().expect("a reply subject");
    peer.publish(&inbox, None, None, br#"{"ok":true}"#)
        .await
        .expect("replies");
    let reply = call.await.expect("joins").expect("answers");
    assert_eq!(reply.into_value(), Some(json!({"ok": true})));

    // `x-empty: 1`: nothing. The second hop along the edge (its fixed headers copied
    // from the first's) carries the same headers.
    let call = ask(json!(2));
    let req = peer.next(WAIT).await.expect("a request");
    let mut again = req.headers();
    again.sort();
    assert_eq!(again, headers);
    peer.publish(&req.reply.unwrap_or_default(), None, Some(&[("x-empty", "1")]), b"")
        .await
        .expect("replies");
    assert!(call.await.expect("joins").expect("answers").is_empty());

    // A Go error with a code: permanent (Go never retries a remote error), the code kept.
    let call = ask(json!(3));
    let req = peer.next(WAIT).await.expect("a request");
    peer.publish(
        &req.reply.unwrap_or_default(),
        None,
        Some(&[("x-error", "quota exceeded"), ("x-error-code", "QUOTA")]),
        b"",
    )
    .await
    .expect("replies");
    let e = call.await.expect("joins").expect_err("fails");
    assert_eq!(e.kind(), ErrorKind::Permanent);
    assert_eq!(e.code(), Some("QUOTA"));
    assert!(
        e.message().contains("quota exceeded") && e.message().contains("module `b`"),
        "{e}"
    );
}

/// Two tiny modules over the broker: a's ask -> b's relay -> back to a's answer, the
/// request to b still open while a handles the nested one.
fn round_trip() -> Flow {
    FlowBuilder::new()
        .module("a")
        .node("f.a.ask-1", "relay")
        .node("f.a.answer-1", "answer")
        .module("b")
        .node("f.b.comp-1", "relay")
        .edge("f.a.ask-1:out", "f.b.comp-1:input", json!("{{$}}"))
        .edge(
            "f.b.comp-1:out",
            "f.a.answer-1:input",
            json!({"via": "b", "msg": "{{$}}"}),
        )
        .build()
}

async fn module_a(broker: &NatsServer, flow: &Flow) -> (Engine, Receiver, Link) {
    let link = link(broker).await;
    let a = engine("a", Some(NatsRouter::new(link.clone())));
    for node in flow.nodes.iter().filter(|n| n.spec.module == "a") {
        a.apply(node.clone()).await.expect("node loads");
    }
    let receiver = listen(link.client().clone(), a.clone(), None)
        .await
        .expect("subscribes");
    listening(&link, "a").await;
    (a, receiver, link)
}

#[tokio::test]
async fn two_modules_talk_over_nats_and_nested_requests_do_not_deadlock() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let flow = round_trip();
    let (a, _ra, la) = module_a(&broker, &flow).await;
    let (_b, _rb, _lb) = module_b(&broker, &flow).await;
    // The first message into a over NATS too: its handling waits on b while a's
    // receiver must read b's nested message for a (a handling that held the receiving
    // loop until it ended would never see it).
    let reply = send(
        la.client(),
        "f.a.ask-1",
        "input",
        br#"{"q":7}"#.to_vec(),
        &SendOptions::default().wait(),
    )
    .await
    .expect("the chain answers")
    .expect("a reply");
    assert_eq!(
        reply.into_value().map(|v| v["answer"]["msg"].clone()),
        Some(json!({"q": 7}))
    );
    let reply = a
        .send("f.a.ask-1:input", json!({"q": 42}))
        .await
        .expect("the chain answers");
    // signal -> ask (0) -> comp (1, over NATS) -> answer (2, over NATS back to a).
    assert_eq!(
        reply.into_value(),
        Some(json!({"answer": {"via": "b", "msg": {"q": 42}}, "depth": 2, "node": "f.a.answer-1"}))
    );
    let calls = (0..32).map(|i| a.send("f.a.ask-1:input", json!({"q": i})));
    for (i, r) in futures::future::join_all(calls).await.into_iter().enumerate() {
        let v = r.expect("answers").into_value().expect("a reply");
        assert_eq!(v["answer"]["msg"]["q"], json!(i));
    }
}

/// Every message from another module is handled on a task of its own, from its
/// first poll: a handler's synchronous part (work before its first `.await`) never
/// runs in the receiving loop. Broken (the loop polling a handler inline first, or
/// awaiting it in place), the handlers run on the loop's task, and two messages show
/// the same task. (That the loop reads on while a handler waits is the next test;
/// whether a handler that never awaits stalls others is tokio's scheduling, not the
/// loop: docs/limits.md.)
#[tokio::test]
async fn each_message_is_handled_on_a_task_of_its_own_not_in_the_receiving_loop() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let flow = FlowBuilder::new().module("b").node("f.b.task-1", "task").build();
    let (_b, _receiver, link) = module_b(&broker, &flow).await;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let reply = send(
            link.client(),
            "f.b.task-1",
            "input",
            b"{}".to_vec(),
            &SendOptions::default().wait(),
        )
        .await
        .expect("task answers")
        .and_then(Reply::into_value)
        .expect("a reply");
        let id = reply
            .as_str()
            .map(str::to_owned)
            .expect("the handler runs on a tokio task");
        tasks.push(id);
    }
    assert_ne!(
        tasks[0], tasks[1],
        "two messages were handled on one task (the receiving loop's)"
    );
}

/// The receiving loop goes on reading while a handler waits: the first message's
/// handler awaits what only a second message does. A loop that awaited each handler
/// (inline, or its task) would never read the second, and the test would fail at its
/// bound.
#[tokio::test]
async fn the_receiving_loop_reads_on_while_a_handler_waits() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let flow = FlowBuilder::new().module("b").node("f.b.gate-1", "gate").build();
    let (_b, _receiver, link) = module_b(&broker, &flow).await;
    let ask = |open: bool| {
        let client = link.client().clone();
        async move {
            send(
                &client,
                "f.b.gate-1",
                "input",
                serde_json::to_vec(&json!({ "open": open })).expect("JSON"),
                &SendOptions::default().wait(),
            )
            .await
            .expect("gate answers")
            .and_then(Reply::into_value)
        }
    };
    let waiting = tokio::spawn(ask(false));
    // Opened only once the first waits: else it would find the permit and never wait.
    tokio::time::timeout(WAIT, AT_GATE.notified())
        .await
        .expect("the first message reaches the gate");
    let opened = tokio::time::timeout(WAIT, ask(true))
        .await
        .expect("the second message is read while the first waits");
    assert_eq!(opened, Some(json!("opened")));
    let passed = tokio::time::timeout(WAIT, waiting)
        .await
        .expect("the first answers once let through")
        .expect("joins");
    assert_eq!(passed, Some(json!("passed")));
}

#[tokio::test]
async fn a_remote_transient_error_is_retried_by_the_senders_edge() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let flow = FlowBuilder::new()
        .module("a")
        .node("f.a.ask-1", "relay")
        .module("b")
        .node("f.b.flaky-1", "flaky")
        .settings(json!({"failures": 2}))
        .edge_with(
            "f.a.ask-1:out",
            "f.b.flaky-1:input",
            json!("{{$}}"),
            Some(RetryPolicy {
                max_attempts: Some(3),
                initial_delay_ms: Some(10),
                ..Default::default()
            }),
        )
        .build();
    let (a, _ra, _la) = module_a(&broker, &flow).await;
    let (_b, _rb, _lb) = module_b(&broker, &flow).await;
    let reply = a
        .send("f.a.ask-1:input", json!("hi"))
        .await
        .expect("the third attempt answers");
    assert_eq!(reply.into_value(), Some(json!({"attempts": 3, "msg": "hi"})));
}

#[tokio::test]
async fn replicas_in_the_queue_group_share_business_messages() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let mut replicas = Vec::new();
    for tag in 1..=3 {
        let flow = FlowBuilder::new()
            .module("b")
            .node("f.b.tag-1", "tag")
            .settings(json!({"tag": tag}))
            .build();
        replicas.push(module_b(&broker, &flow).await);
    }
    let client = link(&broker).await;
    let mut counts = [0u32; 3];
    for _ in 0..90 {
        let reply = send(
            client.client(),
            "f.b.tag-1",
            "input",
            b"{}".to_vec(),
            &SendOptions::default().wait(),
        )
        .await
        .expect("answers")
        .and_then(Reply::into_value);
        let tag = reply.and_then(|v| v.as_u64()).expect("a tag") as usize;
        counts[tag - 1] += 1;
    }
    println!("90 messages over 3 replicas: {counts:?}");
    assert_eq!(counts.iter().sum::<u32>(), 90);
    assert!(counts.iter().all(|&n| n > 0), "every replica takes a share: {counts:?}");
}

#[tokio::test]
async fn the_broker_dies_and_comes_back_and_the_modules_reconnect_by_themselves() {
    let mut broker = NatsServer::start().await.expect("nats-server starts");
    let flow = round_trip();
    let (a, _ra, link_a) = module_a(&broker, &flow).await;
    let (_b, _rb, link_b) = module_b(&broker, &flow).await;
    a.send("f.a.ask-1:input", json!(1)).await.expect("answers before");

    broker.kill();
    let mut state = link_a.state();
    tokio::time::timeout(WAIT, state.wait_for(|s| !s.is_up()))
        .await
        .expect("the link sees the broker go")
        .expect("state");
    // Meanwhile a hop fails at once, transient and saying why.
    let e = a.send("f.a.ask-1:input", json!(2)).await.expect_err("no broker");
    assert_eq!(e.code(), Some(code::UNREACHABLE), "{e}");
    assert!(e.is_retryable() && e.message().contains("does not answer"), "{e}");

    broker.restart().await.expect("the broker restarts");
    assert!(link_a.wait_up(Duration::from_secs(20)).await, "a reconnects");
    assert!(link_b.wait_up(Duration::from_secs(20)).await, "b reconnects");
    // The subscriptions came back with the connection.
    let reply = tiny_testenv::eventually("a round trip after the restart", Duration::from_secs(20), || {
        let a = a.clone();
        async move { a.send("f.a.ask-1:input", json!(3)).await.ok() }
    })
    .await;
    assert_eq!(reply.into_value().map(|v| v["answer"]["msg"].clone()), Some(json!(3)));
}

#[tokio::test]
async fn send_reaches_a_node_fire_and_forget_or_waiting() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let (_b, _receiver, link) = module_b(&broker, &flow_b()).await;
    let client = link.client();
    let reply = send(
        client,
        "f.b.answer-1",
        "input",
        br#"{"x":1}"#.to_vec(),
        &SendOptions::default().wait(),
    )
    .await
    .expect("answers");
    assert_eq!(
        reply.and_then(Reply::into_value),
        Some(json!({"answer": {"x": 1}, "depth": 0, "node": "f.b.answer-1"}))
    );
    // Fire and forget returns at once with nothing.
    let none = send(client, "f.b.answer-1", "input", b"{}".to_vec(), &SendOptions::default())
        .await
        .expect("sent");
    assert!(none.is_none());
    // An error comes back as the node's error.
    let e = send(
        client,
        "f.b.flaky-1",
        "input",
        b"{}".to_vec(),
        &SendOptions::default().wait(),
    )
    .await
    .expect_err("fails");
    assert_eq!(e.code(), Some("DECLINED"));
    // No module listens: said at once.
    let e = send(
        client,
        "f.zz.x-1",
        "input",
        b"{}".to_vec(),
        &SendOptions::default().wait(),
    )
    .await
    .expect_err("nobody listens");
    assert_eq!(e.code(), Some(code::UNREACHABLE), "{e}");
}

#[tokio::test]
async fn a_message_over_the_brokers_limit_fails_before_it_is_sent() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let flow = round_trip();
    let (a, _ra, link) = module_a(&broker, &flow).await;
    let max = link.client().max_payload();
    let big = "x".repeat(max + 1);
    let e = a.send("f.a.ask-1:input", json!(big)).await.expect_err("too large");
    assert_eq!(e.code(), Some(code::MESSAGE_TOO_LARGE), "{e}");
    assert_eq!(e.kind(), ErrorKind::Permanent);
    assert!(e.message().contains(&format!("at most {max} bytes")), "{e}");
}

#[tokio::test]
async fn a_reply_over_the_brokers_limit_comes_back_as_an_error_at_once() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let (_b, _receiver, link) = module_b(&broker, &flow_b()).await;
    let max = link.client().max_payload();
    // "At once" is read from the code, not a clock: a reply that never came would end
    // the wait with TIMEOUT.
    let e = send(
        link.client(),
        "f.b.big-1",
        "input",
        (max + 1).to_string().into_bytes(),
        &SendOptions::default().wait(),
    )
    .await
    .expect_err("too large to answer");
    assert_eq!(e.code(), Some(code::MESSAGE_TOO_LARGE), "{e}");
}

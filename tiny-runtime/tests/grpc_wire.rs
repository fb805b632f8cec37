//! Two modules, `a` and `b`, each an engine behind a real gRPC server on 127.0.0.1,
//! each routing the other's nodes through its pool: request/response across modules,
//! retries of remote errors by the sender's edge policy, a peer that goes away and
//! comes back, and the errors a sender sees when something is wrong.

use std::{
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tiny_runtime::grpc::{Pool, PoolOptions, ServerHandle, ServerOptions, spawn};
use tiny_sdk::{
    ErrorKind, Hop,
    engine::{Delivery, Engine, RemoteRouter, Source},
    flow::{Flow, FlowBuilder, PortAddress, RetryPolicy},
    harness::Relay,
    prelude::*,
};
use tiny_testkit::components::{Echo, Flaky, Located, Slow, Whoami};

/// Answers with its input twice.
#[derive(Debug, Component, Default)]
#[component(name = "double")]
struct Double {
    input: Input<Value>,
}

impl Double {
    async fn on_input(&self, _: &Ctx<Self>, msg: Value) -> Reply {
        Reply::value(json!([msg, msg]))
    }
}

/// A module's pool that counts the hops it failed to deliver: a test waits on the
/// count for "the sender's edge has failed and is retrying", not for time.
struct Counted {
    pool: Arc<Pool>,
    failed: tokio::sync::watch::Sender<u32>,
}

impl RemoteRouter for Counted {
    fn route(&self, module: &str, delivery: Delivery<'_>) -> futures::future::BoxFuture<'static, Result<Reply>> {
        let (call, failed) = (self.pool.route(module, delivery), self.failed.clone());
        Box::pin(async move {
            let result = call.await;
            if result.is_err() {
                failed.send_modify(|n| *n += 1);
            }
            result
        })
    }
}

/// Two modules wired to each other over gRPC.
struct Modules {
    a: Engine,
    b: Engine,
    pool_a: Arc<Pool>,
    /// How many of a's hops to b failed.
    failed_a: tokio::sync::watch::Receiver<u32>,
    server_a: ServerHandle,
    server_b: ServerHandle,
}

/// How long an engine waits for a node of its own module that has not loaded yet.
const NODE_WAIT: Duration = Duration::from_millis(100);

fn engine(module: &str, pool: Arc<dyn RemoteRouter>) -> Engine {
    Engine::builder()
        .module(module)
        .node_wait(NODE_WAIT)
        .register::<Relay>()
        .register::<Located>()
        .register::<Flaky>()
        .register::<Slow>()
        .register::<Double>()
        .register::<Whoami>()
        .register::<Echo>()
        .router(pool)
        .build()
}

const LOCALHOST: ([u8; 4], u16) = ([127, 0, 0, 1], 0);

/// Starts modules `a` and `b` and loads each one's nodes of `flow`.
async fn modules(flow: Flow, pool: PoolOptions) -> Modules {
    let (pool_a, pool_b) = (Arc::new(Pool::new(pool.clone())), Arc::new(Pool::new(pool)));
    let (failed, failed_a) = tokio::sync::watch::channel(0);
    let counted = Arc::new(Counted {
        pool: pool_a.clone(),
        failed,
    });
    let (a, b) = (engine("a", counted), engine("b", pool_b.clone()));
    let server_a = spawn(a.clone(), LOCALHOST.into(), ServerOptions::default())
        .await
        .expect("a binds");
    let server_b = spawn(b.clone(), LOCALHOST.into(), ServerOptions::default())
        .await
        .expect("b binds");
    pool_a.register("b", &server_b.addr().to_string()).expect("b's address");
    pool_b.register("a", &server_a.addr().to_string()).expect("a's address");
    for node in flow.nodes {
        let target = if node.spec.module == "a" { &a } else { &b };
        target.apply(node).await.expect("node loads");
    }
    Modules {
        a,
        b,
        pool_a,
        failed_a,
        server_a,
        server_b,
    }
}

fn retry(max: u32, initial_ms: u64) -> Option<RetryPolicy> {
    Some(RetryPolicy {
        max_attempts: Some(max),
        initial_delay_ms: Some(initial_ms),
        backoff_coefficient: Some("1".into()),
        max_delay_ms: Some(initial_ms),
        ..Default::default()
    })
}

/// `f.a.ask-1` (module a) -> `to`, with `policy`; `more` adds nodes.
fn ask(to: &str, policy: Option<RetryPolicy>, more: impl FnOnce(FlowBuilder) -> FlowBuilder) -> Flow {
    more(FlowBuilder::new().module("a").node("f.a.ask-1", "relay"))
        .edge_with("f.a.ask-1:out", to, json!("{{$}}"), policy)
        .build()
}

#[tokio::test]
async fn a_request_goes_a_b_a_and_the_reply_comes_back_to_the_first_caller() {
    let flow = FlowBuilder::new()
        .module("a")
        .node("f.a.ask-1", "relay")
        .node("f.a.answer-1", "answer")
        .module("b")
        .node("f.b.comp-1", "relay")
        .edge("f.a.ask-1:out", "f.b.comp-1:input", json!("{{$}}"))
        // b's relay hands the message back to a's answer, reshaped on the way.
        .edge(
            "f.b.comp-1:out",
            "f.a.answer-1:input",
            json!({"via": "b", "msg": "{{$}}"}),
        )
        .build();
    let m = modules(flow, PoolOptions::default()).await;
    assert!(m.a.has_node("f.a.ask-1") && m.a.has_node("f.a.answer-1") && m.b.has_node("f.b.comp-1"));
    let reply =
        m.a.send("f.a.ask-1:input", json!({"q": 42}))
            .await
            .expect("the chain answers");
    // signal -> ask (0) -> comp (1, over gRPC) -> answer (2, over gRPC back to a).
    assert_eq!(
        reply.into_value(),
        Some(json!({"answer": {"via": "b", "msg": {"q": 42}}, "depth": 2, "node": "f.a.answer-1"}))
    );
    // Many at once over the same connections.
    let calls = (0..32).map(|i| m.a.send("f.a.ask-1:input", json!({"q": i})));
    for (i, r) in futures::future::join_all(calls).await.into_iter().enumerate() {
        let v = r.expect("answers").into_value().expect("a reply");
        assert_eq!(v["answer"]["msg"]["q"], json!(i));
    }
    assert_eq!(m.pool_a.connections(), 1);
}

/// A port of `Msg` across modules: the payload is never parsed on the way, and the
/// answer is the bytes that were sent, spacing and all.
#[tokio::test]
async fn a_msg_port_answers_the_bytes_it_was_sent() {
    let flow = ask("f.b.echo-1:input", None, |b| b.module("b").node("f.b.echo-1", "echo"));
    let m = modules(flow, PoolOptions::default()).await;
    let bytes = br#"{"q":  [1, 2.50, "x"], "z": null}"#.to_vec();
    let to = PortAddress::parse("f.b.echo-1:input").expect("an address");
    let send = async |bytes: Vec<u8>| {
        let msg = tiny_sdk::Msg::from_json_bytes(bytes);
        m.pool_a.send_msg("b", &to, Source::Signal, &msg, Hop::default()).await
    };
    let reply = send(bytes.clone()).await.expect("answered");
    let got = reply.as_msg().expect("a reply").to_json_bytes().expect("bytes");
    assert_eq!(got, bytes);
    // Through a flow: a's relay decodes the signal, b's echo sends back what came.
    let reply = m.a.send("f.a.ask-1:input", json!({"q": 1})).await.expect("answered");
    assert_eq!(reply.into_value(), Some(json!({"q": 1})));
    // Not JSON is refused where it arrives, as for any port.
    let reply = send(b"{not json".to_vec()).await;
    let err = reply.expect_err("refused");
    assert!(err.message().contains("not JSON"), "{err}");
}

#[tokio::test]
async fn a_transient_remote_error_is_retried_by_the_senders_edge_policy() {
    let flow = ask("f.b.flaky-1:input", retry(5, 10), |f| {
        f.module("b")
            .node("f.b.flaky-1", "flaky")
            .settings(json!({"failures": 2}))
    });
    let m = modules(flow, PoolOptions::default()).await;
    let reply =
        m.a.send("f.a.ask-1:input", json!("hi"))
            .await
            .expect("third attempt succeeds");
    assert_eq!(reply.into_value(), Some(json!({"attempts": 3, "msg": "hi"})));
    let count = m.b.send("f.b.flaky-1:count", Value::Null).await.expect("count");
    assert_eq!(count.into_value(), Some(json!(3)));
}

#[tokio::test]
async fn an_error_passed_up_in_the_remote_module_is_retried_there_only() {
    // a's ask -> b's relay -> b's flaky, which always fails transiently; both edges
    // allow 3 attempts. b's edge into flaky retries; a's edge into the relay does not
    // run the relay (and flaky's three) again: the error arose below the relay.
    let flow = ask("f.b.relay-1:input", retry(3, 1), |f| {
        f.module("b")
            .node("f.b.relay-1", "relay")
            .node("f.b.flaky-1", "flaky")
            .settings(json!({"failures": 100}))
            .edge_with("f.b.relay-1:out", "f.b.flaky-1:input", json!("{{$}}"), retry(3, 1))
    });
    let m = modules(flow, PoolOptions::default()).await;
    let err =
        m.a.send("f.a.ask-1:input", json!("hi"))
            .await
            .expect_err("flaky always fails");
    assert_eq!(err.kind(), ErrorKind::Transient, "{err}");
    let count = m.b.send("f.b.flaky-1:count", Value::Null).await.expect("count");
    assert_eq!(count.into_value(), Some(json!(3)), "{err}");
}

#[tokio::test]
async fn a_permanent_remote_error_is_not_retried_and_keeps_its_code_and_origin() {
    let flow = ask("f.b.flaky-1:input", retry(5, 10), |f| {
        f.module("b")
            .node("f.b.flaky-1", "flaky")
            .settings(json!({"failures": 9, "permanent": true, "code": "NOPE"}))
    });
    let m = modules(flow, PoolOptions::default()).await;
    let err = m.a.send("f.a.ask-1:input", json!("hi")).await.expect_err("fails");
    assert_eq!(err.kind(), ErrorKind::Permanent);
    assert_eq!(err.code(), Some("NOPE"));
    assert_eq!(err.message(), "attempt 1 failed");
    assert_eq!(err.origin(), Some("node `f.b.flaky-1` port `input`"));
    let count = m.b.send("f.b.flaky-1:count", Value::Null).await.expect("count");
    assert_eq!(count.into_value(), Some(json!(1)));
}

#[tokio::test]
async fn a_transient_remote_error_with_a_non_retryable_code_is_not_retried() {
    let mut policy = retry(5, 10);
    if let Some(p) = policy.as_mut() {
        p.non_retryable_error_codes = vec!["QUOTA".into()];
    }
    let flow = ask("f.b.flaky-1:input", policy, |f| {
        f.module("b")
            .node("f.b.flaky-1", "flaky")
            .settings(json!({"failures": 9, "code": "QUOTA"}))
    });
    let m = modules(flow, PoolOptions::default()).await;
    let err = m.a.send("f.a.ask-1:input", json!("hi")).await.expect_err("fails");
    assert_eq!((err.kind(), err.code()), (ErrorKind::Transient, Some("QUOTA")));
    let count = m.b.send("f.b.flaky-1:count", Value::Null).await.expect("count");
    assert_eq!(count.into_value(), Some(json!(1)));
}

#[tokio::test]
async fn a_module_that_goes_away_is_unreachable_and_is_reached_again_when_it_is_back() {
    let flow = ask("f.b.flaky-1:input", retry(40, 50), |f| {
        f.module("b").node("f.b.flaky-1", "flaky")
    });
    let Modules {
        a,
        b,
        pool_a,
        mut failed_a,
        server_a: _server_a,
        server_b,
    } = modules(flow, PoolOptions::default()).await;
    a.send("f.a.ask-1:input", json!(1)).await.expect("b is up");
    let addr: SocketAddr = server_b.addr();
    tokio::time::timeout(Duration::from_secs(10), server_b.stop())
        .await
        .expect("b stops in time")
        .expect("b stops");

    let to = PortAddress::parse("f.b.flaky-1:input").expect("address");
    let err = pool_a
        .send("b", &to, Source::Signal, &json!(2), Hop::default())
        .await
        .expect_err("b is down");
    assert_eq!(err.kind(), ErrorKind::Transient, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("module `b`") && text.contains("unreachable") && text.contains(&addr.to_string()),
        "{text}"
    );

    // b comes back on the same port while a's edge keeps retrying: once a's edge has
    // failed to reach it (a hop failed after the one above), not after a guessed pause.
    let failed_before = *failed_a.borrow_and_update();
    let restart = tokio::spawn(async move {
        failed_a
            .wait_for(|n| *n > failed_before)
            .await
            .expect("a's pool is there");
        spawn(b, addr, ServerOptions::default())
            .await
            .expect("b binds its old port again")
    });
    let reply = a
        .send("f.a.ask-1:input", json!(3))
        .await
        .expect("reached once b is back");
    assert_eq!(reply.into_value().map(|v| v["msg"].clone()), Some(json!(3)));
    let server_b = restart.await.expect("restarted");
    assert_eq!(server_b.addr(), addr);
}

#[tokio::test]
async fn a_module_nobody_announced_is_a_clear_error() {
    let flow = ask("f.c.thing-1:input", retry(2, 1), |f| f);
    let m = modules(flow, PoolOptions::default()).await;
    let err =
        m.a.send("f.a.ask-1:input", json!("hi"))
            .await
            .expect_err("c is unknown");
    assert_eq!(err.kind(), ErrorKind::Transient);
    assert!(err.message().starts_with("gave up after 2 attempts"), "{err}");
    assert!(err.message().contains("no TinyModule announces module `c`"), "{err}");
    assert!(err.message().contains("f.c.thing-1:input"), "{err}");
    // Deregistered is unknown too, and the connection goes with it.
    assert_eq!(m.pool_a.connections(), 1);
    m.pool_a.deregister("b");
    assert_eq!(m.pool_a.connections(), 0);
    let to = PortAddress::parse("f.b.x-1:input").expect("address");
    let err = m
        .pool_a
        .send("b", &to, Source::Signal, &json!(1), Hop::default())
        .await
        .expect_err("b is gone");
    assert!(err.message().starts_with("no TinyModule announces module `b`"), "{err}");
    assert_eq!(err.code(), Some(tiny_sdk::error::code::MODULE_UNKNOWN));
}

#[tokio::test]
async fn an_oversized_message_fails_before_it_is_sent_and_names_the_limit() {
    let flow = ask("f.b.flaky-1:input", retry(3, 1), |f| {
        f.module("b").node("f.b.flaky-1", "flaky")
    });
    let m = modules(flow, PoolOptions::default()).await;
    let big = "x".repeat(5 * 1024 * 1024);
    let err = m.a.send("f.a.ask-1:input", json!(big)).await.expect_err("too big");
    assert_eq!(err.kind(), ErrorKind::Permanent);
    assert_eq!(err.code(), Some("MESSAGE_TOO_LARGE"));
    let text = err.to_string();
    assert!(text.contains("4 MiB (4194304 bytes) message size limit"), "{text}");
    assert!(text.contains("5.0 MiB (524"), "{text}");
    let count = m.b.send("f.b.flaky-1:count", Value::Null).await.expect("count");
    assert_eq!(count.into_value(), Some(json!(0)), "nothing reached b");

    // The limit is the pool's option.
    let small = Pool::new(PoolOptions {
        max_message_size: 64,
        ..PoolOptions::default()
    });
    small.register("b", &m.server_b.addr().to_string()).expect("address");
    let to = PortAddress::parse("f.b.flaky-1:input").expect("address");
    let err = small
        .send("b", &to, Source::Signal, &json!("y".repeat(100)), Hop::default())
        .await
        .expect_err("too big");
    assert!(err.to_string().contains("64 B (64 bytes) message size limit"), "{err}");
}

#[tokio::test]
async fn an_oversized_reply_is_refused_by_the_server_with_the_limit() {
    let (pool_a, pool_b) = (Arc::new(Pool::default()), Arc::new(Pool::default()));
    let b = engine("b", pool_b);
    let flow = FlowBuilder::new().module("b").node("f.b.double-1", "double").build();
    for n in flow.nodes {
        b.apply(n).await.expect("loads");
    }
    let opts = ServerOptions {
        max_message_size: 1024,
        ..ServerOptions::default()
    };
    let server = spawn(b, LOCALHOST.into(), opts).await.expect("binds");
    pool_a.register("b", &server.addr().to_string()).expect("address");
    let to = PortAddress::parse("f.b.double-1:input").expect("address");
    let ok = pool_a
        .send("b", &to, Source::Signal, &json!("small"), Hop::default())
        .await
        .expect("fits");
    assert_eq!(ok.into_value(), Some(json!(["small", "small"])));
    // The request fits the server's limit, the reply does not.
    let err = pool_a
        .send("b", &to, Source::Signal, &json!("z".repeat(600)), Hop::default())
        .await
        .expect_err("too big");
    assert_eq!(err.kind(), ErrorKind::Permanent);
    assert!(
        err.to_string().contains("1 KiB (1024 bytes) message size limit"),
        "{err}"
    );
}

#[tokio::test]
async fn a_node_the_target_does_not_have_is_reported_by_the_target() {
    let flow = ask("f.b.ghost-1:input", retry(3, 1), |f| f);
    let m = modules(flow, PoolOptions::default()).await;
    let err =
        m.a.send("f.a.ask-1:input", json!("hi"))
            .await
            .expect_err("no such node");
    // What b's engine says about the node is what a hears, kind included.
    let local =
        m.b.send("f.b.ghost-1:input", json!("hi"))
            .await
            .expect_err("no such node");
    assert!(local.message().contains("`f.b.ghost-1`"), "{local}");
    // a's edge tried three times and says so before b's words.
    assert_eq!((err.kind(), err.code()), (local.kind(), local.code()));
    assert_eq!(
        err.message().split_once(": ").map(|(_, rest)| rest),
        Some(local.message()),
        "{err}"
    );
    assert!(err.message().starts_with("gave up after 3 attempts in "), "{err}");

    // b does not forward a message for another module's node.
    let to = PortAddress::parse("f.c.other-1:input").expect("address");
    let err = m
        .pool_a
        .send("b", &to, Source::Signal, &json!(1), Hop::default())
        .await
        .expect_err("misrouted");
    assert_eq!(err.kind(), ErrorKind::Permanent);
    assert!(
        err.message()
            .contains("module `b` has no node `f.c.other-1`: it belongs to module `c`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_timed_out_hop_cancels_the_remote_handler() {
    let mut policy = retry(1, 1);
    if let Some(p) = policy.as_mut() {
        p.timeout_ms = Some(200);
    }
    let flow = ask("f.b.slow-1:input", policy, |f| f.module("b").node("f.b.slow-1", "slow"));
    let m = modules(flow, PoolOptions::default()).await;
    let err = m.a.send("f.a.ask-1:input", json!("wait")).await.expect_err("times out");
    assert_eq!(err.kind(), ErrorKind::Transient, "{err}");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let seen = m.b.send("f.b.slow-1:cancelled", Value::Null).await.expect("asks");
        if seen.into_value() == Some(json!(true)) {
            break;
        }
        assert!(Instant::now() < deadline, "b's handler was never cancelled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The pool's own deadline does the same.
    let short = Pool::new(PoolOptions {
        timeout: Duration::from_millis(100),
        ..PoolOptions::default()
    });
    short.register("b", &m.server_b.addr().to_string()).expect("address");
    let to = PortAddress::parse("f.b.slow-1:input").expect("address");
    let err = short
        .send("b", &to, Source::Signal, &json!(1), Hop::default())
        .await
        .expect_err("times out");
    assert_eq!(
        (err.kind(), err.code()),
        (ErrorKind::Transient, Some(tiny_sdk::error::code::TIMEOUT)),
        "{err}"
    );
    assert!(err.message().contains("did not answer within 0.1 s"), "{err}");
}

#[tokio::test]
async fn the_health_service_reports_serving() {
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus, health_client::HealthClient};
    let flow = FlowBuilder::new().build();
    let m = modules(flow, PoolOptions::default()).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", m.server_a.addr()))
        .expect("uri")
        .connect()
        .await
        .expect("connects");
    let mut client = HealthClient::new(channel);
    let status = client
        .check(HealthCheckRequest { service: String::new() })
        .await
        .expect("answers");
    assert_eq!(status.into_inner().status(), ServingStatus::Serving);
}

#[tokio::test]
async fn modules_at_one_address_share_a_connection_until_the_last_goes() {
    let pool = Pool::default();
    pool.register("b", "127.0.0.1:1").expect("address");
    pool.register("c", "127.0.0.1:1").expect("address");
    pool.register("d", "127.0.0.1:2").expect("address");
    assert_eq!(pool.connections(), 2);
    pool.deregister("b");
    assert_eq!(
        (pool.connections(), pool.address("c").as_deref()),
        (2, Some("127.0.0.1:1"))
    );
    // Moving `c` drops the connection nobody uses any more.
    pool.register("c", "127.0.0.1:2").expect("address");
    assert_eq!(pool.connections(), 1);
    pool.deregister("c");
    pool.deregister("d");
    assert_eq!(pool.connections(), 0);
    let err = pool.register("e", "not an address").expect_err("refused");
    assert!(err.message().contains("`not an address` is not host:port"), "{err}");
}

#[tokio::test]
async fn the_server_tells_handlers_whether_this_replica_leads() {
    let leads = Arc::new(AtomicBool::new(false));
    let b = engine("b", Arc::new(Pool::default()));
    for n in FlowBuilder::new()
        .module("b")
        .node("f.b.whoami-1", "whoami")
        .build()
        .nodes
    {
        b.apply(n).await.expect("loads");
    }
    let flag = leads.clone();
    let opts = ServerOptions {
        leader: Some(Arc::new(move || flag.load(Ordering::SeqCst))),
        ..ServerOptions::default()
    };
    let server = spawn(b, LOCALHOST.into(), opts).await.expect("binds");
    let pool = Pool::default();
    pool.register("b", &server.addr().to_string()).expect("address");
    let to = PortAddress::parse("f.b.whoami-1:input").expect("address");
    let ask = || pool.send("b", &to, Source::Signal, &Value::Null, Hop::default());
    assert_eq!(
        ask().await.expect("answers").into_value(),
        Some(json!({"leader": false}))
    );
    leads.store(true, Ordering::SeqCst);
    assert_eq!(
        ask().await.expect("answers").into_value(),
        Some(json!({"leader": true}))
    );
}

#[tokio::test]
async fn a_bound_endpoint_announces_its_port_and_serves_until_shutdown() {
    use tiny_runtime::grpc::Grpc;
    let grpc = Grpc::bind(LOCALHOST.into()).await.expect("binds");
    assert_ne!(grpc.port(), 0);
    let addr = grpc.local_addr();
    let b = engine("b", grpc.pool());
    for n in FlowBuilder::new()
        .module("b")
        .node("f.b.whoami-1", "whoami")
        .build()
        .nodes
    {
        b.apply(n).await.expect("loads");
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let grpc = grpc.with_leader(Arc::new(|| true));
    let server = tokio::spawn(grpc.serve_with_shutdown(b, async {
        let _ = stopped.await;
    }));
    let pool = Pool::default();
    pool.register("b", &addr.to_string()).expect("address");
    let to = PortAddress::parse("f.b.whoami-1:input").expect("address");
    let reply = pool
        .send("b", &to, Source::Signal, &Value::Null, Hop::default())
        .await
        .expect("answers");
    assert_eq!(reply.into_value(), Some(json!({"leader": true})));
    let _ = stop.send(());
    let served = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("stops in time")
        .expect("task");
    assert!(served.is_ok(), "{served:?}");
}

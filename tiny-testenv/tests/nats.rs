//! The test broker: it is ready only when it is the one answering on its port, and
//! `pause` returns with the broker hung.

use std::time::Duration;

use tiny_testenv::{NatsServer, RawNats};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_whose_port_another_broker_holds_is_not_taken_for_ready() {
    let first = NatsServer::start().await.expect("nats-server");
    let second = NatsServer::start_on(first.port(), first.token()).await;
    // It fails, whether it is caught exiting (it could not bind) or caught with the
    // first broker's INFO on the port; either way it is not handed out as ready.
    let e = second.expect_err("the port is the first broker's");
    let e = e.to_string();
    assert!(
        e.contains("another server answers there") || e.contains("exited"),
        "{e}"
    );
    RawNats::connect(first.port(), first.token())
        .await
        .expect("the first broker answers PING with PONG");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_broker_answers_nothing_until_resumed() {
    let broker = NatsServer::start().await.expect("nats-server");
    broker.pause().expect("SIGSTOP");
    let hung = tokio::time::timeout(
        Duration::from_millis(500),
        RawNats::connect(broker.port(), broker.token()),
    )
    .await;
    assert!(hung.is_err(), "no answer while paused");
    broker.resume().expect("SIGCONT");
    tokio::time::timeout(Duration::from_secs(10), RawNats::connect(broker.port(), broker.token()))
        .await
        .expect("an answer once resumed")
        .expect("PING answered with PONG");
}

/// `$JS.API` request `api` with `body`, answered as JSON.
async fn js(raw: &mut RawNats, api: &str, body: &str) -> serde_json::Value {
    raw.publish(&format!("$JS.API.{api}"), Some("_INBOX.up"), None, body.as_bytes())
        .await
        .expect("published");
    let answer = raw.next(Duration::from_secs(10)).await.expect("an answer");
    assert_eq!(answer.header_block, None, "an answer, not no-responders: {answer:?}");
    serde_json::from_slice(&answer.payload).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_of_make_up_has_jetstream_and_keeps_its_store_across_a_restart() {
    // Issue 47: `make up` started nats-server without JetStream (durable runs failed).
    let store = tempfile::tempdir().expect("a folder");
    let mut broker = NatsServer::start_jetstream(Some(&store.path().join("nats-store")))
        .await
        .expect("nats-server");
    let mut raw = RawNats::connect(broker.port(), broker.token())
        .await
        .expect("connected");
    raw.subscribe("_INBOX.up", None).await.expect("subscribed");
    let created = js(
        &mut raw,
        "STREAM.CREATE.kept",
        r#"{"name":"kept","subjects":["kept.>"],"storage":"file"}"#,
    )
    .await;
    assert_eq!(created["config"]["name"], "kept", "{created}");
    broker.kill();
    broker.restart().await.expect("restarted");
    let mut raw = RawNats::connect(broker.port(), broker.token())
        .await
        .expect("connected");
    raw.subscribe("_INBOX.up", None).await.expect("subscribed");
    let info = js(&mut raw, "STREAM.INFO.kept", "").await;
    assert_eq!(info["config"]["name"], "kept", "the stream is in the store: {info}");
    assert!(store.path().join("nats-store").join("jetstream").exists());
}

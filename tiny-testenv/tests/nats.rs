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

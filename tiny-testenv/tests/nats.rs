//! The test broker: it is ready only when it is the one answering on its port, and
//! `pause` returns with the broker hung.

use std::time::Duration;

use tiny_testenv::NatsServer;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

/// Connects to `port` and sends `PING`: the first line back after `INFO`.
async fn ping(port: u16, token: &str) -> std::io::Result<String> {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let mut stream = BufReader::new(stream);
    let mut info = String::new();
    stream.read_line(&mut info).await?;
    let connect = format!("CONNECT {{\"auth_token\":\"{token}\",\"verbose\":false}}\r\nPING\r\n");
    stream.get_mut().write_all(connect.as_bytes()).await?;
    let mut line = String::new();
    stream.read_line(&mut line).await?;
    Ok(line)
}

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
    assert_eq!(
        ping(first.port(), first.token()).await.expect("an answer").trim(),
        "PONG"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_broker_answers_nothing_until_resumed() {
    let broker = NatsServer::start().await.expect("nats-server");
    broker.pause().expect("SIGSTOP");
    let hung = tokio::time::timeout(Duration::from_millis(500), ping(broker.port(), broker.token())).await;
    assert!(hung.is_err(), "no answer while paused: {hung:?}");
    broker.resume().expect("SIGCONT");
    let answer = tokio::time::timeout(Duration::from_secs(10), ping(broker.port(), broker.token()))
        .await
        .expect("an answer once resumed")
        .expect("a line");
    assert_eq!(answer.trim(), "PONG");
}

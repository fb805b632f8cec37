//! Work is bounded under a flood (issue 48): 100,000 core-NATS requests at a module
//! whose handler is slow, on a real `nats-server`. The module takes a turn per
//! message before it starts the message's task, so the tasks alive stay under its
//! in-flight cap however many messages wait; the rest wait in the client's buffer
//! and, past it, are dropped and counted as a slow consumer. Every message that was
//! answered was handled, once.

mod support;

use std::{collections::HashSet, sync::atomic::Ordering, time::Duration};

use async_nats::HeaderMap;
use futures::StreamExt as _;
use support::gate::{HANDLED, MOST_LIVE, Recorded, gate, gate_module, live, record_at};
use tiny_runtime::nats::{Link, listen};
use tiny_testkit::NatsServer;

/// How many messages the module handles at once.
const CAP: usize = 64;
/// How many messages the flood sends.
const FLOOD: i64 = 100_000;
/// A bound on waiting for what must happen (a hang fails instead of blocking CI).
const WAIT: Duration = Duration::from_secs(120);

/// This process's resident memory, KiB (`VmRSS` of `/proc/self/status`).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

fn headers(n: i64) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("x-to", "f.b.gate-1:input");
    h.insert("x-from", "");
    h.insert("x-edge-id", "");
    h.insert("Nats-Msg-Id", format!("{n}").as_str());
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_at_a_slow_module_keeps_its_tasks_under_the_cap() {
    // Every message taken counts, answered or not: the answers are checked against them.
    record_at(Recorded::BeforeTheGate);
    let broker = NatsServer::start().await.expect("nats-server starts");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects");
    let engine = gate_module(CAP).await;
    let _receiver = listen(link.client().clone(), engine.clone(), None)
        .await
        .expect("subscribes");
    // The broker routes the subject to the receiver once a request through the
    // receiver's own connection is answered (refused: it has no `x-to`).
    link.client()
        .request("tinymodule.b.msg", Vec::new().into())
        .await
        .expect("the receiver answers");

    let sender = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(sender.wait_up(WAIT).await, "connects");
    let client = sender.client().clone();
    let answers_to = "flood.answers";
    let mut answers = client.subscribe(answers_to).await.expect("subscribes");
    client.flush().await.expect("flushed");
    // Read as they come (a buffer that filled would drop answers).
    let (answered_tx, mut answered_rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(msg) = answers.next().await {
            let n: Option<i64> = std::str::from_utf8(&msg.payload).ok().and_then(|t| t.parse().ok());
            if answered_tx.send(n).is_err() {
                break;
            }
        }
    });

    let runtime = tokio::runtime::Handle::current().metrics();
    let (rss_before, tasks_before) = (rss_kib(), runtime.num_alive_tasks());
    for n in 0..FLOOD {
        client
            .publish_with_reply_and_headers("tinymodule.b.msg", answers_to, headers(n), n.to_string().into())
            .await
            .expect("published");
    }
    // Everything reached the broker; and everything the broker routed to the module
    // reached its client (a PONG follows the messages sent before it).
    client.flush().await.expect("flushed");
    link.client().flush().await.expect("flushed");
    tokio::time::timeout(WAIT, live().subscribe().wait_for(|l| *l >= CAP))
        .await
        .expect("the module takes as many as its cap")
        .expect("the gate's sender lives");

    // The flood is in: the module holds CAP messages, the client's buffer the rest
    // that it could hold, and nothing else became a task.
    let tasks = runtime.num_alive_tasks().saturating_sub(tasks_before);
    let grown_kib = rss_kib().saturating_sub(rss_before);
    eprintln!(
        "flood of {FLOOD}: {tasks} more tasks alive, {} handlers running, RSS +{} MiB, {} slow-consumer drops counted",
        *live().borrow(),
        grown_kib / 1024,
        tiny_runtime::metrics::slow_consumer_drops()
    );
    assert_eq!(engine.in_flight(), CAP);
    assert!(tasks <= CAP + 32, "{tasks} tasks alive for a cap of {CAP}");
    // A message waiting in the client's buffer is its bytes (about 150 here); a task
    // per message would be several KiB each (100,000 of them: hundreds of MiB).
    assert!(grown_kib < 128 * 1024, "RSS grew by {grown_kib} KiB under the flood");

    // Open the gate; then a marker: answered, it was taken after everything the
    // buffer held before it (a buffer is first in, first out). Sent again if the full
    // buffer dropped it.
    gate().send_replace(true);
    let mut marker = -1;
    loop {
        let asked = client.request_with_headers("tinymodule.b.msg", headers(marker), marker.to_string().into());
        match tokio::time::timeout(Duration::from_secs(10), asked).await {
            Ok(Ok(reply)) => {
                assert_eq!(reply.payload.as_ref(), marker.to_string().as_bytes());
                break;
            }
            _ if marker > -10 => marker -= 1,
            other => panic!("no marker answered: {other:?}"),
        }
    }
    let handled: Vec<i64> = HANDLED
        .lock()
        .expect("lock")
        .iter()
        .copied()
        .filter(|n| *n >= 0)
        .collect();
    let mut answered = Vec::with_capacity(handled.len());
    while answered.len() < handled.len() {
        let n = tokio::time::timeout(WAIT, answered_rx.recv())
            .await
            .expect("every handled message is answered")
            .expect("the subscription lives")
            .expect("an answer is the message's number");
        answered.push(n);
    }
    let handled_set: HashSet<i64> = handled.iter().copied().collect();
    let answered_set: HashSet<i64> = answered.iter().copied().collect();
    assert_eq!(handled_set.len(), handled.len(), "no message was handled twice");
    assert_eq!(
        answered_set, handled_set,
        "every answer is of a handled message, and each was answered"
    );
    assert!(MOST_LIVE.load(Ordering::SeqCst) <= CAP);
    // The client's buffer (64 Ki messages) cannot hold the flood: what it could not
    // hold was dropped, and counted.
    let dropped = FLOOD as usize - handled.len();
    eprintln!("{} handled and answered, {dropped} dropped", handled.len());
    assert!(
        dropped > 0,
        "the flood fitted the buffer: nothing shows the drops are counted"
    );
    assert!(
        tiny_runtime::metrics::slow_consumer_drops() > 0,
        "{dropped} drops, none counted"
    );
}

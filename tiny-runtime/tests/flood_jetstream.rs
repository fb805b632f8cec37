//! Work is bounded under a flood on JetStream too (issue 48): thousands of stored
//! hops for a module whose handler is slow. The receiver takes a turn before it pulls
//! the next message, so the tasks alive stay under the module's in-flight cap while
//! the rest wait on the broker; once the handler is fast again every stored message
//! is handled exactly once and acked (the work-queue stream is empty).

mod support;

use std::{collections::HashSet, sync::atomic::Ordering, time::Duration};

use async_nats::HeaderMap;
use support::gate::{HANDLED, MOST_LIVE, Recorded, gate, gate_module, live, record_at};
use tiny_runtime::{
    jetstream::{self, JetStream, config::EDGES_STREAM},
    nats::Link,
};
use tiny_testkit::{NatsServer, eventually};

/// How many messages the module handles at once.
const CAP: usize = 16;
/// How many messages are stored for it.
const FLOOD: i64 = 5_000;
/// A bound on waiting for what must happen.
const WAIT: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_flood_waits_on_the_broker_and_every_message_is_handled_once() {
    // Handled to the end: every stored message is counted once it is through.
    record_at(Recorded::AfterTheGate);
    let broker = NatsServer::start_jetstream(None).await.expect("nats-server starts");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects");
    let js = JetStream::new(link.clone(), "b", "b-0");
    js.ensure().await.expect("streams");
    let engine = gate_module(CAP).await;
    // Stored first, as a backlog a module finds when it starts.
    let context = async_nats::jetstream::new(link.client().clone());
    for n in 0..FLOOD {
        let mut h = HeaderMap::new();
        h.insert("x-to", "f.b.gate-1:input");
        h.insert("x-from", "");
        h.insert("x-edge-id", "");
        context
            .publish_with_headers("tinymodule.b.msg", h, n.to_string().into())
            .await
            .expect("published")
            .await
            .expect("stored");
    }
    let runtime = tokio::runtime::Handle::current().metrics();
    let tasks_before = runtime.num_alive_tasks();
    let receiver = jetstream::listen(js.clone(), engine.clone(), None);
    tokio::time::timeout(WAIT, live().subscribe().wait_for(|l| *l >= CAP))
        .await
        .expect("the module takes as many as its cap")
        .expect("the gate's sender lives");
    let tasks = runtime.num_alive_tasks().saturating_sub(tasks_before);
    eprintln!(
        "{FLOOD} stored: {tasks} more tasks alive, {} handlers running",
        *live().borrow()
    );
    assert_eq!(engine.in_flight(), CAP);
    assert!(tasks <= CAP + 32, "{tasks} tasks alive for a cap of {CAP}");

    gate().send_replace(true);
    let stream = context.get_stream(EDGES_STREAM).await.expect("the stream");
    eventually("every stored message acked", WAIT, || {
        let mut stream = stream.clone();
        async move {
            let info = stream.info().await.ok()?;
            (info.state.messages == 0 && HANDLED.lock().expect("lock").len() >= FLOOD as usize).then_some(())
        }
    })
    .await;
    let handled = HANDLED.lock().expect("lock").clone();
    let distinct: HashSet<i64> = handled.iter().copied().collect();
    assert_eq!(handled.len(), FLOOD as usize, "each message handled once");
    assert_eq!(distinct, (0..FLOOD).collect::<HashSet<_>>());
    assert!(
        MOST_LIVE.load(Ordering::SeqCst) <= CAP,
        "{} at once",
        MOST_LIVE.load(Ordering::SeqCst)
    );
    receiver.stop().await;
}

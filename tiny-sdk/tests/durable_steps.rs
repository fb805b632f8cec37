//! The engine's side of durable runs when the transport or a replica fails: which
//! messages start a run, a run named after its message so that a redelivery
//! continues it, and a step whose hop was not stored, which must not be recorded.

use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use bytes::Bytes;
use futures::{FutureExt as _, future::BoxFuture};
use serde_json::json;
use tiny_sdk::{
    Error, Hop, Msg, Reply, Result,
    engine::{Delivery, EXECUTION_MODE_LABEL, Engine, RemoteRouter, Source},
    error::code,
    flow::{Flow, FlowBuilder, RetryPolicy},
    harness::Relay,
    run::{self, EmitRecord, MemoryRunStore, RunStep, StepRecord, StepStatus},
};

/// A transport that fails its first `fail` attempts (transiently, as a broker that is
/// away, or permanently), then stores each hop and notes it on the run step that
/// emitted it, as the JetStream router does.
#[derive(Default)]
struct Transport {
    fail: AtomicU32,
    permanent: bool,
    calls: AtomicU32,
}

impl RemoteRouter for Transport {
    fn route(&self, _module: &str, d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self
            .fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            let e = if self.permanent {
                Error::permanent("the hop is too large for the stream")
            } else {
                Error::transient("the broker does not answer").with_code(code::UNREACHABLE)
            };
            return futures::future::ready(Err(e)).boxed();
        }
        if let Some(step) = &d.hop.run {
            let (from, edge_id) = match d.source {
                Source::Edge { from, edge_id } => (from.to_owned(), edge_id.to_owned()),
                Source::Signal => (String::new(), String::new()),
            };
            step.stored(EmitRecord {
                to: format!("{}:{}", d.node, d.port),
                from,
                edge_id,
                step_key: step.step_key().to_owned(),
                data: Bytes::from(d.msg.to_json_bytes().unwrap_or_default()),
                ..EmitRecord::default()
            });
        }
        futures::future::ready(Ok(Reply::empty())).boxed()
    }
}

const ENTRY: &str = "t.a.first-1";

/// `t.a.first-1` (a relay, labelled durable) → `t.b.next-1` in module b, along an
/// edge of `attempts` attempts 1 ms apart; and `t.a.plain-1`, a relay with no label.
fn flow(attempts: u32) -> Flow {
    let retry = RetryPolicy {
        max_attempts: Some(attempts),
        initial_delay_ms: Some(1),
        ..RetryPolicy::default()
    };
    let mut flow = FlowBuilder::new()
        .module("a")
        .node(ENTRY, "relay")
        .node("t.a.plain-1", "relay")
        .module("b")
        .node("t.b.next-1", "relay")
        .edge_with(&format!("{ENTRY}:out"), "t.b.next-1:input", json!("{{$}}"), Some(retry))
        .build();
    for n in &mut flow.nodes {
        if n.name == ENTRY {
            n.labels.insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        }
    }
    flow
}

/// Module a's engine on `transport`, its ledger in `store` (none: no durable runs).
async fn engine(
    transport: Arc<impl RemoteRouter + 'static>,
    store: Option<Arc<MemoryRunStore>>,
    flow: &Flow,
) -> Engine {
    let mut registry = tiny_sdk::engine::Registry::default();
    registry.register::<Relay>();
    let mut builder = Engine::builder().module("a").registry(registry).router(transport);
    if let Some(store) = store {
        builder = builder.runs(store);
    }
    let engine = builder.build();
    for node in flow.nodes.iter().filter(|n| n.spec.module == "a") {
        engine.apply(node.clone()).await.expect("node loads");
    }
    engine
}

/// Every step record in `store`.
fn records(store: &MemoryRunStore) -> Vec<(String, StepRecord)> {
    store
        .entries()
        .into_iter()
        .filter_map(|(k, v)| {
            let key = run::parse_ledger_key(&k)?;
            (key.kind == run::LedgerKind::Step).then(|| (k, StepRecord::from_json_slice(&v).expect("a record")))
        })
        .collect()
}

/// Delivers to the entry as JetStream's receiver does with a stored message that
/// starts a run: in the run named after the message.
async fn deliver_stored(engine: &Engine, seed: &str) -> Result<Reply> {
    assert!(engine.starts_run(ENTRY, "input").await);
    let run_id = run::run_id_from(seed);
    let hop = Hop {
        run: Some(Arc::new(RunStep::continued(
            &run_id,
            &run::root_step_key(&run_id),
            None,
        ))),
        ..Hop::default()
    };
    engine
        .deliver(Delivery::new(ENTRY, "input", Source::Signal, Msg::from_json(json!({"n": 1}))).hop(hop))
        .await
}

#[tokio::test]
async fn only_business_ports_of_durable_nodes_start_runs_and_only_with_a_ledger() {
    let flow = flow(1);
    let store = Arc::new(MemoryRunStore::new());
    let durable = engine(Arc::<Transport>::default(), Some(store), &flow).await;
    assert!(durable.starts_run(ENTRY, "input").await);
    assert!(!durable.starts_run(ENTRY, "_settings").await, "system ports never do");
    assert!(!durable.starts_run("t.a.plain-1", "input").await, "no label");
    assert!(
        !durable.starts_run("t.b.next-1", "input").await,
        "another module's node"
    );
    let classic = engine(Arc::<Transport>::default(), None, &flow).await;
    assert!(!classic.starts_run(ENTRY, "input").await, "no ledger");
}

#[tokio::test]
async fn a_message_that_comes_again_after_its_run_started_continues_that_run() {
    let flow = flow(1);
    let store = Arc::new(MemoryRunStore::new());
    let transport = Arc::new(Transport::default());
    let engine = engine(transport.clone(), Some(store.clone()), &flow).await;
    let seed = "module-edges:7:1764045600123456789";
    deliver_stored(&engine, seed).await.expect("done");
    let run_id = run::run_id_from(seed);
    let recorded = records(&store);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(
        recorded[0].0,
        run::step_record_key(&run_id, &run::root_step_key(&run_id))
    );
    assert_eq!(recorded[0].1.status, StepStatus::Done);

    // The same message again (its ack was lost with its replica): the same run's
    // recorded step, skipped, its hop not sent again.
    let sent = transport.calls.load(Ordering::SeqCst);
    deliver_stored(&engine, seed).await.expect("skipped");
    assert_eq!(transport.calls.load(Ordering::SeqCst), sent);
    assert_eq!(records(&store).len(), 1);
}

#[tokio::test]
async fn a_step_whose_hop_was_not_stored_is_not_recorded_and_its_message_runs_again_in_the_same_run() {
    let flow = flow(2);
    let store = Arc::new(MemoryRunStore::new());
    // Both attempts of the edge fail, as when the broker is away.
    let transport = Arc::new(Transport {
        fail: AtomicU32::new(2),
        ..Transport::default()
    });
    let engine = engine(transport.clone(), Some(store.clone()), &flow).await;
    let seed = "module-edges:7:1764045600123456789";
    let e = deliver_stored(&engine, seed).await.expect_err("the step is not done");
    assert!(e.is_retryable(), "the transport tries the message again: {e}");
    assert!(e.to_string().contains("not recorded"), "{e}");
    assert!(
        records(&store).is_empty(),
        "neither done nor failed: {:?}",
        records(&store)
    );

    // The message comes again: the same run, the same step, and now the hop is stored.
    deliver_stored(&engine, seed).await.expect("done");
    let run_id = run::run_id_from(seed);
    let recorded = records(&store);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    let (key, record) = &recorded[0];
    assert_eq!(key, &run::step_record_key(&run_id, &run::root_step_key(&run_id)));
    assert_eq!(record.status, StepStatus::Done);
    assert_eq!(record.emits.len(), 1, "its hop, stored: {record:?}");
    assert_eq!(
        record.emits[0].step_key,
        run::child_step_key(&run_id, &run::root_step_key(&run_id), &record.emits[0].edge_id, 0)
    );

    // Once more (acknowledged too late): skipped, nothing sent.
    let sent = transport.calls.load(Ordering::SeqCst);
    deliver_stored(&engine, seed).await.expect("skipped");
    assert_eq!(transport.calls.load(Ordering::SeqCst), sent);
    assert_eq!(records(&store).len(), 1);
}

/// A transport whose stores wait until `open` is told (the broker is slow to answer).
struct Slow {
    stores: Transport,
    open: Arc<tokio::sync::Notify>,
}

impl RemoteRouter for Slow {
    fn route(&self, module: &str, d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        let stored = self.stores.route(module, d);
        let open = self.open.clone();
        async move {
            open.notified().await;
            stored.await
        }
        .boxed()
    }
}

/// Paused time: a sleep returns only once every other task is parked, so "the second
/// delivery has got as far as it can" is a fact when the test looks, not a guess.
#[tokio::test(start_paused = true)]
async fn a_step_delivered_again_while_it_runs_waits_for_it_and_is_skipped() {
    let flow = flow(1);
    let store = Arc::new(MemoryRunStore::new());
    let slow = Arc::new(Slow {
        stores: Transport::default(),
        open: Arc::default(),
    });
    let engine = engine(slow.clone(), Some(store.clone()), &flow).await;
    let seed = "module-edges:7:1764045600123456789";
    // The first delivery's handler runs and waits for its hop to be stored...
    let first = tokio::spawn({
        let engine = engine.clone();
        async move { deliver_stored(&engine, seed).await }
    });
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while slow.stores.calls.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the first delivery runs its handler");
    // ...when the broker delivers the message again.
    let second = tokio::spawn({
        let engine = engine.clone();
        async move { deliver_stored(&engine, seed).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(
        slow.stores.calls.load(Ordering::SeqCst),
        1,
        "the second delivery did not run the handler beside the first"
    );
    assert!(!second.is_finished(), "it waits for the first");
    slow.open.notify_one();
    first.await.expect("no panic").expect("done");
    second.await.expect("no panic").expect("skipped");
    assert_eq!(slow.stores.calls.load(Ordering::SeqCst), 1, "one handler call");
    let recorded = records(&store);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].1.status, StepStatus::Done);
}

#[tokio::test]
async fn a_hop_a_retry_stored_leaves_its_step_done() {
    let flow = flow(2);
    let store = Arc::new(MemoryRunStore::new());
    let transport = Arc::new(Transport {
        fail: AtomicU32::new(1),
        ..Transport::default()
    });
    let engine = engine(transport, Some(store.clone()), &flow).await;
    engine.send(&format!("{ENTRY}:input"), json!(1)).await.expect("done");
    let recorded = records(&store);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].1.status, StepStatus::Done);
    assert_eq!(recorded[0].1.emits.len(), 1);
}

#[tokio::test]
async fn a_hop_the_transport_refuses_for_good_fails_its_step_as_go_records_it() {
    let flow = flow(2);
    let store = Arc::new(MemoryRunStore::new());
    let transport = Arc::new(Transport {
        fail: AtomicU32::new(1),
        permanent: true,
        calls: AtomicU32::new(0),
    });
    let engine = engine(transport, Some(store.clone()), &flow).await;
    let e = engine
        .send(&format!("{ENTRY}:input"), json!(1))
        .await
        .expect_err("refused");
    assert!(!e.is_retryable(), "{e}");
    let recorded = records(&store);
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0].1.status, StepStatus::Failed);
    assert!(
        recorded[0].1.error.as_deref().is_some_and(|e| e.contains("too large")),
        "{recorded:?}"
    );
}

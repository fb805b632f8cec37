//! JetStream limits and the ledger pass, on a real `nats-server` (issue 48).
//!
//! - `module-edges`, `module-sysmsgs` and `TINY_EXEC` are bounded; a full work stream
//!   refuses the publish, and the sender's hop fails with code `STREAM_FULL` naming
//!   the stream and the limit; the module serves again once the stream drains.
//! - A limit the broker's stream already has is kept; one it lacks is added.
//! - The leader's pass acts on this module's part of the runs only, and never
//!   overwrites a key that changed since it read it.

use std::time::Duration;

use async_nats::jetstream::stream::DiscardPolicy;
use bytes::Bytes;
use serde_json::json;
use tiny_runtime::{
    jetstream::{
        self, JetStream,
        config::{EDGES_STREAM, EXEC_BUCKET_STREAM, JetStreamLimits, SYSMSGS_STREAM, StoreLimits},
        reconciler,
    },
    nats::Link,
};
use tiny_sdk::{
    engine::Registry,
    error::code,
    flow::FlowBuilder,
    run::{self, EmitRecord, RunStore as _, StepRecord},
};
use tiny_testkit::{NatsServer, durable_module, eventually};

const WAIT: Duration = Duration::from_secs(20);

async fn connect(broker: &NatsServer) -> Link {
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects to {}", broker.url());
    link
}

/// The broker's configuration of `stream`.
async fn config_of(js: &JetStream, stream: &str) -> async_nats::jetstream::stream::Config {
    js.context()
        .get_stream(stream)
        .await
        .expect("the stream exists")
        .cached_info()
        .config
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_edges_stream_refuses_the_hop_naming_the_stream_and_limit_and_the_module_serves_again() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    // The streams made first with a work queue of 3 messages: the modules keep it.
    let small = JetStreamLimits {
        edges: StoreLimits {
            max_msgs: 3,
            max_msg_size: 2048,
            ..JetStreamLimits::DEFAULT.edges
        },
        ..JetStreamLimits::DEFAULT
    };
    let filler = JetStream::with_limits(connect(&broker).await, "filler", "filler-0", small);
    filler.ensure().await.expect("streams");

    let flow = FlowBuilder::new()
        .module("d")
        .node("full.d.ask-1", "relay")
        .module("e")
        .node("full.e.echo-1", "relay")
        .edge("full.d.ask-1:out", "full.e.echo-1:input", json!("{{$}}"))
        .build();
    let registry = || {
        let mut r = Registry::default();
        r.register::<tiny_sdk::harness::Relay>();
        r
    };
    let d = durable_module(&broker, "d", registry(), &flow).await;
    let e = durable_module(&broker, "e", registry(), &flow).await;
    assert_eq!(
        config_of(&d.js, EDGES_STREAM).await.max_messages,
        3,
        "the limit the broker had is kept"
    );
    d.engine
        .send("full.d.ask-1:input", json!(1))
        .await
        .expect("a hop goes through while the stream has room");
    // The receiver answers before it acks, so that hop may still hold a place in
    // the stream: wait until it is gone, or the fillers below could meet a full one.
    let edges = d.js.context().get_stream(EDGES_STREAM).await.expect("the stream");
    eventually("the hop acked and gone from the stream", WAIT, || {
        let mut edges = edges.clone();
        async move { (edges.info().await.ok()?.state.messages == 0).then_some(()) }
    })
    .await;

    // A flood for a module nobody runs fills the work queue.
    let context = filler.context();
    for n in 0..3 {
        context
            .publish("tinymodule.nobody.msg", Bytes::from(format!("{n}")))
            .await
            .expect("sent")
            .await
            .expect("stored while there is room");
    }
    let refused = d
        .engine
        .send("full.d.ask-1:input", json!(2))
        .await
        .expect_err("the stream is full");
    assert_eq!(refused.code(), Some(code::STREAM_FULL), "{refused}");
    let text = refused.to_string();
    assert!(
        text.contains("`module-edges`") && text.contains("max_msgs") && text.contains("holds 3 messages"),
        "names the stream and the limit: {text}"
    );
    let stored = context
        .get_stream(EDGES_STREAM)
        .await
        .expect("stream")
        .cached_info()
        .state
        .messages;
    assert_eq!(stored, 3, "nothing stored was dropped for the new message");

    // The flood goes (its consumer would take it): the module serves again.
    context
        .get_stream(EDGES_STREAM)
        .await
        .expect("stream")
        .purge()
        .filter("tinymodule.nobody.msg")
        .await
        .expect("purged");
    d.engine
        .send("full.d.ask-1:input", json!(3))
        .await
        .expect("the module serves again: the hop is stored and answered");

    // One message over the stream's size limit is refused, naming it; the next fits.
    let refused = d
        .engine
        .send("full.d.ask-1:input", json!("x".repeat(4096)))
        .await
        .expect_err("over max_msg_size");
    assert_eq!(refused.code(), Some(code::STREAM_FULL), "{refused}");
    let text = refused.to_string();
    assert!(
        text.contains("`module-edges`") && text.contains("max_msg_size of 2048 bytes"),
        "{text}"
    );
    d.engine
        .send("full.d.ask-1:input", json!(4))
        .await
        .expect("a message under the limit goes through");
    d.receiver.stop().await;
    e.receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_added_where_the_broker_has_none_and_kept_where_it_has_its_own() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let link = connect(&broker).await;
    let js = JetStream::new(link.clone(), "p", "p-0");
    // As a Go pod makes them: Go's fields, no limit (the broker's -1), discard old.
    let context = js.context();
    for config in [
        jetstream::config::edges_stream(&StoreLimits {
            max_bytes: -1,
            max_msgs: -1,
            max_msg_size: -1,
        }),
        jetstream::config::sysmsgs_stream(&StoreLimits {
            max_bytes: -1,
            max_msgs: -1,
            max_msg_size: -1,
        }),
    ] {
        context
            .create_stream(async_nats::jetstream::stream::Config {
                discard: DiscardPolicy::Old,
                ..config
            })
            .await
            .expect("Go's stream");
    }
    js.ensure().await.expect("streams");
    let defaults = JetStreamLimits::DEFAULT;
    let edges = config_of(&js, EDGES_STREAM).await;
    assert_eq!(
        (
            edges.max_bytes,
            edges.max_messages,
            edges.max_message_size,
            edges.discard
        ),
        (
            defaults.edges.max_bytes,
            defaults.edges.max_msgs,
            defaults.edges.max_msg_size,
            DiscardPolicy::New
        ),
        "a work queue refuses new messages when full"
    );
    let sysmsgs = config_of(&js, SYSMSGS_STREAM).await;
    assert_eq!(
        (sysmsgs.max_bytes, sysmsgs.max_messages, sysmsgs.discard),
        (
            defaults.sysmsgs.max_bytes,
            defaults.sysmsgs.max_msgs,
            DiscardPolicy::Old
        ),
        "a fan-out stream lets its oldest (read) messages go"
    );
    let exec = config_of(&js, EXEC_BUCKET_STREAM).await;
    assert_eq!(
        (exec.max_bytes, exec.max_message_size, exec.discard),
        (defaults.exec.max_bytes, defaults.exec.max_msg_size, DiscardPolicy::New)
    );

    // Another module with other limits: the broker's stay, neither lowered nor raised.
    let other = JetStream::with_limits(
        link,
        "q",
        "q-0",
        JetStreamLimits {
            edges: StoreLimits {
                max_bytes: 1 << 20,
                max_msgs: 10,
                max_msg_size: 1024,
            },
            ..JetStreamLimits::DEFAULT
        },
    );
    other.ensure().await.expect("streams");
    let edges = config_of(&other, EDGES_STREAM).await;
    assert_eq!(
        (edges.max_bytes, edges.max_messages, edges.max_message_size),
        (
            defaults.edges.max_bytes,
            defaults.edges.max_msgs,
            defaults.edges.max_msg_size
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_ledger_refuses_a_record_naming_the_bucket_and_keeps_what_it_holds() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let js = JetStream::with_limits(
        connect(&broker).await,
        "p",
        "p-0",
        JetStreamLimits {
            exec: StoreLimits {
                max_bytes: 4096,
                ..JetStreamLimits::DEFAULT.exec
            },
            ..JetStreamLimits::DEFAULT
        },
    );
    js.ensure().await.expect("streams and bucket");
    let value = Bytes::from(vec![b'x'; 500]);
    let mut written = Vec::new();
    let refused = loop {
        let key = format!("exec/r/step/r.{}", written.len());
        match js.put(&key, value.clone()).await {
            Ok(()) => written.push(key),
            Err(e) => break e,
        }
        assert!(written.len() < 100, "4 KiB hold no 100 values of 500 bytes");
    };
    assert!(!written.is_empty(), "the bucket took values until it was full");
    assert_eq!(refused.code(), Some(code::STREAM_FULL), "{refused}");
    assert!(refused.is_retryable(), "{refused}");
    let text = refused.to_string();
    assert!(
        text.contains("`KV_TINY_EXEC`") && text.contains("max_bytes limit is 4096"),
        "names the bucket's stream and the limit: {text}"
    );
    for key in &written {
        assert_eq!(js.get(key).await.expect("read"), Some(value.clone()), "{key} was kept");
    }
}

/// Passes that treat every run as stale at once, and every run [`finished`] wrote as
/// old (an hour ago, past 40 min), but none as forgotten by its module (twice that).
fn eager() -> run::ReconcileSettings {
    run::ReconcileSettings {
        stale: Duration::ZERO,
        gc_after: Duration::from_secs(40 * 60),
        ..Default::default()
    }
}

/// A done record of node `node` whose step emitted one hop to `to`; returns the
/// hop's step key.
async fn stalled(js: &JetStream, run_id: &str, node: &str, to: &str) -> String {
    let root = run::root_step_key(run_id);
    let step_key = run::child_step_key(run_id, &root, "edge-1", 0);
    let hop = EmitRecord {
        to: to.to_owned(),
        from: format!("{node}:out"),
        edge_id: "edge-1".to_owned(),
        step_key: step_key.clone(),
        data: Bytes::from_static(b"{\"n\":1}"),
        reply_subject: String::new(),
        reply_target: String::new(),
        reply_deadline_unix_ms: 0,
    };
    let record = StepRecord::finished(node.to_owned(), None, vec![hop], run::Timestamp::now());
    js.put(
        &run::step_record_key(run_id, &root),
        record.to_json_bytes().expect("a record").into(),
    )
    .await
    .expect("written");
    step_key
}

/// A run finished an hour ago: one done record of node `node`, no hop.
async fn finished(js: &JetStream, run_id: &str, node: &str) -> String {
    let key = run::step_record_key(run_id, &run::root_step_key(run_id));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970");
    let ended = i64::try_from(now.as_millis()).expect("in range") - 3_600_000;
    let ended = run::Timestamp::from_unix_millis(ended).expect("a time");
    let mut record = StepRecord::finished(node.to_owned(), None, Vec::new(), ended);
    record.completed_at = ended;
    js.put(&key, record.to_json_bytes().expect("a record").into())
        .await
        .expect("written");
    key
}

async fn ledger(broker: &NatsServer, module: &str) -> std::sync::Arc<JetStream> {
    let js = JetStream::new(connect(broker).await, module, &format!("{module}-0"));
    js.ensure().await.expect("streams and bucket");
    js
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_acts_on_its_modules_runs_and_leaves_another_modules_alone() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let p = ledger(&broker, "p").await;
    let mine = run::new_run_id();
    let theirs = run::new_run_id();
    let my_hop = stalled(&p, &mine, "f.p.step-1", "f.x.step-1:input").await;
    let their_hop = stalled(&p, &theirs, "f.other.step-1", "f.x.step-1:input").await;
    let my_done = finished(&p, &run::new_run_id(), "f.p.step-1").await;
    let their_done = finished(&p, &run::new_run_id(), "f.other.step-1").await;

    let pass = reconciler::pass(&p, &eager()).await.expect("a pass");
    assert_eq!(
        (pass.redriven, pass.failed, pass.deleted, pass.conflicts),
        (1, 0, 1, 0),
        "{pass:?}"
    );
    assert_eq!(
        p.get(&run::redrive_key(&mine, &my_hop)).await.expect("read").as_deref(),
        Some(&b"1"[..]),
        "its own hop is re-driven"
    );
    assert_eq!(
        p.get(&run::redrive_key(&theirs, &their_hop)).await.expect("read"),
        None,
        "another module's hop is not"
    );
    assert_eq!(
        p.get(&my_done).await.expect("read"),
        None,
        "its finished run is removed"
    );
    assert!(
        p.get(&their_done).await.expect("read").is_some(),
        "another module's finished run is not"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_changed_between_the_passs_read_and_its_write_is_not_overwritten() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let p = ledger(&broker, "p").await;
    let settings = eager();

    // A re-drive counter another leader bumps after the pass read it.
    let bumped = run::new_run_id();
    let hop = stalled(&p, &bumped, "f.p.step-1", "f.x.step-1:input").await;
    let counter = run::redrive_key(&bumped, &hop);
    p.put(&counter, Bytes::from_static(b"1")).await.expect("written");
    // A hop re-driven to the limit that completes after the pass read its run.
    let late = run::new_run_id();
    let late_hop = stalled(&p, &late, "f.p.step-1", "f.x.step-1:input").await;
    p.put(
        &run::redrive_key(&late, &late_hop),
        Bytes::from(settings.max_redrives.to_string()),
    )
    .await
    .expect("written");
    // A finished run that a step writes to again after the pass read it.
    let revived = finished(&p, &run::new_run_id(), "f.p.step-1").await;

    let plan = reconciler::plan(&p, &settings).await.expect("a plan");
    assert_eq!(
        (plan.redrive.len(), plan.fail.len(), plan.delete.len()),
        (1, 1, 1),
        "{plan:?}"
    );
    p.put(&counter, Bytes::from_static(b"3"))
        .await
        .expect("the other leader");
    let done = StepRecord::finished("f.x.step-1".to_owned(), None, Vec::new(), run::Timestamp::now());
    let done = Bytes::from(done.to_json_bytes().expect("a record"));
    p.put(&run::step_record_key(&late, &late_hop), done.clone())
        .await
        .expect("the hop completes");
    p.put(&revived, done.clone()).await.expect("written again");

    let pass = reconciler::carry_out(&p, &plan).await;
    assert_eq!(
        (pass.redriven, pass.failed, pass.deleted, pass.conflicts),
        (0, 0, 0, 3),
        "{pass:?}"
    );
    assert_eq!(
        p.get(&counter).await.expect("read").as_deref(),
        Some(&b"3"[..]),
        "the other leader's count stays"
    );
    assert_eq!(
        p.get(&run::step_record_key(&late, &late_hop)).await.expect("read"),
        Some(done.clone()),
        "the completed hop is not marked failed"
    );
    assert_eq!(
        p.get(&revived).await.expect("read"),
        Some(done),
        "the rewritten record stays"
    );
}

/// Modules of one ledger each delete a finished run's key at the revision they
/// read: the one that comes second finds it gone, a deletion, not a conflict.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_run_another_pass_deleted_first_counts_as_deleted_not_as_a_conflict() {
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let p = ledger(&broker, "p").await;
    let gone = finished(&p, &run::new_run_id(), "f.p.step-1").await;

    let plan = reconciler::plan(&p, &eager()).await.expect("a plan");
    assert_eq!(plan.delete.len(), 1, "{plan:?}");
    p.delete(&gone).await.expect("the other pass deletes it first");

    let pass = reconciler::carry_out(&p, &plan).await;
    assert_eq!(
        (pass.redriven, pass.failed, pass.deleted, pass.conflicts),
        (0, 0, 1, 0),
        "{pass:?}"
    );
    assert_eq!(p.get(&gone).await.expect("read"), None, "the key stays gone");
}

//! The engine's hop spans, in-process: one span per delivery, under the hop that sent
//! it, across the fresh tasks delivery moves to on long chains, handed to the sink
//! installed. (A file of its own: the sink is the process's; its tests share one and
//! each reads the spans of its own nodes.)

use std::{
    cell::Cell,
    sync::{Mutex, OnceLock},
};
use tiny_testkit::components::{Answer, Slow};

use serde_json::json;
use tiny_sdk::{
    engine::{EndedHop, Engine, HopSpans, SpanParent, set_hop_spans},
    error::code,
    flow::{FlowBuilder, RetryPolicy},
    harness::Relay,
};

/// Records each hop span's `to`, id and parent id.
#[derive(Default)]
struct Hops(Mutex<Vec<Hop>>);

/// A hop span's `node:port`, its span id, its parent's, the `data` payload, and the
/// code of the error it ended with (`""` for an error without one).
type Hop = (String, u64, Option<u64>, Option<String>, Option<String>);

thread_local! {
    /// Whether the sink samples the traces that hops begin on this thread (each test
    /// runs on a thread of its own).
    static SAMPLE_ROOTS: Cell<bool> = const { Cell::new(true) };
}

impl HopSpans for Hops {
    fn parent(&self) -> Option<SpanParent> {
        None
    }

    fn sample_root(&self, _trace_id: u128) -> bool {
        SAMPLE_ROOTS.with(Cell::get)
    }

    fn ended(&self, hop: EndedHop<'_>) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((
            format!("{}:{}", hop.node, hop.port),
            hop.ids.span_id,
            hop.parent.map(|p| p.ids.span_id),
            hop.payload,
            hop.error.map(|e| e.code().unwrap_or_default().to_owned()),
        ));
    }
}

/// The process's sink, installed once.
fn hops() -> &'static Hops {
    static HOPS: OnceLock<&'static Hops> = OnceLock::new();
    HOPS.get_or_init(|| {
        let hops: &'static Hops = Box::leak(Box::default());
        set_hop_spans(Some(hops));
        hops
    })
}

/// The spans recorded of the nodes whose names start with `prefix`, in the order
/// they ended.
fn spans_of(prefix: &str) -> Vec<Hop> {
    let hops = hops().0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    hops.iter().filter(|h| h.0.starts_with(prefix)).cloned().collect()
}

#[tokio::test]
async fn every_hop_is_a_span_under_the_hop_that_sent_it() {
    hops();
    // Long enough that delivery continues on a fresh task (every 16 hops) on the way.
    let mut flow = FlowBuilder::new();
    for i in 0..20 {
        flow = flow.node(&format!("chain-n{i}"), "relay");
    }
    flow = flow.node("chain-end", "answer");
    for i in 0..20 {
        let to = if i == 19 {
            "chain-end:input".to_owned()
        } else {
            format!("chain-n{}:input", i + 1)
        };
        flow = flow.edge(&format!("chain-n{i}:out"), &to, json!("{{$}}"));
    }
    let engine = Engine::builder().register::<Relay>().register::<Answer>().build();
    for node in flow.build().nodes {
        engine.apply(node).await.expect("node loads");
    }
    engine.send("chain-n0:input", json!({"x": 1})).await.expect("arrives");

    let mut hops = spans_of("chain-");
    assert_eq!(hops.len(), 21, "{hops:?}");
    // Each ends after the one it sent: in the order they end, the last sent first.
    hops.reverse();
    assert_eq!(hops[0].0, "chain-n0:input", "{hops:?}");
    assert_eq!(hops[0].2, None, "the first hop is a root");
    for window in hops.windows(2) {
        assert_eq!(window[1].2, Some(window[0].1), "{hops:?}");
    }
    assert_eq!(hops[20].0, "chain-end:input", "{hops:?}");
    assert_eq!(
        hops[0].3.as_deref(),
        Some(r#"{"x":1}"#),
        "the input is the `data` payload"
    );
}

/// A hop dropped before it answered (here the edge's deadline passed) still ends its
/// span, as an error saying it was abandoned: the spans under it, exported already,
/// keep their parent.
#[tokio::test(start_paused = true)]
async fn a_hop_dropped_before_it_answers_ends_its_span_as_abandoned() {
    hops();
    let timeout = RetryPolicy {
        max_attempts: Some(1),
        timeout_ms: Some(50),
        ..Default::default()
    };
    let flow = FlowBuilder::new()
        .node("timeout-relay", "relay")
        .node("timeout-slow", "slow")
        .edge_with("timeout-relay:out", "timeout-slow:input", json!("{{$}}"), Some(timeout))
        .build();
    let engine = Engine::builder().register::<Relay>().register::<Slow>().build();
    for node in flow.nodes {
        engine.apply(node).await.expect("node loads");
    }
    let sent = engine.send("timeout-relay:input", json!({"x": 1})).await;
    assert!(sent.is_err(), "the edge's deadline passes: {sent:?}");

    let hops = spans_of("timeout-");
    let slow = hops
        .iter()
        .find(|h| h.0 == "timeout-slow:input")
        .unwrap_or_else(|| panic!("the slow hop's span: {hops:?}"));
    let relay = hops
        .iter()
        .find(|h| h.0 == "timeout-relay:input")
        .unwrap_or_else(|| panic!("the relay's span: {hops:?}"));
    assert_eq!(slow.2, Some(relay.1), "under the relay: {hops:?}");
    assert_eq!(
        slow.4.as_deref(),
        Some(code::ABANDONED),
        "an error saying it was abandoned: {hops:?}"
    );
}

/// A hop that begins a trace asks the sink whether the trace is sampled: when it is
/// not, neither that hop nor any it sends is recorded.
#[tokio::test]
async fn a_trace_the_sink_does_not_sample_records_no_span() {
    hops();
    let flow = FlowBuilder::new()
        .node("unsampled-relay", "relay")
        .node("unsampled-end", "answer")
        .edge("unsampled-relay:out", "unsampled-end:input", json!("{{$}}"))
        .build();
    let engine = Engine::builder().register::<Relay>().register::<Answer>().build();
    for node in flow.nodes {
        engine.apply(node).await.expect("node loads");
    }
    SAMPLE_ROOTS.with(|s| s.set(false));
    engine
        .send("unsampled-relay:input", json!({"x": 1}))
        .await
        .expect("arrives");
    assert_eq!(spans_of("unsampled-"), vec![], "no span of a trace not sampled");
    SAMPLE_ROOTS.with(|s| s.set(true));
    engine
        .send("unsampled-relay:input", json!({"x": 2}))
        .await
        .expect("arrives");
    assert_eq!(spans_of("unsampled-").len(), 2, "both hops of a sampled trace");
}

//! The engine's hop spans, in-process: one span per delivery, under the hop that sent
//! it, across the fresh tasks delivery moves to on long chains, handed to the sink
//! installed. (A file of its own: the sink is the process's.)

use std::sync::Mutex;
use tiny_testkit::components::Answer;

use serde_json::json;
use tiny_sdk::{
    engine::{EndedHop, Engine, HopSpans, SpanParent, set_hop_spans},
    flow::FlowBuilder,
    harness::Relay,
};

/// Records each hop span's `to`, id and parent id.
#[derive(Default)]
struct Hops(Mutex<Vec<Hop>>);

/// A hop span's `node:port`, its span id, its parent's, and the `data` payload.
type Hop = (String, u64, Option<u64>, Option<String>);

impl HopSpans for Hops {
    fn parent(&self) -> Option<SpanParent> {
        None
    }

    fn ended(&self, hop: EndedHop<'_>) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((
            format!("{}:{}", hop.node, hop.port),
            hop.ids.span_id,
            hop.parent.map(|p| p.ids.span_id),
            hop.payload,
        ));
    }
}

#[tokio::test]
async fn every_hop_is_a_span_under_the_hop_that_sent_it() {
    let hops: &'static Hops = Box::leak(Box::default());
    set_hop_spans(Some(hops));
    // Long enough that delivery continues on a fresh task (every 16 hops) on the way.
    let mut flow = FlowBuilder::new();
    for i in 0..20 {
        flow = flow.node(&format!("n{i}"), "relay");
    }
    flow = flow.node("end", "answer");
    for i in 0..20 {
        let to = if i == 19 {
            "end:input".to_owned()
        } else {
            format!("n{}:input", i + 1)
        };
        flow = flow.edge(&format!("n{i}:out"), &to, json!("{{$}}"));
    }
    let engine = Engine::builder().register::<Relay>().register::<Answer>().build();
    for node in flow.build().nodes {
        engine.apply(node).await.expect("node loads");
    }
    engine.send("n0:input", json!({"x": 1})).await.expect("arrives");

    let mut hops = hops.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    assert_eq!(hops.len(), 21, "{hops:?}");
    // Each ends after the one it sent: in the order they end, the last sent first.
    hops.reverse();
    assert_eq!(hops[0].0, "n0:input", "{hops:?}");
    assert_eq!(hops[0].2, None, "the first hop is a root");
    for window in hops.windows(2) {
        assert_eq!(window[1].2, Some(window[0].1), "{hops:?}");
    }
    assert_eq!(hops[20].0, "end:input", "{hops:?}");
    assert_eq!(
        hops[0].3.as_deref(),
        Some(r#"{"x":1}"#),
        "the input is the `data` payload"
    );
}

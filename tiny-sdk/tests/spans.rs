//! The engine's `tracing` spans, in-process: one `hop` span per delivery, under the hop
//! that sent it, across the fresh tasks delivery moves to on long chains. (A file of its
//! own: a test process with one subscriber, whose interest no other test races.)

use std::sync::{Arc, Mutex};
use tiny_testkit::components::Answer;

use serde_json::json;
use tiny_sdk::{engine::Engine, flow::FlowBuilder, harness::Relay};
use tracing_subscriber::{Layer, layer::SubscriberExt as _, registry::LookupSpan};

/// Records each `hop` span: its `to`, and the `to` of the nearest hop span above it.
#[derive(Clone, Default)]
struct Hops(Arc<Mutex<Vec<Hop>>>);

/// A hop span's `to`, and that of its nearest hop ancestor.
type Hop = (String, Option<String>);

struct To(String);

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Hops {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().name() != "hop" {
            return;
        }
        struct Visit(Option<String>);
        impl tracing::field::Visit for Visit {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "to" {
                    self.0 = Some(format!("{value:?}"));
                }
            }
        }
        let mut to = Visit(None);
        attrs.record(&mut to);
        let to = to.0.unwrap_or_default();
        let Some(span) = ctx.span(id) else { return };
        let parent = span
            .scope()
            .skip(1)
            .find_map(|s| s.extensions().get::<To>().map(|t| t.0.clone()));
        span.extensions_mut().insert(To(to.clone()));
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((to, parent));
    }
}

#[tokio::test]
async fn every_hop_is_a_span_under_the_hop_that_sent_it() {
    let hops = Hops::default();
    let subscriber = tracing_subscriber::registry().with(hops.clone());
    let _default = tracing::subscriber::set_default(subscriber);
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

    let hops = hops.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
    assert_eq!(hops.len(), 21, "{hops:?}");
    assert_eq!(hops[0], ("n0:input".to_owned(), None), "the first hop is a root");
    for window in hops.windows(2) {
        assert_eq!(window[1].1.as_ref(), Some(&window[0].0), "{hops:?}");
    }
}

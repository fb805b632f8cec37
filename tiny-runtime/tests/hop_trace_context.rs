//! The trace context on what a hop's handler sends over NATS, against a real
//! `nats-server` with JetStream on: the runtime's spans (`jetstream.client`) are
//! recorded by an OpenTelemetry layer on a subscriber of the test's own, whose ended
//! spans the test reads; the hops' spans by a sink of its own. (A file of its own:
//! the subscriber and the hop spans' sink are the process's; each test reads the
//! spans of its own nodes.)

mod support;

use std::{
    sync::{Mutex, OnceLock, PoisonError},
    time::Duration,
};

use futures::StreamExt as _;
use opentelemetry::{
    Context, KeyValue,
    baggage::BaggageExt as _,
    context::FutureExt as _,
    trace::{SpanContext, SpanId, TraceContextExt as _, TraceFlags, TraceId, TraceState, TracerProvider as _},
};
use opentelemetry_sdk::{
    error::OTelSdkResult,
    trace::{SdkTracerProvider, SpanData, SpanProcessor},
};
use serde_json::json;
use tiny_runtime::nats::{Link, wire};
use tiny_sdk::{
    engine::{EXECUTION_MODE_LABEL, EndedHop, Engine, HopSpans, Registry, SpanIds, SpanParent, set_hop_spans},
    flow::FlowBuilder,
    harness::Relay,
};
use tiny_testkit::{NatsServer, durable_module};
use tracing_subscriber::layer::SubscriberExt as _;

use support::sender::{CLIENT, Sender};

/// How long a message the test waits for may take.
const WAIT: Duration = Duration::from_secs(20);

/// The runtime's spans, as the exporter would get them.
#[derive(Debug, Default)]
struct Exported(Mutex<Vec<SpanData>>);

impl SpanProcessor for &'static Exported {
    fn on_start(&self, _: &mut opentelemetry_sdk::trace::Span, _: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).push(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// Each hop span: its node and ids.
#[derive(Debug, Default)]
struct Hops(Mutex<Vec<(String, SpanIds)>>);

impl HopSpans for Hops {
    /// As the runtime's sink: the OpenTelemetry context made current (a request's
    /// extracted parent), there being no `tracing` span around a hop here.
    fn parent(&self) -> Option<SpanParent> {
        let cx = Context::current();
        let span = cx.span();
        let sc = span.span_context();
        sc.is_valid().then(|| SpanParent {
            ids: SpanIds {
                trace_id: u128::from_be_bytes(sc.trace_id().to_bytes()),
                span_id: u64::from_be_bytes(sc.span_id().to_bytes()),
                sampled: sc.is_sampled(),
            },
            remote: sc.is_remote(),
        })
    }

    fn ended(&self, hop: EndedHop<'_>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((hop.node.to_owned(), hop.ids));
    }
}

/// The process's span recorders, installed once.
fn recorded() -> (&'static Exported, &'static Hops) {
    static ONCE: OnceLock<(&'static Exported, &'static Hops)> = OnceLock::new();
    *ONCE.get_or_init(|| {
        let exported: &'static Exported = Box::leak(Box::default());
        let provider = SdkTracerProvider::builder().with_span_processor(exported).build();
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        let hops: &'static Hops = Box::leak(Box::default());
        set_hop_spans(Some(hops));
        (exported, hops)
    })
}

/// The ids of the hop span of `node`.
fn hop_of(hops: &Hops, node: &str) -> SpanIds {
    let hops = hops.0.lock().unwrap_or_else(PoisonError::into_inner);
    let of: Vec<SpanIds> = hops.iter().filter(|(n, _)| n == node).map(|(_, ids)| *ids).collect();
    assert_eq!(of.len(), 1, "one hop of {node}: {hops:?}");
    of[0]
}

/// The trace and span ids of a message's `Traceparent`.
fn traceparent(message: &async_nats::Message) -> Option<(u128, u64)> {
    let value = message.headers.as_ref()?.get(wire::header::TRACEPARENT)?.as_str();
    let mut parts = value.split('-');
    let (_, trace, span) = (parts.next()?, parts.next()?, parts.next()?);
    Some((
        u128::from_str_radix(trace, 16).ok()?,
        u64::from_str_radix(span, 16).ok()?,
    ))
}

/// Module `near` on `broker`, its node `{flow}.near.first-1` (durable) emitting to
/// `{flow}.far.last-1` of module `far`, which is not running; and a subscription that
/// sees the stored emit on `far`'s subject.
async fn durable_emit(broker: &NatsServer, flow: &str) -> (tiny_testkit::DurableModule, async_nats::Subscriber) {
    let watcher = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(watcher.wait_up(WAIT).await, "connects");
    let stored = watcher
        .client()
        .subscribe(wire::subject("far"))
        .await
        .expect("subscribes");
    watcher.client().flush().await.expect("subscribed");
    let first = format!("{flow}.near.first-1");
    let mut defined = FlowBuilder::new()
        .module("near")
        .node(&first, "relay")
        .module("far")
        .node(&format!("{flow}.far.last-1"), "relay")
        .edge(
            &format!("{first}:out"),
            &format!("{flow}.far.last-1:input"),
            json!("{{$}}"),
        )
        .build();
    for n in &mut defined.nodes {
        if n.name == first {
            n.labels.insert(EXECUTION_MODE_LABEL.to_owned(), "durable".to_owned());
        }
    }
    let mut registry = Registry::default();
    registry.register::<Relay>();
    (durable_module(broker, "near", registry, &defined).await, stored)
}

/// A durable run's emit is stored with the runtime's `jetstream.client` producer
/// span, under the emitting hop, as its parent, as a blocking hop's message is: not
/// the hop itself, which would leave the producer span without children and the
/// receiving hop beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_emit_names_its_producer_span_as_the_parent() {
    let (exported, hops) = recorded();
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let (near, mut stored) = durable_emit(&broker, "producer").await;
    near.engine
        .send("producer.near.first-1:input", json!({}))
        .await
        .expect("the first step runs");

    let message = tokio::time::timeout(WAIT, stored.next())
        .await
        .expect("the emit is stored in time")
        .expect("the stored emit");
    let hop = hop_of(hops, "producer.near.first-1");
    let (trace, parent) = traceparent(&message).expect("a Traceparent");
    assert_eq!(trace, hop.trace_id, "the emitting hop's trace");
    {
        let spans = exported.0.lock().unwrap_or_else(PoisonError::into_inner);
        let producer = spans
            .iter()
            .find(|s| s.name == "jetstream.client" && s.span_context.span_id() == SpanId::from(parent))
            .unwrap_or_else(|| panic!("the parent is a producer span: {parent:016x}, {spans:?}"));
        assert_eq!(
            producer.parent_span_id,
            SpanId::from(hop.span_id),
            "the producer span is under the emitting hop"
        );
    }
    near.receiver.stop().await;
}

/// The trace the incoming request continues.
const INCOMING_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// What a receiver makes current for a request that came with `traceparent`,
/// `tracestate: vendor=opaque` and `baggage: tenant=acme`.
fn incoming() -> Context {
    let state = TraceState::from_key_value([("vendor", "opaque")]).expect("a trace state");
    let span = SpanContext::new(
        TraceId::from_hex(INCOMING_TRACE).expect("a trace id"),
        SpanId::from_hex("00f067aa0ba902b7").expect("a span id"),
        TraceFlags::SAMPLED,
        true,
        state,
    );
    Context::new()
        .with_remote_span_context(span)
        .with_baggage([KeyValue::new("tenant", "acme")])
}

/// The request's trace, its vendor state and its baggage, as `message` carries them.
fn carried(message: &async_nats::Message) -> (Option<String>, Option<&str>, Option<&str>) {
    let header = |key: &str| message.headers.as_ref()?.get(key).map(async_nats::HeaderValue::as_str);
    (
        traceparent(message).map(|(trace, _)| format!("{trace:032x}")),
        header(wire::header::TRACESTATE),
        header(wire::header::BAGGAGE),
    )
}

/// Waits for `what` on `sub` and checks that it carries the incoming request's trace,
/// vendor state and baggage.
async fn carries_the_incoming_context(sub: &mut async_nats::Subscriber, what: &str) {
    let message = tokio::time::timeout(WAIT, sub.next())
        .await
        .unwrap_or_else(|_| panic!("{what} comes in time"))
        .unwrap_or_else(|| panic!("{what}: the subscription ended"));
    assert_eq!(
        carried(&message),
        (
            Some(INCOMING_TRACE.to_owned()),
            Some("vendor=opaque"),
            Some("tenant=acme")
        ),
        "{what}"
    );
}

/// The request's baggage and vendor trace state reach what a handler sends with
/// `nats::send`, in the request's trace, as the Go SDK's otel propagation carries
/// them: the hop's context keeps what is around it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baggage_and_trace_state_reach_what_a_handler_sends() {
    recorded();
    let broker = NatsServer::start().await.expect("nats-server");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects");
    let client = link.client().clone();
    let mut sent = client.subscribe(wire::subject("other-v0")).await.expect("subscribes");
    client.flush().await.expect("subscribed");
    CLIENT.set(client).expect("set once");
    let engine = Engine::builder().register::<Sender>().build();
    for node in FlowBuilder::new().node("baggage-1", "sender").build().nodes {
        engine.apply(node).await.expect("node loads");
    }
    engine
        .send("baggage-1:input", json!({}))
        .with_context(incoming())
        .await
        .expect("sends");

    carries_the_incoming_context(&mut sent, "the handler's message").await;
}

/// The same through a durable emit's producer span, which is made a child of the
/// emitting hop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baggage_and_trace_state_reach_a_durable_emit() {
    recorded();
    let broker = NatsServer::start_with(&["--jetstream"]).await.expect("nats-server");
    let (near, mut stored) = durable_emit(&broker, "baggage").await;
    near.engine
        .send("baggage.near.first-1:input", json!({}))
        .with_context(incoming())
        .await
        .expect("the first step runs");

    carries_the_incoming_context(&mut stored, "the stored emit").await;
    near.receiver.stop().await;
}

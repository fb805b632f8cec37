//! Hop spans as OpenTelemetry span data: the engine hands each recorded hop's span
//! ([`EndedHop`]) to [`HopExport`], which builds its [`SpanData`] (Go's span name and
//! attributes, the `data`, `expression_error` and `exception` events) and gives it to
//! the span processor, the batch exporter, that the runtime's own spans go to.
//!
//! (The flow bench compiles this file too, so that what it measures is this code: it
//! names only `tiny_sdk`, `opentelemetry`, `opentelemetry_sdk`, `tracing` and
//! `tracing_opentelemetry`.)

use std::{borrow::Cow, cell::RefCell, sync::Arc};

use opentelemetry::{
    Context, InstrumentationScope, KeyValue, StringValue,
    trace::{Event, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId, TraceState},
};
use opentelemetry_sdk::trace::{
    Sampler, SamplingDecision, ShouldSample, SpanData, SpanEvents, SpanLinks, SpanProcessor,
};
use tiny_sdk::engine::{EndedHop, HopSpans, SpanIds, SpanParent};

/// Gives hop spans to a span processor.
#[derive(Debug)]
pub struct HopExport<P> {
    processor: Arc<P>,
    scope: InstrumentationScope,
    /// Decides whether a trace a hop begins is sampled.
    sampler: Box<dyn ShouldSample>,
}

impl<P: SpanProcessor> HopExport<P> {
    /// Hop spans for `processor`, from the instrumentation scope `scope` (the runtime's
    /// tracer's), every trace sampled.
    pub fn new(processor: Arc<P>, scope: InstrumentationScope) -> Self {
        HopExport {
            processor,
            scope,
            sampler: Box::new(Sampler::AlwaysOn),
        }
    }

    /// Samples the traces hops begin with `sampler`: the tracer provider's, which
    /// `OTEL_TRACES_SAMPLER` configures.
    #[must_use]
    pub fn with_sampler(mut self, sampler: Box<dyn ShouldSample>) -> Self {
        self.sampler = sampler;
        self
    }
}

/// The OpenTelemetry span context of `ids`.
pub fn span_context(ids: SpanIds, remote: bool) -> SpanContext {
    let flags = if ids.sampled {
        TraceFlags::SAMPLED
    } else {
        TraceFlags::default()
    };
    SpanContext::new(
        TraceId::from(ids.trace_id),
        SpanId::from(ids.span_id),
        flags,
        remote,
        TraceState::NONE,
    )
}

/// The OpenTelemetry context around what runs here: the recorded `tracing` span's (a
/// signal's, a receiver's), else the one made current (a request's extracted parent).
pub fn outer_context() -> Context {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    let current = tracing::Span::current();
    if current.is_disabled() {
        Context::current()
    } else {
        current.context()
    }
}

/// A context whose span is the hop span `ids` (the parent of a span the runtime makes
/// for what the hop sends), within `outer`, the context around the hop: its baggage
/// kept, and its vendor trace state (`tracestate`) while the hop is in its trace, as
/// an OpenTelemetry child span would inherit them. A hop span has neither of its own.
pub fn hop_context(ids: SpanIds, outer: &Context) -> Context {
    let outer_span = outer.span();
    let around = outer_span.span_context();
    let state = if around.trace_id() == TraceId::from(ids.trace_id) {
        around.trace_state().clone()
    } else {
        TraceState::NONE
    };
    let hop = span_context(ids, false);
    outer.with_remote_span_context(SpanContext::new(
        hop.trace_id(),
        hop.span_id(),
        hop.trace_flags(),
        false,
        state,
    ))
}

impl<P: SpanProcessor> HopSpans for HopExport<P> {
    /// The recorded `tracing` span around the delivery (a signal's, a receiver's), else
    /// the OpenTelemetry context made current.
    fn parent(&self) -> Option<SpanParent> {
        let cx = outer_context();
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

    /// As the sampler decides for a root span (a trace id ratio reads only the id).
    fn sample_root(&self, trace_id: u128) -> bool {
        let result = self
            .sampler
            .should_sample(None, TraceId::from(trace_id), "", &SpanKind::Internal, &[], &[]);
        result.decision == SamplingDecision::RecordAndSample
    }

    fn ended(&self, hop: EndedHop<'_>) {
        self.processor.on_end(span_data(hop, &self.scope));
    }
}

/// Slots of the per-thread string cache ([`interned`]): more than the names a module's
/// hops use at once (nodes, ports, edges, `node:port`s), few enough to stay small.
const INTERNED: usize = 256;

thread_local! {
    /// Names already made shareable, by where the engine holds them.
    static NAMES: RefCell<Vec<Option<Arc<str>>>> = RefCell::new(vec![None; INTERNED]);
}

/// `text` as a shared string: the one made last time for the same text at the same
/// place (the engine's names live as long as their node), else a new one. A hop's
/// names are the same on every message, so a span then copies none of them. Keyed by
/// address, checked by content: a slot reused for another string is just replaced.
fn interned(text: &str, key: usize, make: impl FnOnce() -> Arc<str>) -> Arc<str> {
    // Fibonacci hashing of the address: the low bits of pointers repeat.
    let slot = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) % INTERNED;
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        match &names[slot] {
            Some(name) if **name == *text => name.clone(),
            _ => {
                let name = make();
                names[slot] = Some(name.clone());
                name
            }
        }
    })
}

/// A name the engine holds, as an attribute's value: shared ([`interned`]).
fn name(text: &str) -> StringValue {
    if text.is_empty() {
        return StringValue::from("");
    }
    interned(text, text.as_ptr() as usize ^ text.len(), || Arc::from(text)).into()
}

/// The span data of a hop span, as the Go SDK names and describes it.
pub fn span_data(hop: EndedHop<'_>, scope: &InstrumentationScope) -> SpanData {
    // `node:port`: the span's name and `to`, shared as the names are (by the node's
    // and the port's places).
    let key = (hop.node.as_ptr() as usize).rotate_left(17) ^ (hop.port.as_ptr() as usize) ^ 0x5bd1;
    let mut to = String::with_capacity(hop.node.len() + 1 + hop.port.len());
    to.push_str(hop.node);
    to.push(':');
    to.push_str(hop.port);
    let shared = interned(&to, key, || Arc::from(to.as_str()));
    let mut attributes = Vec::with_capacity(13);
    attributes.extend([
        KeyValue::new("to", shared),
        KeyValue::new("from", name(hop.from)),
        KeyValue::new("edgeID", name(hop.edge_id)),
        KeyValue::new("flowID", name(hop.flow_id)),
        KeyValue::new("projectID", name(hop.project_id)),
        KeyValue::new("tiny.module", name(hop.module)),
        KeyValue::new("tiny.component", name(hop.component)),
        KeyValue::new("tiny.node", name(hop.node)),
        KeyValue::new("tiny.port", name(hop.port)),
        KeyValue::new("tiny.depth", i64::from(hop.depth)),
        KeyValue::new("tiny.attempt", i64::from(hop.attempt)),
        KeyValue::new("tiny.outcome", if hop.error.is_some() { "error" } else { "ok" }),
    ]);
    let mut events = Vec::with_capacity(hop.expressions.len() + 2);
    for f in hop.expressions {
        events.push(Event::new(
            "expression_error",
            hop.start,
            vec![
                KeyValue::new("expression", f.expression.clone()),
                KeyValue::new("error", f.message.clone()),
                KeyValue::new("field", f.pointer.clone()),
            ],
            0,
        ));
    }
    if let Some(payload) = hop.payload {
        events.push(Event::new(
            "data",
            hop.start,
            vec![KeyValue::new("payload", payload)],
            0,
        ));
    }
    let status = match hop.error {
        None => Status::Unset,
        Some(e) => {
            if let Some(code) = e.code() {
                attributes.push(KeyValue::new("tiny.error.code", code.to_owned()));
            }
            let message = e.to_string();
            // As OpenTelemetry's `RecordError`, which the Go SDK calls.
            events.push(Event::new(
                "exception",
                hop.end,
                vec![KeyValue::new("exception.message", message.clone())],
                0,
            ));
            Status::error(message)
        }
    };
    let mut span_events = SpanEvents::default();
    span_events.events = events;
    let (parent_span_id, parent_span_is_remote) = match hop.parent {
        Some(p) => (SpanId::from(p.ids.span_id), p.remote),
        None => (SpanId::INVALID, false),
    };
    SpanData {
        span_context: span_context(hop.ids, false),
        parent_span_id,
        parent_span_is_remote,
        span_kind: SpanKind::Internal,
        name: Cow::Owned(to),
        start_time: hop.start,
        end_time: hop.end,
        attributes,
        dropped_attributes_count: 0,
        events: span_events,
        links: SpanLinks::default(),
        status,
        instrumentation_scope: scope.clone(),
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry_sdk::error::OTelSdkResult;

    use super::*;

    /// A processor that keeps nothing: the sampling decision is the sink's own.
    #[derive(Debug)]
    struct Discard;

    impl SpanProcessor for Discard {
        fn on_start(&self, _: &mut opentelemetry_sdk::trace::Span, _: &Context) {}
        fn on_end(&self, _: SpanData) {}
        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }
        fn shutdown_with_timeout(&self, _: std::time::Duration) -> OTelSdkResult {
            Ok(())
        }
    }

    fn export(sampler: Sampler) -> HopExport<Discard> {
        HopExport::new(Arc::new(Discard), InstrumentationScope::builder("test").build()).with_sampler(Box::new(sampler))
    }

    /// The trace a hop begins is sampled as the configured sampler says
    /// (`OTEL_TRACES_SAMPLER`): `always_off` and a ratio of 0 sample none, the default
    /// (parent based, always on) and a ratio of 1 all.
    #[test]
    fn a_root_hop_is_sampled_as_the_sampler_says() {
        let ids = [1u128, u128::MAX / 3, u128::MAX];
        for (sampler, sampled) in [
            (Sampler::AlwaysOff, false),
            (Sampler::TraceIdRatioBased(0.0), false),
            (Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(0.0))), false),
            (Sampler::ParentBased(Box::new(Sampler::AlwaysOn)), true),
            (Sampler::TraceIdRatioBased(1.0), true),
        ] {
            let name = format!("{sampler:?}");
            let export = export(sampler);
            for id in ids {
                assert_eq!(export.sample_root(id), sampled, "{name}, trace {id:x}");
            }
        }
    }
}

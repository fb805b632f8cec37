//! The trace context on a NATS message, as a Go module writes and reads it: the W3C
//! keys in the canonical MIME case of Go's `http.Header`.

use opentelemetry::{
    Context,
    propagation::{Extractor, Injector, TextMapPropagator as _},
};

use super::wire::header;
use crate::telemetry::propagator;

/// The W3C keys as Go's `propagation.HeaderCarrier` (an `http.Header`) puts them on a
/// NATS message: canonical MIME case, the only form a Go receiver finds.
fn canonical(key: &str) -> Option<&'static str> {
    match key {
        "traceparent" => Some(header::TRACEPARENT),
        "tracestate" => Some(header::TRACESTATE),
        "baggage" => Some(header::BAGGAGE),
        _ => None,
    }
}

struct NatsWriter<'a>(&'a mut async_nats::HeaderMap);

impl Injector for NatsWriter<'_> {
    fn set(&mut self, key: &str, value: String) {
        // An empty `Tracestate` (no vendor state) is no header at all, as Go's carrier
        // leaves it out.
        if value.is_empty() {
            return;
        }
        if let (Some(key), Ok(value)) = (canonical(key), value.parse::<async_nats::HeaderValue>()) {
            self.0.insert(key, value);
        }
    }
}

struct NatsReader<'a>(Option<&'a async_nats::HeaderMap>);

impl Extractor for NatsReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        let headers = self.0?;
        // Go writes the canonical key; a hand-made client may write it in lower case.
        canonical(key)
            .and_then(|k| headers.get(k))
            .or_else(|| headers.get(key))
            .map(async_nats::HeaderValue::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        ["traceparent", "tracestate", "baggage"]
            .into_iter()
            .filter(|k| self.get(k).is_some())
            .collect()
    }
}

/// Puts `span`'s trace context into NATS headers, as a Go module writes it
/// (`Traceparent`, ...); nothing for a span not recorded (the flow's spans are off
/// while traces are not exported), as the gRPC side decides.
pub fn inject_nats(span: &tracing::Span, headers: &mut async_nats::HeaderMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    if span.is_disabled() {
        return;
    }
    propagator().inject_context(&span.context(), &mut NatsWriter(headers));
}

/// Puts the trace context of what runs here into NATS headers: the hop whose handler
/// runs ([`current_hop`](tiny_sdk::engine::current_hop)), which is no `tracing` span,
/// so that what a handler sends is the hop's child; else the current `tracing` span.
pub(crate) fn inject_nats_here(headers: &mut async_nats::HeaderMap) {
    match tiny_sdk::engine::current_hop() {
        // A hop is current only while hop spans are recorded.
        Some(ids) => {
            let cx = crate::telemetry::hop::hop_context(ids, &crate::telemetry::hop::outer_context());
            propagator().inject_context(&cx, &mut NatsWriter(headers));
        }
        None => inject_nats(&tracing::Span::current(), headers),
    }
}

/// The trace context NATS headers carry (empty without one).
pub fn extract_nats(headers: Option<&async_nats::HeaderMap>) -> Context {
    propagator().extract(&NatsReader(headers))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use opentelemetry::trace::TraceContextExt as _;

    use super::*;

    #[test]
    fn trace_context_crosses_nats_in_gos_canonical_case() {
        use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
        let span = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        );
        let cx = Context::new().with_remote_span_context(span);
        let mut headers = async_nats::HeaderMap::new();
        propagator().inject_context(&cx, &mut NatsWriter(&mut headers));
        // What a Go receiver finds: the canonical key, never the lower-case one.
        assert_eq!(
            headers.get("Traceparent").map(async_nats::HeaderValue::as_str),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        );
        assert!(headers.get("traceparent").is_none());
        // No vendor state: no `Tracestate` header, not an empty one (issue 47).
        assert!(headers.get("Tracestate").is_none(), "{headers:?}");
        // Read back, from Go's form and from a lower-case one alike.
        let back = extract_nats(Some(&headers));
        assert_eq!(
            back.span().span_context().trace_id(),
            cx.span().span_context().trace_id()
        );
        let mut lower = async_nats::HeaderMap::new();
        lower.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert!(extract_nats(Some(&lower)).span().span_context().is_valid());
        assert!(!extract_nats(None).span().span_context().is_valid());
    }
}

//! Spans of the flow: one `hop` span per delivery to a node, from the `tracing`
//! crate, under the target [`TARGET`].
//!
//! The SDK only makes spans; whoever installs a `tracing` subscriber decides what
//! becomes of them (`tiny-runtime` exports them by OTLP when `OTEL_*` says where, and
//! turns the target off otherwise, so that a hop then pays one cached check).
//!
//! A hop's span is entered while its handler runs, so everything the handler emits is
//! delivered in hop spans that are its children: a flow run is one tree. The
//! attribute names the Go SDK uses on its spans are kept (`to`, `from`, `edgeID`,
//! `flowID`, `projectID`), so a mixed Go and Rust flow reads the same; tiny's own
//! are under `tiny.`.

use std::fmt;

use tracing::{Span, field::Empty};

use crate::{error::Error, flow::Node, message::Reply, msg::Msg, redact::Secrets};

use super::address::Source;

/// The `tracing` target of every span the flow engine makes.
pub const TARGET: &str = "tiny::flow";

/// The most bytes of a payload a `data` event keeps.
pub const MAX_PAYLOAD: usize = 16 * 1024;

use crate::contract::label::{FLOW_NAME as FLOW_LABEL, PROJECT_NAME as PROJECT_LABEL};

/// `node:port`, formatted only when a span is recorded.
struct Addr<'a>(&'a str, &'a str);

impl fmt::Display for Addr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.0, self.1)
    }
}

/// The span of one delivery to `node`'s `port`. Its fields are only evaluated when
/// the span is enabled.
#[inline(always)]
pub(crate) fn hop_span(module: &str, node: &Node, port: &str, source: &Source<'_>, depth: u32, attempt: u32) -> Span {
    let (from, edge_id) = match source {
        Source::Signal => ("signal", ""),
        Source::Edge { from, edge_id } => (*from, *edge_id),
    };
    tracing::info_span!(
        target: TARGET,
        "hop",
        otel.name = %Addr(&node.name, port),
        otel.kind = "internal",
        to = %Addr(&node.name, port),
        from,
        edgeID = edge_id,
        flowID = node.labels.get(FLOW_LABEL).map_or("", String::as_str),
        projectID = node.labels.get(PROJECT_LABEL).map_or("", String::as_str),
        tiny.module = module,
        tiny.component = node.spec.component.as_str(),
        tiny.node = node.name.as_str(),
        tiny.port = port,
        tiny.depth = depth,
        tiny.attempt = attempt,
        tiny.outcome = Empty,
        tiny.error.code = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    )
}

/// Records how a call ended on its span: `tiny.outcome` is `ok` or `error`; an error
/// also sets the span's OpenTelemetry status and, on a span with the field,
/// `tiny.error.code`. Nothing on a span that is not recorded. The engine's hop spans
/// and the runtime's client spans (a gRPC or NATS request, a signal) record alike.
pub fn record_outcome<T>(span: &Span, result: &Result<T, Error>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(_) => {
            span.record("tiny.outcome", "ok");
        }
        Err(e) => {
            span.record("tiny.outcome", "error");
            span.record("otel.status_code", "ERROR");
            span.record("otel.status_description", tracing::field::display(e));
            if let Some(code) = e.code() {
                span.record("tiny.error.code", code);
            }
        }
    }
}

/// Records how a hop ended on its span ([`record_outcome`]); a failure is first an
/// `exception` event with the message, as OpenTelemetry's `RecordError` (which the Go
/// SDK calls) makes it.
pub(crate) fn record(span: &Span, result: &Result<Reply, Error>) {
    if let Err(e) = result
        && !span.is_disabled()
    {
        tracing::event!(
            target: TARGET,
            parent: span,
            tracing::Level::ERROR,
            exception.message = %e,
            "exception"
        );
    }
    record_outcome(span, result);
}

/// Records a hop's input on its span as a `data` event with the JSON in `payload`
/// (the Go SDK's event), secret fields masked and cut at [`MAX_PAYLOAD`] bytes. Nothing
/// is encoded unless the span is recorded.
pub(crate) fn data(input: &Msg, secrets: &Secrets) {
    tracing::event!(
        target: TARGET,
        tracing::Level::INFO,
        payload = %Payload(input, secrets),
        "data"
    );
}

/// A message's masked JSON, written when a recorded event asks for it.
struct Payload<'a>(&'a Msg, &'a Secrets);

impl fmt::Display for Payload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Straight from the typed value, unless something may need masking: a
        // declared secret, or a key that may name a credential.
        let direct = if self.1.is_empty() {
            self.0
                .to_json_bytes()
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .filter(|text| !crate::redact::is_credential_key(text))
        } else {
            None
        };
        let text = direct.or_else(|| self.0.json().ok().map(|v| self.1.masked_published(v).to_string()));
        let Some(mut text) = text else {
            return f.write_str("<not JSON>");
        };
        if text.len() > MAX_PAYLOAD {
            let mut cut = MAX_PAYLOAD;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
        }
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A span's `data` payload masks declared secrets and, as Go's spans, whatever a
    /// credential-shaped key holds; a payload with neither is written as it is.
    #[test]
    fn a_payload_masks_credential_shaped_keys() {
        let plain = Msg::new(json!({"city": "Oslo"}));
        assert_eq!(Payload(&plain, Secrets::none()).to_string(), r#"{"city":"Oslo"}"#);
        let keyed = Msg::new(json!({"city": "Oslo", "auth": {"api_key": "sk-1"}}));
        assert_eq!(
            Payload(&keyed, Secrets::none()).to_string(),
            r#"{"city":"Oslo","auth":{"api_key":"<redacted>"}}"#
        );
        // A value that only mentions a credential's name is not masked.
        let mention = Msg::new(json!({"note": "reset your password"}));
        assert_eq!(
            Payload(&mention, Secrets::none()).to_string(),
            r#"{"note":"reset your password"}"#
        );
    }
}

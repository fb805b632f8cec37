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
                .filter(|text| !may_hold_credential(text))
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

/// Whether JSON `text` may hold something masking would hide: an object key that
/// names a credential ([`is_credential_key`](crate::redact::is_credential_key)), or a
/// string under `key` or `name` that does (a `{key, value}` pair such as a header
/// list). Reads only the keys and those values, not every byte (a recorded hop runs it
/// over its whole input). A string with an escape in such a place counts as a yes (it
/// may spell a name in escapes), and so does text that does not read as JSON: the
/// payload then takes the masking way, which decides on the parsed value.
fn may_hold_credential(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    // Whether the last key read was `key` or `name`.
    let mut pair_key = false;
    while let Some(open) = bytes[at..].iter().position(|&b| b == b'"') {
        let start = at + open + 1;
        let mut end = start;
        let mut escaped = false;
        loop {
            match bytes.get(end) {
                None => return true,
                Some(b'\\') => {
                    escaped = true;
                    end += 2;
                }
                Some(b'"') => break,
                Some(_) => end += 1,
            }
        }
        at = end + 1;
        let is_key = bytes[at..]
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|&b| b == b':');
        // `start` follows a quote and `end` stands on one: both are char boundaries.
        let string = &text[start..end];
        if is_key {
            if escaped || crate::redact::is_credential_key(string) {
                return true;
            }
            pair_key = !escaped && (string == "key" || string == "name");
        } else if pair_key {
            if escaped || crate::redact::is_credential_key(string) {
                return true;
            }
            pair_key = false;
        }
    }
    false
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

    /// What the payload's quick look lets through unmasked is only what masking would
    /// leave alone: a `{key, value}` or `{name, value}` pair naming a credential, and a
    /// key spelled in escapes (as a peer's raw JSON may), are masked too.
    #[test]
    fn a_payload_masks_credential_pairs_and_escaped_keys() {
        let pair = Msg::new(json!({"headers": [{"key": "Authorization", "value": "Bearer x"}]}));
        assert_eq!(
            Payload(&pair, Secrets::none()).to_string(),
            r#"{"headers":[{"key":"Authorization","value":"<redacted>"}]}"#
        );
        let named = Msg::new(json!({"headers": [{"name": "X-Api-Key", "value": "k-1"}], "n": 1}));
        assert_eq!(
            Payload(&named, Secrets::none()).to_string(),
            r#"{"headers":[{"name":"X-Api-Key","value":"<redacted>"}],"n":1}"#
        );
        let escaped = Msg::from_json_bytes(br#"{"p\u0061ssword" : "hunter2", "user": "ada"}"#.to_vec());
        assert_eq!(
            Payload(&escaped, Secrets::none()).to_string(),
            r#"{"password":"<redacted>","user":"ada"}"#
        );
        // A pair whose name is no credential, and a credential's name as a plain
        // value, stay as they are.
        let plain = Msg::new(json!({"headers": [{"key": "Accept", "value": "*/*"}], "note": "token"}));
        assert_eq!(
            Payload(&plain, Secrets::none()).to_string(),
            r#"{"headers":[{"key":"Accept","value":"*/*"}],"note":"token"}"#
        );
    }
}

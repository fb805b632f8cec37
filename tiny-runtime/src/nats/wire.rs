//! The Go SDK's core NATS wire, byte for byte: subjects, header names, how a reply
//! says "a value", "nothing" or "an error" (`go-nats.md` §2, §4 and §8).
//!
//! | header | on | carries |
//! | --- | --- | --- |
//! | `x-to` | requests | `<node>:<port>` the message is for |
//! | `x-from` | requests | `<node>:<port>` of the sender; `signal` from outside a flow; empty for a direct emit |
//! | `x-edge-id` | requests | the edge's id (may be empty) |
//! | `Nats-Msg-Id` | requests | the edge's id again (Go's core sender sets it, even empty) |
//! | `x-message-depth` | requests | the hop count, decimal, only when above 0 |
//! | `x-reply-inbox` | signals waiting for a reply, JetStream's blocking hops | the inbox, beside the native reply subject |
//! | `x-run-id`, `x-step-key` | JetStream's durable hops | the run and the step (the step key is also `Nats-Msg-Id`) |
//! | `x-reply-subject`, `x-reply-target`, `x-reply-deadline` | durable hops of a run with an addressed answer | where the answer goes, and until when (Unix ms) |
//! | `Traceparent`, `Tracestate`, `Baggage` | requests | W3C trace context, in Go's canonical case |
//! | `x-error`, `x-error-code` | replies | the handler's error and its code |
//! | `x-empty` | replies | `1`: success with no value |
//!
//! A success with a value is the value's JSON with no headers at all. Header names are
//! case-sensitive: Go's `nats.Header` does not canonicalise, so they are written
//! exactly as above.
//!
//! tiny adds, on error replies only, the error's kind, origin and whether it was
//! relayed (`x-error-kind`, `x-error-origin`, `x-error-relayed`, the names the gRPC
//! wire uses), `x-hop-attempt` on retried requests and `x-message-hops` (the hops
//! the message's root made so far, for the hop budget, when more than its depth). A Go peer ignores them; a tiny
//! sender rebuilds the same [`Error`] from them, so its edge retry policy applies.
//!
//! tiny also writes Go's `x-reply-deadline` (Unix ms) on a request whose edge has a
//! timeout, and drops a request that arrives after it (Go carries the header on
//! durable hops and checks it nowhere, so a Go peer is unaffected).

use std::time::Duration;

use async_nats::{HeaderMap, HeaderValue, header::HeaderName};
use bytes::Bytes;
use tiny_sdk::{Error, ErrorKind, Reply, Result};

use crate::inbound::Envelope;

/// Header names, exactly as the Go SDK writes them.
pub mod header {
    /// `<node>:<port>` of the sender; `signal` for a message from outside a flow.
    pub const FROM: &str = "x-from";
    /// `<node>:<port>` the message is for.
    pub const TO: &str = "x-to";
    /// The id of the edge the message travelled.
    pub const EDGE_ID: &str = "x-edge-id";
    /// The hop count (decimal; absent for 0).
    pub const DEPTH: &str = "x-message-depth";
    /// The broker's message id: the edge id on the core transport.
    pub const MSG_ID: &str = "Nats-Msg-Id";
    /// `rpc` for an agent tool call.
    pub const MODE: &str = "x-mode";
    /// Where a reply goes when the native reply subject cannot carry it.
    pub const REPLY_INBOX: &str = "x-reply-inbox";
    /// The durable run a JetStream hop belongs to.
    pub const RUN_ID: &str = "x-run-id";
    /// The step a durable hop is (also its `Nats-Msg-Id`).
    pub const STEP_KEY: &str = "x-step-key";
    /// Where the run's answer goes (core NATS subject).
    pub const REPLY_SUBJECT: &str = "x-reply-subject";
    /// The `<node>:<port>` whose hop is the run's answer.
    pub const REPLY_TARGET: &str = "x-reply-target";
    /// When the run's origin stops waiting (Unix ms, decimal).
    pub const REPLY_DEADLINE: &str = "x-reply-deadline";
    /// A reply's error text.
    pub const ERROR: &str = "x-error";
    /// A reply's error code.
    pub const ERROR_CODE: &str = "x-error-code";
    /// `1` on a reply that succeeded with no value.
    pub const EMPTY: &str = "x-empty";
    /// tiny's: `transient` or `permanent`, on error replies.
    pub const ERROR_KIND: &str = "x-error-kind";
    /// tiny's: where the error was raised (`node port`), on error replies.
    pub const ERROR_ORIGIN: &str = "x-error-origin";
    /// tiny's: `1` when the error arose further down the receiver's chain.
    pub const ERROR_RELAYED: &str = "x-error-relayed";
    /// tiny's: which attempt of the sender's edge retries a request is (absent: 1).
    pub const ATTEMPT: &str = "x-hop-attempt";
    /// tiny's: the hops the message's root made so far, in every module (decimal;
    /// absent for 0). Go has no hop budget, and ignores it.
    pub const HOPS: &str = "x-message-hops";
    /// W3C trace context, in the canonical MIME case Go's `http.Header` writes.
    pub const TRACEPARENT: &str = "Traceparent";
    /// W3C trace state.
    pub const TRACESTATE: &str = "Tracestate";
    /// W3C baggage.
    pub const BAGGAGE: &str = "Baggage";
}

pub use crate::remote::FROM_SIGNAL;

/// How long a hop waits for its reply when the edge sets no timeout (Go's
/// `requestTimeout`).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How long [`send`](super::send) waits for a reply by default (Go's `wire.Publish`).
pub const DEFAULT_SIGNAL_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `msg` is a JetStream stream's acknowledgement of a stored message
/// (`{"stream":"module-edges","seq":1}`, no headers) rather than a node's answer:
/// what reaches the native reply subject of a publish that a stream captured.
pub fn is_stream_ack(msg: &async_nats::Message) -> bool {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Ack {
        stream: String,
        #[serde(rename = "seq")]
        _seq: u64,
        #[serde(rename = "domain", default)]
        _domain: Option<String>,
        #[serde(rename = "duplicate", default)]
        _duplicate: Option<bool>,
    }
    msg.headers.is_none()
        && serde_json::from_slice::<Ack>(&msg.payload)
            .is_ok_and(|a| a.stream == "module-edges" || a.stream == "module-sysmsgs")
}

/// The value of `x-mode` on an agent-tool call (Go's `wire.PublishRPC`).
pub const RPC_MODE: &str = "rpc";

/// The subject a module's business messages travel on: `tinymodule.<module>.msg`.
pub fn subject(module: &str) -> String {
    format!("tinymodule.{module}.msg")
}

/// The subject every replica of a module hears system-port messages on:
/// `tinymodule.<module>.sysmsg`.
pub fn system_subject(module: &str) -> String {
    format!("tinymodule.{module}.sysmsg")
}

/// What a module on NATS writes into its TinyModule's `status.addr`:
/// `nats://tinymodule.<module>.msg`.
pub fn advertised_addr(module: &str) -> String {
    format!("nats://{}", subject(module))
}

/// Whether a TinyModule's `status.addr` says its module is reached over NATS.
pub fn is_nats_addr(addr: &str) -> bool {
    addr.trim_start().starts_with("nats://")
}

/// A header value as Go's `http.Header.Write` puts it on the wire: every `\r` and
/// `\n` becomes a space, surrounding white space is trimmed. (A raw newline would
/// also end the header block early.)
pub fn header_value(text: &str) -> HeaderValue {
    let trimmed = text.trim();
    // The usual value (a node, a port, an edge id) has no line break: taken as it is,
    // with one scan rather than a copy made character by character.
    if !trimmed.bytes().any(|b| b == b'\r' || b == b'\n') {
        return trimmed.parse().unwrap_or_default();
    }
    let line: String = text
        .chars()
        .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
        .collect();
    // Cannot fail: the only characters a value may not hold were replaced.
    line.trim().parse().unwrap_or_default()
}

/// A header name for the map, without copying it (a `&str` name is copied into a
/// new buffer at every insert and every lookup).
pub(crate) const fn name(text: &'static str) -> HeaderName {
    HeaderName::from_static(text)
}

/// One header's value as text, when present.
pub fn get<'a>(headers: Option<&'a HeaderMap>, header: &'static str) -> Option<&'a str> {
    headers.and_then(|h| h.get(name(header))).map(HeaderValue::as_str)
}

/// Reads the hop headers of a request that arrived on `subject` (core NATS and
/// JetStream alike) into the [`Envelope`] gRPC's server also fills: one without
/// `x-to`, or with a depth that is not a number, is refused with
/// [`INVALID_MESSAGE`](tiny_sdk::error::code::INVALID_MESSAGE), naming the header.
pub(crate) fn hop_headers<'a>(subject: &str, headers: Option<&'a HeaderMap>) -> Result<Envelope<'a>> {
    let invalid = |what: String| Error::permanent(what).with_code(tiny_sdk::error::code::INVALID_MESSAGE);
    let to = get(headers, header::TO).filter(|t| !t.is_empty()).ok_or_else(|| {
        invalid(format!(
            "a message on `{subject}` has no `x-to` header (want `<node>:<port>`)"
        ))
    })?;
    let depth = number(headers, header::DEPTH, to, "a hop count").map_err(invalid)?;
    let hops = number(headers, header::HOPS, to, "a hop count").map_err(invalid)?;
    let deadline = number(headers, header::REPLY_DEADLINE, to, "Unix milliseconds").map_err(invalid)?;
    Ok(Envelope {
        to,
        from: get(headers, header::FROM).unwrap_or_default(),
        edge_id: get(headers, header::EDGE_ID).unwrap_or_default(),
        depth: depth.unwrap_or(0),
        attempt: get(headers, header::ATTEMPT)
            .and_then(|a| a.trim().parse().ok())
            .unwrap_or(1),
        hops: hops.unwrap_or(0),
        // Go writes `0` for no deadline.
        deadline_unix_ms: deadline.filter(|&ms: &u64| ms != 0),
    })
}

/// A number header of the message for `to`: absent or empty is `None`; anything else
/// must read as a `T` (`want` says what), else the refusal's words, naming the header.
fn number<T: std::str::FromStr>(
    headers: Option<&HeaderMap>,
    header: &'static str,
    to: &str,
    want: &str,
) -> std::result::Result<Option<T>, String> {
    match get(headers, header).map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| format!("the message for `{to}` has `{header}: {text}`, not {want}")),
    }
}

/// A handler's outcome as a reply: headers (none for a value) and body.
pub fn reply(outcome: &Result<Reply>) -> (Option<HeaderMap>, Bytes) {
    match outcome {
        Ok(reply) => match reply.as_msg() {
            None => (Some(empty_headers()), Bytes::new()),
            Some(msg) => match msg.to_json_bytes() {
                Ok(bytes) => (None, Bytes::from(bytes)),
                Err(e) => {
                    let e = Error::permanent(format!("reply does not encode as JSON: {}", e.message()));
                    (Some(error_headers(&e)), Bytes::new())
                }
            },
        },
        Err(e) => (Some(error_headers(e)), Bytes::new()),
    }
}

/// `x-empty: 1`.
fn empty_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(name(header::EMPTY), "1");
    h
}

/// The headers of an error reply: Go's `x-error` (the error's message, as Go's
/// `err.Error()`: without tiny's node prefix or ` [CODE]`, which travel in
/// `x-error-origin` and `x-error-code`) and `x-error-code`, and tiny's kind, origin
/// and relayed mark.
pub fn error_headers(err: &Error) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(name(header::ERROR), header_value(err.message()));
    if let Some(code) = err.code() {
        h.insert(name(header::ERROR_CODE), header_value(code));
    }
    let kind = match err.kind() {
        ErrorKind::Transient => "transient",
        ErrorKind::Permanent => "permanent",
    };
    h.insert(name(header::ERROR_KIND), kind);
    if let Some(origin) = err.origin() {
        h.insert(name(header::ERROR_ORIGIN), header_value(origin));
    }
    if err.is_relayed() {
        h.insert(name(header::ERROR_RELAYED), "1");
    }
    h
}

/// A reply as the sender reads it (Go's rule): an error when `x-error` is not empty;
/// nothing when `x-empty` is `1` or the body is empty; else the body, which must be
/// JSON. `context` names the peer in an error from a Go module.
pub fn decode_reply(headers: Option<&HeaderMap>, body: Bytes, context: impl FnOnce() -> String) -> Result<Reply> {
    if let Some(text) = get(headers, header::ERROR).filter(|t| !t.is_empty()) {
        return Err(decode_error(headers, text, context));
    }
    if get(headers, header::EMPTY) == Some("1") || body.is_empty() {
        return Ok(Reply::empty());
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(&body)
        .map_err(|e| Error::permanent(format!("{}: reply is not JSON: {e}", context())))?;
    Ok(Reply::msg(tiny_sdk::Msg::from_json_bytes(body.into())))
}

/// The error an `x-error` reply stands for. With tiny's kind header the remote error
/// comes back whole; from a Go peer it is permanent (Go never retries a remote
/// error either), with its code when one came.
fn decode_error(headers: Option<&HeaderMap>, text: &str, context: impl FnOnce() -> String) -> Error {
    let code = get(headers, header::ERROR_CODE).filter(|c| !c.is_empty());
    let kind = match get(headers, header::ERROR_KIND) {
        Some("transient") => ErrorKind::Transient,
        Some("permanent") => ErrorKind::Permanent,
        _ => {
            let err = Error::permanent(format!("{}: {text}", context()));
            return match code {
                Some(c) => err.with_code(c),
                None => err,
            };
        }
    };
    // `x-error` is the message alone (Go's `err.Error()`); the parts are headers.
    let mut err = Error::new(kind, text);
    if let Some(c) = code {
        err = err.with_code(c);
    }
    if get(headers, header::ERROR_RELAYED) == Some("1") {
        err = err.relayed();
    }
    match get(headers, header::ERROR_ORIGIN) {
        Some(origin) => err.at(|| origin.to_owned()),
        None => err,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn body(outcome: Result<Reply>) -> (Option<HeaderMap>, Bytes) {
        reply(&outcome)
    }

    #[test]
    fn subjects_and_addresses_are_gos() {
        assert_eq!(subject("common-module-v0"), "tinymodule.common-module-v0.msg");
        assert_eq!(system_subject("common-module-v0"), "tinymodule.common-module-v0.sysmsg");
        assert_eq!(advertised_addr("m"), "nats://tinymodule.m.msg");
        assert!(is_nats_addr("nats://tinymodule.m.msg"));
        assert!(!is_nats_addr("10.0.0.1:8483"));
    }

    #[test]
    fn values_travel_without_headers_and_nothing_as_x_empty() {
        let (h, b) = body(Ok(Reply::value(serde_json::json!({"a": 1}))));
        assert!(h.is_none());
        assert_eq!(&b[..], br#"{"a":1}"#);
        let (h, b) = body(Ok(Reply::empty()));
        assert_eq!(get(h.as_ref(), header::EMPTY), Some("1"));
        assert!(b.is_empty());
    }

    #[test]
    fn errors_keep_kind_code_origin_and_relayed_across_the_trip() {
        for err in [
            Error::transient("busy"),
            Error::permanent("bad input").with_code("BAD"),
            Error::transient("flaky: a [b]")
                .with_code("b")
                .at(|| "n1 port `in`".to_owned()),
            Error::transient("deep")
                .at(|| "node `c` port `in`".to_owned())
                .relayed(),
        ] {
            let (h, b) = body(Err(err.clone()));
            assert_eq!(get(h.as_ref(), header::ERROR), Some(err.message()));
            let back = decode_reply(h.as_ref(), b, || unreachable!("tiny headers are present")).unwrap_err();
            assert_eq!(back, err);
        }
    }

    #[test]
    fn a_go_error_is_permanent_with_its_code_and_names_the_peer() {
        let mut h = HeaderMap::new();
        h.insert(header::ERROR, "boom");
        h.insert(header::ERROR_CODE, "RATE_LIMITED");
        let e = decode_reply(Some(&h), Bytes::new(), || "module `m`".to_owned()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Permanent);
        assert_eq!(e.code(), Some("RATE_LIMITED"));
        assert_eq!(e.message(), "module `m`: boom");
    }

    #[test]
    fn multi_line_errors_become_one_line_as_go_writes_them() {
        let (h, _) = body(Err(Error::permanent("first\r\nsecond\n")));
        assert_eq!(get(h.as_ref(), header::ERROR), Some("first  second"));
    }

    #[test]
    fn a_header_value_is_one_trimmed_line() {
        for (text, want) in [
            ("f.a.ask-1:out", "f.a.ask-1:out"),
            ("  padded\t ", "padded"),
            ("a\nb", "a b"),
            ("\r\nlead and trail\n", "lead and trail"),
            ("mid \r\n line", "mid    line"),
            ("", ""),
            ("ünï code", "ünï code"),
        ] {
            assert_eq!(header_value(text).as_str(), want, "{text:?}");
        }
    }

    #[test]
    fn hop_headers_read_numbers_and_name_a_bad_one() {
        let mut h = HeaderMap::new();
        h.insert(header::TO, "f.m.a-1:in");
        fn read(h: &HeaderMap) -> Result<Envelope<'_>> {
            hop_headers("s", Some(h))
        }
        let e = read(&h).unwrap();
        assert_eq!((e.depth, e.hops, e.attempt, e.deadline_unix_ms), (0, 0, 1, None));
        h.insert(header::DEPTH, " 3 ");
        h.insert(header::HOPS, "7");
        h.insert(header::REPLY_DEADLINE, "0");
        let e = read(&h).unwrap();
        assert_eq!((e.depth, e.hops, e.deadline_unix_ms), (3, 7, None));
        h.insert(header::REPLY_DEADLINE, "1700000000000");
        assert_eq!(read(&h).unwrap().deadline_unix_ms, Some(1_700_000_000_000));
        for (name, bad, want) in [
            (header::DEPTH, "many", "not a hop count"),
            (header::HOPS, "-1", "not a hop count"),
            (header::REPLY_DEADLINE, "soon", "not Unix milliseconds"),
        ] {
            let mut h = h.clone();
            h.insert(name, bad);
            let e = read(&h).unwrap_err();
            assert_eq!(e.code(), Some(tiny_sdk::error::code::INVALID_MESSAGE));
            assert_eq!(
                e.message(),
                format!("the message for `f.m.a-1:in` has `{name}: {bad}`, {want}")
            );
        }
    }

    #[test]
    fn an_empty_body_is_nothing_and_a_bad_one_is_an_error() {
        assert_eq!(decode_reply(None, Bytes::new(), String::new).unwrap(), Reply::empty());
        let e = decode_reply(None, Bytes::from_static(b"{"), || "module `m`".to_owned()).unwrap_err();
        assert!(e.message().starts_with("module `m`: reply is not JSON"), "{e}");
    }
}

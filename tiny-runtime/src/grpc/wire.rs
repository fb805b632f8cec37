//! What a hop looks like on the wire: payload and reply encoding, the hop depth in
//! metadata, the message size limit, and [`Error`] <-> gRPC [`Status`].
//!
//! The Go SDK sends an error as a bare status message, so a Go receiver's sender never
//! retries a cross-module hop. tiny keeps the status message (Go peers read it as
//! before) and adds metadata that a tiny sender reads back into the same [`Error`]:
//!
//! | metadata | carries |
//! | --- | --- |
//! | `x-message-depth` | the hop depth, on requests (as the Go SDK) |
//! | `x-hop-attempt` | which attempt of the sender's edge retries this is, on requests (absent: 1) |
//! | `x-message-hops` | the hops the message's root made so far, on requests when more than the depth (absent: the depth; tiny's, for the hop budget) |
//! | `x-reply-deadline` | when the sender stops waiting, Unix ms, on requests over an edge with a timeout (Go's NATS header name); a later arrival is dropped unrun |
//! | `traceparent`, `tracestate`, `baggage` | W3C trace context, on requests while traces are exported |
//! | `x-error-kind` | `transient` or `permanent`, on error statuses |
//! | `x-error-code` | the error's code, on error statuses (the Go SDK's NATS header name) |
//! | `x-error-origin` | where the error was raised (`node port`), on error statuses |
//!
//! A status without `x-error-kind` (from a Go peer, or from the transport) is
//! classified by its gRPC code: `Unavailable`, `DeadlineExceeded` and `Aborted` are
//! transient, everything else permanent (a Go handler's error arrives as `Unknown`,
//! and the Go SDK never retries those either).

#[cfg(test)]
use serde_json::Value;
use tiny_sdk::{Error, ErrorKind, Reply, Result};

pub(crate) use crate::remote::source_to_wire;
use tonic::{
    Code, Status,
    metadata::{MetadataMap, MetadataValue},
};

/// Metadata key of the hop depth (the Go SDK's).
pub const DEPTH_KEY: &str = "x-message-depth";
/// Metadata key of the attempt of the sender's edge retries (1 for the first, absent
/// from Go peers), on requests: the receiver's spans and retry counts show it.
pub const ATTEMPT_KEY: &str = "x-hop-attempt";
/// Metadata key of the hops the message's root made so far (tiny's).
pub const HOPS_KEY: &str = "x-message-hops";
/// Metadata key of the sender's deadline, Unix ms (the Go SDK's NATS header name).
pub const DEADLINE_KEY: &str = "x-reply-deadline";
/// Metadata key of an error's kind: `transient` or `permanent`.
pub const ERROR_KIND_KEY: &str = "x-error-kind";
/// Metadata key of an error's code.
pub const ERROR_CODE_KEY: &str = "x-error-code";
/// Metadata key of where an error was raised.
pub const ERROR_ORIGIN_KEY: &str = "x-error-origin";
/// Metadata key saying an error arose further down the receiver's chain than the node
/// the message went to (`1`; absent otherwise and from Go peers): the sender's edge
/// does not retry it, the edge into the node where it arose did.
pub const ERROR_RELAYED_KEY: &str = "x-error-relayed";
/// The default limit of one encoded message, in either direction: 4 MiB, gRPC's usual
/// default (and the Go SDK's, which does not change it).
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 4 * 1024 * 1024;

/// A payload from its JSON bytes; no bytes at all is `null`.
#[cfg(test)]
fn decode_payload(bytes: &[u8]) -> Result<Value> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(bytes).map_err(|e| Error::permanent(format!("payload is not JSON: {e}")))
}

/// The bytes of a reply: none for an empty reply, else JSON (the Go SDK's rule),
/// written straight from a typed reply.
pub fn encode_reply(reply: &Reply) -> Result<Vec<u8>> {
    match reply.as_msg() {
        None => Ok(Vec::new()),
        Some(m) => m
            .to_json_bytes()
            .map_err(|e| Error::permanent(format!("reply does not encode as JSON: {}", e.message()))),
    }
}

/// A reply from its bytes: none is an empty reply, anything else must be JSON. The
/// bytes are checked, not parsed: the reply becomes a tree only if someone reads it.
#[cfg(test)]
fn decode_reply(bytes: &[u8]) -> Result<Reply> {
    decode_reply_owned(bytes.to_vec())
}

/// [`decode_reply`] keeping the bytes it is given.
pub fn decode_reply_owned(bytes: Vec<u8>) -> Result<Reply> {
    if bytes.is_empty() {
        return Ok(Reply::empty());
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(&bytes)
        .map_err(|e| Error::permanent(format!("reply is not JSON: {e}")))?;
    Ok(Reply::msg(tiny_sdk::Msg::from_json_bytes(bytes)))
}

/// Fails when `size` bytes of `what` exceed the message size limit `limit`.
pub fn check_size(what: impl std::fmt::Display, size: usize, limit: usize) -> Result<()> {
    if size <= limit {
        return Ok(());
    }
    Err(Error::permanent(format!(
        "{what} is {} ({size} bytes), over the {} ({limit} bytes) message size limit of gRPC between modules",
        human(size),
        human(limit)
    ))
    .with_code(tiny_sdk::error::code::MESSAGE_TOO_LARGE))
}

/// `4 MiB`, `1.5 KiB`, `200 B`.
fn human(bytes: usize) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Puts the hop depth into request metadata.
pub fn write_depth(metadata: &mut MetadataMap, depth: u32) {
    metadata.insert(DEPTH_KEY, MetadataValue::from(depth));
}

/// Puts the attempt number into request metadata (nothing for a first attempt).
pub fn write_attempt(metadata: &mut MetadataMap, attempt: u32) {
    if attempt > 1 {
        metadata.insert(ATTEMPT_KEY, MetadataValue::from(attempt));
    }
}

/// The attempt number of a request: absent or unreadable is 1 (it only labels the hop).
pub fn read_attempt(metadata: &MetadataMap) -> u32 {
    metadata
        .get(ATTEMPT_KEY)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// The hop depth of a request: absent is 0 (a signal), anything but a number is refused.
pub fn read_depth(metadata: &MetadataMap) -> Result<u32> {
    let Some(value) = metadata.get(DEPTH_KEY) else {
        return Ok(0);
    };
    let text = value
        .to_str()
        .map_err(|_| Error::permanent(format!("metadata `{DEPTH_KEY}` is not text")))?;
    text.trim()
        .parse()
        .map_err(|_| Error::permanent(format!("metadata `{DEPTH_KEY}` is `{text}`, not a hop count")))
}

/// Puts the root's hops so far (when they pass the depth, which the receiver takes
/// otherwise) and the hop's deadline (when there is one) into request metadata.
pub fn write_limits(metadata: &mut MetadataMap, hop: &tiny_sdk::Hop) {
    let spent = hop.cancel.spent();
    if spent > hop.depth {
        metadata.insert(HOPS_KEY, MetadataValue::from(spent));
    }
    if let Some(ms) = hop.cancel.deadline_unix_ms() {
        metadata.insert(DEADLINE_KEY, MetadataValue::from(ms));
    }
}

/// A number in request metadata under `key`: absent is `None`, anything but a
/// number is refused, naming the key.
fn read_number<T: std::str::FromStr>(metadata: &MetadataMap, key: &str, what: &str) -> Result<Option<T>> {
    let Some(value) = metadata.get(key) else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| Error::permanent(format!("metadata `{key}` is not text")))?;
    text.trim()
        .parse()
        .map(Some)
        .map_err(|_| Error::permanent(format!("metadata `{key}` is `{text}`, not {what}")))
}

/// The root's hops so far of a request (absent: 0) and its deadline, Unix ms.
pub fn read_limits(metadata: &MetadataMap) -> Result<(u32, Option<u64>)> {
    let hops = read_number(metadata, HOPS_KEY, "a hop count")?.unwrap_or(0);
    let deadline = read_number(metadata, DEADLINE_KEY, "Unix milliseconds")?.filter(|ms| *ms > 0);
    Ok((hops, deadline))
}

/// The gRPC code an error travels with when the server has no better one: transient
/// errors are `Unavailable` (the code gRPC clients retry), permanent ones
/// `FailedPrecondition` (the receiver is in no state to take this message; never retried).
pub fn default_code(err: &Error) -> Code {
    match err.kind() {
        ErrorKind::Transient => Code::Unavailable,
        ErrorKind::Permanent => Code::FailedPrecondition,
    }
}

/// The status an error travels as: its text as the message (what a Go peer shows), and
/// its kind, code, origin and whether it was relayed as metadata (what a tiny peer
/// rebuilds it from).
pub fn error_to_status(err: &Error, code: Code) -> Status {
    let mut metadata = MetadataMap::new();
    let kind = match err.kind() {
        ErrorKind::Transient => "transient",
        ErrorKind::Permanent => "permanent",
    };
    metadata.insert(ERROR_KIND_KEY, MetadataValue::from_static(kind));
    // A value that cannot be ASCII metadata stays in the message text only.
    if let Some(value) = err.code().and_then(|c| MetadataValue::try_from(c).ok()) {
        metadata.insert(ERROR_CODE_KEY, value);
    }
    if let Some(value) = err.origin().and_then(|o| MetadataValue::try_from(o).ok()) {
        metadata.insert(ERROR_ORIGIN_KEY, value);
    }
    if err.is_relayed() {
        metadata.insert(ERROR_RELAYED_KEY, MetadataValue::from_static("1"));
    }
    Status::with_metadata(code, err.to_string(), metadata)
}

/// The error a status stands for. With tiny's metadata the remote error comes back
/// whole (kind, code, origin, relayed, message); without it (a Go peer, the transport) the kind
/// follows the gRPC code, and `context` (which module, where) prefixes the message.
pub fn status_to_error(status: &Status, context: impl FnOnce() -> String) -> Error {
    let metadata = status.metadata();
    let text = |key: &str| metadata.get(key).and_then(|v| v.to_str().ok());
    let kind = match text(ERROR_KIND_KEY) {
        Some("transient") => Some(ErrorKind::Transient),
        Some("permanent") => Some(ErrorKind::Permanent),
        _ => None,
    };
    let Some(kind) = kind else {
        let kind = match status.code() {
            Code::Unavailable | Code::DeadlineExceeded | Code::Aborted => ErrorKind::Transient,
            _ => ErrorKind::Permanent,
        };
        let mut err = Error::new(kind, format!("{}: {}", context(), describe(status)));
        if let Some(code) = text(ERROR_CODE_KEY) {
            err = err.with_code(code);
        }
        return err;
    };
    rebuild_error(
        kind,
        status.message(),
        text(ERROR_CODE_KEY),
        text(ERROR_ORIGIN_KEY),
        text(ERROR_RELAYED_KEY) == Some("1"),
    )
}

/// A remote tiny error from what its wire carried: `text` is its `Display` (`origin:
/// message [code]`, a gRPC status message), from which the origin and code are taken
/// off again. (NATS's `x-error` is the message alone.)
pub(crate) fn rebuild_error(
    kind: ErrorKind,
    text: &str,
    code: Option<&str>,
    origin: Option<&str>,
    relayed: bool,
) -> Error {
    let mut message = text;
    if let Some(o) = origin {
        message = message
            .strip_prefix(o)
            .and_then(|m| m.strip_prefix(": "))
            .unwrap_or(message);
    }
    if let Some(c) = code {
        message = message
            .strip_suffix(']')
            .and_then(|m| m.strip_suffix(c))
            .and_then(|m| m.strip_suffix(" ["))
            .unwrap_or(message);
    }
    let mut err = Error::new(kind, message);
    if let Some(c) = code {
        err = err.with_code(c);
    }
    if relayed {
        err = err.relayed();
    }
    match origin {
        Some(o) => err.at(|| o.to_owned()),
        None => err,
    }
}

/// A status as text: its message and the root of the causes behind it (`tcp connect
/// error: Connection refused`), and its code. Only the root: the causes in between
/// usually print their own source again.
fn describe(status: &Status) -> String {
    let mut text = status.message().to_owned();
    let root = std::iter::successors(std::error::Error::source(status), |c| c.source()).last();
    if let Some(cause) = root {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause.to_string());
    }
    if text.is_empty() {
        format!("gRPC status {:?}", status.code())
    } else {
        format!("{text} (gRPC status {:?})", status.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_survive_the_trip_through_a_status() {
        let errors = [
            Error::transient("busy"),
            Error::permanent("bad input").with_code("BAD"),
            Error::transient("flaky: a [b]")
                .with_code("b")
                .at(|| "n1 port `in`".to_owned()),
            Error::permanent("no node `x` in this flow").at(|| "node `x` port `in`".to_owned()),
            // Passed up from further down the remote chain: not retried by the sender.
            Error::transient("deep")
                .at(|| "node `c` port `in`".to_owned())
                .relayed(),
        ];
        for err in errors {
            let status = error_to_status(&err, default_code(&err));
            assert_eq!(status.message(), err.to_string());
            let back = status_to_error(&status, || unreachable!("metadata is present"));
            assert_eq!(back, err);
        }
    }

    #[test]
    fn statuses_without_metadata_are_classified_by_code() {
        let from_go = Status::unknown("component failed");
        let err = status_to_error(&from_go, || "module `b`".to_owned());
        assert_eq!(err.kind(), ErrorKind::Permanent);
        assert!(err.message().contains("module `b`: component failed"), "{err}");
        let refused = Status::unavailable("tcp connect error");
        assert_eq!(status_to_error(&refused, String::new).kind(), ErrorKind::Transient);
    }

    #[test]
    fn depth_is_read_back_and_garbage_is_refused() {
        let mut m = MetadataMap::new();
        assert_eq!(read_depth(&m).ok(), Some(0));
        write_depth(&mut m, 17);
        assert_eq!(read_depth(&m).ok(), Some(17));
        m.insert(DEPTH_KEY, MetadataValue::from_static("many"));
        assert!(read_depth(&m).is_err_and(|e| e.message().contains("`many`")));
    }

    #[test]
    fn sizes_name_the_limit() {
        assert!(check_size("x", 10, 10).is_ok());
        let e = check_size("message for `n:p`", 5 * 1024 * 1024 + 1, DEFAULT_MAX_MESSAGE_SIZE).err();
        let text = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            text.contains("5.0 MiB (5242881 bytes)") && text.contains("4 MiB (4194304 bytes)"),
            "{text}"
        );
    }

    #[test]
    fn replies_and_payloads() {
        assert_eq!(decode_reply(&[]).ok(), Some(Reply::empty()));
        assert_eq!(encode_reply(&Reply::empty()).ok(), Some(Vec::new()));
        assert_eq!(
            decode_reply(b"{\"a\":1}").ok(),
            Some(Reply::value(serde_json::json!({"a": 1})))
        );
        assert_eq!(decode_payload(&[]).ok(), Some(Value::Null));
        assert!(decode_payload(b"{").is_err());
    }
}

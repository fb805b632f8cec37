//! Target `nats`: one delivery from the broker, raw, through a NATS receiver's decoding
//! to the engine, and its reply back through the sender's.
//!
//! Input: `flags subject NUL header-block NUL payload` (the payload may hold NUL
//! bytes). `flags`, the first byte: bit 0, the message came on the system subject;
//! bit 1, the JetStream receiver takes it (else core NATS); bit 2, it has no header
//! block at all (an `MSG`, not an `HMSG`); bit 3, JetStream gives its stored place, so
//! that a run can be minted from it. The header block is what follows the `HMSG` line
//! on the wire (`NATS/1.0[ status]\r\nname: value\r\n...\r\n`); [`header_block`] reads
//! it as the NATS client does, so that a block the client refuses is a
//! [`FrameError`] here and is never delivered.
//!
//! What the client delivers goes to the receiver's own decoding,
//! [`nats::receive_message`](tiny_runtime::nats::receive_message) or
//! [`jetstream::receive_message`](tiny_runtime::jetstream::receive_message), over the
//! engine of [`wired_engine`](crate::grpc::wired_engine). The outcome is written as the
//! reply ([`wire::reply`]), the reply's header block read back as the sender's client
//! reads it and decoded as the sender decodes it ([`wire::decode_reply`]): a value must
//! come back as itself, an error as an error of the same kind and code.

use std::{fmt, str::FromStr};

use async_nats::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use bytes::Bytes;
use tiny_runtime::nats::wire;
use tiny_sdk::{Reply, Result};

/// Bit 0 of the flags: the system subject.
const SYSTEM: u8 = 1;
/// Bit 1: the JetStream receiver.
const JETSTREAM: u8 = 2;
/// Bit 2: no header block (`MSG`).
const NO_HEADERS: u8 = 4;
/// Bit 3: a stored place to mint a run from.
const SEED: u8 = 8;

/// Delivers the frame in `data`; errors are expected, panics are bugs.
pub fn run(data: &[u8]) {
    let _ = deliver(data);
}

/// Why the client would not deliver a frame: what it refuses in a subject or a header
/// block (the names follow its checks, in the order it makes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The subject is empty, not UTF-8, or holds white space: no `HMSG` line carries it.
    Subject,
    /// The header block is not UTF-8.
    NotUtf8,
    /// The block has no first line, or it does not start with `NATS/1.0`.
    Version,
    /// The status after `NATS/1.0` is not a three-digit code.
    Status,
    /// Header line `line` (0 is the version line) has no `:`.
    NoColon {
        /// Its number.
        line: usize,
    },
    /// The name on header line `line` is not printable ASCII without `:`.
    Name {
        /// Its number.
        line: usize,
    },
    /// The value on header line `line` holds a carriage return (a lone `\r` inside a
    /// line): a header value may not, and the unpatched client panicked on it.
    Value {
        /// Its number.
        line: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Subject => f.write_str("the subject is empty, not UTF-8 or holds white space"),
            Self::NotUtf8 => f.write_str("the header block is not UTF-8"),
            Self::Version => f.write_str("the header block does not start with `NATS/1.0`"),
            Self::Status => f.write_str("the status after `NATS/1.0` is not a code"),
            Self::NoColon { line } => write!(f, "header line {line} has no `:`"),
            Self::Name { line } => write!(f, "header line {line} has an invalid name"),
            Self::Value { line } => write!(f, "header line {line} has a carriage return in its value"),
        }
    }
}

impl std::error::Error for FrameError {}

/// The headers in a raw header block, read as the NATS client reads the block of an
/// `HMSG` (its status line checked and left out; a line that starts with white space
/// continues the value before it; values trimmed; a name may come more than once).
pub fn header_block(block: &[u8]) -> Result<HeaderMap, FrameError> {
    let text = std::str::from_utf8(block).map_err(|_| FrameError::NotUtf8)?;
    let mut lines = text.lines().peekable();
    let version = lines.next().ok_or(FrameError::Version)?;
    let suffix = version
        .strip_prefix("NATS/1.0")
        .map(str::trim)
        .ok_or(FrameError::Version)?;
    let status = suffix.split_once(' ').map_or(suffix, |(status, _)| status.trim());
    if !status.is_empty() {
        StatusCode::from_str(status).map_err(|_| FrameError::Status)?;
    }
    let mut headers = HeaderMap::new();
    let mut number = 0;
    while let Some(line) = lines.next() {
        number += 1;
        if line.is_empty() {
            continue;
        }
        let (name, value) = line.split_once(':').ok_or(FrameError::NoColon { line: number })?;
        let name = HeaderName::from_str(name).map_err(|_| FrameError::Name { line: number })?;
        let mut value = value.trim_start().to_owned();
        while let Some(more) = lines.next_if(|s| s.starts_with(char::is_whitespace)) {
            number += 1;
            value.push_str(more);
        }
        value.truncate(value.trim_end().len());
        let value = HeaderValue::from_str(&value).map_err(|_| FrameError::Value { line: number })?;
        headers.append(name, value);
    }
    Ok(headers)
}

/// A header map as the client writes it: `NATS/1.0\r\n`, `name: value\r\n` for each
/// value, and an empty line.
pub fn write_block(headers: &HeaderMap) -> Vec<u8> {
    let mut out = b"NATS/1.0\r\n".to_vec();
    for (name, values) in headers.iter() {
        for value in values {
            out.extend_from_slice(format!("{name}: {}\r\n", value.as_str()).as_bytes());
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// [`run`], returning what the receiver answered, or why the client refused the frame.
pub fn deliver(data: &[u8]) -> Result<Result<Reply>, FrameError> {
    let (flags, rest) = data.split_first().map_or((0, data), |(f, r)| (*f, r));
    let mut parts = rest.splitn(3, |&b| b == 0);
    let subject = std::str::from_utf8(parts.next().unwrap_or_default())
        .ok()
        .filter(|s| !s.is_empty() && !s.contains(char::is_whitespace))
        .ok_or(FrameError::Subject)?;
    let block = parts.next().unwrap_or_default();
    let payload = Bytes::copy_from_slice(parts.next().unwrap_or_default());
    let headers = match flags & NO_HEADERS {
        0 => Some(header_block(block)?),
        _ => None,
    };
    let system = flags & SYSTEM != 0;
    let outcome = crate::runtime().block_on(async {
        let engine = crate::grpc::wired_engine().await;
        if flags & JETSTREAM != 0 {
            let seed = (flags & SEED != 0).then_some("module-edges:7:1700000000000000000");
            tiny_runtime::jetstream::receive_message(&engine, subject, headers.as_ref(), payload, system, seed).await
        } else {
            tiny_runtime::nats::receive_message(&engine, subject, headers.as_ref(), payload, system).await
        }
    });
    check_reply(&outcome);
    Ok(outcome)
}

/// The reply to `outcome` read back as a sender reads it says what `outcome` says.
fn check_reply(outcome: &Result<Reply>) {
    let (headers, body) = wire::reply(outcome);
    // The sender's client reads the block the receiver's client writes.
    let headers = headers.map(|h| match header_block(&write_block(&h)) {
        Ok(read) => read,
        Err(e) => panic!("the reply's header block does not read back ({e}): {h:?}"),
    });
    let back = wire::decode_reply(headers.as_ref(), body.clone(), || "module `fuzz`".to_owned());
    match (outcome, &back) {
        (Ok(reply), Ok(read)) => {
            let sent = reply.as_msg().and_then(|m| m.to_json_bytes().ok());
            let read = read.as_msg().and_then(|m| m.to_json_bytes().ok());
            assert_eq!(
                sent.as_deref().map(String::from_utf8_lossy),
                read.as_deref().map(String::from_utf8_lossy),
                "a value does not come back as itself"
            );
        }
        // A value that does not encode is sent as an error.
        (Ok(reply), Err(_)) => assert!(
            reply.as_msg().is_some_and(|m| m.to_json_bytes().is_err()),
            "a value came back as an error: {back:?}"
        ),
        (Err(e), Err(read)) => {
            assert_eq!(read.kind(), e.kind(), "an error changes kind: {e} -> {read}");
            let code = e.code().map(|c| wire::header_value(c).as_str().to_owned());
            assert_eq!(
                read.code(),
                code.as_deref().filter(|c| !c.is_empty()),
                "an error changes code: {e} -> {read}"
            );
        }
        // As in Go, an `x-error` is an error only when not empty.
        (Err(e), Ok(_)) => assert!(
            wire::header_value(e.message()).as_str().is_empty(),
            "an error came back as a success: {e}"
        ),
    }
}

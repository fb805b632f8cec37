//! What every transport between modules shares, whatever carries the message (gRPC
//! metadata, NATS headers, JetStream): who leads, the source as the wire spells it,
//! and the JSON check of a payload.
//! The transports (`grpc`, `nats`, `jetstream`) are siblings above it; none of them
//! reaches into another.

use std::sync::Arc;

use tiny_sdk::{Error, Result, engine::Source};

/// Tells whether this replica leads its module, for [`Hop::leader`](tiny_sdk::Hop::leader).
pub type LeaderFn = Arc<dyn Fn() -> bool + Send + Sync>;

/// The `From` of a message sent from outside a flow (the Go SDK's `wire.FromSignal`):
/// the receiver decodes the payload as it is, with no edge mapping.
pub const FROM_SIGNAL: &str = "signal";

/// Fails unless `bytes` are JSON (or empty, which is `null`), without building a tree.
pub fn check_json(bytes: &[u8]) -> Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
        .map(drop)
        .map_err(|e| Error::permanent(format!("payload is not JSON: {e}")))
}

/// `(From, EdgeID)` of a request for `source`: a signal is sent as `From = "signal"`,
/// so that a Go receiver also decodes the raw payload.
pub fn source_to_wire(source: &Source<'_>) -> (String, String) {
    match source {
        Source::Signal => (FROM_SIGNAL.to_owned(), String::new()),
        Source::Edge { from, edge_id } => ((*from).to_owned(), (*edge_id).to_owned()),
    }
}

/// The source of a received request: an empty `From` or `"signal"` is a signal.
pub fn source_from_wire<'a>(from: &'a str, edge_id: &'a str) -> Source<'a> {
    if from.is_empty() || from == FROM_SIGNAL {
        Source::Signal
    } else {
        Source::Edge { from, edge_id }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_and_payloads() {
        assert!(matches!(source_from_wire("signal", ""), Source::Signal));
        assert!(matches!(source_from_wire("", "e"), Source::Signal));
        assert!(matches!(
            source_from_wire("a:out", "e"),
            Source::Edge {
                from: "a:out",
                edge_id: "e"
            }
        ));
        assert!(check_json(b"").is_ok());
        assert!(check_json(b"{").is_err());
    }
}

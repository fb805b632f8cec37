//! The message that started a durable run, kept at `exec/<runID>/entry/<runID>.root`
//! (tiny's; Go writes and reads none) so that the run can be captured and replayed,
//! or re-driven from its first step, along the edge it came by.
//!
//! It has a key of its own, written once when the first step starts, rather than a
//! place in the first step's record: the record stays Go's size, and a message too
//! large to keep beside its run is left out ([`RunEntry::omitted`]) instead of making
//! the step's record too large to store.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result, code};

/// What a run's first message was and where it came from (see the [module](crate::run)).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunEntry {
    /// The port it arrived at (on the first step's node).
    pub port: String,
    /// The sender, `<node>:<port>`, when it came along an edge (empty for a signal).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from: String,
    /// The edge it came along (empty for a signal): its target's mapping shaped the
    /// input, so a replay or re-drive sends it along the same edge.
    #[serde(rename = "edgeID", default, skip_serializing_if = "String::is_empty")]
    pub edge_id: String,
    /// The message as it was sent (before the edge's mapping); `None` when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// When the message was left out: its size in bytes (JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<u64>,
}

impl RunEntry {
    /// The value to store for a first message of JSON bytes `data` at `port` from
    /// `from` along `edge_id`: written with the message as it is (no base64, no
    /// tree), or, when that would take more than `max` bytes, without it.
    pub fn encode(port: &str, from: &str, edge_id: &str, data: &[u8], max: usize) -> Result<Bytes> {
        let head = RunEntry {
            port: port.to_owned(),
            from: from.to_owned(),
            edge_id: edge_id.to_owned(),
            data: None,
            omitted: None,
        };
        let mut out = serde_json::to_vec(&head).map_err(|e| Error::permanent(format!("run entry: {e}")))?;
        if out.len() + data.len() + 9 > max {
            let head = RunEntry {
                omitted: Some(data.len() as u64),
                ..head
            };
            return serde_json::to_vec(&head)
                .map(Bytes::from)
                .map_err(|e| Error::permanent(format!("run entry: {e}")));
        }
        // `{...}` becomes `{...,"data":<data>}`: the message's bytes are JSON already.
        out.pop();
        out.extend_from_slice(b",\"data\":");
        out.extend_from_slice(data);
        out.push(b'}');
        Ok(out.into())
    }

    /// Reads what [`encode`](Self::encode) wrote. Fails with code
    /// [`RUN_RECORD`](code::RUN_RECORD) on anything else.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes)
            .map_err(|e| Error::permanent(format!("run entry: {e}")).with_code(code::RUN_RECORD))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_keeps_the_message_whole_or_says_it_was_left_out() {
        let bytes = RunEntry::encode("in", "a:out", "e1", br#"{"raw":7}"#, 1024).expect("encodes");
        assert_eq!(
            std::str::from_utf8(&bytes).expect("UTF-8"),
            r#"{"port":"in","from":"a:out","edgeID":"e1","data":{"raw":7}}"#
        );
        let entry = RunEntry::from_json_slice(&bytes).expect("reads");
        assert_eq!(entry.data, Some(serde_json::json!({"raw": 7})));
        let big = vec![b'1'; 2000];
        let entry =
            RunEntry::from_json_slice(&RunEntry::encode("in", "", "", &big, 1024).expect("encodes")).expect("reads");
        assert_eq!((entry.data, entry.omitted), (None, Some(2000)));
    }
}

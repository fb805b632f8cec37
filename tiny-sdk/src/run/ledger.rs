//! The ledger records: what a hop of a durable run did, stored at
//! `exec/<runID>/step/<stepKey>` once its handler returned.
//!
//! The JSON is a contract with Go modules and tooling on the same broker (their
//! reconciler re-drives any hop whose record it cannot find or read), so
//! [`StepRecord::to_json_bytes`] writes exactly the bytes the Go SDK writes, and
//! [`StepRecord::from_json_slice`] reads what Go writes, missing optional fields,
//! `null`s and unknown fields included.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{Timestamp, json};
use crate::error::{Error, Result, code};

/// How a hop ended. Both are final: the ledger never runs a hop again, a business
/// retry is an edge's retry policy's or a retry component's job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    /// The handler returned without an error (`"done"`).
    #[schemars(title = "done")]
    Done,
    /// The handler failed, or the reconciler gave up re-driving the hop (`"failed"`).
    #[schemars(title = "failed")]
    Failed,
}

/// One hop a step emitted, with all it takes to publish it again (Go's
/// `EmitRecord`): the reconciler re-drives it from here if it never completes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct EmitRecord {
    /// The target, `<node>:<port>`.
    #[serde(default, deserialize_with = "json::nullable")]
    pub to: String,
    /// The source, `<node>:<port>` (empty for an emit addressed to a node).
    #[serde(default, deserialize_with = "json::nullable")]
    pub from: String,
    /// The edge it went along (may be empty).
    #[serde(rename = "edgeID", default, deserialize_with = "json::nullable")]
    pub edge_id: String,
    /// The hop's step key, its idempotency key.
    #[serde(rename = "stepKey", default, deserialize_with = "json::nullable")]
    pub step_key: String,
    /// The payload as sent (JSON bytes), base64 in the record. Go writes `null` for a
    /// nil slice and `""` for an empty one; both read as empty, and empty is written
    /// `""` (the Go SDK always emits a non-nil payload).
    #[serde(with = "json::base64_bytes", default)]
    pub data: Bytes,
    /// The core subject a reply hop goes to instead of the work queue (empty for a
    /// background run).
    #[serde(
        rename = "replySubject",
        default,
        deserialize_with = "json::nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub reply_subject: String,
    /// The `<node>:<port>` whose hop is the reply hop (empty for a background run).
    #[serde(
        rename = "replyTarget",
        default,
        deserialize_with = "json::nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub reply_target: String,
    /// When the origin stops waiting for the reply, in Unix milliseconds (0: none).
    #[serde(
        rename = "replyDeadlineUnixMs",
        default,
        deserialize_with = "json::nullable",
        skip_serializing_if = "is_zero_i64"
    )]
    pub reply_deadline_unix_ms: i64,
}

/// The completion record of one hop of a durable run (Go's `StepRecord`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The node that handled the hop (no port); for a hop the reconciler gave up on,
    /// the hop's target with its port.
    #[serde(default, deserialize_with = "json::nullable")]
    pub node: String,
    /// How it ended.
    pub status: StepStatus,
    /// Why it failed (Go writes no `error` for an empty one, so `Some("")` is
    /// written as `None` is).
    #[serde(default, deserialize_with = "non_empty", skip_serializing_if = "is_none_or_empty")]
    pub error: Option<String>,
    /// The hops the handler emitted before it returned, in order.
    #[serde(default, deserialize_with = "json::nullable", skip_serializing_if = "Vec::is_empty")]
    pub emits: Vec<EmitRecord>,
    /// When the handler started ([`Timestamp::ZERO`] if unknown: Go writes it anyway).
    #[serde(rename = "startedAt", default)]
    pub started_at: Timestamp,
    /// When the handler returned (or the reconciler gave up).
    #[serde(rename = "completedAt", default)]
    pub completed_at: Timestamp,
    /// How long the handler ran, in milliseconds (0 is not written).
    #[serde(
        rename = "durationMs",
        default,
        deserialize_with = "json::nullable",
        skip_serializing_if = "is_zero_u64"
    )]
    pub duration_ms: u64,
    /// tiny's, on the record of a re-drive (`<module> redrive`): the step key of the
    /// failed run's step it runs again, as a new attempt. That step and the steps
    /// that followed it are superseded (see [`superseded`](super::superseded)). Go
    /// writes none and reads past it.
    #[serde(
        rename = "redriveOf",
        default,
        deserialize_with = "json::nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub redrive_of: String,
}

impl StepRecord {
    /// The record as the Go SDK writes it, byte for byte: its field order, its
    /// omitted empty fields, its string escapes (`\u003c` for `<`, and so on).
    pub fn to_json_bytes(&self) -> Result<Vec<u8>> {
        json::to_go_json(self).map_err(|e| Error::permanent(format!("step record: {e}")).with_code(code::RUN_RECORD))
    }

    /// Reads a record as Go or [`to_json_bytes`](Self::to_json_bytes) wrote it.
    /// Fails with code [`RUN_RECORD`](code::RUN_RECORD) on anything else.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self> {
        serde_json::from_slice(bytes)
            .map_err(|e| Error::permanent(format!("step record: {e}")).with_code(code::RUN_RECORD))
    }

    /// The record of a step that started at `started` and ends now: `done`, or
    /// `failed` with `error`'s message (as Go writes `err.Error()`: no origin, no code).
    pub fn finished(node: String, error: Option<&crate::Error>, emits: Vec<EmitRecord>, started: Timestamp) -> Self {
        let completed_at = Timestamp::now();
        Self {
            node,
            status: if error.is_some() {
                StepStatus::Failed
            } else {
                StepStatus::Done
            },
            error: error.map(|e| e.message().to_owned()),
            emits,
            started_at: started,
            completed_at,
            duration_ms: u64::try_from(completed_at.saturating_duration_since(started).as_millis()).unwrap_or(u64::MAX),
            redrive_of: String::new(),
        }
    }

    /// Whether the hop failed.
    pub fn is_failed(&self) -> bool {
        self.status == StepStatus::Failed
    }
}

fn is_zero_i64(n: &i64) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_none_or_empty(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(str::is_empty)
}

/// Go's string: `null` and `""` are both no error.
fn non_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.filter(|s| !s.is_empty()))
}

//! Durable runs: the part of the Go SDK's JetStream run ledger that does not need a
//! broker, in the Go SDK's exact layout so that Rust and Go modules share runs on
//! one broker.
//!
//! A durable run is a chain of hops, each stored in the work queue before it is
//! handled, each with a step key the broker dedupes on. When a hop's handler
//! returns, a [`StepRecord`] is written to the run's ledger, listing the hops it
//! emitted. The ledger serves three ends: a redelivered hop whose record exists is
//! not run again; a run's progress can be read ([`RunStatus`]); and the
//! reconciler publishes again a hop that was emitted but never completed ([`Plan`]).
//!
//! - `keys`: run ids and step keys ([`new_run_id`], [`run_id_from`],
//!   [`child_step_key`], [`StepCounter`]).
//! - `ledger_key`: where a run's records live in the store (`exec/<runID>/…`).
//! - `ledger`: the records, written byte for byte as Go writes them.
//! - `entry`: [`RunEntry`], a run's first message (tiny's).
//! - `time`: [`Timestamp`], a time as Go writes it in JSON.
//! - `status`: a run's progress and its frontier of pending hops.
//! - `store`: the [`RunStore`] trait (JetStream KV `TINY_EXEC` in `tiny-runtime`),
//!   an in-memory one, and reading a run.
//! - `state`: [`RunState`], values a run's steps share.
//! - `step`: [`RunStep`], the run a handler call belongs to, as the engine carries it.
//! - `reconcile`: what a reconciler pass does, worked out from the store's contents.
//!
//! ```
//! use tiny_sdk::run::{StepCounter, child_step_key, new_run_id, root_step_key, step_record_key};
//!
//! let run = new_run_id();
//! let root = root_step_key(&run);
//! // In the handler of the root hop: one counter per call, one ordinal per edge.
//! let counter = StepCounter::new();
//! let first = child_step_key(&run, &root, "edge-a", counter.next("edge-a"));
//! let second = child_step_key(&run, &root, "edge-a", counter.next("edge-a"));
//! assert_ne!(first, second);
//! // A redelivered handler derives the same keys again.
//! let again = StepCounter::new();
//! assert_eq!(child_step_key(&run, &root, "edge-a", again.next("edge-a")), first);
//! assert_eq!(step_record_key(&run, &first), format!("exec/{run}/step/{first}"));
//! ```

mod capture;
mod entry;
mod json;
mod keys;
mod ledger;
mod ledger_key;
mod reconcile;
mod redrive;
mod state;
mod status;
mod step;
mod store;
mod time;

pub use capture::{
    CAPTURE_VERSION, CallTape, CapturedCall, CapturedEmit, CapturedEntry, CapturedRun, CapturedStep, RecordedCalls,
    capture_run,
};
pub use entry::RunEntry;
pub use keys::{StepCounter, child_step_key, new_run_id, root_step_key, run_id_from};
pub use ledger::{EmitRecord, StepRecord, StepStatus};
pub use ledger_key::{
    LedgerKey, LedgerKind, call_key, calls_prefix, decode_call_name, encode_call_name, entry_key, exec_prefix,
    parse_ledger_key, redrive_key, sanitize_key, scoped_key, step_record_key, step_records_prefix,
};
pub use reconcile::{LedgerScan, Plan, ReconcileSettings, Redrive};
pub use redrive::{RedrivePlan, carry_calls, plan_redrive};
pub use state::RunState;
pub use status::{RunStatus, StepSummary, frontier, superseded};
pub use step::{AnswerInbox, ReplyAddress, RunAnswer, RunStep};
pub use store::{MemoryRunStore, RunStore, read_run, run_status};
pub use time::Timestamp;

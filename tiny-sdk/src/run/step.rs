//! The run a handler call belongs to: its identity, the step it is, and what it
//! emitted (for the step's ledger record).

use std::{
    fmt,
    sync::{Arc, Mutex, PoisonError},
};

use bytes::Bytes;
use futures::future::BoxFuture;

use super::{EmitRecord, StepCounter, child_step_key, new_run_id, root_step_key};
use crate::Result;

/// Where a run's answer goes: the hop to `target` (`<node>:<port>`) is published
/// straight to `subject` on core NATS, reaching the replica that holds its caller
/// (Go's `BeginRunWithReply`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyAddress {
    /// The core NATS subject the origin listens on.
    pub subject: String,
    /// The `<node>:<port>` whose incoming hop is the answer.
    pub target: String,
    /// When the origin stops waiting (Unix ms; 0 for none). Carried, not enforced.
    pub deadline_unix_ms: i64,
}

/// One step of a durable run: the handler call it is, keyed by `step_key`, and the
/// hops it emitted.
///
/// The engine carries it on the [`Hop`](crate::Hop): a hop with a step goes through
/// the durable transport (stored, taken by any replica) instead of straight to the
/// local node. Step keys are derived, never random, so that a redelivered handler
/// re-emits the same keys and the broker's deduplication drops the copies.
pub struct RunStep {
    run_id: Arc<str>,
    step_key: String,
    reply: Option<Arc<ReplyAddress>>,
    /// For a hop on its way: the step whose handler emitted it.
    parent: Option<Arc<RunStep>>,
    /// Per edge, how many hops this step's handler has emitted along it (Go's
    /// per-edge ordinals: fan-out order does not change any edge's keys).
    ordinals: StepCounter,
    /// Per name, how many outside calls this step's handler has made.
    calls: StepCounter,
    emits: Mutex<Vec<EmitRecord>>,
    /// The step keys of hops this step's handler emitted that the transport failed
    /// to store (and no later attempt stored).
    unstored: Mutex<Vec<String>>,
}

impl RunStep {
    /// A new run's first step (`<runID>.root`), with a random run id.
    pub fn mint(reply: Option<ReplyAddress>) -> Self {
        let run_id = new_run_id();
        let step_key = root_step_key(&run_id);
        Self::new(run_id.into(), step_key, reply.map(Arc::new), None)
    }

    /// A step that arrived with a message (`x-run-id`, `x-step-key`); or, at
    /// [`root_step_key`](super::root_step_key), the first step of a run a stored
    /// message starts, named after it ([`run_id_from`](super::run_id_from)).
    pub fn continued(run_id: &str, step_key: &str, reply: Option<ReplyAddress>) -> Self {
        Self::new(run_id.into(), step_key.to_owned(), reply.map(Arc::new), None)
    }

    fn new(run_id: Arc<str>, step_key: String, reply: Option<Arc<ReplyAddress>>, parent: Option<Arc<RunStep>>) -> Self {
        Self {
            run_id,
            step_key,
            reply,
            parent,
            ordinals: StepCounter::new(),
            calls: StepCounter::new(),
            emits: Mutex::new(Vec::new()),
            unstored: Mutex::new(Vec::new()),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// This step's key (the idempotency key of its message).
    pub fn step_key(&self) -> &str {
        &self.step_key
    }

    /// Where the run's answer goes, if a front door waits for it.
    pub fn reply(&self) -> Option<&ReplyAddress> {
        self.reply.as_deref()
    }

    /// For a hop on its way, the step that emitted it.
    pub fn parent(&self) -> Option<&RunStep> {
        self.parent.as_deref()
    }

    /// The ordinal (from 0) of this step's next outside call `name`
    /// ([`call_key`](super::call_key)): the same on a redelivery, as the handler
    /// makes the same calls in the same order.
    pub fn next_call(&self, name: &str) -> u32 {
        self.calls.next(name)
    }

    /// Whether a hop to `to` (`<node>:<port>`) is the run's answer (Go's `IsReplyHop`).
    pub fn is_reply_hop(&self, to: &str) -> bool {
        self.reply
            .as_deref()
            .is_some_and(|r| !r.subject.is_empty() && !r.target.is_empty() && r.target == to)
    }

    /// The next hop this step's handler emits along `edge_id`: its key is derived
    /// from this step's key, the edge and how many hops went that way before.
    pub fn child(self: &Arc<Self>, edge_id: &str) -> Arc<RunStep> {
        let key = child_step_key(&self.run_id, &self.step_key, edge_id, self.ordinals.next(edge_id));
        Arc::new(Self::new(
            self.run_id.clone(),
            key,
            self.reply.clone(),
            Some(self.clone()),
        ))
    }

    /// Notes, on the step that emitted this hop, that the hop is stored (its record
    /// lists it, so that a stuck run can be driven again from the ledger). A retry of
    /// the same hop replaces its earlier note, and clears a [`not_stored`](Self::not_stored)
    /// one.
    pub fn stored(&self, emit: EmitRecord) {
        let Some(parent) = &self.parent else { return };
        parent
            .unstored
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|k| *k != emit.step_key);
        let mut emits = parent.emits.lock().unwrap_or_else(PoisonError::into_inner);
        match emits.iter_mut().find(|e| e.step_key == emit.step_key) {
            Some(earlier) => *earlier = emit,
            None => emits.push(emit),
        }
    }

    /// Notes, on the step that emitted this hop, that the transport could not store
    /// the hop (the broker did not answer): until an attempt stores it, the step is
    /// not done, whatever its handler makes of the failure (see
    /// [`has_unstored`](Self::has_unstored)).
    pub fn not_stored(&self) {
        let Some(parent) = &self.parent else { return };
        let mut unstored = parent.unstored.lock().unwrap_or_else(PoisonError::into_inner);
        if !unstored.contains(&self.step_key) {
            unstored.push(self.step_key.clone());
        }
    }

    /// Whether a hop this step's handler emitted was not stored: such a step must
    /// not be recorded (a record says its hops are stored), neither done nor failed,
    /// so that its message is delivered again and the hop sent again.
    pub fn has_unstored(&self) -> bool {
        !self.unstored.lock().unwrap_or_else(PoisonError::into_inner).is_empty()
    }

    /// The hops this step's handler emitted and the transport stored.
    pub fn emits(&self) -> Vec<EmitRecord> {
        self.emits.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl fmt::Debug for RunStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunStep")
            .field("run_id", &self.run_id)
            .field("step_key", &self.step_key)
            .field("reply", &self.reply)
            .finish_non_exhaustive()
    }
}

/// Where a run's answer can be awaited: a fresh subject on the broker and the first
/// message that arrives on it (the runtime's JetStream transport gives one).
pub trait AnswerInbox: Send + Sync {
    /// Opens an inbox: its subject, and the payload of the first message on it.
    fn open(&self) -> BoxFuture<'_, Result<(String, BoxFuture<'static, Result<Bytes>>)>>;
}

/// The answer of a run begun with [`Ctx::begin_run_answered`](crate::Ctx::begin_run_answered):
/// the payload the hop to the run's answer target carried, as JSON bytes.
pub struct RunAnswer {
    pub(crate) answer: BoxFuture<'static, Result<Bytes>>,
}

impl fmt::Debug for RunAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunAnswer").finish_non_exhaustive()
    }
}

impl Future for RunAnswer {
    type Output = Result<Bytes>;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Self::Output> {
        self.answer.as_mut().poll(cx)
    }
}

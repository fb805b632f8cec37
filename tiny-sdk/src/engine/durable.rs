//! Durable runs in the engine: a hop of a run goes to the durable transport instead
//! of the local node, and a node's handler call that is a step of a run is skipped
//! when the ledger has it already, and recorded when it ends.

use std::sync::Arc;

use crate::{
    error::{Error, Result, code},
    message::Reply,
    run::{self, RunStep, StepRecord, StepStatus, Timestamp},
};

use super::{address::Delivery, runner::Runner, state::Inner};

/// The label that makes a node start a run for each business message that arrives
/// outside one (Go's `tinysystems.io/execution-mode=durable`).
pub const EXECUTION_MODE_LABEL: &str = "tinysystems.io/execution-mode";

/// How long the ledger write of a step may take (Go's 10 s).
const LEDGER_WRITE: std::time::Duration = std::time::Duration::from_secs(10);

/// The most a run's first message may take in the ledger (`exec/<runID>/entry/…`):
/// the broker's largest message (the bucket's value limit, 1 MiB by default) less
/// room for the key and headers. A larger one is left out, and its capture says so.
fn entry_max() -> usize {
    crate::limits::wire_max().unwrap_or(1 << 20).saturating_sub(4096)
}

/// Whether a message for `port` of `runner`'s node starts a run: a business port of a
/// node labelled durable.
pub(super) fn mints(runner: &Runner, port: &str) -> bool {
    !port.starts_with('_')
        && runner
            .node
            .labels
            .get(EXECUTION_MODE_LABEL)
            .is_some_and(|m| m == "durable")
}

impl Inner {
    /// Hands a hop of a run to the router, whichever module its target is in.
    pub(super) async fn durable(&self, d: Delivery<'_>) -> Result<Reply> {
        let Some(router) = &self.router else {
            return Err(Error::permanent(format!(
                "the hop to `{}:{}` belongs to a durable run, and this engine has no transport to store it",
                d.node, d.port
            )));
        };
        let module = d.module().unwrap_or(&self.module);
        let step = d.hop.run.clone();
        let outcome = router.route(module, d).await;
        if let (Err(e), Some(step)) = (&outcome, step)
            && e.is_retryable()
        {
            // Not stored, and it may be on another attempt or delivery: the step
            // that emitted it is not done until it is.
            step.not_stored();
        }
        outcome
    }

    /// Runs one step of a run on a local node: skipped if the ledger has it (a
    /// redelivery), else run and recorded before the caller (the transport) may
    /// acknowledge the message. A node labelled durable starts the run here.
    pub(super) async fn step(&self, runner: Arc<Runner>, mut d: Delivery<'_>) -> Result<Reply> {
        let Some(store) = self.runs.clone() else {
            return Err(Error::permanent("durable step without a run ledger"));
        };
        let step = match &d.hop.run {
            Some(step) => step.clone(),
            None => {
                let step = Arc::new(RunStep::mint(None));
                tracing::debug!(node = %runner.name, run = step.run_id(), "run started");
                d.hop.run = Some(step.clone());
                step
            }
        };
        let key = run::step_record_key(step.run_id(), step.step_key());
        // A second delivery of a step still running here (a broker back from a crash
        // hands out again what it had delivered) waits for the first to end, and then
        // finds its record instead of running the handler beside it.
        let Some(_turn) = self.steps.turn(&key, &d.hop.cancel).await else {
            return Err(Error::transient(format!(
                "step `{}` of run `{}` (node `{}`) was stopped while an earlier delivery of it ran",
                step.step_key(),
                step.run_id(),
                runner.name
            )));
        };
        let ledger = |e: Error, what: &str| {
            Error::transient(format!(
                "{what} the run ledger at `{key}` (run `{}`, node `{}`): {e}",
                step.run_id(),
                runner.name
            ))
            .with_code(code::RUN_STORE)
        };
        if store.get(&key).await.map_err(|e| ledger(e, "reading"))?.is_some() {
            // Ran before (this is a redelivery): its emits are stored already.
            tracing::debug!(node = %runner.name, step = step.step_key(), "step already recorded: skipped");
            return Ok(Reply::empty());
        }
        // The run's first message is in no earlier record: it is kept under a key of
        // its own, before the handler runs (a failed write is then only a
        // redelivery), so that the run can be captured, replayed and re-driven from
        // its start along the edge it came by.
        // A message that does not serialise is not kept: its capture says the run
        // has no first message, and the handler meets the message as it is.
        if step.step_key() == run::root_step_key(step.run_id())
            && let Ok(data) = d.msg.to_json_bytes()
        {
            let (from, edge_id) = match d.source {
                super::address::Source::Edge { from, edge_id } => (from, edge_id),
                super::address::Source::Signal => ("", ""),
            };
            let value = run::RunEntry::encode(d.port, from, edge_id, &data, entry_max())?;
            let at = run::entry_key(step.run_id());
            let written = match tokio::time::timeout(LEDGER_WRITE, store.put(&at, value)).await {
                Ok(written) => written,
                Err(_) => Err(Error::permanent("no answer within 10 s")),
            };
            if let Err(e) = written {
                return Err(Error::transient(format!(
                    "writing the run's first message to the run ledger at `{at}` (run `{}`, node `{}`): {e}",
                    step.run_id(),
                    runner.name
                ))
                .with_code(code::RUN_STORE));
            }
        }
        let started = Timestamp::now();
        let outcome = self.run_here(runner.clone(), d).await;
        if step.has_unstored() {
            // A hop it emitted is not stored (the broker was away): neither done nor
            // a business failure. Not recorded, so that the transport delivers the
            // message again and the handler emits the hop again under the same key.
            let why = outcome.err().map(|e| format!(": {e}")).unwrap_or_default();
            return Err(Error::transient(format!(
                "step `{}` of run `{}` (node `{}`) is not recorded: a hop it emitted was not stored{why}",
                step.step_key(),
                step.run_id(),
                runner.name
            ))
            .with_code(code::UNREACHABLE));
        }
        let record = StepRecord::finished(runner.name.to_string(), outcome.as_ref().err(), step.emits(), started);
        let status = if record.status == StepStatus::Done {
            "done"
        } else {
            "failed"
        };
        let bytes = record.to_json_bytes()?;
        match tokio::time::timeout(LEDGER_WRITE, store.put(&key, bytes.into())).await {
            Ok(Ok(())) => {
                tracing::debug!(node = %runner.name, step = step.step_key(), status, "step recorded");
                outcome
            }
            Ok(Err(e)) => Err(ledger(e, "writing")),
            Err(_) => Err(ledger(Error::permanent("no answer within 10 s"), "writing")),
        }
    }
}

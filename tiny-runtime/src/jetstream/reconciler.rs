//! The leader's pass over the runs in `TINY_EXEC` (Go's reconciler): a run whose
//! last step ended long ago with hops nobody recorded has them published again;
//! after three re-drives such a hop fails the run; a finished run's records go a day
//! after it ended. What to do is worked out by [`Plan::compute`]; this module reads
//! the bucket and carries the plan out.

use std::sync::Arc;

use bytes::Bytes;
use tiny_sdk::{
    Result,
    flow::parse_node_name,
    run::{LedgerKind, Plan, ReconcileSettings, RunStore as _, Timestamp, parse_ledger_key, step_record_key},
};
use tokio::task::JoinHandle;

use super::{JetStream, router};
use crate::{leader::Leadership, nats::wire};

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    /// Hops published again.
    pub redriven: usize,
    /// Hops given up on (a failed record written).
    pub failed: usize,
    /// Keys of finished runs deleted.
    pub deleted: usize,
}

/// Runs a pass every `settings.interval` while this replica leads.
pub fn spawn(js: Arc<JetStream>, leadership: Leadership, settings: ReconcileSettings) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut every = tokio::time::interval(settings.interval);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            every.tick().await;
            if !leadership.is_leader() || !js.link().is_up() {
                continue;
            }
            match pass(&js, &settings).await {
                Ok(done) if done != Pass::default() => tracing::info!(?done, "run reconciler pass"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "run reconciler pass failed"),
            }
        }
    })
}

/// One pass: reads every step record and re-drive counter in the bucket, and does
/// what [`Plan::compute`] says. As Go's, one key that cannot be read or written is
/// left for the next pass and the others go on; only a bucket that cannot be listed
/// fails the pass.
pub async fn pass(js: &JetStream, settings: &ReconcileSettings) -> Result<Pass> {
    let mut entries: Vec<(String, Bytes)> = Vec::new();
    for key in js.keys("exec/").await? {
        let Some(parsed) = parse_ledger_key(&key) else { continue };
        if !matches!(parsed.kind, LedgerKind::Step | LedgerKind::Redrive) {
            continue;
        }
        match js.get(&key).await {
            Ok(Some(value)) => entries.push((key, value)),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(key = %key, error = %e, "run reconciler: a record is unreadable, skipped this pass")
            }
        }
    }
    let plan = Plan::compute(entries, Timestamp::now(), settings);
    let mut done = Pass::default();
    for redrive in &plan.redrive {
        let hop = &redrive.hop;
        let module = hop
            .to
            .rsplit_once(':')
            .and_then(|(node, _)| parse_node_name(node))
            .map(|(module, _)| module.to_owned());
        let Some(module) = module else {
            tracing::warn!(run = %redrive.run_id, to = %hop.to, "a pending hop names no module: not re-driven");
            continue;
        };
        // As Go: the ledger's fields, no depth.
        let headers = router::durable_headers(hop, &redrive.run_id, 0);
        match router::store(js, wire::subject(&module), headers, hop.data.clone(), &module).await {
            Ok(()) => {
                // Best effort, as Go: a counter not written only delays the give-up.
                if let Err(e) = js.put(&redrive.counter_key(), redrive.counter_value()).await {
                    tracing::warn!(run = %redrive.run_id, step = %hop.step_key, error = %e, "re-drive counter not written");
                }
                tracing::info!(run = %redrive.run_id, step = %hop.step_key, to = %hop.to, attempt = redrive.attempt, "hop re-driven");
                done.redriven += 1;
            }
            Err(e) => tracing::warn!(run = %redrive.run_id, step = %hop.step_key, error = %e, "re-drive not published"),
        }
    }
    for (run_id, step_key, record) in &plan.fail {
        let written = match record.to_json_bytes() {
            Ok(bytes) => js.put(&step_record_key(run_id, step_key), bytes.into()).await,
            Err(e) => Err(e),
        };
        match written {
            Ok(()) => {
                tracing::warn!(run = %run_id, step = %step_key, error = record.error.as_deref().unwrap_or_default(), "run failed: hop never completed");
                done.failed += 1;
            }
            Err(e) => {
                tracing::warn!(run = %run_id, step = %step_key, error = %e, "a run's failure not written; next pass")
            }
        }
    }
    for key in &plan.delete {
        match js.delete(key).await {
            Ok(()) => done.deleted += 1,
            Err(e) => tracing::warn!(key = %key, error = %e, "a finished run's record not deleted; next pass"),
        }
    }
    Ok(done)
}

//! The leader's pass over the runs in `TINY_EXEC` (Go's reconciler): a run whose
//! last step ended long ago with hops nobody recorded has them published again;
//! after three re-drives such a hop fails the run; a finished run's records go a day
//! after it ended, and those of a run left waiting on a module that is gone, two days
//! after its last step. What to do is worked out by a [`LedgerScan`] of this module's
//! part of the runs; this module streams the bucket into it and carries the plan
//! out with revision-checked writes.

use std::sync::Arc;

use async_nats::jetstream::kv::{CreateErrorKind, Operation, UpdateErrorKind};
use futures::StreamExt as _;
use tiny_sdk::{
    Result,
    flow::parse_node_name,
    run::{LedgerScan, Plan, ReconcileSettings, Timestamp, step_record_key},
};
use tokio::task::JoinHandle;

use super::{
    JetStream,
    config::{API_TIMEOUT, EXEC_BUCKET_STREAM},
    router,
    stream::ledger,
};
use crate::{leader::Leadership, nats::wire};

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    /// Hops published again.
    pub redriven: usize,
    /// Hops given up on (a failed record written).
    pub failed: usize,
    /// Keys of finished runs deleted, by this pass or, since it read them, by
    /// another module's.
    pub deleted: usize,
    /// Writes skipped because the key changed since the pass read it (another
    /// leader re-drove the hop, the hop completed, the run went on): the newer
    /// value stays, and the next pass reads it.
    pub conflicts: usize,
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

/// One pass: [`plan`], then [`carry_out`]. As Go's, one key that cannot be read or
/// written is left for the next pass and the others go on; only a bucket that
/// cannot be read fails the pass.
pub async fn pass(js: &JetStream, settings: &ReconcileSettings) -> Result<Pass> {
    let plan = plan(js, settings).await?;
    Ok(carry_out(js, &plan).await)
}

/// What a pass of this module does: the bucket streamed once (the last value of
/// each key, with its revision, through one consumer), each record taken in and
/// dropped, and only this module's part of the runs planned (see
/// [`LedgerScan::of_module`]). The keys are Go's (`exec/<runID>/...`) and name no
/// module, so every record is read; only this module's hops are kept whole.
pub async fn plan(js: &JetStream, settings: &ReconcileSettings) -> Result<Plan> {
    let bucket = js.bucket()?;
    let mut scan = LedgerScan::of_module(js.module());
    let reading = |e: &dyn std::fmt::Display| ledger("reading the runs", e);
    // The stream's state now (the bucket's own status is the one it had when opened).
    let stored = js
        .jetstream()
        .get_stream(EXEC_BUCKET_STREAM)
        .await
        .map_err(|e| reading(&e))?
        .cached_info()
        .state
        .messages;
    // A watch of an empty bucket would wait for the first write.
    if stored > 0 {
        let mut entries = bucket.watch_with_history(">").await.map_err(|e| reading(&e))?;
        loop {
            let entry = match tokio::time::timeout(API_TIMEOUT, entries.next()).await {
                Ok(Some(Ok(entry))) => entry,
                Ok(Some(Err(e))) => return Err(reading(&e)),
                Ok(None) => break,
                Err(_) => return Err(reading(&"the broker stopped sending them")),
            };
            if entry.operation == Operation::Put {
                let written = Timestamp::from_unix(entry.created.unix_timestamp(), entry.created.nanosecond());
                scan.add_written(&entry.key, &entry.value, entry.revision, written);
            }
            // Nothing more was pending when this one was sent: the bucket is read.
            if entry.delta == 0 {
                break;
            }
        }
    }
    Ok(scan.plan(Timestamp::now(), settings))
}

/// Does what `plan` says, each write checked against the revision the plan read
/// (a re-drive counter is updated from its revision, or created; a failed record
/// is created; a finished run's key is deleted at its revision): a key changed
/// since is left as it is, counted in [`Pass::conflicts`]. A re-drive's counter is
/// written before its hop is published again, so that two leaders reading the same
/// counter publish the hop once.
pub async fn carry_out(js: &JetStream, plan: &Plan) -> Pass {
    let mut done = Pass::default();
    let bucket = match js.bucket() {
        Ok(bucket) => bucket,
        Err(e) => {
            tracing::warn!(error = %e, "run reconciler: the ledger is not ready");
            return done;
        }
    };
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
        let key = redrive.counter_key();
        let counted = match plan.revisions.get(&key) {
            Some(&revision) => bucket
                .update(&key, redrive.counter_value(), revision)
                .await
                .map(drop)
                .map_err(|e| (matches!(e.kind(), UpdateErrorKind::WrongLastRevision), e.to_string())),
            None => bucket
                .create(&key, redrive.counter_value())
                .await
                .map(drop)
                .map_err(|e| (matches!(e.kind(), CreateErrorKind::AlreadyExists), e.to_string())),
        };
        match counted {
            Ok(()) => {}
            Err((true, _)) => {
                tracing::info!(run = %redrive.run_id, step = %hop.step_key, "re-drive counter changed since read: another leader re-drives the hop; skipped");
                done.conflicts += 1;
                continue;
            }
            Err((false, e)) => {
                tracing::warn!(run = %redrive.run_id, step = %hop.step_key, error = %e, "re-drive counter not written; next pass");
                continue;
            }
        }
        // As Go: the ledger's fields, no depth.
        let headers = router::durable_headers(hop, &redrive.run_id, 0);
        match router::store(js, wire::subject(&module), headers, hop.data.clone(), &module).await {
            Ok(()) => {
                tracing::info!(run = %redrive.run_id, step = %hop.step_key, to = %hop.to, attempt = redrive.attempt, "hop re-driven");
                done.redriven += 1;
            }
            // The counter went up without a publish: one attempt fewer, never one more.
            Err(e) => tracing::warn!(run = %redrive.run_id, step = %hop.step_key, error = %e, "re-drive not published"),
        }
    }
    for (run_id, step_key, record) in &plan.fail {
        let bytes = match record.to_json_bytes() {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(run = %run_id, step = %step_key, error = %e, "a run's failure not written");
                continue;
            }
        };
        // Created, never put: a record written since (the hop completed after all)
        // stays.
        match bucket.create(step_record_key(run_id, step_key), bytes.into()).await {
            Ok(_) => {
                tracing::warn!(run = %run_id, step = %step_key, error = record.error.as_deref().unwrap_or_default(), "run failed: hop never completed");
                done.failed += 1;
            }
            Err(e) if e.kind() == CreateErrorKind::AlreadyExists => {
                tracing::info!(run = %run_id, step = %step_key, "the hop has a record since the pass read the run: not failed");
                done.conflicts += 1;
            }
            Err(e) => {
                tracing::warn!(run = %run_id, step = %step_key, error = %e, "a run's failure not written; next pass")
            }
        }
    }
    for key in &plan.delete {
        match bucket
            .delete_expect_revision(key, plan.revisions.get(key).copied())
            .await
        {
            Ok(()) => done.deleted += 1,
            Err(e) if e.kind() == UpdateErrorKind::WrongLastRevision => {
                // Another module's pass may have deleted it first: its delete marker is
                // the newer revision. Gone is what this pass wanted, not a conflict.
                match bucket.entry(key.as_str()).await {
                    Ok(None) => done.deleted += 1,
                    Ok(Some(entry)) if entry.operation != Operation::Put => done.deleted += 1,
                    Ok(Some(_)) => {
                        tracing::info!(key = %key, "a finished run's record changed since read: kept");
                        done.conflicts += 1;
                    }
                    Err(e) => {
                        tracing::warn!(key = %key, error = %e, "a finished run's record not read after a conflict; next pass")
                    }
                }
            }
            Err(e) => tracing::warn!(key = %key, error = %e, "a finished run's record not deleted; next pass"),
        }
    }
    if done.conflicts > 0 {
        tracing::info!(
            conflicts = done.conflicts,
            "run reconciler: writes skipped, their keys changed since read"
        );
    }
    done
}

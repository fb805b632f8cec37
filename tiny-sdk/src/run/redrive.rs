//! Re-driving a failed run from one of its steps (`<module> redrive`): the step's
//! message sent again, on the flow as it is now, as a new attempt recorded in the
//! ledger beside the failed one.
//!
//! The attempt is a step record of its own (key derived from the step it re-drives
//! and how many attempts it had, [`StepRecord::redrive_of`] naming that step) whose
//! one emit is the re-driven hop, under a fresh step key. So the hop is pending in
//! the ledger until it runs, as any hop is (a module away has it re-driven by its
//! leader's pass, Go's rules), the failed step's record stays as it was, and the
//! steps after it get fresh keys too.
//!
//! The failed step's outside call answers are carried over to the fresh key
//! ([`carry_calls`]), as [`Ctx::outside`](crate::Ctx::outside) promises: a call that
//! answered (a payment charged) is not made again by the attempt. A re-drive from the
//! first step sends the run's first message ([`RunEntry`]) along the edge it came by,
//! so that its target's mapping shapes it again; a hop whose answer's waiter has
//! given up (its deadline passed) is sent as a background hop, without the reply.

use std::collections::HashMap;

use super::{
    EmitRecord, RunEntry, RunStore, StepRecord, StepStatus, Timestamp, call_key, calls_prefix, child_step_key,
    root_step_key, superseded,
};
use crate::error::{Error, Result, code};

/// What a re-drive writes and sends (see the [module](crate::run)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedrivePlan {
    /// The step run again.
    pub target: String,
    /// The key of the attempt's record.
    pub attempt_key: String,
    /// The attempt's record, to write before the hop is sent.
    pub attempt: StepRecord,
    /// The hop to send: the target step's message, under a fresh step key.
    pub hop: EmitRecord,
}

/// Plans re-driving run `run_id`, whose step records are `records` and whose first
/// message is `entry` (its [`entry_key`](super::entry_key), if any), from step `at`
/// (`<node>:<port>`: its latest step there), or from its first failed step. Fails
/// with code [`INVALID`](code::INVALID) when the run has no failed step (only a
/// failed run is re-driven), when no step ran at `at`, or when the ledger does not
/// hold the message that step got; each error names the run and the step.
pub fn plan_redrive(
    run_id: &str,
    records: &[(String, StepRecord)],
    entry: Option<&RunEntry>,
    at: Option<&str>,
) -> Result<RedrivePlan> {
    let invalid = |why: String| Error::permanent(why).with_code(code::INVALID);
    let gone = superseded(records);
    let live: Vec<&(String, StepRecord)> = records.iter().filter(|(k, _)| !gone.contains(k)).collect();
    if !live.iter().any(|(_, r)| r.status == StepStatus::Failed) {
        return Err(invalid(format!(
            "run `{run_id}` has no failed step: only a failed run is re-driven"
        )));
    }
    // The hop each step got, from the record that emitted it.
    let arrivals: HashMap<&str, &EmitRecord> = records
        .iter()
        .flat_map(|(_, r)| &r.emits)
        .map(|e| (e.step_key.as_str(), e))
        .collect();
    let root = root_step_key(run_id);
    let arrival = |key: &str, r: &StepRecord| -> Option<EmitRecord> {
        match arrivals.get(key) {
            Some(hop) => Some((*hop).clone()),
            None if key == root => {
                let entry = entry?;
                Some(EmitRecord {
                    to: format!("{}:{}", r.node, entry.port),
                    from: entry.from.clone(),
                    edge_id: entry.edge_id.clone(),
                    data: serde_json::to_vec(entry.data.as_ref()?).ok()?.into(),
                    ..EmitRecord::default()
                })
            }
            None => None,
        }
    };
    let by_start =
        |a: &&&(String, StepRecord), b: &&&(String, StepRecord)| (a.1.started_at, &a.0).cmp(&(b.1.started_at, &b.0));
    let target = match at {
        Some(at) => live
            .iter()
            .filter(|(k, r)| arrival(k, r).is_some_and(|hop| hop.to == at))
            .max_by(by_start)
            .ok_or_else(|| invalid(format!("run `{run_id}` has no step at `{at}` to re-drive")))?,
        None => live
            .iter()
            .filter(|(_, r)| r.status == StepStatus::Failed)
            .min_by(by_start)
            .ok_or_else(|| invalid(format!("run `{run_id}` has no failed step")))?,
    };
    let (target_key, record) = (&target.0, &target.1);
    let mut hop = arrival(target_key, record).ok_or_else(|| {
        invalid(format!(
            "run `{run_id}`: the ledger does not hold the message step `{target_key}` (node `{}`) got",
            record.node
        ))
    })?;
    let attempts = records.iter().filter(|(_, r)| r.redrive_of == *target_key).count();
    let attempt_key = child_step_key(
        run_id,
        target_key,
        "redrive",
        u32::try_from(attempts).unwrap_or(u32::MAX),
    );
    hop.step_key = child_step_key(run_id, &attempt_key, &hop.edge_id, 0);
    let now = Timestamp::now();
    // Nobody waits for the answer any more: the hop goes as a background one.
    let now_ms = now
        .unix_seconds()
        .saturating_mul(1000)
        .saturating_add(i64::from(now.subsec_nanos() / 1_000_000));
    if hop.reply_deadline_unix_ms != 0 && hop.reply_deadline_unix_ms <= now_ms {
        hop.reply_subject.clear();
        hop.reply_target.clear();
        hop.reply_deadline_unix_ms = 0;
    }
    let attempt = StepRecord {
        node: record.node.clone(),
        status: StepStatus::Done,
        error: None,
        emits: vec![hop.clone()],
        started_at: now,
        completed_at: now,
        duration_ms: 0,
        redrive_of: target_key.clone(),
    };
    Ok(RedrivePlan {
        target: target_key.clone(),
        attempt_key,
        attempt,
        hop,
    })
}

/// Copies the outside call answers step `from` of run `run_id` recorded to step `to`
/// (a re-drive's fresh key for it), so that the attempt's handler gets them instead
/// of making the calls again; an answer `to` has already is left. Returns how many
/// were copied.
pub async fn carry_calls<S: RunStore + ?Sized>(store: &S, run_id: &str, from: &str, to: &str) -> Result<usize> {
    let prefix = format!("{}{from}/", calls_prefix(run_id));
    let mut copied = 0;
    for key in store.keys(&prefix).await? {
        let Some((name, n)) = key.strip_prefix(&prefix).and_then(|rest| rest.rsplit_once('/')) else {
            continue;
        };
        let (Some(name), Ok(n)) = (super::decode_call_name(name), n.parse::<u32>()) else {
            continue;
        };
        let target = call_key(run_id, to, &name, n);
        if store.get(&target).await?.is_some() {
            continue;
        }
        if let Some(answer) = store.get(&key).await? {
            store.put(&target, answer).await?;
            copied += 1;
        }
    }
    Ok(copied)
}

//! A run's progress, read from its ledger records: the answer of Go's `run_status`
//! component, and the frontier the reconciler re-drives.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::{EmitRecord, StepRecord, StepStatus, Timestamp};

/// The hops emitted by a run's steps that have no step record of their own yet:
/// the work still outstanding (or lost). A failed step has a record, so it is not
/// pending: failures are final.
///
/// `records` are `(stepKey, record)` pairs of one run; the hops come in the order of
/// the records, then of each record's emits. A step key emitted twice counts twice,
/// as in Go.
pub fn frontier(records: &[(String, StepRecord)]) -> Vec<&EmitRecord> {
    let seen: HashSet<&str> = records.iter().map(|(key, _)| key.as_str()).collect();
    records
        .iter()
        .flat_map(|(_, record)| &record.emits)
        .filter(|hop| !seen.contains(hop.step_key.as_str()))
        .collect()
}

/// The step keys whose records a later attempt superseded: each re-driven step and
/// every step that followed from it (by the hops the records list). Read as history
/// by [`RunStatus::from_records`] and by a re-drive's plan ([`plan_redrive`](super::plan_redrive)).
pub fn superseded(records: &[(String, StepRecord)]) -> HashSet<String> {
    let children: HashMap<&str, Vec<&str>> = records
        .iter()
        .map(|(key, r)| (key.as_str(), r.emits.iter().map(|e| e.step_key.as_str()).collect()))
        .collect();
    let mut out = HashSet::new();
    let mut todo: Vec<&str> = records
        .iter()
        .filter(|(_, r)| !r.redrive_of.is_empty())
        .map(|(_, r)| r.redrive_of.as_str())
        .collect();
    while let Some(key) = todo.pop() {
        if out.insert(key.to_owned()) {
            todo.extend(children.get(key).into_iter().flatten().copied());
        }
    }
    out
}

/// A run's progress, as Go's `run_status` answers it (its JSON names). Its schema is
/// what a component that reports it puts on its port (the `schemars` descriptions
/// are what the editor shows).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunStatus {
    /// The run has at least one step record. A run that was started but whose first
    /// hop has not completed yet is not found.
    #[schemars(description = "Whether any step of the run is recorded.")]
    pub found: bool,
    /// Found, nothing pending and nothing failed.
    #[schemars(description = "Found, nothing pending, nothing failed.")]
    pub complete: bool,
    /// A step failed.
    #[schemars(description = "Whether a step failed.")]
    pub failed: bool,
    /// How many hops were emitted without completing yet (the [`frontier`]).
    #[serde(rename = "pendingSteps")]
    #[schemars(description = "Hops emitted and not recorded yet.")]
    pub pending_steps: usize,
    /// Every step record, by step key (empty, and then not written, when not found).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(description = "The recorded steps, by key (left out when there are none, as Go's).")]
    pub steps: Vec<StepSummary>,
}

/// One step of a [`RunStatus`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "RunStep", description = "One step of the run, as its record has it.")]
pub struct StepSummary {
    /// The hop's step key.
    #[serde(rename = "stepKey")]
    #[schemars(description = "The step's key.")]
    pub step_key: String,
    /// The node that handled it.
    #[schemars(description = "The node that ran it.")]
    pub node: String,
    /// How it ended.
    #[schemars(description = "`done` or `failed`.")]
    pub status: StepStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", description = "Why it failed.")]
    pub error: Option<String>,
    /// When it ended.
    #[serde(rename = "completedAt")]
    #[schemars(description = "When it ended (RFC 3339).")]
    pub completed_at: Timestamp,
}

impl RunStatus {
    /// The status of a run from its `(stepKey, record)` pairs (in any order: the
    /// steps are listed by step key, as Go lists the store's keys).
    pub fn from_records(records: &[(String, StepRecord)]) -> Self {
        let mut steps: Vec<StepSummary> = records
            .iter()
            .map(|(step_key, record)| StepSummary {
                step_key: step_key.clone(),
                node: record.node.clone(),
                status: record.status,
                error: record.error.clone().filter(|e| !e.is_empty()),
                completed_at: record.completed_at,
            })
            .collect();
        steps.sort_by(|a, b| a.step_key.cmp(&b.step_key));
        let found = !records.is_empty();
        // A step a re-drive ran again (tiny's `redrive`), and those after it, are
        // history: the run is what its latest attempt makes it.
        let gone = superseded(records);
        let failed = records
            .iter()
            .any(|(key, record)| record.is_failed() && !gone.contains(key));
        let pending_steps = frontier(records)
            .iter()
            .filter(|hop| !gone.contains(&hop.step_key))
            .count();
        Self {
            found,
            complete: found && pending_steps == 0 && !failed,
            failed,
            pending_steps,
            steps,
        }
    }
}

//! What one pass of the run reconciler does, worked out from the store's contents:
//! the safety net for a hop that was stored but never completed (its pod died after
//! the step record of its sender was written), as the Go SDK's leader runs it.
//!
//! Per run: the frontier is the emitted hops with no step record of their own.
//! - Empty frontier: the run is over; once its latest `completedAt` is older than
//!   [`gc_after`](ReconcileSettings::gc_after), its step records and re-drive
//!   counters are deleted (not its other run-scoped state).
//! - Otherwise, once the latest `completedAt` is [`stale`](ReconcileSettings::stale),
//!   each frontier hop is published again and its re-drive counter bumped; a hop
//!   re-driven [`max_redrives`](ReconcileSettings::max_redrives) times already gets
//!   a terminal failed record instead, so that the run ends failed rather than
//!   re-running side effects forever.
//!
//! [`Plan::compute`] is pure: the runtime reads the bucket, publishes the re-drives,
//! writes the counters and records, and deletes the keys.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::Duration,
};

use bytes::Bytes;

use super::{EmitRecord, LedgerKind, StepRecord, StepStatus, Timestamp, parse_ledger_key, redrive_key};

/// The reconciler's timings and limit. The default is the Go SDK's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReconcileSettings {
    /// How often a pass runs (1 min).
    pub interval: Duration,
    /// A run with pending hops and no step completed for this long is stalled, and
    /// its pending hops are re-driven (6 min: longer than a hop may legitimately run,
    /// since a re-drive of a running hop runs it twice).
    pub stale: Duration,
    /// A finished run's ledger is deleted this long after its last step (24 h).
    pub gc_after: Duration,
    /// Re-drives of one hop before it is marked failed (3).
    pub max_redrives: u32,
}

impl Default for ReconcileSettings {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(60),
            stale: Duration::from_secs(6 * 60),
            gc_after: Duration::from_secs(24 * 60 * 60),
            max_redrives: 3,
        }
    }
}

/// A hop to publish again, as its sender did: to [`hop.to`](EmitRecord::to) from
/// `hop.from` along `hop.edge_id` with `hop.data`, run `run_id`, step key
/// `hop.step_key` (which the broker dedupes on), the reply fields, no depth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redrive {
    /// The run.
    pub run_id: String,
    /// The hop, as its sender's step record has it.
    pub hop: EmitRecord,
    /// Which re-drive of the hop this is (1 for the first): the value to write at
    /// [`counter_key`](Self::counter_key) once the publish succeeded.
    pub attempt: u32,
}

impl Redrive {
    /// The key of the hop's re-drive counter.
    pub fn counter_key(&self) -> String {
        redrive_key(&self.run_id, &self.hop.step_key)
    }

    /// The counter's new value: [`attempt`](Self::attempt) in ASCII decimal.
    pub fn counter_value(&self) -> Bytes {
        Bytes::from(self.attempt.to_string())
    }
}

/// What one reconciler pass does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Plan {
    /// Hops to publish again, and whose counter to bump.
    pub redrive: Vec<Redrive>,
    /// `(runID, stepKey, record)`: terminal failed records to write at
    /// [`step_record_key`](super::step_record_key)`(runID, stepKey)`, for hops that
    /// used up their re-drives.
    pub fail: Vec<(String, String, StepRecord)>,
    /// Keys to delete: the step records and re-drive counters of finished runs.
    pub delete: Vec<String>,
    /// The revision each re-drive counter and each key to delete had when it was
    /// read (see [`LedgerScan::add`]); a counter not here was not there: a writer
    /// that checks revisions then never overwrites a newer value.
    pub revisions: BTreeMap<String, u64>,
}

/// One run's ledger as the pass reads it: what the plan needs of it, not the
/// records themselves.
#[derive(Debug, Default)]
struct Ledger {
    /// The step keys that have a record.
    recorded: BTreeSet<String>,
    /// The hops emitted by the steps whose records are this scan's to act on, by
    /// the emitting step's key (a stable order).
    owned_emits: BTreeMap<String, Vec<EmitRecord>>,
    /// The step keys of the other hops: only whether they are pending matters.
    other_emits: Vec<String>,
    /// Its step record and re-drive counter keys, to delete once it is old, with
    /// their revisions.
    keys: Vec<(String, u64)>,
    /// Its outside calls' answers and first message, with when each was written
    /// (`None`: not known): deleted with its records; without any, only once each is
    /// older than `gc_after` (an answer is written while its step runs, before the
    /// step's record, and no step runs that long), so that a run whose records a
    /// Go leader removed does not leave them in the bucket for good.
    calls: Vec<(String, u64, Option<Timestamp>)>,
    latest: Timestamp,
    /// Whether one of its steps ran in this scan's module.
    touched: bool,
}

/// The reconciler's reading of the store, one `(key, value, revision)` at a time,
/// so that a pass streams the bucket rather than holding all of it. With
/// [`of_module`](Self::of_module), the plan covers only that module's part of
/// the runs:
/// - a pending hop is re-driven, or failed, only by the module whose step emitted
///   it (the step record's `node`): every module's leader reads the one shared
///   bucket, and one hop must not be re-driven by each;
/// - a finished run is deleted by every module that ran a step of it (deleting is
///   idempotent, and the run is gone once any of them did).
///
/// The keys carry no module (Go's layout, `exec/<runID>/...`), so every step
/// record is read; of another module's records only their step keys are kept.
/// Re-drive counters left of a run with no step record are deleted by anyone.
#[derive(Debug)]
pub struct LedgerScan {
    module: Option<String>,
    runs: BTreeMap<String, Ledger>,
    counters: BTreeMap<String, (i64, u64)>,
}

impl LedgerScan {
    /// A scan that acts on every run, as Go's pass does.
    pub fn all() -> Self {
        Self {
            module: None,
            runs: BTreeMap::new(),
            counters: BTreeMap::new(),
        }
    }

    /// A scan that acts only on module `module`'s part of the runs (see [`LedgerScan`]).
    pub fn of_module(module: &str) -> Self {
        Self {
            module: Some(module.to_owned()),
            ..Self::all()
        }
    }

    /// Whether a step that ran at `node` (`<node>` or `<node>:<port>`) is this
    /// scan's.
    fn owns(&self, node: &str) -> bool {
        let Some(module) = &self.module else { return true };
        let node = node.rsplit_once(':').map_or(node, |(n, _)| n);
        crate::flow::parse_node_name(node).is_some_and(|(m, _)| crate::flow::module_matches(m, module))
    }

    /// Takes in the store's `value` at `key`, of `revision` (0 if unknown). Keys
    /// other than step records and re-drive counters are left alone; a step record
    /// that does not read is skipped (as Go's pass does: one bad record must not
    /// stop the others), and so is never deleted either.
    pub fn add(&mut self, key: &str, value: &[u8], revision: u64) {
        self.add_written(key, value, revision, None);
    }

    /// As [`add`](Self::add), with when the value was written (the bucket entry's
    /// time), which lets a pass remove outside call answers and a first message
    /// whose run has no step record left.
    pub fn add_written(&mut self, key: &str, value: &[u8], revision: u64, written: Option<Timestamp>) {
        let Some(parsed) = parse_ledger_key(key) else {
            return;
        };
        match parsed.kind {
            // Recorded answers of outside calls, and the first message, go with
            // their run.
            LedgerKind::Call | LedgerKind::Entry => {
                self.runs
                    .entry(parsed.run_id)
                    .or_default()
                    .calls
                    .push((key.to_owned(), revision, written));
            }
            LedgerKind::Redrive => {
                self.counters.insert(key.to_owned(), (redrive_count(value), revision));
                self.runs
                    .entry(parsed.run_id)
                    .or_default()
                    .keys
                    .push((key.to_owned(), revision));
            }
            LedgerKind::Step => {
                let Ok(record) = StepRecord::from_json_slice(value) else {
                    return;
                };
                let owned = self.owns(&record.node);
                let ledger = self.runs.entry(parsed.run_id).or_default();
                ledger.latest = ledger.latest.max(record.completed_at);
                ledger.touched |= owned;
                if owned {
                    ledger.owned_emits.insert(parsed.step_key.clone(), record.emits);
                } else {
                    ledger.other_emits.extend(record.emits.into_iter().map(|e| e.step_key));
                }
                ledger.recorded.insert(parsed.step_key);
                ledger.keys.push((key.to_owned(), revision));
            }
        }
    }

    /// What to do at time `now`.
    pub fn plan(self, now: Timestamp, settings: &ReconcileSettings) -> Plan {
        let mut plan = Plan::default();
        for (run_id, ledger) in self.runs {
            let age = now.nanos_since(ledger.latest);
            let pending = |step_key: &String| !ledger.recorded.contains(step_key);
            let frontier: Vec<&EmitRecord> = ledger
                .owned_emits
                .values()
                .flatten()
                .filter(|hop| pending(&hop.step_key))
                .collect();

            let finished = frontier.is_empty() && !ledger.other_emits.iter().any(pending);
            // A run nobody wrote for twice `gc_after`, with none of this module's hops
            // left to re-drive, is anyone's to remove: the modules it waits on are gone
            // (uninstalled, or renamed by a major version), since a live one re-drives
            // or fails its hops within `stale` x `max_redrives` and failing writes the
            // run again. Left for good, its records would fill the bounded bucket.
            let forgotten = frontier.is_empty() && age > nanos(settings.gc_after).saturating_mul(2);
            if finished || forgotten {
                let anyones = self.module.is_none() || ledger.recorded.is_empty() || forgotten;
                if (ledger.touched || anyones) && age > nanos(settings.gc_after) {
                    let mut keys = ledger.keys;
                    let recorded = !ledger.recorded.is_empty();
                    keys.extend(
                        ledger
                            .calls
                            .into_iter()
                            .filter(|(_, _, written)| {
                                recorded || written.is_some_and(|t| now.nanos_since(t) > nanos(settings.gc_after))
                            })
                            .map(|(key, revision, _)| (key, revision)),
                    );
                    keys.sort();
                    for (key, revision) in keys {
                        plan.revisions.insert(key.clone(), revision);
                        plan.delete.push(key);
                    }
                }
                continue;
            }
            if age < nanos(settings.stale) {
                continue; // progress lately: the hops are likely on their way
            }

            for hop in frontier {
                let counter = redrive_key(&run_id, &hop.step_key);
                let (done, revision) = self.counters.get(&counter).copied().unwrap_or((0, 0));
                if done >= i64::from(settings.max_redrives) {
                    let record = StepRecord {
                        node: hop.to.clone(),
                        status: StepStatus::Failed,
                        error: Some(format!(
                            "re-drive limit reached after {done} attempts — hop never completed \
                             (is the target module on an SDK >= v0.11 with durable support?)"
                        )),
                        emits: Vec::new(),
                        started_at: Timestamp::ZERO,
                        completed_at: now,
                        duration_ms: 0,
                        redrive_of: String::new(),
                    };
                    plan.fail.push((run_id.clone(), hop.step_key.clone(), record));
                } else {
                    if revision > 0 {
                        plan.revisions.insert(counter, revision);
                    }
                    plan.redrive.push(Redrive {
                        run_id: run_id.clone(),
                        hop: hop.clone(),
                        attempt: u32::try_from(done.saturating_add(1).max(1)).unwrap_or(u32::MAX),
                    });
                }
            }
        }
        plan
    }
}

impl Plan {
    /// The pass over the bucket's `(key, value)` pairs at time `now`, acting on
    /// every run (see [`LedgerScan::all`]; the runtime's pass streams a
    /// [`LedgerScan::of_module`] instead).
    pub fn compute<I, K, V>(entries: I, now: Timestamp, settings: &ReconcileSettings) -> Plan
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<[u8]>,
    {
        let mut scan = LedgerScan::all();
        for (key, value) in entries {
            scan.add(key.as_ref(), value.as_ref(), 0);
        }
        scan.plan(now, settings)
    }

    /// Whether the pass has nothing to do.
    pub fn is_empty(&self) -> bool {
        self.redrive.is_empty() && self.fail.is_empty() && self.delete.is_empty()
    }
}

fn nanos(d: Duration) -> i128 {
    i128::try_from(d.as_nanos()).unwrap_or(i128::MAX)
}

/// A re-drive counter's value read as Go's `strconv.Atoi` does; 0 if it does not
/// read (a lost counter means at most one more re-drive).
fn redrive_count(value: &[u8]) -> i64 {
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

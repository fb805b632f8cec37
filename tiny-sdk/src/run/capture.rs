//! A durable run captured from its ledger into a file that a test replays
//! ([`crate::harness::HarnessBuilder::replay`]): the message that started it and, per step,
//! the node and port, what arrived, what it emitted and what each outside call
//! ([`Ctx::outside`](crate::Ctx::outside)) answered.
//!
//! The file is JSON, versioned ([`CAPTURE_VERSION`]): a reader refuses a version it
//! does not know rather than replay half of it.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    sync::{Mutex, PoisonError},
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    RunEntry, RunStore, StepStatus, Timestamp, calls_prefix, decode_call_name, entry_key, read_run, superseded,
};
use crate::error::{Error, Result, code};

/// The version of the capture format this build writes and reads.
pub const CAPTURE_VERSION: u32 = 1;

/// A run as its ledger recorded it (see the [module](crate::run)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapturedRun {
    /// The format's version ([`CAPTURE_VERSION`]).
    pub version: u32,
    /// The run.
    pub run_id: String,
    /// The message that started the run; `None` when the ledger does not hold it
    /// (a run begun by [`Ctx::begin_run`](crate::Ctx::begin_run), whose first
    /// message arrived outside the run, a run whose first step a Go module
    /// recorded, or a first message too large to keep): such a run cannot be
    /// replayed from its start.
    #[serde(default)]
    pub entry: Option<CapturedEntry>,
    /// The recorded steps, in the order they started.
    #[serde(default)]
    pub steps: Vec<CapturedStep>,
    /// What the ledger did not hold, or did not say, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The message a run started with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedEntry {
    /// Where it arrived, `<node>:<port>`.
    pub to: String,
    /// The sender, `<node>:<port>`, when it came along an edge (empty for a signal).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from: String,
    /// The edge it came along (empty for a signal): a replay sends it along the same
    /// edge, so that the target's mapping shapes it as it did.
    #[serde(rename = "edgeID", default, skip_serializing_if = "String::is_empty")]
    pub edge_id: String,
    /// The message, as it was sent (before the edge's mapping).
    pub data: Value,
}

/// One step of a [`CapturedRun`]: one handler call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapturedStep {
    /// The hop's step key.
    pub step_key: String,
    /// The node that ran it.
    pub node: String,
    /// The port the hop arrived at (empty when the ledger does not say).
    #[serde(default)]
    pub port: String,
    /// How it ended.
    pub status: StepStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What arrived, as its sender emitted it (before the edge's mapping, which the
    /// receiving node applies); `None` when the ledger does not hold it.
    #[serde(default)]
    pub arrived: Option<Value>,
    /// The hops it emitted, in order.
    #[serde(default)]
    pub emitted: Vec<CapturedEmit>,
    /// The answers of the outside calls it made, by name and then order.
    #[serde(default)]
    pub calls: Vec<CapturedCall>,
    /// When it started.
    pub started_at: Timestamp,
    /// When it ended.
    pub completed_at: Timestamp,
}

/// One hop a step emitted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapturedEmit {
    /// The source port, `<node>:<port>`.
    pub from: String,
    /// The target port, `<node>:<port>`.
    pub to: String,
    /// The edge.
    #[serde(rename = "edgeID")]
    pub edge_id: String,
    /// The payload as emitted (before the target's edge mapping).
    pub data: Value,
}

/// The answer of one outside call ([`Ctx::outside`](crate::Ctx::outside)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapturedCall {
    /// The call's name.
    pub name: String,
    /// Its place among the step's calls of that name (from 0).
    pub n: u32,
    /// What it answered.
    pub answer: Value,
}

impl CapturedRun {
    /// The capture as a file's content: indented JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::permanent(format!("captured run: {e}")))
    }

    /// Reads a capture written by [`to_json`](Self::to_json). Fails with code
    /// [`INVALID`](code::INVALID) on something else or on a version this build does
    /// not know, naming it.
    pub fn from_json(text: &str) -> Result<Self> {
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let invalid = |why: String| Error::permanent(why).with_code(code::INVALID);
        let Version { version } =
            serde_json::from_str(text).map_err(|e| invalid(format!("captured run: `version`: {e}")))?;
        if version != CAPTURE_VERSION {
            return Err(invalid(format!(
                "captured run: version {version}, and this build reads version {CAPTURE_VERSION}"
            )));
        }
        serde_json::from_str(text).map_err(|e| invalid(format!("captured run: {e}")))
    }
}

/// Reads run `run_id` out of `store` (the `TINY_EXEC` ledger) into a
/// [`CapturedRun`]. A re-driven run is captured as it ran last: the steps a re-drive
/// superseded and the re-drive's own record are left out, so that a run that
/// completed on a re-drive replays as the run it became. Fails with code [`NOT_FOUND`](code::NOT_FOUND) when the run has
/// no records, and with [`RUN_RECORD`](code::RUN_RECORD) naming the key of a record
/// or answer that does not read.
pub async fn capture_run<S: RunStore + ?Sized>(store: &S, run_id: &str) -> Result<CapturedRun> {
    let all = read_run(store, run_id).await?;
    if all.is_empty() {
        return Err(Error::permanent(format!("run `{run_id}` has no records in the ledger")).with_code(code::NOT_FOUND));
    }
    let json = |bytes: &[u8], what: &dyn std::fmt::Display| -> Result<Value> {
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(bytes)
            .map_err(|e| Error::permanent(format!("{what} is not JSON: {e}")).with_code(code::RUN_RECORD))
    };
    // What arrived at each step: the hop that its parent's record lists (a
    // re-drive's record included: it lists the hop it sent again).
    let mut arrivals: HashMap<&str, (&str, &bytes::Bytes)> = HashMap::new();
    for (_, record) in &all {
        for emit in &record.emits {
            arrivals.insert(&emit.step_key, (&emit.to, &emit.data));
        }
    }
    let mut calls: BTreeMap<String, Vec<CapturedCall>> = BTreeMap::new();
    let prefix = calls_prefix(run_id);
    for key in store.keys(&prefix).await? {
        let Some(rest) = key.strip_prefix(&prefix) else {
            continue;
        };
        let mut parts = rest.rsplitn(3, '/');
        let (Some(n), Some(name), Some(step_key)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(n), Some(name)) = (n.parse::<u32>(), decode_call_name(name)) else {
            continue;
        };
        let Some(value) = store.get(&key).await? else { continue };
        let answer = json(&value, &format_args!("outside call answer at ledger key {key:?}"))?;
        calls
            .entry(step_key.to_owned())
            .or_default()
            .push(CapturedCall { name, n, answer });
    }
    let gone = superseded(&all);
    for key in &gone {
        calls.remove(key);
    }
    let records: Vec<_> = all
        .iter()
        .filter(|(key, r)| r.redrive_of.is_empty() && !gone.contains(key))
        .cloned()
        .collect();
    let mut run = CapturedRun {
        version: CAPTURE_VERSION,
        run_id: run_id.to_owned(),
        entry: None,
        steps: Vec::with_capacity(records.len()),
        notes: Vec::new(),
    };
    let root = super::root_step_key(run_id);
    let first = match store.get(&entry_key(run_id)).await? {
        Some(bytes) => Some(
            RunEntry::from_json_slice(&bytes)
                .map_err(|e| e.context(format_args!("ledger key {:?}", entry_key(run_id))))?,
        ),
        None => None,
    };
    // The first step's node: from its record, which a re-drive from the first step
    // supersedes but leaves in the ledger.
    let root_node = all.iter().find(|(k, _)| *k == root).map(|(_, r)| r.node.as_str());
    if let (Some(entry), Some(node)) = (&first, root_node)
        && let Some(data) = &entry.data
    {
        run.entry = Some(CapturedEntry {
            to: format!("{node}:{}", entry.port),
            from: entry.from.clone(),
            edge_id: entry.edge_id.clone(),
            data: data.clone(),
        });
    }
    for (step_key, record) in &records {
        let what = format_args!("the payload of step {step_key:?}");
        let (port, arrived) = match (arrivals.get(step_key.as_str()), &first) {
            (Some((to, data)), _) => (
                to.rsplit_once(':').map_or("", |(_, p)| p).to_owned(),
                Some(json(data, &what)?),
            ),
            (None, Some(entry)) if *step_key == root => (entry.port.clone(), entry.data.clone()),
            (None, _) => (String::new(), None),
        };
        let mut emitted = Vec::with_capacity(record.emits.len());
        for emit in &record.emits {
            emitted.push(CapturedEmit {
                from: emit.from.clone(),
                to: emit.to.clone(),
                edge_id: emit.edge_id.clone(),
                data: json(
                    &emit.data,
                    &format_args!("hop {:?} of step {step_key:?}", emit.step_key),
                )?,
            });
        }
        let mut step_calls = calls.remove(step_key).unwrap_or_default();
        step_calls.sort_by(|a, b| (&a.name, a.n).cmp(&(&b.name, b.n)));
        run.steps.push(CapturedStep {
            step_key: step_key.clone(),
            node: record.node.clone(),
            port,
            status: record.status,
            error: record.error.clone(),
            arrived,
            emitted,
            calls: step_calls,
            started_at: record.started_at,
            completed_at: record.completed_at,
        });
    }
    run.steps
        .sort_by(|a, b| (a.started_at, &a.step_key).cmp(&(b.started_at, &b.step_key)));
    if let Some(size) = first.as_ref().and_then(|e| e.omitted) {
        run.notes.push(format!(
            "the message that started the run ({size} bytes) was too large to keep in the ledger: it cannot be \
             replayed from its start"
        ));
    } else if run.entry.is_none() {
        run.notes.push(
            "the message that started the run is not in the ledger (a run begun by `begin_run`, or a first step \
             recorded by a Go module): it cannot be replayed from its start"
                .to_owned(),
        );
    }
    for (step_key, _) in calls {
        run.notes.push(format!(
            "outside call answers of step {step_key:?}, which has no record (it was running, or failed to record)"
        ));
    }
    // Pending hops, a re-drive's included (its record is left out of the steps).
    let live: Vec<_> = all.iter().filter(|(key, _)| !gone.contains(key)).cloned().collect();
    for hop in super::frontier(&live) {
        run.notes.push(format!(
            "hop {:?} to `{}` is pending: not recorded yet",
            hop.step_key, hop.to
        ));
    }
    Ok(run)
}

/// Where a replay's outside calls are answered from (see
/// [`EngineBuilder::call_tape`](crate::engine::EngineBuilder::call_tape)).
pub trait CallTape: Send + Sync {
    /// The answer of the next outside call `name` made by node `node`; an error
    /// (code [`NOT_RECORDED`](code::NOT_RECORDED)) when there is none: the call is
    /// then not made.
    fn answer(&self, node: &str, name: &str) -> Result<Value>;
}

/// The outside call answers of a [`CapturedRun`], handed out per node and name in
/// the order the recording has them (its steps in the order they started), and
/// what the replay asked of them.
#[derive(Debug, Default)]
pub struct RecordedCalls {
    inner: Mutex<Tape>,
}

#[derive(Debug, Default)]
struct Tape {
    answers: HashMap<(String, String), VecDeque<Value>>,
    answered: usize,
    unanswered: Vec<(String, String)>,
}

impl RecordedCalls {
    /// The answers `run` recorded.
    pub fn of(run: &CapturedRun) -> Self {
        let mut tape = Tape::default();
        for step in &run.steps {
            for call in &step.calls {
                tape.answers
                    .entry((step.node.clone(), call.name.clone()))
                    .or_default()
                    .push_back(call.answer.clone());
            }
        }
        Self {
            inner: Mutex::new(tape),
        }
    }

    /// How many calls were answered from the recording.
    pub fn answered(&self) -> usize {
        self.lock().answered
    }

    /// The calls the recording had no answer for, as `(node, name)`, in order.
    pub fn unanswered(&self) -> Vec<(String, String)> {
        self.lock().unanswered.clone()
    }

    /// The recorded answers no call asked for, as `(node, name, how many)`.
    pub fn unused(&self) -> Vec<(String, String, usize)> {
        let mut left: Vec<_> = self
            .lock()
            .answers
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|((node, name), q)| (node.clone(), name.clone(), q.len()))
            .collect();
        left.sort();
        left
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tape> {
        // Each operation is one map change: a panic cannot leave it half done.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl CallTape for RecordedCalls {
    fn answer(&self, node: &str, name: &str) -> Result<Value> {
        let mut tape = self.lock();
        match tape
            .answers
            .get_mut(&(node.to_owned(), name.to_owned()))
            .and_then(VecDeque::pop_front)
        {
            Some(answer) => {
                tape.answered += 1;
                Ok(answer)
            }
            None => {
                tape.unanswered.push((node.to_owned(), name.to_owned()));
                Err(Error::permanent(format!(
                    "node `{node}`: the recording has no answer for outside call `{name}` (not made in a replay)"
                ))
                .with_code(code::NOT_RECORDED))
            }
        }
    }
}

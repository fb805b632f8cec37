//! Replaying a captured run ([`CapturedRun`], `<module> capture-run`) against the
//! code being built: its first message sent again through the harness, its outside
//! calls answered from the recording, and every port's arrivals compared with what
//! the run recorded.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

use serde_json::Value;

use crate::{
    error::{Error, code},
    run::{CapturedRun, RecordedCalls},
};

/// What a replay compares (see [`HarnessBuilder::replay`](crate::harness::HarnessBuilder::replay)).
#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions {
    /// Compare payloads value for value, not only their shapes (field names and JSON
    /// types). Off by default: a run's values (times, ids) seldom come out the same.
    pub values: bool,
}

/// The outcome of a replay: green when [`diffs`](Self::diffs) is empty.
#[derive(Debug, Clone)]
pub struct ReplayReport {
    /// The run replayed.
    pub run_id: String,
    /// How the replay differs from the recording.
    pub diffs: Vec<ReplayDiff>,
    /// How many outside calls were answered from the recording (none was made).
    pub calls_answered: usize,
}

/// One difference between a replay and its recording. A port is `<node>:<port>`;
/// what a port received is what was sent to it, before its edge's mapping.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplayDiff {
    /// The port received in the recording and receives nothing now.
    StoppedReceiving {
        /// The port.
        port: String,
        /// How many messages it received in the recording.
        recorded: usize,
    },
    /// The port receives now and received nothing in the recording.
    StartedReceiving {
        /// The port.
        port: String,
        /// How many messages it receives now.
        replayed: usize,
    },
    /// The port receives a different number of messages.
    CountChanged {
        /// The port.
        port: String,
        /// In the recording.
        recorded: usize,
        /// Now.
        replayed: usize,
    },
    /// A message the port receives has another shape.
    ShapeChanged {
        /// The port.
        port: String,
        /// Which of its messages (in a stable order, by shape).
        index: usize,
        /// Each field whose presence or type changed.
        changes: Vec<ShapeChange>,
    },
    /// A message the port receives has other values ([`ReplayOptions::values`]).
    ValueChanged {
        /// The port.
        port: String,
        /// Which of its messages (in a stable order, by value).
        index: usize,
        /// In the recording.
        recorded: Value,
        /// Now.
        replayed: Value,
    },
    /// A node fails now where the recording has no failure.
    FailsNow {
        /// The port whose handler failed.
        port: String,
        /// The error.
        error: String,
    },
    /// A node failed in the recording and does not now.
    NoLongerFails {
        /// The node.
        node: String,
        /// The recorded error.
        error: String,
    },
    /// A node made an outside call the recording has no answer for (it was not made).
    CallNotRecorded {
        /// The node.
        node: String,
        /// The call.
        name: String,
    },
    /// Recorded answers of outside calls no node asked for now.
    CallNotMade {
        /// The node.
        node: String,
        /// The call.
        name: String,
        /// How many answers were left.
        count: usize,
    },
}

/// A field of a payload whose presence or JSON type changed: `path` is a JSONPath
/// (`$.user.name`, `$.items[0]`), the types are JSON's (`string`, `object`, ...) or
/// `missing`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeChange {
    /// Where in the payload.
    pub path: String,
    /// Its type in the recording.
    pub recorded: &'static str,
    /// Its type now.
    pub replayed: &'static str,
}

impl ReplayReport {
    /// Whether the replay matches the recording.
    pub fn is_green(&self) -> bool {
        self.diffs.is_empty()
    }
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_green() {
            return write!(f, "run {}: replays as recorded", self.run_id);
        }
        write!(
            f,
            "run {}: {} difference(s) from the recording",
            self.run_id,
            self.diffs.len()
        )?;
        for diff in &self.diffs {
            write!(f, "\n  - {diff}")?;
        }
        Ok(())
    }
}

impl fmt::Display for ReplayDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::StoppedReceiving { port, recorded } => {
                write!(
                    f,
                    "{port}: stopped receiving (recorded {recorded} message(s), now none)"
                )
            }
            Self::StartedReceiving { port, replayed } => {
                write!(f, "{port}: started receiving ({replayed} message(s), none recorded)")
            }
            Self::CountChanged {
                port,
                recorded,
                replayed,
            } => {
                write!(f, "{port}: receives {replayed} message(s), recorded {recorded}")
            }
            Self::ShapeChanged { port, index, changes } => {
                write!(f, "{port}: message {index} changed shape:")?;
                for c in changes {
                    write!(f, " {} {} -> {};", c.path, c.recorded, c.replayed)?;
                }
                Ok(())
            }
            Self::ValueChanged {
                port,
                index,
                recorded,
                replayed,
            } => write!(f, "{port}: message {index} was {recorded}, is {replayed}"),
            Self::FailsNow { port, error } => write!(f, "{port}: fails now: {error}"),
            Self::NoLongerFails { node, error } => write!(f, "{node}: failed in the recording ({error}), not now"),
            Self::CallNotRecorded { node, name } => {
                write!(f, "{node}: outside call `{name}` has no recorded answer (not made)")
            }
            Self::CallNotMade { node, name, count } => {
                write!(
                    f,
                    "{node}: {count} recorded answer(s) of outside call `{name}` not asked for"
                )
            }
        }
    }
}

/// Compares what a replay of `run` did with what it recorded: `emitted` gives what
/// left a source port (`<node>:<port>`), `failures` the handlers that failed.
pub(super) fn compare(
    run: &CapturedRun,
    nodes: &[crate::flow::Node],
    emitted: impl Fn(&str) -> Vec<Value>,
    failures: &[(String, Error)],
    tape: &RecordedCalls,
    options: ReplayOptions,
) -> ReplayReport {
    let mut diffs = compare_ports(run, nodes, emitted, options);
    compare_failures(run, failures, &mut diffs);
    for (node, name) in tape.unanswered() {
        diffs.push(ReplayDiff::CallNotRecorded { node, name });
    }
    for (node, name, count) in tape.unused() {
        diffs.push(ReplayDiff::CallNotMade { node, name, count });
    }
    ReplayReport {
        run_id: run.run_id.clone(),
        diffs,
        calls_answered: tape.answered(),
    }
}

/// What each target port received: in the recording, each step's arrival (and the
/// first message); now, what the harness saw leave each source port along each edge
/// of the flow to a target (both before the target's edge mapping).
fn compare_ports(
    run: &CapturedRun,
    nodes: &[crate::flow::Node],
    emitted: impl Fn(&str) -> Vec<Value>,
    options: ReplayOptions,
) -> Vec<ReplayDiff> {
    let mut recorded: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for step in &run.steps {
        if let Some(arrived) = &step.arrived
            && !step.port.is_empty()
        {
            recorded
                .entry(format!("{}:{}", step.node, step.port))
                .or_default()
                .push(arrived.clone());
        }
    }
    let mut replayed: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    if let Some(entry) = &run.entry {
        replayed.entry(entry.to.clone()).or_default().push(entry.data.clone());
    }
    for node in nodes {
        for edge in &node.spec.edges {
            let sent = emitted(&format!("{}:{}", node.name, edge.port));
            if !sent.is_empty() {
                replayed.entry(edge.to.clone()).or_default().extend(sent);
            }
        }
    }
    let ports: BTreeSet<&String> = recorded.keys().chain(replayed.keys()).collect();
    let mut diffs = Vec::new();
    for port in ports {
        let empty = Vec::new();
        let before = recorded.get(port).unwrap_or(&empty);
        let now = replayed.get(port).unwrap_or(&empty);
        let port = port.clone();
        match (before.len(), now.len()) {
            (0, n) => diffs.push(ReplayDiff::StartedReceiving { port, replayed: n }),
            (n, 0) => diffs.push(ReplayDiff::StoppedReceiving { port, recorded: n }),
            (a, b) if a != b => diffs.push(ReplayDiff::CountChanged {
                port,
                recorded: a,
                replayed: b,
            }),
            _ => {
                // Messages to one port are paired in a stable order, not in arrival
                // order, which concurrency may change.
                let by = |v: &&Value| if options.values { v.to_string() } else { shape_key(v) };
                let mut before: Vec<&Value> = before.iter().collect();
                let mut now: Vec<&Value> = now.iter().collect();
                before.sort_by_key(by);
                now.sort_by_key(by);
                for (index, (a, b)) in before.into_iter().zip(now).enumerate() {
                    let mut changes = Vec::new();
                    shape_diff("$", a, b, &mut changes);
                    if !changes.is_empty() {
                        diffs.push(ReplayDiff::ShapeChanged {
                            port: port.clone(),
                            index,
                            changes,
                        });
                    } else if options.values && a != b {
                        diffs.push(ReplayDiff::ValueChanged {
                            port: port.clone(),
                            index,
                            recorded: a.clone(),
                            replayed: b.clone(),
                        });
                    }
                }
            }
        }
    }
    diffs
}

fn compare_failures(run: &CapturedRun, failures: &[(String, Error)], diffs: &mut Vec<ReplayDiff>) {
    let failed_nodes: BTreeSet<&str> = failures
        .iter()
        .map(|(at, _)| at.rsplit_once(':').map_or(at.as_str(), |(n, _)| n))
        .collect();
    let recorded_failed: BTreeSet<&str> = run
        .steps
        .iter()
        .filter(|s| s.status == crate::run::StepStatus::Failed)
        .map(|s| s.node.as_str())
        .collect();
    for (at, e) in failures {
        let node = at.rsplit_once(':').map_or(at.as_str(), |(n, _)| n);
        // A replay's own refusal of a call is reported as such, and a failure passed
        // up from further down (`?` on an emit) where it arose.
        let arose_here = e
            .origin()
            .is_none_or(|o| o.rsplit_once(':').map_or(o, |(n, _)| n) == node);
        if !recorded_failed.contains(node) && e.code() != Some(code::NOT_RECORDED) && !e.is_relayed() && arose_here {
            diffs.push(ReplayDiff::FailsNow {
                port: at.clone(),
                error: e.to_string(),
            });
        }
    }
    for step in run.steps.iter().filter(|s| s.status == crate::run::StepStatus::Failed) {
        if !failed_nodes.contains(step.node.as_str()) {
            diffs.push(ReplayDiff::NoLongerFails {
                node: step.node.clone(),
                error: step.error.clone().unwrap_or_default(),
            });
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value's shape as text: its field names and types, not its values.
fn shape_key(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let fields: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{}", shape_key(v))).collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(a) => format!("[{}]", a.first().map(shape_key).unwrap_or_default()),
        other => type_name(other).to_owned(),
    }
}

/// The fields of `b` whose presence or type differs from `a`'s, under `path`; an
/// array's shape is its first element's.
fn shape_diff(path: &str, a: &Value, b: &Value, out: &mut Vec<ShapeChange>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            // By field name, whatever order the payloads were written in.
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(va), Some(vb)) => shape_diff(&p, va, vb, out),
                    (va, vb) => out.push(ShapeChange {
                        path: p,
                        recorded: va.map_or("missing", type_name),
                        replayed: vb.map_or("missing", type_name),
                    }),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if let (Some(va), Some(vb)) = (x.first(), y.first()) {
                shape_diff(&format!("{path}[0]"), va, vb, out);
            }
        }
        _ if type_name(a) != type_name(b) => out.push(ShapeChange {
            path: path.to_owned(),
            recorded: type_name(a),
            replayed: type_name(b),
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn shapes_differ_by_field_and_type_not_by_value() {
        let mut out = Vec::new();
        shape_diff(
            "$",
            &json!({"a": 1, "b": {"c": "x"}}),
            &json!({"a": 2, "b": {"c": "y"}}),
            &mut out,
        );
        assert!(out.is_empty(), "{out:?}");
        shape_diff(
            "$",
            &json!({"a": 1, "b": {"c": "x"}, "l": [{"k": 1}]}),
            &json!({"a": "1", "b": {}, "d": true, "l": [{"k": null}]}),
            &mut out,
        );
        let got: Vec<(String, &str, &str)> = out.iter().map(|c| (c.path.clone(), c.recorded, c.replayed)).collect();
        assert_eq!(
            got,
            vec![
                ("$.a".to_owned(), "number", "string"),
                ("$.b.c".to_owned(), "string", "missing"),
                ("$.d".to_owned(), "missing", "boolean"),
                ("$.l[0].k".to_owned(), "number", "null"),
            ]
        );
    }
}

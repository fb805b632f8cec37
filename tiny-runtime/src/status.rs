//! What a TinyNode's status should say, and whether it needs writing.

use std::time::Duration;

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use tiny_sdk::{Error, engine::NodeReport, error::code};

use crate::{
    config::{ModuleConfig, SDK_VERSION},
    crd::{ComponentStatus, EncodedJson, ModuleStatus, PortStatus, TinyNodeStatus},
};

/// How often an unchanged status is rewritten anyway, as a heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(5 * 60);

/// The status a node should have.
pub fn node_status(
    module: &ModuleConfig,
    report: Option<&NodeReport>,
    error: Option<&Error>,
    generation: i64,
    previous: Option<&TinyNodeStatus>,
) -> TinyNodeStatus {
    let mut s = TinyNodeStatus {
        observed_generation: generation,
        module: ModuleStatus {
            name: module.name.clone(),
            version: module.version.clone(),
            sdk_version: SDK_VERSION.into(),
        },
        metadata: previous.map(|p| p.metadata.clone()).unwrap_or_default(),
        ..TinyNodeStatus::default()
    };
    if let Some(r) = report {
        if let Some(c) = &r.component {
            s.component = ComponentStatus {
                description: c.description.clone(),
                info: c.info.clone(),
                tags: c.tags.clone(),
            };
        }
        s.ports = r
            .ports
            .iter()
            .map(|p| PortStatus {
                name: p.name.clone(),
                label: p.label.clone(),
                position: i32::from(p.position.as_int()),
                source: p.source,
                schema: Some(EncodedJson::encode(&p.schema)),
                configuration: Some(EncodedJson::encode(&p.configuration)),
            })
            .collect();
    }
    let (ready, reason, message) = match error {
        None => ("True", "Running", String::new()),
        Some(e) => ("False", not_ready_reason(e), e.to_string()),
    };
    s.error = error.is_some();
    s.status = if error.is_some() { message.clone() } else { "OK".into() };
    let since = changed_at(previous, "Ready", |c| {
        c.status == ready && c.reason == reason && c.message == message
    });
    s.conditions = vec![Condition {
        type_: "Ready".into(),
        status: ready.into(),
        reason: reason.into(),
        message,
        observed_generation: Some(generation),
        last_transition_time: since,
    }];
    if let Some(failing) = report.filter(|r| !r.failing_edges.is_empty()) {
        // While an edge's expressions keep failing (the hops go on with null, as in
        // the Go SDK): gone once they have rendered cleanly for a minute.
        let since = changed_at(previous, EXPRESSIONS_CONDITION, |_| true);
        s.conditions.push(Condition {
            type_: EXPRESSIONS_CONDITION.into(),
            status: "False".into(),
            reason: "ExpressionFailing".into(),
            message: failing.failing_edges.join("\n"),
            observed_generation: Some(generation),
            last_transition_time: since,
        });
    }
    if let Some(failure) = report.and_then(|r| r.delivery_failure.as_ref()) {
        // The node runs, but a message it sent did not get through: its status text
        // (what the editor shows) and a condition say why, for a minute after.
        if !s.error {
            s.status.clone_from(failure);
        }
        let since = changed_at(previous, DELIVERY_CONDITION, |c| c.message == *failure);
        s.conditions.push(Condition {
            type_: DELIVERY_CONDITION.into(),
            status: "False".into(),
            reason: "MessageTooLarge".into(),
            message: failure.clone(),
            observed_generation: Some(generation),
            last_transition_time: since,
        });
    }
    s.last_update_time = previous.and_then(|p| p.last_update_time.clone());
    s
}

/// The condition of a node one of whose messages the wire to another module refused
/// (too large), while [`FAILING_WINDOW`](tiny_sdk::engine::FAILING_WINDOW) lasts.
pub const DELIVERY_CONDITION: &str = "Delivered";

/// The condition a node gets while edges of its lead to nodes that do not exist
/// (`missing`: one line each); `None` while every edge has its target.
pub fn edges_condition(missing: &[String], previous: Option<&TinyNodeStatus>, generation: i64) -> Option<Condition> {
    if missing.is_empty() {
        return None;
    }
    let message = missing.join("\n");
    let since = changed_at(previous, EDGES_CONDITION, |c| c.message == message);
    Some(Condition {
        type_: EDGES_CONDITION.into(),
        status: "False".into(),
        reason: "TargetMissing".into(),
        message,
        observed_generation: Some(generation),
        last_transition_time: since,
    })
}

/// When condition `type_` last changed: the previous status's time while `same` says
/// the condition still holds as it did, now otherwise.
fn changed_at(previous: Option<&TinyNodeStatus>, type_: &str, same: impl Fn(&Condition) -> bool) -> Time {
    previous
        .and_then(|p| p.conditions.iter().find(|c| c.type_ == type_))
        .filter(|c| same(c))
        .map_or_else(|| Time(Timestamp::now()), |c| c.last_transition_time.clone())
}

/// The node condition about its edges' targets.
pub const EDGES_CONDITION: &str = "EdgesResolved";

/// The node condition while expressions on edges into it fail (see
/// [`tiny_sdk::engine::FAILING_WINDOW`]).
pub const EXPRESSIONS_CONDITION: &str = "ExpressionsEvaluated";

/// The `Ready=False` reason for a node error, by its code.
fn not_ready_reason(e: &Error) -> &'static str {
    match e.code() {
        Some(code::UNKNOWN_COMPONENT) => "UnknownComponent",
        Some(code::INVALID_NAME) => "InvalidName",
        Some(code::UNDECODABLE_OBJECT) => "Undecodable",
        Some(code::PORT_REMOVED) => "PortRemoved",
        _ => "SpecRejected",
    }
}

/// Whether `desired` must be written over `current`: it differs in anything but the
/// heartbeat, or the heartbeat is older than [`HEARTBEAT`].
pub fn needs_write(current: Option<&TinyNodeStatus>, desired: &TinyNodeStatus) -> bool {
    let Some(current) = current else { return true };
    let mut a = current.clone();
    a.last_update_time = None;
    let mut b = desired.clone();
    b.last_update_time = None;
    if a != b {
        return true;
    }
    match &current.last_update_time {
        Some(Time(t)) => {
            let age = Timestamp::now().duration_since(*t);
            age.as_secs() >= HEARTBEAT.as_secs() as i64 - 5
        }
        None => true,
    }
}

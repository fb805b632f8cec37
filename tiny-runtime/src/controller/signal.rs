//! TinySignal: deliver `data` to `node:port` once across replicas, then mark it.
//!
//! Only the leader delivers. It first claims the signal with an optimistic-concurrency
//! status write (`Delivering`, by whom); a replica that loses that race does nothing,
//! and a signal claimed by a replica that died mid-delivery is marked `Failed` rather
//! than delivered twice.

use std::{sync::Arc, time::Duration};

use futures::StreamExt as _;
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api, Resource as _, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::{
        controller::Action,
        events::{Event, EventType},
    },
};
use serde_json::{Value, json};
use tiny_sdk::{
    Hop,
    flow::{module_matches, parse_node_name},
};
use tracing::{Instrument as _, field::Empty};

use super::{ReconcileError, Shared, watch};
use crate::{
    crd::{Decoded, TinyNode, TinySignal, Undecodable},
    metrics::Metrics,
    permissions::{Operation, Permissions},
};

/// Signal phases.
pub mod phase {
    /// Claimed by a leader, being delivered.
    pub const DELIVERING: &str = "Delivering";
    /// Done; `status.reply` holds the flow's reply.
    pub const DELIVERED: &str = "Delivered";
    /// Not deliverable; `status.error` says why.
    pub const FAILED: &str = "Failed";
}

/// The name `/readyz` gives the TinySignal watch.
pub const WATCH: &str = "TinySignals";

/// Runs the TinySignal controller until `shutdown` resolves.
pub async fn run(shared: Arc<Shared>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    watch::controller::<TinySignal>(
        shared.api(),
        shared.readiness.clone(),
        shared.permissions.clone(),
        WATCH,
        |_| {},
    )
    .reconcile_all_on(shared.leadership.gained())
    .graceful_shutdown_on(shutdown)
    .run(reconcile, error_policy, shared)
    .for_each(|_| async {})
    .await;
}

enum Owner {
    Us,
    Other,
    Nobody(String),
}

/// Whose node the signal is for. A node that exists but is not loaded yet is retried.
async fn owner(shared: &Shared, node: &str) -> Result<Owner, ReconcileError> {
    if shared.engine.has_node(node) {
        return Ok(Owner::Us);
    }
    // Leniently: a malformed node must not make its signals undeliverable by anyone.
    let nodes: Api<Decoded<TinyNode>> = shared.api();
    match nodes.get_opt(node).await? {
        Some(n) if super::node::owns(&shared.config, n.name(), spec_module(&n)) => {
            Err(ReconcileError::NodeNotLoaded(node.to_owned()))
        }
        Some(_) => Ok(Owner::Other),
        None => Ok(Owner::Nobody(match parse_node_name(node) {
            Some((module, _)) if module_matches(module, &shared.config.name) => {
                format!("module `{module}` has no node `{node}`")
            }
            _ => format!("there is no node `{node}` in namespace `{}`", shared.config.namespace),
        })),
    }
}

fn spec_module(node: &Decoded<TinyNode>) -> Option<&str> {
    match node.object() {
        Ok(n) => Some(&n.spec.module),
        Err(bad) => bad.string_at("/spec/module"),
    }
}

async fn reconcile(object: Arc<Decoded<TinySignal>>, shared: Arc<Shared>) -> Result<Action, ReconcileError> {
    let signal = match object.object() {
        Ok(signal) => signal.clone(),
        Err(bad) => return undecodable(&object, bad, &shared).await,
    };
    let status = signal.status.clone().unwrap_or_default();
    if matches!(status.phase.as_deref(), Some(phase::DELIVERED | phase::FAILED)) {
        // Finished: a stale copy still saying `Delivering` can only fail its guarded
        // write now, so the claim need not be remembered any longer.
        if let (Ok(mut claimed), Some(uid)) = (shared.claimed.lock(), signal.uid()) {
            claimed.remove(&uid);
        }
        return Ok(Action::await_change());
    }
    if !shared.leadership.is_leader() {
        return Ok(Action::await_change());
    }
    let name = signal.name_any();
    let api: Api<TinySignal> = shared.api();
    let node = &signal.spec.node;
    let who = owner(&shared, node).await?;
    if status.phase.as_deref() == Some(phase::DELIVERING) {
        // Claimed by this process: it delivered (or is delivering) it, and this copy of
        // the signal is older than our own status write.
        match claimed_here(&shared, &signal) {
            // Delivered here, but the write that said so failed (the API server was
            // away): write the kept outcome now, never deliver again.
            Some(Some(outcome)) => {
                finish(&api, &shared.permissions, &name, outcome).await?;
                return Ok(Action::await_change());
            }
            Some(None) => return Ok(Action::await_change()),
            None if !matches!(who, Owner::Us) => return Ok(Action::await_change()),
            None => {}
        }
        let by = status.claimed_by.unwrap_or_default();
        let why = format!(
            "delivery interrupted: `{by}` claimed it and stopped leading; not redelivered, to deliver at most once"
        );
        // Only over the version we read: a newer one may already say Delivered.
        write_if_unchanged(
            &api,
            &shared.permissions,
            &signal,
            json!({ "phase": phase::FAILED, "error": why }),
        )
        .await?;
        return Ok(Action::await_change());
    }
    match who {
        Owner::Other => return Ok(Action::await_change()),
        Owner::Nobody(why) => {
            finish(&api, &shared.permissions, &name, Outcome::failed(why)).await?;
            return Ok(Action::await_change());
        }
        Owner::Us => {}
    }
    // Claim: fails if anyone changed the signal since we read it.
    let claim = json!({ "phase": phase::DELIVERING, "claimedBy": shared.config.identity });
    if !write_if_unchanged(&api, &shared.permissions, &signal, claim).await? {
        return Ok(Action::await_change());
    }
    let uid = signal.uid();
    if let (Ok(mut claimed), Some(uid)) = (shared.claimed.lock(), uid.clone()) {
        claimed.insert(uid, None);
    }
    let data = signal
        .spec
        .data
        .as_ref()
        .map(|d| d.value().clone())
        .unwrap_or(Value::Null);
    let hop = Hop {
        leader: true,
        ..Hop::default()
    };
    let to = format!("{node}:{}", signal.spec.port);
    // The root of the flow run's trace: every hop it makes is a descendant.
    let span = tracing::info_span!(
        target: "tiny::flow",
        parent: None,
        "signal",
        otel.name = "signal",
        otel.kind = "internal",
        to = to.as_str(),
        from = "signal",
        tiny.signal = name.as_str(),
        tiny.module = shared.config.name.as_str(),
        tiny.outcome = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    let result = shared.engine.send_with(&to, data, hop).instrument(span.clone()).await;
    if !span.is_disabled() {
        match &result {
            Ok(_) => {
                span.record("tiny.outcome", "ok");
            }
            Err(e) => {
                span.record("tiny.outcome", "error");
                span.record("otel.status_code", "ERROR");
                span.record("otel.status_description", tracing::field::display(e));
            }
        }
    }
    Metrics::inc(&shared.metrics.signals_delivered);
    let outcome = match result {
        Ok(reply) => Outcome {
            phase: phase::DELIVERED,
            error: None,
            reply: reply.into_value(),
        },
        Err(e) => Outcome::failed(e.to_string()),
    };
    // Kept until the write succeeds: if it fails, the retry writes this, not a second
    // delivery's.
    if let (Ok(mut claimed), Some(uid)) = (shared.claimed.lock(), uid) {
        claimed.insert(uid, Some(outcome.clone()));
    }
    finish(&api, &shared.permissions, &name, outcome).await?;
    Ok(Action::await_change())
}

/// How a delivery ended, as the signal's status will say.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    phase: &'static str,
    error: Option<String>,
    reply: Option<Value>,
}

impl Outcome {
    fn failed(error: String) -> Self {
        Self {
            phase: phase::FAILED,
            error: Some(error),
            reply: None,
        }
    }
}

/// Writes `status` only over the version of `signal` that was read; `false` when
/// someone changed it in between (409).
async fn write_if_unchanged(
    api: &Api<TinySignal>,
    permissions: &Permissions,
    signal: &TinySignal,
    status: Value,
) -> Result<bool, ReconcileError> {
    let patch = json!({ "metadata": { "resourceVersion": signal.resource_version() }, "status": status });
    let written = api
        .patch_status(&signal.name_any(), &PatchParams::default(), &Patch::Merge(patch))
        .await;
    permissions.observe(Operation::WriteSignalStatus, &written);
    match written {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// `Some` when this process claimed the signal, with its outcome once delivered.
fn claimed_here(shared: &Shared, signal: &TinySignal) -> Option<Option<Outcome>> {
    match (shared.claimed.lock(), signal.uid()) {
        (Ok(claimed), Some(uid)) => claimed.get(&uid).cloned(),
        _ => None,
    }
}

async fn finish(
    api: &Api<TinySignal>,
    permissions: &Permissions,
    name: &str,
    outcome: Outcome,
) -> Result<(), ReconcileError> {
    let Outcome { phase, error, reply } = outcome;
    let reply = reply.map(tiny_sdk::flow::RawJson);
    let patch = json!({ "status": {
        "phase": phase,
        "error": error,
        "reply": reply,
        "deliveredAt": (phase == phase::DELIVERED).then(|| Time(Timestamp::now())),
    }});
    let written = api
        .patch_status(name, &PatchParams::default(), &Patch::Merge(patch))
        .await;
    permissions.observe(Operation::WriteSignalStatus, &written);
    written?;
    Ok(())
}

/// A TinySignal that does not decode, for a node of this module: marked `Failed` with
/// the field that is wrong (never delivered), with an Event and a log line.
async fn undecodable(
    object: &Decoded<TinySignal>,
    bad: &Undecodable,
    shared: &Shared,
) -> Result<Action, ReconcileError> {
    let finished = matches!(bad.string_at("/status/phase"), Some(phase::DELIVERED | phase::FAILED));
    if finished || !shared.leadership.is_leader() {
        return Ok(Action::await_change());
    }
    let Some(node) = bad.string_at("/spec/node") else {
        return Ok(Action::await_change());
    };
    if !matches!(owner(shared, node).await?, Owner::Us) {
        return Ok(Action::await_change());
    }
    let why = format!("{bad}; not delivered");
    tracing::warn!(signal = object.name(), error = %why, "signal refused");
    let api: Api<Decoded<TinySignal>> = shared.api();
    let patch = json!({
        "metadata": { "resourceVersion": object.metadata().resource_version },
        "status": { "phase": phase::FAILED, "error": why },
    });
    let written = api
        .patch_status(object.name(), &PatchParams::default(), &Patch::Merge(patch))
        .await;
    shared.permissions.observe(Operation::WriteSignalStatus, &written);
    match written {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => return Ok(Action::await_change()),
        Err(e) => return Err(e.into()),
    }
    let event = Event {
        type_: EventType::Warning,
        reason: "SignalUndecodable".into(),
        note: Some(why.chars().take(1000).collect()),
        action: "Deliver".into(),
        secondary: None,
    };
    let published = shared.recorder.publish(&event, &object.object_ref(&())).await;
    shared.permissions.observe(Operation::PublishEvent, &published);
    if let Err(e) = published {
        tracing::warn!(signal = object.name(), error = %e, "could not publish an event");
    }
    Ok(Action::await_change())
}

fn error_policy(_: Arc<Decoded<TinySignal>>, error: &ReconcileError, _: Arc<Shared>) -> Action {
    tracing::debug!(%error, "signal reconcile; retrying");
    Action::requeue(Duration::from_secs(1))
}

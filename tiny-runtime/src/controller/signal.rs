//! TinySignal: deliver `data` to `node:port` once, from the leader, then mark it.
//!
//! Only the leader delivers, and only after the API server confirmed its claim: the
//! claim (`Delivering`, by whom) is a status write guarded by the `resourceVersion` the
//! replica read, so of two replicas that both believe they lead (a lease handover) one
//! wins and the other gets 409 and does not run the flow ([`after_claim`] decides). A
//! new signal for a node the leader has loaded is claimed the moment the watch shows it
//! ([`deliver_on_sight`]), without the reconciler's queue; the outcome is written after
//! the run. The uid of every signal this process delivers is kept in memory until its
//! status says it finished. A signal claimed by a replica that stopped leading (or died)
//! before it wrote the outcome is marked `Failed` (interrupted) by the next leader
//! rather than delivered again, so a signal runs at most once. `docs/delivery.md`
//! states the guarantee.
//!
//! Signals the leader cannot deliver on sight (it was not leading yet, the node was not
//! loaded yet, the node is not its own) go through the reconciler, which claims first
//! and delivers after, the same way.

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
    engine::Delivery,
    flow::{module_matches, parse_node_name},
};
use tracing::{Instrument as _, field::Empty};

use super::{ReconcileError, Reconciling, context::Outcome, watch};
use crate::{
    crd::{Decoded, TinyNode, TinySignal, Undecodable},
    metrics::Metrics,
    permissions::{Operation, Permissions},
};
use kube::runtime::watcher;
use tokio::sync::Semaphore;

/// Signal phases as the status writes them (constants, for patterns).
mod phase {
    use crate::crd::SignalPhase;

    pub const DELIVERING: &str = SignalPhase::Delivering.as_str();
    pub const DELIVERED: &str = SignalPhase::Delivered.as_str();
    pub const FAILED: &str = SignalPhase::Failed.as_str();
}

/// The name `/readyz` gives the TinySignal watch.
pub const WATCH: &str = "TinySignals";

/// Runs the TinySignal controller until `shutdown` resolves.
pub async fn run(shared: Arc<Reconciling>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let seen = deliver_on_sight(shared.clone());
    watch::controller::<TinySignal>(&shared, WATCH, seen)
        .graceful_shutdown_on(shutdown)
        .run(
            |signal, shared| async move {
                let name = signal.name().to_owned();
                shared
                    .retries
                    .track(WATCH, name, reconcile(signal, shared.clone()))
                    .await
            },
            error_policy,
            shared,
        )
        .for_each(|_| async {})
        .await;
}

enum Owner {
    Us,
    Other,
    Nobody(String),
}

/// Whose node the signal is for. A node that exists but is not loaded yet is retried.
async fn owner(shared: &Reconciling, node: &str) -> Result<Owner, ReconcileError> {
    if shared.engine.has_node(node) {
        return Ok(Owner::Us);
    }
    // Leniently: a malformed node must not make its signals undeliverable by anyone.
    let nodes: Api<Decoded<TinyNode>> = shared.api();
    match nodes.get_opt(node).await? {
        Some(n) if super::node::owns(&shared.config, n.name(), super::node::spec_module(&n)) => {
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

async fn reconcile(object: Arc<Decoded<TinySignal>>, shared: Arc<Reconciling>) -> Result<Action, ReconcileError> {
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
    // Taken in memory first: a delivery on sight of a newer copy must not start while
    // this one claims. Held already: it is being (or was) delivered here.
    let Some(uid) = signal.uid() else {
        return Ok(Action::await_change());
    };
    if !reserve(&shared, &uid) {
        return Ok(Action::await_change());
    }
    // Claim: fails if anyone changed the signal since we read it.
    let claim = json!({ "phase": phase::DELIVERING, "claimedBy": shared.config.identity });
    match write_if_unchanged(&api, &shared.permissions, &signal, claim).await {
        Ok(true) if after_claim(&Claimed::Us, shared.leadership.is_leader()) == AfterClaim::Run => {}
        // Ours, but this replica stopped leading during the write: the next leader
        // marks it interrupted.
        Ok(true) => {
            release(&shared, &uid);
            return Ok(Action::await_change());
        }
        // Not ours to deliver, or not known to be: released (a claim whose answer was
        // lost reads back as claimed by us and not held, so it is marked interrupted).
        Ok(false) => {
            release(&shared, &uid);
            return Ok(Action::await_change());
        }
        Err(e) => {
            release(&shared, &uid);
            return Err(e);
        }
    }
    let outcome = run_flow(&shared, &signal).await;
    // Kept until the write succeeds: if it fails, the retry writes this, not a second
    // delivery's.
    if let Ok(mut claimed) = shared.claimed.lock() {
        claimed.insert(uid, Some(outcome.clone()));
    }
    finish(&api, &shared.permissions, &name, outcome).await?;
    Ok(Action::await_change())
}

/// Takes `uid` for delivery by this process; `false` when it already was.
fn reserve(shared: &Reconciling, uid: &str) -> bool {
    match shared.claimed.lock() {
        Ok(mut claimed) if !claimed.contains_key(uid) => {
            claimed.insert(uid.to_owned(), None);
            true
        }
        _ => false,
    }
}

/// Gives `uid` back: this process did not deliver it.
fn release(shared: &Reconciling, uid: &str) {
    if let Ok(mut claimed) = shared.claimed.lock() {
        claimed.remove(uid);
    }
}

/// How many claim and outcome writes of deliveries on sight are in flight at once: a
/// burst of signals then reuses a few connections to the API server instead of opening
/// one per write, and its writes do not crowd out the watch. The handlers do not wait
/// for these writes.
const WRITES_IN_FLIGHT: usize = 64;

/// The watch hook that delivers a new signal the moment it is seen: on the leader, for a
/// node of this module that is loaded, not yet delivered here, and with no phase yet.
/// Anything else is left to the reconciler.
fn deliver_on_sight(shared: Arc<Reconciling>) -> impl Fn(&watcher::Event<Decoded<TinySignal>>) + Send + 'static {
    let writes = Arc::new(Semaphore::new(WRITES_IN_FLIGHT));
    move |event| {
        let (watcher::Event::Apply(object) | watcher::Event::InitApply(object)) = event else {
            return;
        };
        let Ok(signal) = object.object() else { return };
        if signal.status.as_ref().is_some_and(|s| s.phase.is_some())
            || !shared.leadership.is_leader()
            || !shared.engine.has_node(&signal.spec.node)
        {
            return;
        }
        let Some(uid) = signal.uid() else { return };
        if !reserve(&shared, &uid) {
            return;
        }
        tokio::spawn(deliver_at_once(
            shared.clone(),
            writes.clone(),
            TinySignal::clone(signal),
            uid,
        ));
    }
}

/// Claims `signal` at once and, once the API server confirmed the claim, delivers it and
/// writes the outcome after it.
async fn deliver_at_once(shared: Arc<Reconciling>, writes: Arc<Semaphore>, signal: TinySignal, uid: String) {
    let api: Api<TinySignal> = shared.api();
    let name = signal.name_any();
    let claimed = {
        let _permit = writes.acquire().await;
        claim(&api, &shared.permissions, signal.clone(), &shared.config.identity).await
    };
    match after_claim(&claimed, shared.leadership.is_leader()) {
        AfterClaim::Run => {}
        AfterClaim::Abandon => {
            // Ours, but no longer ours to run: released, so the reconciler of whoever
            // leads next (this replica too) marks it interrupted.
            release(&shared, &uid);
            return;
        }
        AfterClaim::Yield => {
            // Two replicas led at once (a lease handed over while this one still
            // thought it held it) and the other's claim landed first: the uid stays
            // taken, so this replica's reconciler leaves the signal to its holder.
            match &claimed {
                Claimed::Other(by) => tracing::info!(
                    signal = %name,
                    claimed_by = by.as_deref().unwrap_or("nobody: it had finished"),
                    "signal claimed by another replica; not delivered here"
                ),
                // Deleted: nothing left to guard, and no reconcile will free it.
                Claimed::Gone => release(&shared, &uid),
                _ => {}
            }
            return;
        }
    }
    let outcome = run_flow(&shared, &signal).await;
    let _permit = writes.acquire().await;
    let mut pause = Duration::from_millis(200);
    loop {
        match finish(&api, &shared.permissions, &name, outcome.clone()).await {
            Ok(()) => {
                return;
            }
            Err(ReconcileError::Kube(kube::Error::Api(e))) if e.code == 404 => {
                // Deleted while it ran: no reconcile of it will free its uid.
                release(&shared, &uid);
                return;
            }
            Err(e) if shared.leadership.is_leader() => {
                tracing::debug!(signal = %name, error = %e, "could not write a signal's outcome; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            Err(_) => {
                // No longer leading: the reconciler writes the kept outcome once this
                // replica leads again (the next leader marks it interrupted before).
                if let Ok(mut claimed) = shared.claimed.lock() {
                    claimed.insert(uid, Some(outcome));
                }
                return;
            }
        }
    }
}

/// What a replica does with a signal once it knows who holds the claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterClaim {
    /// Deliver it: the claim is this replica's, confirmed by the API server, and this
    /// replica still leads.
    Run,
    /// Do not deliver it, and forget it: the claim is this replica's but it stopped
    /// leading before the run, so the next leader marks it interrupted.
    Abandon,
    /// Do not deliver it, and keep it taken: another replica holds it (or finished it,
    /// or it was deleted).
    Yield,
}

/// The one place that decides whether a claimed signal runs: only a claim the API server
/// confirmed as this replica's, and only while this replica leads. A second replica that
/// believes it leads loses the guarded write (409) and so never runs the flow.
fn after_claim(claim: &Claimed, leading: bool) -> AfterClaim {
    match claim {
        Claimed::Us if leading => AfterClaim::Run,
        Claimed::Us => AfterClaim::Abandon,
        Claimed::Other(_) | Claimed::Gone => AfterClaim::Yield,
    }
}

/// Who holds a signal's claim, as [`claim`] found it.
#[derive(Debug)]
enum Claimed {
    /// This replica.
    Us,
    /// Another replica (`None`: the signal had already finished).
    Other(Option<String>),
    /// The signal was deleted.
    Gone,
}

/// Writes this replica's claim on `signal`, guarded by the version read (retried over
/// newer versions that still have no phase, and through API server outages, reading
/// the signal back to learn whether a claim whose answer was lost landed).
async fn claim(api: &Api<TinySignal>, permissions: &Permissions, mut signal: TinySignal, identity: &str) -> Claimed {
    let claim = json!({ "phase": phase::DELIVERING, "claimedBy": identity });
    let mut pause = Duration::from_millis(200);
    loop {
        match write_if_unchanged(api, permissions, &signal, claim.clone()).await {
            Ok(true) => return Claimed::Us,
            Ok(false) => {}
            Err(e) => {
                tracing::debug!(signal = %signal.name_any(), error = %e, "could not write a claim; reading it back");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
        let mut failures = 0u32;
        signal = loop {
            let read = api.get_opt(&signal.name_any()).await;
            permissions.observe(Operation::ReadSignal, &read);
            match read {
                Ok(Some(current)) => break current,
                Ok(None) => return Claimed::Gone,
                Err(e) => {
                    // Said once at warn (a 403 also reaches the `Permitted` condition);
                    // the retries go on until the API server answers.
                    failures += 1;
                    if failures == 1 {
                        tracing::warn!(signal = %signal.name_any(), error = %e, "cannot read a claimed signal back; retrying");
                    } else {
                        tracing::debug!(signal = %signal.name_any(), error = %e, failures, "still cannot read a claimed signal back");
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
            }
        };
        let status = signal.status.clone().unwrap_or_default();
        match status.phase.as_deref() {
            None => {}
            Some(phase::DELIVERING) if status.claimed_by.as_deref() == Some(identity) => return Claimed::Us,
            Some(phase::DELIVERING) => return Claimed::Other(status.claimed_by),
            Some(_) => return Claimed::Other(None),
        }
    }
}

/// Runs the flow for `signal` (the root span of its trace) and says how it ended.
async fn run_flow(shared: &Reconciling, signal: &TinySignal) -> Outcome {
    let name = signal.name_any();
    let node = &signal.spec.node;
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
        target: tiny_sdk::engine::TRACE_TARGET,
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
    let result = async {
        let delivery = Delivery::to(&to, tiny_sdk::Msg::from_json(data))?.hop(hop);
        shared.engine.deliver(delivery).await
    }
    .instrument(span.clone())
    .await;
    tiny_sdk::engine::record_outcome(&span, &result);
    Metrics::inc(&shared.metrics.signals_delivered);
    match result {
        Ok(reply) => Outcome {
            phase: phase::DELIVERED,
            error: None,
            reply: reply.into_value(),
        },
        Err(e) => Outcome::failed(e.to_string()),
    }
}

impl Outcome {
    pub(super) fn failed(error: String) -> Self {
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
fn claimed_here(shared: &Reconciling, signal: &TinySignal) -> Option<Option<Outcome>> {
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
    shared: &Reconciling,
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

fn error_policy(signal: Arc<Decoded<TinySignal>>, error: &ReconcileError, shared: Arc<Reconciling>) -> Action {
    tracing::debug!(%error, "signal reconcile; retrying");
    Action::requeue(shared.retries.failed(WATCH, signal.name()))
}

#[cfg(test)]
mod tests {
    use super::{AfterClaim, Claimed, after_claim};

    #[test]
    fn only_a_confirmed_claim_of_a_leader_runs() {
        let cases = [
            (Claimed::Us, true, AfterClaim::Run),
            // Won the claim, then lost the lease: the next leader marks it interrupted.
            (Claimed::Us, false, AfterClaim::Abandon),
            // Two replicas believed they led; the other's claim landed first (409 here).
            (Claimed::Other(Some("b".into())), true, AfterClaim::Yield),
            (Claimed::Other(Some("b".into())), false, AfterClaim::Yield),
            // It finished (or was deleted) before this replica's claim.
            (Claimed::Other(None), true, AfterClaim::Yield),
            (Claimed::Gone, true, AfterClaim::Yield),
            (Claimed::Gone, false, AfterClaim::Yield),
        ];
        for (claim, leading, expected) in cases {
            assert_eq!(after_claim(&claim, leading), expected, "{claim:?}, leading: {leading}");
        }
    }
}

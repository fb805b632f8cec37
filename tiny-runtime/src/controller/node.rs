//! TinyNode: create, update and destroy engine instances; write status back.

use std::{sync::Arc, time::Duration};

use futures::StreamExt as _;
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api, Resource as _, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::{
        Controller,
        controller::Action,
        events::{Event, EventType},
        finalizer::{Event as Finalizer, finalizer},
        watcher,
    },
};
use serde_json::json;
use tiny_sdk::flow::{Node, parse_node_name};

use super::{ReconcileError, Shared};
use crate::{
    crd::{TinyNode, labels::NODE_FINALIZER},
    metrics::Metrics,
    status,
};

/// Runs the TinyNode controller until `shutdown` resolves.
pub async fn run(shared: Arc<Shared>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let api: Api<TinyNode> = shared.api();
    Controller::new(api, watcher::Config::default())
        .reconcile_all_on(shared.leadership.gained())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, shared)
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "node reconcile");
            }
        })
        .await;
}

/// Whether `node` belongs to this module: by the module segment of its name
/// (`{flow}.{module}.{component}-{suffix}`), or by `spec.module` for other names.
pub fn owns(module: &str, node: &TinyNode) -> bool {
    let name = node.name_any();
    match parse_node_name(&name) {
        Some((m, _)) => m == module,
        None => crate::config::sanitize(&node.spec.module) == module,
    }
}

/// The engine's view of a TinyNode.
pub fn to_flow_node(n: &TinyNode) -> Node {
    Node {
        name: n.name_any(),
        namespace: n.namespace().unwrap_or_default(),
        labels: n.labels().clone(),
        spec: n.spec.clone().into(),
        metadata: n.status.as_ref().map(|s| s.metadata.clone()).unwrap_or_default(),
    }
}

async fn reconcile(node: Arc<TinyNode>, shared: Arc<Shared>) -> Result<Action, ReconcileError> {
    if !owns(&shared.config.name, &node) {
        return Ok(Action::await_change());
    }
    Metrics::inc(&shared.metrics.reconciles);
    let api: Api<TinyNode> = shared.api();
    finalizer(&api, NODE_FINALIZER, node, |event| async {
        match event {
            Finalizer::Apply(n) => apply(&n, &shared, &api).await,
            Finalizer::Cleanup(n) => cleanup(&n, &shared).await,
        }
    })
    .await
    .map_err(|e| ReconcileError(e.to_string()))
}

/// Runs the node's spec and, on the leader, writes its status when it changed.
async fn apply(node: &TinyNode, shared: &Shared, api: &Api<TinyNode>) -> Result<Action, ReconcileError> {
    let name = node.name_any();
    shared.tracking.set_flow(
        &name,
        node.labels().get(crate::crd::labels::FLOW_NAME).map(String::as_str),
    );
    let result = shared.engine.apply(to_flow_node(node)).await;
    if !shared.leadership.is_leader() {
        return Ok(Action::requeue(Duration::from_secs(60)));
    }
    let error = result.err();
    let report = shared.engine.report(&name);
    let current = node.status.as_ref();
    let mut desired = status::node_status(
        &shared.config,
        report.as_ref(),
        error.as_ref(),
        node.metadata.generation.unwrap_or(0),
        current,
    );
    if status::needs_write(current, &desired) {
        desired.last_update_time = Some(Time(Timestamp::now()));
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": desired })),
        )
        .await?;
        Metrics::inc(&shared.metrics.status_writes);
    }
    publish_error(shared, node, error.as_ref()).await;
    Ok(Action::requeue(status::HEARTBEAT))
}

/// A Kubernetes Event for a node error, once per distinct error.
async fn publish_error(shared: &Shared, node: &TinyNode, error: Option<&tiny_sdk::Error>) {
    let name = node.name_any();
    let text = error.map(ToString::to_string);
    let fresh = match shared.published.lock() {
        Ok(mut map) => match &text {
            Some(t) if map.get(&name) != Some(t) => {
                map.insert(name.clone(), t.clone());
                true
            }
            Some(_) => false,
            None => {
                map.remove(&name);
                false
            }
        },
        Err(_) => false,
    };
    let Some(text) = text.filter(|_| fresh) else { return };
    let event = Event {
        type_: EventType::Warning,
        reason: "NodeError".into(),
        note: Some(text.chars().take(1000).collect()),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(e) = shared.recorder.publish(&event, &node.object_ref(&())).await {
        tracing::warn!(node = %name, error = %e, "could not publish an event");
    }
}

/// The node was deleted: its component releases what it created.
async fn cleanup(node: &TinyNode, shared: &Shared) -> Result<Action, ReconcileError> {
    let name = node.name_any();
    if let Err(e) = shared.engine.remove(&name, true).await {
        tracing::warn!(node = %name, error = %e, "on_destroy failed");
    }
    shared.tracking.set_flow(&name, None);
    if let Ok(mut published) = shared.published.lock() {
        published.remove(&name);
    }
    Ok(Action::await_change())
}

fn error_policy(_: Arc<TinyNode>, error: &ReconcileError, _: Arc<Shared>) -> Action {
    // A finalizer patch made from a cached copy older than our own last write fails
    // its `test`; that is routine, not worth a warning.
    if error.0.contains("finalizer") {
        tracing::debug!(%error, "node reconcile raced its own write; retrying");
    } else {
        tracing::warn!(%error, "node reconcile failed; retrying");
    }
    Action::requeue(Duration::from_secs(1))
}

//! TinyNode: create, update and destroy engine instances; write status back.
//!
//! A node of this module that cannot run (an object that does not decode, a name out
//! of form, a spec the engine rejects) is refused on its own: its status says why, an
//! Event and a log line say it once, messages for it fail at once, and every other
//! node runs on.

use std::{sync::Arc, time::Duration};

use futures::StreamExt as _;
use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use kube::{
    Api, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::{
        controller::Action,
        events::{Event, EventType},
        finalizer::{self, Event as Finalizer},
        reflector, watcher,
    },
};
use serde_json::json;
use tiny_sdk::{
    Error,
    error::code,
    flow::{Node, NodeSpec, check_node_name, module_matches, parse_node_name},
};

use super::{
    ReconcileError, Reconciling,
    directory::{edge_target, inputs},
    watch,
};
use tiny_sdk::{contract::NODE_FINALIZER, engine::NodeDirectory as _};

use crate::{
    config::ModuleConfig,
    crd::{Decoded, TinyNode, TinyNodeStatus, Undecodable},
    metrics::Metrics,
    permissions::Operation,
    status,
};

/// The name `/readyz` gives the TinyNode watch.
pub const WATCH: &str = "TinyNodes";

/// Runs the TinyNode controller until `shutdown` resolves.
pub async fn run(shared: Arc<Reconciling>, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    // Nodes whose edges should be looked at again: a node they lead to appeared.
    let (again, agains) = futures::channel::mpsc::unbounded();
    let seen = on_events(shared.clone(), again);
    let controller = watch::controller::<TinyNode>(&shared, WATCH, seen);
    let _ = shared.directory.store.set(controller.store());
    controller
        .reconcile_on(agains)
        .graceful_shutdown_on(shutdown)
        .run(
            |node, shared| async move {
                let name = node.name().to_owned();
                shared.retries.track(WATCH, name, reconcile(node, shared.clone())).await
            },
            error_policy,
            shared,
        )
        .for_each(|r| async move {
            if let Err(e) = r {
                tracing::debug!(error = %e, "node reconcile");
            }
        })
        .await;
}

/// A node's `spec.module`, read even from a node that does not decode.
pub(crate) fn spec_module(node: &Decoded<TinyNode>) -> Option<&str> {
    match node.object() {
        Ok(n) => Some(&n.spec.module),
        Err(bad) => bad.string_at("/spec/module"),
    }
}

/// Whether the node called `name` belongs to the module `config` describes: by the
/// module segment of its name (`{flow}.{module}.{component}-{suffix}`, compared as the
/// Go SDK's `NameMatches`), or, for a name without one, by `spec.module` (so that a
/// node named out of form is still refused by its module, not ignored by all).
pub fn owns(config: &ModuleConfig, name: &str, spec_module: Option<&str>) -> bool {
    match parse_node_name(name) {
        Some((module, _)) => module_matches(module, &config.name),
        None => spec_module.is_some_and(|m| config.answers_to(m)),
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

async fn reconcile(object: Arc<Decoded<TinyNode>>, shared: Arc<Reconciling>) -> Result<Action, ReconcileError> {
    let node = match object.object() {
        Ok(node) => node.clone(),
        Err(bad) => return undecodable(&object, bad, &shared).await,
    };
    if !owns(&shared.config, &node.name_any(), Some(&node.spec.module)) {
        return release_if_namespace_terminates(&node, &shared).await;
    }
    Metrics::inc(&shared.metrics.reconciles);
    let api: Api<TinyNode> = shared.api();
    let held = node.finalizers().iter().any(|f| f == NODE_FINALIZER);
    let destroys = shared
        .engine
        .registry()
        .get(&node.spec.component)
        .is_some_and(|c| c.destroys());
    if !held && !destroys {
        // Nothing to run on deletion: no finalizer, so one write fewer per node; the
        // deletion is seen on the watch instead (`on_events`).
        if node.metadata.deletion_timestamp.is_some() {
            return Ok(Action::await_change());
        }
        return apply(&node, &shared, &api).await;
    }
    finalizer::finalizer(&api, NODE_FINALIZER, node, |event| async {
        match event {
            Finalizer::Apply(n) => apply(&n, &shared, &api).await,
            Finalizer::Cleanup(n) => cleanup(&n.name_any(), &shared).await,
        }
    })
    .await
    .map_err(|e| {
        if let finalizer::Error::AddFinalizer(k) | finalizer::Error::RemoveFinalizer(k) = &e {
            shared.permissions.failed(Operation::NodeFinalizer, k);
        }
        ReconcileError::Finalizer(Box::new(e))
    })
}

/// How often another module's node that is being deleted, and still holds tiny's
/// finalizer, is looked at again: its namespace may start terminating later.
const STUCK_RECHECK: Duration = Duration::from_secs(60);

/// Another module's node, deleted while the namespace terminates, loses tiny's
/// finalizer here: its module may be gone (uninstalled without its cleanup hook, or
/// the hook failed), and nothing else would remove it, so the namespace would stay
/// Terminating for ever. Outside a terminating namespace the node's own module (or its
/// cleanup hook) removes it, after its cleanup.
async fn release_if_namespace_terminates(node: &TinyNode, shared: &Reconciling) -> Result<Action, ReconcileError> {
    let held = node.finalizers().iter().any(|f| f == NODE_FINALIZER);
    if node.metadata.deletion_timestamp.is_none() || !held {
        return Ok(Action::await_change());
    }
    if !namespace_terminates(shared).await {
        return Ok(Action::requeue(STUCK_RECHECK));
    }
    let name = node.name_any();
    let rest: Vec<&String> = node.finalizers().iter().filter(|f| *f != NODE_FINALIZER).collect();
    // Conditional on the resourceVersion: another controller's finalizer added meanwhile
    // is not lost (a conflict is retried by the controller).
    let patch = json!({ "metadata": { "finalizers": rest, "resourceVersion": node.resource_version() } });
    let api: Api<TinyNode> = shared.api();
    match api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
        Ok(_) => {
            tracing::info!(node = %name, namespace = %shared.config.namespace, "the namespace terminates: removed tiny's finalizer from another module's node");
            Ok(Action::await_change())
        }
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(Action::await_change()),
        Err(e) => Err(e.into()),
    }
}

/// Whether the module's namespace is being deleted. Read when a node of another module
/// waits on tiny's finalizer, not watched: a `get` of one named namespace. A module
/// whose ServiceAccount may not read it (a chart from before this rule) says so in the
/// log and leaves the finalizer to the cleanup hook.
async fn namespace_terminates(shared: &Reconciling) -> bool {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(shared.client.clone());
    match namespaces.get_opt(&shared.config.namespace).await {
        Ok(ns) => ns.is_some_and(|ns| ns.metadata.deletion_timestamp.is_some()),
        Err(e) => {
            tracing::warn!(namespace = %shared.config.namespace, error = %e, "reading the namespace, to learn whether it terminates");
            false
        }
    }
}

/// Runs the node's spec and, on the leader, writes its status when it changed.
async fn apply(node: &TinyNode, shared: &Reconciling, api: &Api<TinyNode>) -> Result<Action, ReconcileError> {
    let name = node.name_any();
    shared.tracking.set_flow(
        &name,
        node.labels()
            .get(tiny_sdk::contract::label::FLOW_NAME)
            .map(String::as_str),
    );
    let result = match check_node_name(&name, &node.spec.component) {
        Ok(()) => shared.engine.apply(to_flow_node(node)).await,
        Err(e) => {
            let error = Error::permanent(e).with_code(code::INVALID_NAME);
            shared.engine.refuse(to_flow_node(node), error.clone());
            Err(error)
        }
    };
    // Placeholders are resolved again every TTL: a rotated (or newly created) Secret
    // reaches the component, whose settings are delivered again if they changed.
    let again = |after: Duration| {
        if tiny_sdk::secret::spec_mentions(&node.spec) {
            after.min(shared.config.secret_ttl)
        } else {
            after
        }
    };
    if !shared.leadership.is_leader() {
        return Ok(Action::requeue(again(Duration::from_secs(60))));
    }
    let report = shared.engine.report(&name);
    // A spec that runs may still report a problem (an edge the settings cut off).
    let error = result.err().or_else(|| report.as_ref().and_then(|r| r.error.clone()));
    let current = node.status.as_ref();
    let desired = status::node_status(
        &shared.config,
        report.as_ref(),
        error.as_ref(),
        node.metadata.generation.unwrap_or(0),
        current,
    );
    let mut desired = desired;
    desired.conditions.extend(edges_condition(shared, node, current));
    write_status(api, shared, &name, current, desired).await?;
    publish_error(shared, node, &name, error.as_ref().map(ToString::to_string)).await;
    // A failing edge is looked at again once it may have stopped, to clear its condition.
    let failing = report
        .as_ref()
        .is_some_and(|r| !r.failing_edges.is_empty() || r.delivery_failure.is_some());
    Ok(Action::requeue(again(if failing {
        tiny_sdk::engine::FAILING_WINDOW
    } else {
        status::HEARTBEAT
    })))
}

/// Writes `desired` over `current` when they differ (or the heartbeat is due).
async fn write_status<K>(
    api: &Api<K>,
    shared: &Reconciling,
    name: &str,
    current: Option<&TinyNodeStatus>,
    mut desired: TinyNodeStatus,
) -> Result<(), ReconcileError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if status::needs_write(current, &desired) {
        desired.last_update_time = Some(Time(Timestamp::now()));
        let mut status =
            serde_json::to_value(&desired).map_err(|e| ReconcileError::Kube(kube::Error::SerdeError(e)))?;
        // `metadata` holds node state, which components write themselves: leaving it
        // out of the patch keeps a stale copy from overwriting a newer value.
        if let Some(map) = status.as_object_mut() {
            map.remove("metadata");
        }
        let written = api
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await;
        shared.permissions.observe(Operation::WriteNodeStatus, &written);
        written?;
        Metrics::inc(&shared.metrics.status_writes);
    }
    Ok(())
}

/// How long status rewrites for changed `_control` views gather before they are
/// written: a debug node that shows every message writes at most this often.
const CHANGE_WINDOW: Duration = Duration::from_millis(250);

/// Rewrites, on the leader, the status of nodes whose `_control` view changed (the
/// engine names them on `changed`), gathering changes for [`CHANGE_WINDOW`].
pub async fn write_changes(
    shared: Arc<Reconciling>,
    mut changed: tokio::sync::mpsc::UnboundedReceiver<String>,
    shutdown: impl Future<Output = ()> + Send,
) {
    let mut shutdown = std::pin::pin!(shutdown);
    let mut pending = std::collections::BTreeSet::new();
    loop {
        tokio::select! {
            () = &mut shutdown => return,
            name = changed.recv() => match name {
                Some(name) => pending.insert(name),
                None => return,
            },
        };
        tokio::time::sleep(CHANGE_WINDOW).await;
        while let Ok(name) = changed.try_recv() {
            pending.insert(name);
        }
        let names = std::mem::take(&mut pending);
        if !shared.leadership.is_leader() {
            continue;
        }
        for name in names {
            if let Err(e) = refresh_status(&shared, &name).await {
                tracing::debug!(node = %name, error = %e, "could not rewrite a changed status");
            }
        }
    }
}

/// The `EdgesResolved` condition: edges to nodes that do not exist, or to ports their
/// node does not have (as its module reports them), said on this node until they do.
/// Every status write carries it (the conditions are written whole).
fn edges_condition(shared: &Reconciling, node: &TinyNode, current: Option<&TinyNodeStatus>) -> Option<Condition> {
    let missing: Vec<String> = node
        .spec
        .edges
        .iter()
        .filter_map(|e| {
            let target = edge_target(&e.to);
            if shared.directory.exists(target) == Some(false) {
                return Some(format!("edge `{}` leads to `{}`: there is no such node", e.id, e.to));
            }
            let port = e.to.rsplit_once(':').map_or("", |(_, p)| p);
            let inputs = shared.directory.inputs_of(target)?;
            (!inputs.iter().any(|i| i == port)).then(|| {
                format!(
                    "edge `{}` leads to `{}`: node `{target}` has no input `{port}` (inputs: {})",
                    e.id,
                    e.to,
                    inputs.join(", ")
                )
            })
        })
        .collect();
    status::edges_condition(&missing, current, node.metadata.generation.unwrap_or(0))
}

/// Writes the status the engine reports for `name` now, if it changed.
async fn refresh_status(shared: &Reconciling, name: &str) -> Result<(), ReconcileError> {
    let api: Api<TinyNode> = shared.api();
    let Some(node) = api.get_opt(name).await? else {
        return Ok(());
    };
    let Some(report) = shared.engine.report(name) else {
        return Ok(());
    };
    let current = node.status.as_ref();
    let mut desired = status::node_status(
        &shared.config,
        Some(&report),
        report.error.as_ref(),
        node.metadata.generation.unwrap_or(0),
        current,
    );
    desired.conditions.extend(edges_condition(shared, &node, current));
    write_status(&api, shared, name, current, desired).await
}

/// A TinyNode that does not decode: if it is ours, it is refused with the field that
/// is wrong, in its status, an Event and the log; if it is being deleted, it goes.
async fn undecodable(
    object: &Decoded<TinyNode>,
    bad: &Undecodable,
    shared: &Reconciling,
) -> Result<Action, ReconcileError> {
    let name = object.name();
    let spec_module = bad.string_at("/spec/module");
    if !owns(&shared.config, name, spec_module) {
        tracing::debug!(
            node = name,
            reason = bad.reason(),
            "another module's node does not decode"
        );
        return Ok(Action::await_change());
    }
    let api: Api<Decoded<TinyNode>> = shared.api();
    let meta = object.metadata();
    let finalizers = meta.finalizers.clone().unwrap_or_default();
    if meta.deletion_timestamp.is_some() {
        if finalizers.iter().any(|f| f == NODE_FINALIZER) {
            cleanup(name, shared).await?;
            let rest: Vec<&String> = finalizers.iter().filter(|f| *f != NODE_FINALIZER).collect();
            let patch = json!({ "metadata": { "finalizers": rest, "resourceVersion": meta.resource_version } });
            api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await?;
        }
        return Ok(Action::await_change());
    }
    Metrics::inc(&shared.metrics.reconciles);
    let error = Error::permanent(bad).with_code(code::UNDECODABLE_OBJECT);
    let spec = NodeSpec {
        module: spec_module.unwrap_or_default().to_owned(),
        component: bad.string_at("/spec/component").unwrap_or_default().to_owned(),
        ..NodeSpec::default()
    };
    shared.engine.refuse(
        Node {
            name: name.to_owned(),
            namespace: meta.namespace.clone().unwrap_or_default(),
            labels: meta.labels.clone().unwrap_or_default(),
            spec,
            metadata: Default::default(),
        },
        error.clone(),
    );
    if !shared.leadership.is_leader() {
        return Ok(Action::requeue(Duration::from_secs(60)));
    }
    let current: Option<TinyNodeStatus> = bad.decode_at("/status");
    let desired = status::node_status(
        &shared.config,
        shared.engine.report(name).as_ref(),
        Some(&error),
        meta.generation.unwrap_or(0),
        current.as_ref(),
    );
    write_status(&api, shared, name, current.as_ref(), desired).await?;
    publish_error(shared, object, name, Some(error.to_string())).await;
    Ok(Action::requeue(status::HEARTBEAT))
}

/// A Kubernetes Event for a node error, once per distinct error.
async fn publish_error<K>(shared: &Reconciling, node: &K, name: &str, error: Option<String>)
where
    K: kube::Resource<DynamicType = ()>,
{
    let fresh = match shared.published.lock() {
        Ok(mut map) => match &error {
            Some(t) if map.get(name) != Some(t) => {
                map.insert(name.to_owned(), t.clone());
                true
            }
            Some(_) => false,
            None => {
                map.remove(name);
                false
            }
        },
        Err(_) => false,
    };
    let Some(text) = error.filter(|_| fresh) else { return };
    let event = Event {
        type_: EventType::Warning,
        reason: "NodeError".into(),
        note: Some(text.chars().take(1000).collect()),
        action: "Reconcile".into(),
        secondary: None,
    };
    let published = shared.recorder.publish(&event, &node.object_ref(&())).await;
    shared.permissions.observe(Operation::PublishEvent, &published);
    if let Err(e) = published {
        tracing::warn!(node = %name, error = %e, "could not publish an event");
    }
}

/// What the node watch's events mean before they reach the controller: nodes of this
/// module deleted without a finalizer leave the engine (on their Delete event, and,
/// after a relist, which may have missed deletions, every node the list no longer
/// holds); the first complete list makes the [`Directory`] answer; a node that appears
/// sends the nodes whose edges lead to it to `again`.
fn on_events(
    shared: Arc<Reconciling>,
    again: futures::channel::mpsc::UnboundedSender<reflector::ObjectRef<Decoded<TinyNode>>>,
) -> impl Fn(&watcher::Event<Decoded<TinyNode>>) + Send + 'static {
    let listing: std::sync::Mutex<Option<std::collections::HashSet<String>>> = std::sync::Mutex::default();
    move |event| {
        let forget = |name: String| {
            if shared.engine.has_node(&name) {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = cleanup(&name, &shared).await;
                });
            }
        };
        let Ok(mut listing) = listing.lock() else { return };
        match event {
            watcher::Event::Delete(node) => forget(node.name().to_owned()),
            watcher::Event::Init => *listing = Some(Default::default()),
            watcher::Event::InitApply(node) => {
                if let Some(names) = listing.as_mut() {
                    names.insert(node.name().to_owned());
                }
            }
            watcher::Event::InitDone => {
                // The store takes the list right after this: a lookup in between finds
                // nothing for a moment, which the engine's grace for absent nodes covers.
                shared.directory.ready.store(true, std::sync::atomic::Ordering::Release);
                if let Some(names) = listing.take() {
                    for name in shared.engine.node_names() {
                        if !names.contains(&name) {
                            forget(name);
                        }
                    }
                }
            }
            // A node whose reported inputs changed (its module loaded it, its settings
            // shaped its ports): the edges leading to it are looked at again. The store
            // still holds the node as it was.
            watcher::Event::Apply(node)
                if shared.directory.has(node.name())
                    && node.object().ok().and_then(|n| inputs(n)) != shared.directory.inputs_of(node.name()) =>
            {
                for sender in shared.directory.senders_to(node.name()) {
                    let _ = again.unbounded_send(sender);
                }
            }
            // A node that was not there before: the nodes whose edges lead to it have
            // their target now (their status said otherwise).
            watcher::Event::Apply(node) if !shared.directory.has(node.name()) => {
                for sender in shared.directory.senders_to(node.name()) {
                    let _ = again.unbounded_send(sender);
                }
            }
            watcher::Event::Apply(_) => {}
        }
    }
}

/// The node was deleted: its component releases what it created.
async fn cleanup(name: &str, shared: &Reconciling) -> Result<Action, ReconcileError> {
    if let Err(e) = shared.engine.remove(name, true).await {
        tracing::warn!(node = %name, error = %e, "on_destroy failed");
    }
    shared.tracking.set_flow(name, None);
    if let Ok(mut published) = shared.published.lock() {
        published.remove(name);
    }
    Ok(Action::await_change())
}

fn error_policy(node: Arc<Decoded<TinyNode>>, error: &ReconcileError, shared: Arc<Reconciling>) -> Action {
    match error {
        // A finalizer patch made from a cached copy older than our own last write
        // fails its `test`; that is routine, not worth a warning.
        ReconcileError::Finalizer(e)
            if matches!(
                **e,
                finalizer::Error::AddFinalizer(_) | finalizer::Error::RemoveFinalizer(_)
            ) =>
        {
            tracing::debug!(%error, "node reconcile raced its own write; retrying");
        }
        _ => tracing::warn!(%error, "node reconcile failed; retrying"),
    }
    Action::requeue(shared.retries.failed(WATCH, node.name()))
}

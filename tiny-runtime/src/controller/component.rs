//! TinyComponent: components defined as data. A module whose engine serves the
//! definition's runtime compiles and installs it (every replica, so each can run its
//! nodes), and its leader holds the finalizer and writes the status. A module that does
//! not serve the runtime leaves the definition alone: no finalizer, no status (in Go
//! every module writes its own answer, and the status flips between them). Of several
//! modules serving the runtime, the one `status.module` names keeps writing while its
//! TinyModule lists the component; the others leave the status alone.
//!
//! Deleting a definition uninstalls it: its nodes stop, and their status says why (one
//! deleted while the watch was down too, when it relists). Two definitions of one
//! component in a namespace: the oldest (then the first by name) is served, the others
//! are refused with a status reason naming it, and take over when it is deleted.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use futures::{StreamExt as _, TryStreamExt as _};
use kube::{
    Api, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::watcher,
};
use serde_json::json;
use tiny_sdk::engine::{DefineError, Definition};

use super::Reconciling;
use crate::crd::{COMPONENT_FINALIZER, Decoded, TinyComponent, TinyComponentStatus, TinyModule};

/// How often the definitions seen are looked at again, so that a replica that became
/// the leader writes the status and finalizer its predecessor did not.
const RESYNC: Duration = Duration::from_secs(30);

/// Follows TinyComponents until `shutdown`.
pub async fn run(shared: Arc<Reconciling>, shutdown: impl Future<Output = ()> + Send) {
    // Leniently: one malformed definition must not stop the others.
    let api: Api<Decoded<TinyComponent>> = shared.api();
    let mut events = watcher(api, watcher::Config::default()).boxed();
    // The definitions seen, by object name, and the component each installed here.
    let mut seen: HashMap<String, TinyComponent> = HashMap::new();
    let mut installed: HashMap<String, String> = HashMap::new();
    // The names a relist (after a watch gap) returned, until it is done: a definition
    // deleted during the gap has no Delete event, so what the list lacks goes then.
    let mut listing: Option<HashSet<String>> = None;
    let mut resync = tokio::time::interval(RESYNC);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            _ = resync.tick() => {
                for def in seen.values() {
                    reconcile(&shared, def, &seen, &mut installed).await;
                }
            }
            event = events.try_next() => match event {
                Ok(Some(watcher::Event::Init)) => listing = Some(HashSet::new()),
                Ok(Some(watcher::Event::InitDone)) => {
                    if let Some(listed) = listing.take() {
                        seen.retain(|name, _| listed.contains(name));
                        let gone: Vec<String> = installed.keys().filter(|n| !listed.contains(*n)).cloned().collect();
                        for name in gone {
                            release(&shared, &name, &mut installed);
                        }
                    }
                }
                Ok(Some(watcher::Event::Apply(d) | watcher::Event::InitApply(d))) => match d.object() {
                    Ok(def) => {
                        if let Some(listed) = listing.as_mut() {
                            listed.insert(def.name_any());
                        }
                        seen.insert(def.name_any(), TinyComponent::clone(def));
                        claimants(&shared, &def.spec.component, &seen, &mut installed).await;
                    }
                    Err(bad) => {
                        // Malformed now: what an earlier version installed stays until
                        // it is fixed or deleted, as between two events.
                        if let Some(listed) = listing.as_mut() {
                            listed.insert(d.name_any());
                        }
                        tracing::warn!(error = %bad, "TinyComponent ignored");
                    }
                },
                Ok(Some(watcher::Event::Delete(d))) => {
                    let name = d.name_any();
                    let gone = seen.remove(&name);
                    // Gone without our finalizer (another runtime, or the finalizer
                    // removed by hand): what it installed here goes all the same.
                    release(&shared, &name, &mut installed);
                    // Another definition of the same component takes it over.
                    if let Some(gone) = gone {
                        claimants(&shared, &gone.spec.component, &seen, &mut installed).await;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "TinyComponent watch");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            },
        }
    }
}

/// Forgets what object `object` installed, and uninstalls it unless another object
/// installed the same component (the one that holds it).
fn release(shared: &Reconciling, object: &str, installed: &mut HashMap<String, String>) {
    if let Some(component) = installed.remove(object)
        && !installed.values().any(|c| *c == component)
        && shared.engine.uninstall(&component)
    {
        shared.catalogue.notify_one();
    }
}

/// The order in which definitions of one component claim it: the oldest, then the
/// first by name, holds it.
fn claim_order(def: &TinyComponent) -> (Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>, String) {
    (def.metadata.creation_timestamp.clone(), def.name_any())
}

/// The definition that holds `component`: the first claimant not being deleted.
fn holder<'a>(component: &str, seen: &'a HashMap<String, TinyComponent>) -> Option<&'a TinyComponent> {
    seen.values()
        .filter(|d| d.spec.component == component && d.metadata.deletion_timestamp.is_none())
        .min_by_key(|d| claim_order(d))
}

/// Reconciles every definition of `component`: those being deleted first (they
/// release it), then the holder, then the others (refused).
async fn claimants(
    shared: &Reconciling,
    component: &str,
    seen: &HashMap<String, TinyComponent>,
    installed: &mut HashMap<String, String>,
) {
    let mut all: Vec<&TinyComponent> = seen.values().filter(|d| d.spec.component == component).collect();
    all.sort_by_key(|d| (d.metadata.deletion_timestamp.is_none(), claim_order(d)));
    for def in all {
        reconcile(shared, def, seen, installed).await;
    }
}

/// Installs, updates or uninstalls one definition, when this module serves its runtime.
async fn reconcile(
    shared: &Reconciling,
    def: &TinyComponent,
    seen: &HashMap<String, TinyComponent>,
    installed: &mut HashMap<String, String>,
) {
    let runtime = def.spec.runtime();
    let object = def.name_any();
    if !shared.engine.serves(runtime) {
        // Not ours. If it was (its runtime edited away), what it installed goes.
        release(shared, &object, installed);
        return;
    }
    let api: Api<TinyComponent> = shared.api();
    let leads = shared.leadership.is_leader();
    let has_finalizer = def.finalizers().iter().any(|f| f == COMPONENT_FINALIZER);
    if def.metadata.deletion_timestamp.is_some() {
        release(shared, &object, installed);
        if leads && has_finalizer {
            let rest: Vec<&String> = def.finalizers().iter().filter(|f| *f != COMPONENT_FINALIZER).collect();
            if let Err(e) = set_finalizers(&api, def, &rest).await {
                tracing::debug!(definition = %object, error = %e, "TinyComponent finalizer");
            }
        }
        return;
    }
    // Two definitions of one component in a namespace: the holder is served, the
    // others are refused (not overwriting each other at every resync).
    let held_by = holder(&def.spec.component, seen)
        .map(|h| h.name_any())
        .filter(|h| *h != object);
    if leads && !has_finalizer {
        let mut all: Vec<&String> = def.finalizers().iter().collect();
        let ours = COMPONENT_FINALIZER.to_owned();
        all.push(&ours);
        if let Err(e) = set_finalizers(&api, def, &all).await {
            // Retried at the next event or resync.
            tracing::debug!(definition = %object, error = %e, "TinyComponent finalizer");
        }
    }
    // A renamed component: the old name is no longer served.
    if installed.get(&object).is_some_and(|c| *c != def.spec.component) {
        release(shared, &object, installed);
    }
    let outcome = match (&held_by, definition(def)) {
        (Some(holder), _) => Err(format!(
            "component `{}` is defined by TinyComponent `{holder}`, which is older (or first by name when as old); this one is served once that one is deleted",
            def.spec.component
        )),
        (None, Ok(d)) => {
            let before = shared.engine.registry().definition(&d.name);
            let name = d.name.clone();
            let outcome = shared.engine.install(runtime, d).await.map_err(|e| e.to_string());
            if shared.engine.registry().definition(&name) != before {
                shared.catalogue.notify_one();
            }
            outcome
        }
        (None, Err(e)) => Err(e.to_string()),
    };
    match &outcome {
        Ok(()) => {
            installed.insert(object.clone(), def.spec.component.clone());
        }
        Err(e) => {
            tracing::warn!(definition = %object, reason = %e, "TinyComponent not served");
            // Refused: an earlier version of it stops too, rather than run what the
            // definition no longer says (unless the holder runs it).
            release(shared, &object, installed);
        }
    }
    if !leads || written_by_another(shared, def).await {
        return;
    }
    let status = TinyComponentStatus {
        installed: outcome.is_ok(),
        module: if outcome.is_ok() {
            shared.config.name.clone()
        } else {
            String::new()
        },
        reason: outcome.err().unwrap_or_default(),
        observed_generation: def.metadata.generation.unwrap_or(0),
    };
    if def.status.as_ref() == Some(&status) {
        return;
    }
    // Every field written, emptied ones as null, so a merge clears an old reason.
    let patch = Patch::Merge(json!({"status": {
        "installed": status.installed,
        "module": if status.module.is_empty() { None } else { Some(&status.module) },
        "reason": if status.reason.is_empty() { None } else { Some(&status.reason) },
        "observedGeneration": status.observed_generation,
    }}));
    if let Err(e) = api.patch_status(&object, &PatchParams::default(), &patch).await {
        tracing::debug!(definition = %object, error = %e, "TinyComponent status");
    }
}

/// Whether another module that serves the definition writes its status: the one named
/// in `status.module` keeps it while its TinyModule lists the component, so that two
/// modules serving one runtime do not flip the status between them (Go's do).
async fn written_by_another(shared: &Reconciling, def: &TinyComponent) -> bool {
    let Some(other) = def
        .status
        .as_ref()
        .map(|s| s.module.as_str())
        .filter(|m| !m.is_empty() && *m != shared.config.name)
    else {
        return false;
    };
    let modules: Api<TinyModule> = shared.api();
    // A list by name: the module's role may list TinyModules, not get them.
    let by_name = kube::api::ListParams::default().fields(&format!("metadata.name={other}"));
    match modules.list(&by_name).await {
        Ok(list) => list.items.into_iter().any(|module| {
            module
                .status
                .is_some_and(|s| s.components.iter().any(|c| c.name == def.spec.component))
        }),
        // Unknown: leave it, as writing is what flips it; the next resync asks again.
        Err(_) => true,
    }
}

/// The definition a runtime compiles.
fn definition(def: &TinyComponent) -> Result<Definition, DefineError> {
    let spec = &def.spec;
    Ok(Definition {
        name: spec.component.clone(),
        description: spec.description.clone(),
        info: spec.info.clone(),
        script: spec.script.clone(),
        input: DefineError::parse_schema("input", &spec.input)?,
        output: DefineError::parse_schema("output", &spec.output)?,
        enable_error_port: spec.enable_error_port,
    })
}

/// Writes the finalizer list, refused if the object changed since it was read (the
/// list is replaced whole).
async fn set_finalizers(api: &Api<TinyComponent>, def: &TinyComponent, finalizers: &[&String]) -> kube::Result<()> {
    let patch = Patch::Merge(json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": def.resource_version(),
    }}));
    api.patch(&def.name_any(), &PatchParams::default(), &patch)
        .await
        .map(drop)
}

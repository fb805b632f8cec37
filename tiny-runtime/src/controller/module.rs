//! TinyModule: this module announces itself (address, version, components with their
//! port schemas); the other modules' TinyModules feed discovery.

use std::sync::Arc;

use futures::{StreamExt as _, TryStreamExt as _};
use kube::{
    Api,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
    runtime::watcher,
};
use serde_json::json;
use tiny_sdk::{
    engine::{DEFINED_TAG, Registry},
    flow::RawJson,
};

use super::Reconciling;
use crate::{
    config::{ModuleConfig, SDK_VERSION},
    crd::{BLOCKING, Decoded, FAMILY, ModuleComponent, ModulePort, TinyModule, TinyModuleSpec, TinyModuleStatus},
};

/// The status this module publishes.
pub fn module_status(config: &ModuleConfig, registry: &Registry) -> TinyModuleStatus {
    let components = registry
        .iter()
        .map(|(name, entry)| {
            let info = (entry.info)();
            ModuleComponent {
                name: name.to_owned(),
                description: info.description,
                info: info.info,
                tags: info.tags,
                ports: (entry.ports)().iter().flat_map(|p| published(entry, p)).collect(),
            }
        })
        // The definitions installed here, as Go's scheduler lists them (tag `Defined`).
        .chain(registry.definitions().into_iter().map(|def| {
            let ports = def
                .ports()
                .into_iter()
                .map(|(p, schema)| ModulePort {
                    name: p.name.into(),
                    label: p.label.into(),
                    source: p.is_source(),
                    position: i32::from(p.position.as_int()),
                    schema: Some(RawJson(schema)),
                })
                .collect();
            ModuleComponent {
                name: def.name,
                description: def.description,
                info: def.info,
                tags: vec![DEFINED_TAG.to_owned()],
                ports,
            }
        }))
        .collect();
    TinyModuleStatus {
        addr: config.grpc_addr.clone().unwrap_or_default(),
        name: config.name.clone(),
        version: config.version.clone(),
        sdk_version: SDK_VERSION.into(),
        components,
        conditions: Vec::new(),
    }
}

/// A port as the TinyModule shows it. A family is its ports under the default
/// settings, as Go's status lists a router's `out_a`, `out_b` (the family itself
/// when they give none); its schema says the family (`tinyFamily`) and a blocking
/// output says so (`tinyBlocking`), which JSON Schema readers ignore and a module's
/// `validate` reads back ([`TinyModuleStatus::component_schemas`]).
fn published(entry: &tiny_sdk::engine::ComponentEntry, p: &tiny_sdk::PortSpec) -> Vec<ModulePort> {
    let mut schema = (p.schema)();
    if let Some(root) = schema.as_object_mut() {
        if p.family {
            root.insert(FAMILY.into(), p.name.into());
        }
        if p.declares_response() {
            root.insert(BLOCKING.into(), true.into());
        }
    }
    let port = |name: String, label: String| ModulePort {
        name,
        label,
        source: p.is_source(),
        position: i32::from(p.position.as_int()),
        schema: Some(RawJson(schema.clone())),
    };
    let keys = if p.family {
        entry.default_port_keys(p.name)
    } else {
        Vec::new()
    };
    if keys.is_empty() {
        return vec![port(p.name.into(), p.label.into())];
    }
    // A member's label is its key, as the engine shows it on a node.
    keys.into_iter().map(|k| port(format!("{}_{k}", p.name), k)).collect()
}

/// Creates this module's TinyModule if it does not exist (every replica may).
pub async fn register(shared: &Reconciling) -> Result<(), kube::Error> {
    let api: Api<TinyModule> = shared.api();
    let module = TinyModule {
        metadata: ObjectMeta {
            name: Some(shared.config.name.clone()),
            ..ObjectMeta::default()
        },
        spec: TinyModuleSpec {
            image: shared.config.image.clone(),
        },
        status: None,
    };
    match api.create(&PostParams::default(), &module).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Runs until `shutdown`: publishes our status while leading, tracks the others.
pub async fn run(shared: Arc<Reconciling>, shutdown: impl Future<Output = ()> + Send + 'static) {
    let api: Api<TinyModule> = shared.api();
    let publisher = {
        let (shared, api) = (shared.clone(), api.clone());
        async move {
            let mut leadership = shared.leadership.clone();
            let mut refusals = shared.permissions.subscribe();
            let mut wire = shared.carrier.as_ref().and_then(|c| c.changes());
            // After a failed publish, the next try (doubling, up to 30 s): the platform
            // and other modules read the address and components from it.
            let mut retry: Option<std::time::Duration> = None;
            loop {
                if leadership.is_leader() {
                    retry = if publish(&shared, &api).await {
                        None
                    } else {
                        Some(retry.map_or(std::time::Duration::from_secs(1), |d| {
                            (d * 2).min(std::time::Duration::from_secs(30))
                        }))
                    };
                } else {
                    retry = None;
                }
                let again = async {
                    match retry {
                        Some(d) => tokio::time::sleep(d).await,
                        None => std::future::pending().await,
                    }
                };
                let wire_changed = async {
                    match wire.as_mut() {
                        Some(w) => w.next().await.is_some(),
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = leadership.changed() => {}
                    () = again => {}
                    // A definition installed or uninstalled: the components follow.
                    () = shared.catalogue.notified() => {}
                    // The broker came or went: the address and the condition follow.
                    true = wire_changed => {}
                    changed = refusals.changed() => {
                        if changed.is_err() {
                            return;
                        }
                        // Refusals come in bursts (every node's status write): one
                        // publish for the lot.
                        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                        refusals.mark_unchanged();
                    }
                }
            }
        }
    };
    let discovery = async move {
        // Leniently: a TinyModule another SDK wrote in a shape we do not read must not
        // hide the modules that follow it in the list.
        let lenient: Api<Decoded<TinyModule>> = shared.api();
        let mut events = watcher(lenient, watcher::Config::default()).boxed();
        loop {
            match events.try_next().await {
                Ok(Some(event)) => on_event(&shared, event),
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(error = %e, "TinyModule watch");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
            }
        }
    };
    tokio::select! {
        () = publisher => {}
        () = discovery => {}
        () = shutdown => {}
    }
}

/// Writes this module's TinyModule status; whether it was written.
async fn publish(shared: &Reconciling, api: &Api<TinyModule>) -> bool {
    let mut status = module_status(&shared.config, shared.engine.registry());
    status.conditions = vec![shared.permissions.condition(None)];
    if let Some(carrier) = &shared.carrier {
        if let Some(addr) = carrier.advertised() {
            status.addr = addr;
        }
        status.conditions.extend(carrier.condition());
    }
    let patch = Patch::Merge(json!({ "status": status }));
    match api
        .patch_status(&shared.config.name, &PatchParams::default(), &patch)
        .await
    {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!(error = %e, "could not publish the TinyModule status; trying again");
            false
        }
    }
}

fn on_event(shared: &Reconciling, event: watcher::Event<Decoded<TinyModule>>) {
    let Some(carrier) = &shared.carrier else { return };
    match event {
        watcher::Event::Apply(m) | watcher::Event::InitApply(m) => {
            let name = m.name();
            // Only the address is needed: read it even when the rest does not decode.
            let addr = match m.object() {
                Ok(module) => module.status.as_ref().map(|s| s.addr.clone()),
                Err(bad) => bad.string_at("/status/addr").map(str::to_owned),
            };
            if let Some(addr) = addr.filter(|a| !a.is_empty() && name != shared.config.name) {
                carrier.register(name, &addr);
            }
        }
        watcher::Event::Delete(m) => {
            let name = m.name();
            if name != shared.config.name {
                carrier.deregister(name);
            }
        }
        watcher::Event::Init | watcher::Event::InitDone => {}
    }
}

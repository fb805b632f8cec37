//! The Helm hooks of a module (`<module> pre-install`, `<module> pre-delete`), as the Go
//! SDK's commands of the same names, so the Go operator chart's hook Jobs work with a
//! tiny module image.
//!
//! - [`pre_install`] refuses a namespace a module must not be installed into: a reserved
//!   one, a missing one, or one without the label `tinysystems.io/managed=true`.
//! - [`pre_delete`] deletes the module's TinyModule (as Go) and what the running module
//!   leaves behind once it is gone: its Lease, its finalizer on its TinyNodes (else those
//!   nodes could never be deleted), and the Services and Ingresses exposed for them.

use std::collections::BTreeSet;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::{config::ModuleConfig, error::HookError};
use tiny_sdk::contract::{NODE_FINALIZER, annotation::EXPOSED_FOR_NODE, label::MANAGED as MANAGED_LABEL};

use crate::crd::{Decoded, TinyModule, TinyNode};
use crate::resources::FIELD_MANAGER;

/// Namespaces a module is never installed into.
pub const RESERVED_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

fn api_err(hook: &'static str, what: impl Into<String>) -> impl FnOnce(kube::Error) -> HookError {
    let what = what.into();
    move |source| HookError::Api { hook, what, source }
}

/// Checks that `namespace` may hold a module.
pub async fn pre_install(client: kube::Client, namespace: &str) -> Result<(), HookError> {
    if namespace.is_empty() {
        return Err(HookError::NoNamespace);
    }
    if RESERVED_NAMESPACES.contains(&namespace) {
        return Err(HookError::Reserved(namespace.to_owned()));
    }
    let namespaces: Api<Namespace> = Api::all(client);
    let ns = namespaces
        .get_opt(namespace)
        .await
        .map_err(api_err("pre-install", format!("reading namespace `{namespace}`")))?
        .ok_or_else(|| HookError::Missing(namespace.to_owned()))?;
    if ns.labels().get(MANAGED_LABEL).map(String::as_str) != Some("true") {
        return Err(HookError::NotManaged(namespace.to_owned()));
    }
    Ok(())
}

/// What [`pre_delete`] removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// The TinyModule was there and is deleted.
    pub module: bool,
    /// The Lease was there and is deleted.
    pub lease: bool,
    /// TinyNodes whose finalizer was removed.
    pub finalizers: Vec<String>,
    /// Services and Ingresses deleted (`Service/<name>`, `Ingress/<name>`).
    pub exposed: Vec<String>,
}

/// Removes what module `config` leaves in its namespace once it is gone.
///
/// A running module adds its finalizer back to a node it reconciles, so with `wait` above
/// zero this first waits (that long at most) until no replica holds the module's Lease; the
/// chart runs it as a post-delete hook, after the Deployment is deleted.
pub async fn pre_delete(
    client: kube::Client,
    config: &ModuleConfig,
    wait: std::time::Duration,
) -> Result<Cleaned, HookError> {
    const HOOK: &str = "pre-delete";
    let ns = config.namespace.as_str();
    let mut cleaned = Cleaned::default();
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns);
    let lease = config.lease_name();
    if !wait.is_zero() {
        wait_until_free(&leases, &lease, wait).await?;
    }

    let modules: Api<TinyModule> = Api::namespaced(client.clone(), ns);
    cleaned.module = delete(&modules, &config.name)
        .await
        .map_err(api_err(HOOK, format!("deleting TinyModule {ns}/{}", config.name)))?;
    cleaned.lease = delete(&leases, &lease)
        .await
        .map_err(api_err(HOOK, format!("deleting Lease {ns}/{lease}")))?;

    // Listed tolerantly: a malformed node (of any module) must not keep this module's
    // nodes in Terminating.
    let nodes: Api<Decoded<TinyNode>> = Api::namespaced(client.clone(), ns);
    let ours: Vec<Decoded<TinyNode>> = nodes
        .list(&ListParams::default())
        .await
        .map_err(api_err(HOOK, format!("listing TinyNodes in {ns}")))?
        .items
        .into_iter()
        .filter(|n| crate::controller::node::owns(config, n.name(), crate::controller::node::spec_module(n)))
        .collect();
    let names: BTreeSet<String> = ours.iter().map(ResourceExt::name_any).collect();
    for node in &ours {
        if !node.finalizers().iter().any(|f| f == NODE_FINALIZER) {
            continue;
        }
        // The resourceVersion makes it a conditional write: a finalizer list changed
        // meanwhile fails with a conflict instead of losing another controller's finalizer.
        let rest: Vec<&String> = node.finalizers().iter().filter(|f| *f != NODE_FINALIZER).collect();
        let patch = json!({ "metadata": { "finalizers": rest, "resourceVersion": node.resource_version() } });
        let name = node.name_any();
        nodes
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(api_err(HOOK, format!("removing the finalizer of TinyNode {ns}/{name}")))?;
        cleaned.finalizers.push(name);
    }

    let exposed = ListParams::default().labels(&format!("app.kubernetes.io/managed-by={FIELD_MANAGER}"));
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let ingresses: Api<Ingress> = Api::namespaced(client, ns);
    for name in exposed_for(&ingresses, &exposed, &names).await? {
        if delete(&ingresses, &name)
            .await
            .map_err(api_err(HOOK, format!("deleting Ingress {ns}/{name}")))?
        {
            cleaned.exposed.push(format!("Ingress/{name}"));
        }
    }
    for name in exposed_for(&services, &exposed, &names).await? {
        if delete(&services, &name)
            .await
            .map_err(api_err(HOOK, format!("deleting Service {ns}/{name}")))?
        {
            cleaned.exposed.push(format!("Service/{name}"));
        }
    }
    Ok(cleaned)
}

/// Waits until Lease `name` is missing, has no holder, or was not renewed in its duration.
async fn wait_until_free(leases: &Api<Lease>, name: &str, wait: std::time::Duration) -> Result<(), HookError> {
    let started = std::time::Instant::now();
    loop {
        let lease = leases
            .get_opt(name)
            .await
            .map_err(api_err("pre-delete", format!("reading Lease {name}")))?;
        let spec = lease.and_then(|l| l.spec).unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let expired = match (&spec.renew_time, spec.lease_duration_seconds) {
            (Some(renewed), Some(secs)) => {
                let until = renewed.0 + std::time::Duration::from_secs(u64::try_from(secs).unwrap_or(0));
                until < k8s_openapi::jiff::Timestamp::now()
            }
            _ => true,
        };
        if holder.is_empty() || expired {
            return Ok(());
        }
        if started.elapsed() >= wait {
            return Err(HookError::LeaseHeld {
                lease: name.to_owned(),
                holder,
                waited: wait,
            });
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Names of the objects made by `expose_port` for one of `nodes`.
async fn exposed_for<K>(api: &Api<K>, params: &ListParams, nodes: &BTreeSet<String>) -> Result<Vec<String>, HookError>
where
    K: Resource<DynamicType = ()> + Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let list = api
        .list(params)
        .await
        .map_err(api_err("pre-delete", format!("listing {}s", K::kind(&()))))?;
    Ok(list
        .items
        .iter()
        .filter(|o| o.annotations().get(EXPOSED_FOR_NODE).is_some_and(|n| nodes.contains(n)))
        .map(ResourceExt::name_any)
        .collect())
}

/// Deletes `name`; whether it was there.
async fn delete<K>(api: &Api<K>, name: &str) -> Result<bool, kube::Error>
where
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

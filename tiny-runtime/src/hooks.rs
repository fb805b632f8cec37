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

use crate::config::ModuleConfig;
use crate::crd::{TinyModule, TinyNode, labels::NODE_FINALIZER};
use crate::resources::{EXPOSED_FOR_NODE, FIELD_MANAGER};

/// Namespaces a module is never installed into.
pub const RESERVED_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The label that dedicates a namespace to tiny modules (set by the cluster's operator).
pub const MANAGED_LABEL: &str = "tinysystems.io/managed";

/// Why a hook failed.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// No namespace was given.
    #[error("pre-install: no namespace (RELEASE_NAMESPACE or --namespace)")]
    NoNamespace,
    /// A reserved namespace.
    #[error(
        "pre-install: refusing to install into the reserved namespace `{0}`; create one for modules: \
         `kubectl create namespace tinysystems && kubectl label namespace tinysystems {MANAGED_LABEL}=true`"
    )]
    Reserved(String),
    /// The namespace does not exist.
    #[error("pre-install: namespace `{0}` does not exist")]
    Missing(String),
    /// The namespace is not dedicated to modules.
    #[error(
        "pre-install: namespace `{0}` is not labelled for tiny modules: `kubectl label namespace {0} {MANAGED_LABEL}=true`"
    )]
    NotManaged(String),
    /// An API call failed.
    #[error("{hook}: {what}: {source}")]
    Api {
        /// `pre-install` or `pre-delete`.
        hook: &'static str,
        /// The operation.
        what: String,
        /// The API error (a Forbidden one names the missing permission).
        #[source]
        source: kube::Error,
    },
}

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
pub async fn pre_delete(client: kube::Client, config: &ModuleConfig) -> Result<Cleaned, HookError> {
    const HOOK: &str = "pre-delete";
    let ns = config.namespace.as_str();
    let mut cleaned = Cleaned::default();

    let modules: Api<TinyModule> = Api::namespaced(client.clone(), ns);
    cleaned.module = delete(&modules, &config.name)
        .await
        .map_err(api_err(HOOK, format!("deleting TinyModule {ns}/{}", config.name)))?;
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns);
    let lease = config.lease_name();
    cleaned.lease = delete(&leases, &lease)
        .await
        .map_err(api_err(HOOK, format!("deleting Lease {ns}/{lease}")))?;

    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let ours: Vec<TinyNode> = nodes
        .list(&ListParams::default())
        .await
        .map_err(api_err(HOOK, format!("listing TinyNodes in {ns}")))?
        .items
        .into_iter()
        .filter(|n| crate::controller::node::owns(&config.name, n))
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

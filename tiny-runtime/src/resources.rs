//! [`KubeResources`]: the [`ResourceManager`] components receive on `_client`,
//! implemented against the Kubernetes API.
//!
//! Everything it creates for a node (the Service and Ingress of an exposed port) is
//! owned by that node's TinyNode, so deleting the node lets the garbage collector
//! remove it. Writes of whole objects use server-side apply with the field manager
//! [`FIELD_MANAGER`], so every call can be repeated; status writes are merge patches,
//! retried on write conflicts.
//!
//! The module's service account needs, in its namespace:
//! `get` on `tinynodes`, `tinyflows`, `tinyprojects`; `create` on `tinynodes`,
//! `tinyflows`, `tinysignals`; `patch` on `tinynodes/status`; `get`, `patch`, `delete`
//! on `services` and `ingresses` (`networking.k8s.io`); and `update` on
//! `tinynodes/finalizers` where the `OwnerReferencesPermissionEnforcement` admission
//! plugin is on (owner references block the owner's deletion).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::networking::v1::{
    HTTPIngressPath, HTTPIngressRuleValue, Ingress, IngressBackend, IngressRule, IngressServiceBackend, IngressSpec,
    IngressTLS, ServiceBackendPort,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tiny_sdk::client::{CreateNodeRequest, ExposePortRequest};
use tiny_sdk::flow::{Node, PortConfig, RawJson};
use tiny_sdk::{Error, ResourceManager, Result, error::code};

use tiny_sdk::contract::{annotation, label, port};

use crate::crd::{TinyFlow, TinyFlowSpec, TinyNode, TinyNodeSpec, TinyProject, TinySignal, TinySignalSpec};

/// The field manager of every server-side apply and patch made here.
pub const FIELD_MANAGER: &str = "tiny-runtime";

/// The Ingress class used unless [`KubeResources::with_ingress`] says otherwise (as the
/// Go module chart).
pub const DEFAULT_INGRESS_CLASS: &str = "nginx";

/// How many times a write that met a conflict is tried in all.
const CONFLICT_ATTEMPTS: u32 = 5;

/// The longest Kubernetes name of the DNS-1035 label kind (Services).
const DNS_LABEL_MAX: usize = 63;

/// The resource manager of one node: a [`kube::Client`], the namespace the node lives
/// in, the node's name and the options of exposed ports.
///
/// ```no_run
/// # async fn f(client: kube::Client) -> tiny_sdk::Result<()> {
/// use tiny_runtime::resources::KubeResources;
/// use tiny_sdk::{ResourceManager, client::ExposePortRequest};
///
/// let rm = KubeResources::new(client, "tinysystems", "f1.http-module.server-x7k2p")
///     .with_selector([("app.kubernetes.io/name".to_owned(), "http-module".to_owned())].into())
///     .with_ingress(None, Some("abc.tinysystems.cloud".to_owned()));
/// let urls = rm
///     .expose_port(ExposePortRequest {
///         port: 8080,
///         hostnames: vec!["api.example.com".into()],
///         tls: true,
///         ..ExposePortRequest::default()
///     })
///     .await?;
/// assert_eq!(urls, ["https://api.example.com"]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct KubeResources {
    client: kube::Client,
    namespace: String,
    node: String,
    selector: BTreeMap<String, String>,
    ingress_class: String,
    hostname_suffix: Option<String>,
}

impl fmt::Debug for KubeResources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeResources")
            .field("namespace", &self.namespace)
            .field("node", &self.node)
            .field("selector", &self.selector)
            .field("ingress_class", &self.ingress_class)
            .field("hostname_suffix", &self.hostname_suffix)
            .finish_non_exhaustive()
    }
}

impl KubeResources {
    /// Creates `obj` (which has a `generateName`) and returns the name the server gave it.
    async fn create_named<K>(&self, obj: &K, what: String) -> Result<String>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + serde::Serialize
            + serde::de::DeserializeOwned
            + std::fmt::Debug,
    {
        let api: Api<K> = Api::namespaced(self.client.clone(), &self.namespace);
        let created = api
            .create(&PostParams::default(), obj)
            .await
            .map_err(|e| api_error(e, &what))?;
        created
            .meta()
            .name
            .clone()
            .ok_or_else(|| Error::transient(format!("{what}: the server returned no name")))
    }

    /// The resource manager of node `node` in `namespace`. Before
    /// [`expose_port`](ResourceManager::expose_port) works, the module's pods must be
    /// named with [`KubeResources::with_selector`].
    pub fn new(client: kube::Client, namespace: impl Into<String>, node: impl Into<String>) -> Self {
        Self {
            client,
            namespace: namespace.into(),
            node: node.into(),
            selector: BTreeMap::new(),
            ingress_class: DEFAULT_INGRESS_CLASS.to_owned(),
            hostname_suffix: None,
        }
    }

    /// The pod selector of the Services made for exposed ports: the labels of the
    /// module's pods, e.g. `{"app.kubernetes.io/name": "<module>"}`.
    #[must_use]
    pub fn with_selector(mut self, selector: BTreeMap<String, String>) -> Self {
        self.selector = selector;
        self
    }

    /// The Ingress class of exposed ports (`None`: [`DEFAULT_INGRESS_CLASS`]; an empty
    /// string: no class, the cluster's default), and the suffix of auto hostnames:
    /// [`ExposePortRequest::auto_hostname`] `p` becomes `p-<suffix>`.
    #[must_use]
    pub fn with_ingress(mut self, class: Option<String>, hostname_suffix: Option<String>) -> Self {
        self.ingress_class = class.unwrap_or_else(|| DEFAULT_INGRESS_CLASS.to_owned());
        self.hostname_suffix = hostname_suffix.filter(|s| !s.trim().is_empty());
        self
    }

    /// The namespace it acts in.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The node it acts for.
    #[must_use]
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The name of the Service (and Ingress) [`expose_port`](ResourceManager::expose_port)
    /// makes for `port` of this node: a DNS-1035 label of at most 63 characters.
    #[must_use]
    pub fn service_name(&self, port: u16) -> String {
        service_name(&self.node, port)
    }

    fn nodes(&self) -> Api<TinyNode> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// An owner reference to this node's TinyNode, as controller.
    async fn node_owner(&self) -> Result<OwnerReference> {
        let what = || format!("TinyNode {}/{}", self.namespace, self.node);
        let meta = self
            .nodes()
            .get_metadata(&self.node)
            .await
            .map_err(|e| api_error(e, &what()))?;
        let uid = meta
            .metadata
            .uid
            .ok_or_else(|| Error::transient(format!("{} has no uid", what())))?;
        Ok(OwnerReference {
            api_version: api_version::<TinyNode>(),
            kind: kind::<TinyNode>(),
            name: self.node.clone(),
            uid,
            controller: Some(true),
            block_owner_deletion: Some(true),
        })
    }

    /// A (non-controller) owner reference to the object `name` of kind `K`; a missing
    /// object is a permanent error.
    async fn owner_of<K>(&self, name: &str) -> Result<OwnerReference>
    where
        K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
            + Clone
            + fmt::Debug
            + serde::de::DeserializeOwned,
    {
        let what = format!("{} {}/{name}", kind::<K>(), self.namespace);
        if name.is_empty() {
            return Err(Error::permanent(format!("no {} given", kind::<K>())));
        }
        let api: Api<K> = Api::namespaced(self.client.clone(), &self.namespace);
        let meta = api.get_metadata(name).await.map_err(|e| api_error(e, &what))?;
        let uid = meta
            .metadata
            .uid
            .ok_or_else(|| Error::transient(format!("{what} has no uid")))?;
        Ok(OwnerReference {
            api_version: api_version::<K>(),
            kind: kind::<K>(),
            name: name.to_owned(),
            uid,
            controller: None,
            block_owner_deletion: None,
        })
    }

    /// The hostnames of a request: its own, then the auto hostname.
    fn hostnames(&self, req: &ExposePortRequest) -> Result<Vec<String>> {
        let mut hosts: Vec<String> = Vec::new();
        for host in &req.hostnames {
            let host = host.trim().to_ascii_lowercase();
            if host.is_empty() {
                continue;
            }
            if !is_hostname(&host) {
                return Err(Error::permanent(format!(
                    "expose port {}: {host:?} is not a valid hostname",
                    req.port
                )));
            }
            if !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        if let Some(prefix) = req.auto_hostname.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
            let Some(suffix) = &self.hostname_suffix else {
                return Err(Error::permanent(format!(
                    "expose port {}: an auto hostname ({prefix:?}) was asked for, but no \
                     hostname suffix is configured",
                    req.port
                )));
            };
            let host = format!("{prefix}-{}", suffix.trim().trim_start_matches(['-', '.'])).to_ascii_lowercase();
            if !is_hostname(&host) {
                return Err(Error::permanent(format!(
                    "expose port {}: auto hostname {host:?} is not a valid hostname",
                    req.port
                )));
            }
            if !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        Ok(hosts)
    }

    async fn expose(&self, req: ExposePortRequest) -> Result<Vec<String>> {
        if req.port == 0 {
            return Err(Error::permanent("expose port: port 0 is not a port"));
        }
        let service_type = match req.service_type.as_deref().map(str::trim) {
            None | Some("") => "ClusterIP",
            Some(t @ ("ClusterIP" | "NodePort" | "LoadBalancer")) => t,
            Some(other) => {
                return Err(Error::permanent(format!(
                    "expose port {}: unknown service type {other:?} (ClusterIP, NodePort or \
                     LoadBalancer)",
                    req.port
                )));
            }
        };
        if self.selector.is_empty() {
            return Err(Error::permanent(format!(
                "expose port {}: no pod selector is configured for node {}, so a Service \
                 would reach no pod",
                req.port, self.node
            )));
        }
        let hosts = self.hostnames(&req)?;
        let owner = self.node_owner().await?;
        let name = self.service_name(req.port);
        let port = i32::from(req.port);
        let metadata = ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(self.namespace.clone()),
            labels: Some(BTreeMap::from([
                ("app.kubernetes.io/managed-by".to_owned(), FIELD_MANAGER.to_owned()),
                (label::EXPOSED_PORT.to_owned(), req.port.to_string()),
            ])),
            annotations: Some(BTreeMap::from([(
                annotation::EXPOSED_FOR_NODE.to_owned(),
                self.node.clone(),
            )])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        };

        let service = Service {
            metadata: metadata.clone(),
            spec: Some(ServiceSpec {
                type_: Some(service_type.to_owned()),
                selector: Some(self.selector.clone()),
                ports: Some(vec![ServicePort {
                    name: Some("http".to_owned()),
                    port,
                    target_port: Some(IntOrString::Int(port)),
                    // Part of the list's merge key for server-side apply: always given.
                    protocol: Some("TCP".to_owned()),
                    ..ServicePort::default()
                }]),
                ..ServiceSpec::default()
            }),
            status: None,
        };
        let services: Api<Service> = Api::namespaced(self.client.clone(), &self.namespace);
        let apply = PatchParams::apply(FIELD_MANAGER).force();
        let what = format!("Service {}/{name}", self.namespace);
        let service_patch = Patch::Apply(&service);
        retry_conflicts(&what, || services.patch(&name, &apply, &service_patch)).await?;

        let ingresses: Api<Ingress> = Api::namespaced(self.client.clone(), &self.namespace);
        let what = format!("Ingress {}/{name}", self.namespace);
        if hosts.is_empty() {
            // Declarative: a port exposed before with hostnames loses its Ingress.
            delete_if_exists(&ingresses, &name, &what).await?;
            return Ok(vec![format!("http://{name}.{}.svc:{port}", self.namespace)]);
        }

        let backend = IngressBackend {
            service: Some(IngressServiceBackend {
                name: name.clone(),
                port: Some(ServiceBackendPort {
                    number: Some(port),
                    name: None,
                }),
            }),
            resource: None,
        };
        let rules = hosts
            .iter()
            .map(|host| IngressRule {
                host: Some(host.clone()),
                http: Some(HTTPIngressRuleValue {
                    paths: vec![HTTPIngressPath {
                        path: Some("/".to_owned()),
                        path_type: "Prefix".to_owned(),
                        backend: backend.clone(),
                    }],
                }),
            })
            .collect();
        let ingress = Ingress {
            metadata,
            spec: Some(IngressSpec {
                ingress_class_name: Some(self.ingress_class.clone()).filter(|c| !c.is_empty()),
                rules: Some(rules),
                tls: req.tls.then(|| {
                    vec![IngressTLS {
                        hosts: Some(hosts.clone()),
                        secret_name: Some(format!("{name}-tls")),
                    }]
                }),
                ..IngressSpec::default()
            }),
            status: None,
        };
        let ingress_patch = Patch::Apply(&ingress);
        retry_conflicts(&what, || ingresses.patch(&name, &apply, &ingress_patch)).await?;

        let scheme = if req.tls { "https" } else { "http" };
        Ok(hosts.iter().map(|host| format!("{scheme}://{host}")).collect())
    }

    async fn unexpose(&self, port: u16) -> Result<()> {
        if port == 0 {
            return Err(Error::permanent("unexpose port: port 0 is not a port"));
        }
        let name = self.service_name(port);
        let ingresses: Api<Ingress> = Api::namespaced(self.client.clone(), &self.namespace);
        delete_if_exists(&ingresses, &name, &format!("Ingress {}/{name}", self.namespace)).await?;
        let services: Api<Service> = Api::namespaced(self.client.clone(), &self.namespace);
        delete_if_exists(&services, &name, &format!("Service {}/{name}", self.namespace)).await
    }

    async fn update_meta(&self, metadata: Vec<(String, Option<String>)>) -> Result<()> {
        if metadata.is_empty() {
            return Ok(());
        }
        // A merge patch removes a key given `null`.
        let map: serde_json::Map<String, Value> = metadata
            .into_iter()
            .map(|(k, v)| (k, v.map_or(Value::Null, Value::String)))
            .collect();
        let patch = Patch::Merge(json!({ "status": { "metadata": map } }));
        let what = format!("status of TinyNode {}/{}", self.namespace, self.node);
        let nodes = self.nodes();
        let params = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PatchParams::default()
        };
        retry_conflicts(&what, || nodes.patch_status(&self.node, &params, &patch)).await?;
        Ok(())
    }

    async fn signal(&self, node: &str, port: &str, data: Value) -> Result<String> {
        if node.is_empty() || port.is_empty() {
            return Err(Error::permanent(format!(
                "create signal: node ({node:?}) and port ({port:?}) must both be given"
            )));
        }
        let mut labels_map = BTreeMap::new();
        if is_label_value(node) {
            labels_map.insert(label::NODE_NAME.to_owned(), node.to_owned());
        }
        let mut signal = TinySignal::new(
            "",
            TinySignalSpec {
                node: node.to_owned(),
                port: port.to_owned(),
                data: Some(RawJson(data)),
                trace_id: None,
                edge_id: None,
            },
        );
        signal.metadata = ObjectMeta {
            generate_name: Some(generate_name(node)),
            namespace: Some(self.namespace.clone()),
            labels: Some(labels_map).filter(|l| !l.is_empty()),
            ..ObjectMeta::default()
        };
        self.create_named(&signal, format!("TinySignal for {node}:{port} in {}", self.namespace))
            .await
    }

    async fn node_create(&self, req: CreateNodeRequest) -> Result<String> {
        if req.module.is_empty() || req.component.is_empty() {
            return Err(Error::permanent(format!(
                "create node {:?}: module ({:?}) and component ({:?}) must both be given",
                req.name, req.module, req.component
            )));
        }
        if req.flow.is_empty() {
            return Err(Error::permanent(format!("create node {:?}: no flow given", req.name)));
        }
        let owner = self
            .owner_of::<TinyFlow>(&req.flow)
            .await
            .map_err(|e| e.context(format!("create node {:?}", req.name)))?;
        let prefix = if req.name.trim().is_empty() {
            req.component.as_str()
        } else {
            req.name.trim()
        };
        let ports = req
            .settings
            .map(|settings| {
                vec![PortConfig {
                    port: port::SETTINGS.to_owned(),
                    configuration: Some(RawJson(settings)),
                    flow_id: req.flow.clone(),
                    ..PortConfig::default()
                }]
            })
            .unwrap_or_default();
        let mut node = TinyNode::new(
            "",
            TinyNodeSpec(tiny_sdk::flow::NodeSpec {
                module: req.module.clone(),
                component: req.component.clone(),
                ports,
                edges: Vec::new(),
            }),
        );
        node.metadata = ObjectMeta {
            generate_name: Some(generate_name(prefix)),
            namespace: Some(self.namespace.clone()),
            labels: Some(BTreeMap::from([(label::FLOW_NAME.to_owned(), req.flow.clone())])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        };
        self.create_named(
            &node,
            format!("TinyNode {prefix}-* in flow {}/{}", self.namespace, req.flow),
        )
        .await
    }

    async fn node_get(&self, name: &str) -> Result<Node> {
        let what = format!("TinyNode {}/{name}", self.namespace);
        if name.is_empty() {
            return Err(Error::permanent("get node: no name given"));
        }
        let node = self.nodes().get(name).await.map_err(|e| api_error(e, &what))?;
        Ok(Node {
            name: node.metadata.name.unwrap_or_else(|| name.to_owned()),
            namespace: node.metadata.namespace.unwrap_or_else(|| self.namespace.clone()),
            labels: node.metadata.labels.unwrap_or_default(),
            spec: node.spec.into(),
            metadata: node.status.map(|s| s.metadata).unwrap_or_default(),
        })
    }

    async fn flow_create(&self, project: &str, name: &str) -> Result<String> {
        let owner = self
            .owner_of::<TinyProject>(project)
            .await
            .map_err(|e| e.context(format!("create flow {name:?}")))?;
        let mut flow = TinyFlow::new("", TinyFlowSpec {});
        flow.metadata = ObjectMeta {
            generate_name: Some(generate_name(&dns_prefix(name, "flow"))),
            namespace: Some(self.namespace.clone()),
            labels: Some(BTreeMap::from([(label::PROJECT_NAME.to_owned(), project.to_owned())])),
            annotations: Some(BTreeMap::from([(
                annotation::FLOW_DESCRIPTION.to_owned(),
                name.to_owned(),
            )])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        };
        self.create_named(
            &flow,
            format!("TinyFlow {name:?} in project {}/{project}", self.namespace),
        )
        .await
    }
}

impl ResourceManager for KubeResources {
    fn expose_port(&self, req: ExposePortRequest) -> BoxFuture<'_, Result<Vec<String>>> {
        self.expose(req).boxed()
    }

    fn unexpose_port(&self, port: u16) -> BoxFuture<'_, Result<()>> {
        self.unexpose(port).boxed()
    }

    fn update_metadata(&self, metadata: Vec<(String, Option<String>)>) -> BoxFuture<'_, Result<()>> {
        self.update_meta(metadata).boxed()
    }

    fn namespace(&self) -> &str {
        &self.namespace
    }

    fn kube_client(&self) -> Option<kube::Client> {
        Some(self.client.clone())
    }

    fn create_signal(&self, node: &str, port: &str, data: Value) -> BoxFuture<'_, Result<String>> {
        let (node, port) = (node.to_owned(), port.to_owned());
        async move { self.signal(&node, &port, data).await }.boxed()
    }

    fn create_node(&self, req: CreateNodeRequest) -> BoxFuture<'_, Result<String>> {
        self.node_create(req).boxed()
    }

    fn get_node(&self, name: &str) -> BoxFuture<'_, Result<Node>> {
        let name = name.to_owned();
        async move { self.node_get(&name).await }.boxed()
    }

    fn create_flow(&self, project: &str, name: &str) -> BoxFuture<'_, Result<String>> {
        let (project, name) = (project.to_owned(), name.to_owned());
        async move { self.flow_create(&project, &name).await }.boxed()
    }
}

fn api_version<K: kube::Resource<DynamicType = ()>>() -> String {
    K::api_version(&()).into_owned()
}

fn kind<K: kube::Resource<DynamicType = ()>>() -> String {
    K::kind(&()).into_owned()
}

/// Maps a client error to a [`tiny_sdk::Error`] about `what`: answers that a retry
/// repeats (not found, invalid, forbidden...) are permanent; conflicts, throttling,
/// server and network failures are transient.
fn api_error(err: kube::Error, what: &str) -> Error {
    match err {
        kube::Error::Api(status) => {
            let detail = if status.message.is_empty() {
                status.reason.clone()
            } else {
                status.message.clone()
            };
            if status.is_not_found() {
                Error::permanent(format!("{what} not found")).with_code(code::NOT_FOUND)
            } else if status.is_conflict() {
                Error::transient(format!("{what}: write conflict: {detail}")).with_code(code::CONFLICT)
            } else if status.is_already_exists() {
                Error::permanent(format!("{what} already exists: {detail}")).with_code(code::ALREADY_EXISTS)
            } else if status.is_invalid() || status.code == 400 {
                Error::permanent(format!("{what} is invalid: {detail}")).with_code(code::INVALID)
            } else if status.is_forbidden() || status.code == 401 {
                Error::permanent(format!("{what}: not allowed: {detail}")).with_code(code::FORBIDDEN)
            } else if status.code == 429 || status.code >= 500 {
                Error::transient(format!("{what}: the API server answered {}: {detail}", status.code))
            } else if (400..500).contains(&status.code) {
                Error::permanent(format!("{what}: the API server answered {}: {detail}", status.code))
            } else {
                Error::transient(format!("{what}: the API server answered {}: {detail}", status.code))
            }
        }
        kube::Error::SerdeError(e) => Error::permanent(format!("{what}: unexpected answer from the API server: {e}")),
        other => Error::transient(format!("{what}: {other}")),
    }
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.is_conflict())
}

/// Runs `call` until it does not meet a write conflict, [`CONFLICT_ATTEMPTS`] times at
/// most, with a short growing pause between tries.
async fn retry_conflicts<T, F, Fut>(what: &str, mut call: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = kube::Result<T>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Ok(value) => return Ok(value),
            Err(e) if is_conflict(&e) && attempt < CONFLICT_ATTEMPTS => {
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                attempt += 1;
            }
            Err(e) => {
                let err = api_error(e, what);
                return Err(if attempt > 1 {
                    err.context(format!("after {attempt} attempts"))
                } else {
                    err
                });
            }
        }
    }
}

/// Deletes `name`; one that is already gone is fine.
async fn delete_if_exists<K>(api: &Api<K>, name: &str, what: &str) -> Result<()>
where
    K: Clone + fmt::Debug + serde::de::DeserializeOwned,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(e) => Err(api_error(e, what)),
    }
}

/// The name of the Service for `port` of `node`: `<node>-<port>` made a DNS-1035 label
/// (lowercase letters, digits and `-`, starting with a letter, at most 63 characters).
/// When the node's name had to be changed to fit, a hash of it keeps names apart.
fn service_name(node: &str, port: u16) -> String {
    let port = port.to_string();
    let clean = dns_label(node);
    let mut base = if clean.starts_with(|c: char| c.is_ascii_lowercase()) {
        clean
    } else {
        format!("n-{clean}")
    };
    base = base.trim_end_matches('-').to_owned();
    let plain = format!("{base}-{port}");
    if base.as_str() == node && plain.len() <= DNS_LABEL_MAX {
        return plain;
    }
    let hash = format!("{:08x}", fnv1a(node.as_bytes()));
    // `<base>-<hash>-<port>`, cutting `base` to fit.
    let room = DNS_LABEL_MAX - hash.len() - port.len() - 2;
    base.truncate(room);
    let base = base.trim_end_matches('-');
    format!("{base}-{hash}-{port}")
}

/// Lowercase ASCII letters and digits kept, every other run of characters made one `-`,
/// no `-` at either end.
fn dns_label(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// A name prefix from free text (`"My Flow!"` → `"my-flow"`), at most 50 characters,
/// `fallback` when nothing is left.
fn dns_prefix(s: &str, fallback: &str) -> String {
    let mut label = dns_label(s);
    label.truncate(50);
    let label = label.trim_end_matches('-');
    if label.is_empty() {
        fallback.to_owned()
    } else {
        label.to_owned()
    }
}

/// `generateName` for a prefix: ends with `-` (or `.`), so the server's suffix stands apart.
fn generate_name(prefix: &str) -> String {
    if prefix.ends_with(['-', '.']) {
        prefix.to_owned()
    } else {
        format!("{prefix}-")
    }
}

/// 32-bit FNV-1a: stable across builds and Rust versions, unlike `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(0x811c_9dc5, |h, b| (h ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}

/// A DNS-1123 subdomain, optionally with a leading `*.` (as Ingress hosts allow).
fn is_hostname(host: &str) -> bool {
    let host = host.strip_prefix("*.").unwrap_or(host);
    !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= DNS_LABEL_MAX
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// A valid label value: at most 63 characters of `[A-Za-z0-9._-]`, alphanumeric at both ends.
fn is_label_value(v: &str) -> bool {
    v.len() <= DNS_LABEL_MAX
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && v.bytes().next().is_none_or(|b| b.is_ascii_alphanumeric())
        && v.bytes().last().is_none_or(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_answers_become_the_resource_managers_codes() {
        for (http, reason, want, transient) in [
            (404, "NotFound", code::NOT_FOUND, false),
            (409, "Conflict", code::CONFLICT, true),
            (409, "AlreadyExists", code::ALREADY_EXISTS, false),
            (422, "Invalid", code::INVALID, false),
            (403, "Forbidden", code::FORBIDDEN, false),
        ] {
            let status = kube::core::Status::failure("the API server's words", reason).with_code(http);
            let err = api_error(kube::Error::Api(status.boxed()), "Service `s`");
            assert_eq!(err.code(), Some(want), "{http} {reason}: {err}");
            assert_eq!(err.is_retryable(), transient, "{http} {reason}");
            assert!(err.message().starts_with("Service `s`"), "{err}");
        }
    }

    fn is_dns1035(s: &str) -> bool {
        !s.is_empty()
            && s.len() <= 63
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    }

    #[test]
    fn service_names_are_dns_1035_labels() {
        assert_eq!(service_name("server-x7k2p", 8080), "server-x7k2p-8080");
        for node in [
            "a1b2c3d4.common-module-v0.router-x7k2p",
            "1abc",
            "Upper.Case",
            "-",
            "",
            &"x".repeat(300),
            &format!("{}.{}", "a".repeat(60), "b".repeat(60)),
        ] {
            let name = service_name(node, 65535);
            assert!(is_dns1035(&name), "{node:?} -> {name:?}");
            assert!(name.ends_with("-65535"), "{name}");
        }
        // Names that clean to the same text stay apart.
        assert_ne!(service_name("a.b", 80), service_name("a-b", 80));
        assert_ne!(service_name(&"x".repeat(70), 80), service_name(&"x".repeat(71), 80));
        // Stable.
        assert_eq!(service_name("a.b", 80), service_name("a.b", 80));
    }

    #[test]
    fn hostnames_and_prefixes() {
        assert!(is_hostname("api.example.com"));
        assert!(is_hostname("*.example.com"));
        assert!(!is_hostname("api_.example.com"));
        assert!(!is_hostname("-a.example.com"));
        assert!(!is_hostname("a..b"));
        assert_eq!(dns_prefix("My Flow!", "flow"), "my-flow");
        assert_eq!(dns_prefix("!!!", "flow"), "flow");
        assert_eq!(generate_name("node"), "node-");
        assert_eq!(generate_name("node."), "node.");
        assert!(is_label_value("a1b2.mod-v0.router-x7k2p"));
        assert!(!is_label_value(&"x".repeat(64)));
    }
}

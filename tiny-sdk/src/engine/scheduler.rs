//! The node table and message delivery: [`Engine`].

use std::{
    fmt,
    sync::{Arc, RwLock, Weak},
};

use futures::future::BoxFuture;
use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;

use crate::{
    client::ResourceManager,
    component::ComponentInfo,
    context::{Emitter, Hop, NodeContext, NodeIdentity},
    error::{Error, Result, code},
    flow::{Node, PortAddress, module_matches, parse_node_name},
    message::Reply,
    port::Position,
    system,
};

use super::{
    fanout,
    observe::{HopEvent, HopKind, Observer},
    registry::Registry,
    runner::Runner,
};

/// Where a delivered message came from.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// From outside the flow (a signal, a test, another process): the payload is
    /// decoded as it is.
    Signal,
    /// Along an edge: the target's mapping for `from` shapes the input.
    Edge {
        /// `"<node>:<port>"` of the sender.
        from: &'a str,
        /// The edge's id.
        edge_id: &'a str,
    },
}

/// Carries messages to nodes of other modules (gRPC in `tiny-runtime`).
pub trait RemoteRouter: Send + Sync + 'static {
    /// Delivers `data` to `to` (`node:port`) in `module`.
    fn route(
        &self,
        module: &str,
        to: &PortAddress,
        source: Source<'_>,
        data: Arc<Value>,
        hop: Hop,
    ) -> BoxFuture<'static, Result<Reply>>;
}

/// What a node's status shows: its component, ports and health.
#[derive(Debug, Clone)]
pub struct NodeReport {
    /// The component, when it is known.
    pub component: Option<ComponentInfo>,
    /// Ports sorted by name, system ports `_settings`/`_control` included.
    pub ports: Vec<PortReport>,
    /// Why the node does not run as specified, if it does not.
    pub error: Option<Error>,
}

/// One port in a [`NodeReport`].
#[derive(Debug, Clone)]
pub struct PortReport {
    /// Port name.
    pub name: String,
    /// Label.
    pub label: String,
    /// Handle position.
    pub position: Position,
    /// `true` for outputs.
    pub source: bool,
    /// Editor schema.
    pub schema: Value,
    /// Current configuration (settings in force, or the port's default).
    pub configuration: Value,
}

struct Slot {
    node: Node,
    runner: Option<Arc<Runner>>,
    error: Option<Error>,
}

/// Makes the resource manager a node's `_client` hook receives.
pub type ClientFactory = Arc<dyn Fn(&NodeIdentity) -> Arc<dyn ResourceManager> + Send + Sync>;

pub(crate) struct Inner {
    module: String,
    registry: Registry,
    nodes: RwLock<HashMap<Arc<str>, Slot>>,
    router: Option<Arc<dyn RemoteRouter>>,
    pub observer: Option<Arc<dyn Observer>>,
    client: Option<ClientFactory>,
    node_wait: std::time::Duration,
}

/// How long a message for a node of this module waits for the node to load (the Go
/// SDK's 30 s): a module that just started gets messages before it read its nodes.
pub const NODE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The flow engine of one module.
///
/// ```
/// # use tiny_sdk::prelude::*;
/// # #[derive(Component, Default)] #[component(name = "noop")] struct Noop;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let engine = tiny_sdk::engine::Engine::builder().register::<Noop>().build();
/// let node: tiny_sdk::flow::Node = serde_json::from_value(serde_json::json!({
///     "name": "n1", "spec": {"module": "m", "component": "noop"}
/// })).unwrap();
/// engine.apply(node).await.unwrap();
/// assert!(engine.report("n1").unwrap().error.is_none());
/// # });
/// ```
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("module", &self.inner.module)
            .finish_non_exhaustive()
    }
}

/// Configures an [`Engine`].
#[derive(Default)]
pub struct EngineBuilder {
    module: String,
    registry: Registry,
    router: Option<Arc<dyn RemoteRouter>>,
    observer: Option<Arc<dyn Observer>>,
    client: Option<ClientFactory>,
    node_wait: Option<std::time::Duration>,
}

impl fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("module", &self.module)
            .finish_non_exhaustive()
    }
}

impl EngineBuilder {
    /// The module's (sanitised) name; nodes of other modules are routed remotely.
    #[must_use]
    pub fn module(mut self, name: impl Into<String>) -> Self {
        self.module = name.into();
        self
    }

    /// Adds a component.
    #[must_use]
    pub fn register<C: crate::Component + crate::Hooks>(mut self) -> Self {
        self.registry.register::<C>();
        self
    }

    /// Uses a whole registry.
    #[must_use]
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = registry;
        self
    }

    /// How to reach other modules.
    #[must_use]
    pub fn router(mut self, router: Arc<dyn RemoteRouter>) -> Self {
        self.router = Some(router);
        self
    }

    /// Sees every hop.
    #[must_use]
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The resource manager handed to every component on `_client`.
    #[must_use]
    pub fn client(mut self, client: Arc<dyn ResourceManager>) -> Self {
        self.client = Some(Arc::new(move |_: &NodeIdentity| client.clone()));
        self
    }

    /// A resource manager per node (one that knows which node it acts for).
    #[must_use]
    pub fn client_factory(mut self, factory: ClientFactory) -> Self {
        self.client = Some(factory);
        self
    }

    /// How long a message for a not-yet-loaded node of this module waits for it
    /// (default [`NODE_WAIT`]).
    #[must_use]
    pub fn node_wait(mut self, wait: std::time::Duration) -> Self {
        self.node_wait = Some(wait);
        self
    }

    /// The module name.
    pub fn module_name(&self) -> &str {
        &self.module
    }

    /// The engine.
    pub fn build(self) -> Engine {
        Engine {
            inner: Arc::new(Inner {
                module: self.module,
                registry: self.registry,
                nodes: RwLock::new(HashMap::default()),
                router: self.router,
                observer: self.observer,
                client: self.client,
                node_wait: self.node_wait.unwrap_or(NODE_WAIT),
            }),
        }
    }
}

impl Engine {
    /// Starts configuring an engine.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// The module this engine runs nodes of.
    pub fn module(&self) -> &str {
        &self.inner.module
    }

    /// The components this engine runs.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Creates or updates a node. On a mistake in the spec (unknown component, an
    /// expression that does not parse, settings that do not decode...) the error is
    /// returned, recorded for [`report`](Self::report), and the node keeps running
    /// its previous spec if it had one; no other node is affected.
    pub async fn apply(&self, node: Node) -> Result<()> {
        let name: Arc<str> = node.name.as_str().into();
        let result = self.build_runner(&name, node.clone()).await;
        let mut nodes = self.inner.nodes_mut();
        let slot = nodes.entry(name.clone()).or_insert_with(|| Slot {
            node: node.clone(),
            runner: None,
            error: None,
        });
        slot.node = node;
        match result {
            Ok(runner) => {
                slot.runner = Some(runner);
                slot.error = None;
                Ok(())
            }
            Err(e) => {
                let e = e.at(|| format!("node `{name}`"));
                tracing::warn!(node = %name, error = %e, "node spec rejected");
                slot.error = Some(e.clone());
                Err(e)
            }
        }
    }

    async fn build_runner(&self, name: &Arc<str>, node: Node) -> Result<Arc<Runner>> {
        let component = node.spec.component.as_str();
        let Some(entry) = self.inner.registry.get(component) else {
            return Err(Error::permanent(format!(
                "unknown component `{component}` (this module has: {})",
                self.inner.registry.names().join(", ")
            ))
            .with_code(code::UNKNOWN_COMPONENT));
        };
        let previous = self.inner.runner(name);
        let (reused, replaced) = match previous {
            Some(r) if r.node.spec.component == node.spec.component => (Some(r), None),
            other => (None, other),
        };
        let fresh = reused.is_none();
        let instance = match reused {
            Some(r) => r.instance.clone(),
            None => {
                let emitter = Arc::new(NodeEmitter {
                    engine: Arc::downgrade(&self.inner),
                    node: name.clone(),
                });
                let id = identity(&node);
                let client = self.inner.client.as_ref().map(|factory| factory(&id));
                let ctx = NodeContext::new(id, emitter, client);
                (entry.create)(Arc::new(ctx))
            }
        };
        let runner = Runner::build(node, instance)?;
        // The Go SDK's order: client, reconcile, then settings before any business
        // message (the runner is not reachable until it is in the table).
        if let Some(client) = runner.instance.node_client().filter(|_| fresh) {
            runner.instance.client(client).await?;
        }
        runner.instance.reconcile(&runner.node).await?;
        runner.instance.settings(runner.settings.as_ref()).await?;
        if let Some(old) = replaced {
            // Another component now runs under this name: the old one's handlers stop.
            old.instance.stop();
        }
        Ok(Arc::new(runner))
    }

    /// Records that `node` is refused (its name or its object is unusable) without
    /// running it: messages for it then fail at once with `error`, rather than wait for
    /// a node that will never load. A runner it had keeps running, as after any
    /// rejected spec change.
    pub fn refuse(&self, node: Node, error: Error) {
        let name: Arc<str> = node.name.as_str().into();
        tracing::warn!(node = %name, error = %error, "node refused");
        let mut nodes = self.inner.nodes_mut();
        let slot = nodes.entry(name).or_insert_with(|| Slot {
            node: node.clone(),
            runner: None,
            error: None,
        });
        slot.node = node;
        slot.error = Some(error);
    }

    /// Removes a node. With `destroyed`, the component's `on_destroy` runs first (the
    /// node was deleted, not merely stopped on this replica).
    pub async fn remove(&self, name: &str, destroyed: bool) -> Result<()> {
        let slot = self.inner.nodes_mut().remove(name);
        let Some(runner) = slot.and_then(|s| s.runner) else {
            return Ok(());
        };
        // Handlers still running for the node are stopped; `on_destroy` runs after.
        runner.instance.stop();
        if destroyed {
            runner.instance.destroy().await
        } else {
            Ok(())
        }
    }

    /// Sends `data` to `to` (`"<node>:<port>"`) from outside the flow, as a signal
    /// does, and waits for the whole chain's reply.
    pub async fn send(&self, to: &str, data: Value) -> Result<Reply> {
        self.send_with(to, data, Hop::default()).await
    }

    /// [`send`](Self::send) with explicit hop facts (depth, cancellation, leadership).
    pub async fn send_with(&self, to: &str, data: Value, hop: Hop) -> Result<Reply> {
        let to = PortAddress::parse(to)?;
        self.inner
            .deliver(&to.node, &to.port, Source::Signal, Arc::new(data), hop)
            .await
    }

    /// Delivers a message that arrived from another module (the gRPC server calls this).
    pub async fn deliver(&self, to: &PortAddress, source: Source<'_>, data: Arc<Value>, hop: Hop) -> Result<Reply> {
        self.inner.deliver(&to.node, &to.port, source, data, hop).await
    }

    /// `true` when the node is in the table (running or failed).
    pub fn has_node(&self, name: &str) -> bool {
        self.inner.nodes_read().contains_key(name)
    }

    /// Names of all nodes.
    pub fn node_names(&self) -> Vec<String> {
        self.inner.nodes_read().keys().map(|k| k.to_string()).collect()
    }

    /// The status of a node, for `TinyNode.status`.
    pub fn report(&self, name: &str) -> Option<NodeReport> {
        let nodes = self.inner.nodes_read();
        let slot = nodes.get(name)?;
        let error = slot.error.clone();
        let Some(runner) = &slot.runner else {
            let component = self.inner.registry.get(&slot.node.spec.component).map(|e| (e.info)());
            return Some(NodeReport {
                component,
                ports: Vec::new(),
                error,
            });
        };
        let settings = runner.instance.settings_json();
        let mut ports: Vec<PortReport> = runner
            .instance
            .ports()
            .iter()
            .filter(|p| runner.instance.port_active(p.name))
            .map(|p| PortReport {
                name: p.name.to_owned(),
                label: p.label.to_owned(),
                position: p.position,
                source: p.is_source(),
                schema: (p.schema)(),
                configuration: if p.name == system::SETTINGS {
                    settings.clone()
                } else {
                    (p.default_config)()
                },
            })
            .collect();
        ports.sort_by(|a, b| a.name.cmp(&b.name));
        Some(NodeReport {
            component: Some(runner.instance.info()),
            ports,
            error,
        })
    }
}

impl Inner {
    fn nodes_read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Arc<str>, Slot>> {
        self.nodes.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn nodes_mut(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Arc<str>, Slot>> {
        self.nodes.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn runner(&self, name: &str) -> Option<Arc<Runner>> {
        self.nodes_read().get(name).and_then(|s| s.runner.clone())
    }

    fn lookup(&self, node: &str) -> Option<(Option<Arc<Runner>>, Option<Error>)> {
        self.nodes_read()
            .get(node)
            .map(|slot| (slot.runner.clone(), slot.error.clone()))
    }

    /// Waits (bounded, with backoff) for a node of this module that is not loaded yet.
    async fn wait_for(&self, node: &str, hop: &Hop) -> Option<(Option<Arc<Runner>>, Option<Error>)> {
        let deadline = tokio::time::Instant::now() + self.node_wait;
        let mut pause = std::time::Duration::from_millis(20);
        while tokio::time::Instant::now() < deadline {
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = hop.cancel.cancelled() => return None,
            }
            if let Some(found) = self.lookup(node) {
                return Some(found);
            }
            pause = (pause * 2).min(std::time::Duration::from_secs(1));
        }
        None
    }

    /// Delivers to a local node, or hands the message to the remote router.
    pub(crate) async fn deliver(
        &self,
        node: &str,
        port: &str,
        source: Source<'_>,
        data: Arc<Value>,
        hop: Hop,
    ) -> Result<Reply> {
        let module = parse_node_name(node).map(|(m, _)| m);
        let ours = module.is_some_and(|m| module_matches(m, &self.module));
        let found = match self.lookup(node) {
            Some(found) => Some(found),
            None if ours => self.wait_for(node, &hop).await,
            None => None,
        };
        let (runner, failure) = found.unwrap_or((None, None));
        if let Some(runner) = runner {
            return runner
                .deliver(port, &source, &data, hop, self.observer.as_deref())
                .await
                .map_err(|e| {
                    // Logged once, where it arose: the hops it fails on its way up
                    // the chain find the origin already set.
                    let fresh = e.origin().is_none();
                    let e = e.at(|| format!("node `{node}` port `{port}`"));
                    if fresh {
                        tracing::warn!(node, port, error = %e, "message failed");
                    }
                    e
                });
        }
        if let Some(e) = failure {
            return Err(
                Error::permanent(format!("node `{node}` is not running: {e}")).with_code(code::NODE_NOT_RUNNING)
            );
        }
        match (module, &self.router) {
            (Some(module), Some(router)) if !ours => {
                let to = PortAddress {
                    node: node.to_owned(),
                    port: port.to_owned(),
                };
                router.route(module, &to, source, data, hop).await
            }
            _ if ours => Err(Error::transient(format!(
                "module `{}` has no node `{node}` (message for port `{port}`; this attempt waited {:.1} s for it to load)",
                self.module,
                self.node_wait.as_secs_f64()
            ))
            .with_code(code::NODE_NOT_FOUND)),
            _ => Err(
                Error::permanent(format!("no node `{node}` in this flow (message for port `{port}`)"))
                    .with_code(code::NODE_NOT_FOUND),
            ),
        }
    }
}

fn identity(node: &Node) -> NodeIdentity {
    NodeIdentity {
        node_name: node.name.clone(),
        namespace: node.namespace.clone(),
        flow_name: node.labels.get("tinysystems.io/flow-name").cloned().unwrap_or_default(),
        project_name: node
            .labels
            .get("tinysystems.io/project-name")
            .cloned()
            .unwrap_or_default(),
    }
}

/// The way out of one node.
struct NodeEmitter {
    engine: Weak<Inner>,
    node: Arc<str>,
}

impl Emitter for NodeEmitter {
    fn connected(&self, port: &str) -> bool {
        let runner = self.engine.upgrade().and_then(|engine| engine.runner(&self.node));
        runner.is_some_and(|r| r.outlets.get(port).is_some_and(|o| !o.edges.is_empty()))
    }

    fn emit(&self, port: &str, data: Value, hop: Hop) -> BoxFuture<'static, Result<Reply>> {
        let Some(engine) = self.engine.upgrade() else {
            return Box::pin(async { Err(Error::permanent("the engine has stopped")) });
        };
        let Some(runner) = engine.runner(&self.node) else {
            let err = Error::permanent(format!("node `{}` was removed", self.node));
            return Box::pin(async move { Err(err) });
        };
        if let Some(observer) = &engine.observer {
            observer.on_hop(&HopEvent {
                kind: HopKind::Emitted,
                node: &self.node,
                port,
                from: None,
                edge_id: None,
                data: &data,
                started: std::time::SystemTime::now(),
                duration: std::time::Duration::ZERO,
                depth: hop.depth,
                error: None,
            });
        }
        let Some(outlet) = runner.outlets.get(port).cloned() else {
            let known = runner.instance.ports().iter().any(|p| p.name == port && p.is_source());
            let result = if known {
                Ok(Reply::empty())
            } else {
                Err(Error::permanent(format!("no output port `{port}`")).at(|| format!("node `{}`", self.node)))
            };
            return Box::pin(async move { result });
        };
        Box::pin(async move { fanout::emit(&engine, &outlet, Arc::new(data), hop).await })
    }
}

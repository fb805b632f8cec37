//! The public [`Engine`]: its builder and the node table (apply, remove, send).

use std::{
    fmt,
    sync::{Arc, RwLock},
};

use rustc_hash::FxHashMap as HashMap;
use serde_json::Value;

use crate::{
    client::ResourceManager,
    error::{Error, Result, code},
    flow::Node,
    message::Reply,
    msg::Msg,
    node::{NodeContext, NodeIdentity},
};

use super::{
    address::{ChangeFn, Delivery, RemoteRouter},
    deliver::NODE_WAIT,
    emitter::NodeEmitter,
    observe::{Observer, Observers},
    registry::Registry,
    runner::Runner,
    state::{ClientFactory, Inner, Slot},
};

/// How many messages from other modules a module handles at once, by default (see
/// [`EngineBuilder::max_in_flight`]).
pub const MAX_IN_FLIGHT: usize = 1024;

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
    pub(super) inner: Arc<Inner>,
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
    observers: Observers,
    client: Option<ClientFactory>,
    node_wait: Option<std::time::Duration>,
    directory: Option<Arc<dyn super::NodeDirectory>>,
    follower: bool,
    on_change: Option<ChangeFn>,
    strict_expressions: bool,
    secrets: Option<Arc<dyn crate::secret::SecretSource>>,
    runs: Option<Arc<dyn crate::run::RunStore>>,
    answers: Option<Arc<dyn crate::run::AnswerInbox>>,
    tape: Option<Arc<dyn crate::run::CallTape>>,
    hop_budget: Option<u32>,
    max_in_flight: Option<usize>,
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

    /// Serves components defined as data in `runtime` (see [`Registry::runtime`]).
    #[must_use]
    pub fn runtime(mut self, runtime: impl super::ComponentRuntime) -> Self {
        self.registry.runtime(runtime);
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

    /// Sees every hop; each observer added sees every hop, in the order they were added.
    #[must_use]
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
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

    /// Where the engine learns which nodes exist: a message for a node of this module
    /// that the directory says does not exist fails at once (`NODE_NOT_FOUND`) instead
    /// of waiting [`node_wait`](Self::node_wait) for it to load.
    #[must_use]
    pub fn directory(mut self, directory: Arc<dyn super::NodeDirectory>) -> Self {
        self.directory = Some(directory);
        self
    }

    /// Starts as a replica that does not lead (a runtime then calls
    /// [`Engine::set_leader`] as leader election decides). By default an engine
    /// leads: in-process it is the only replica.
    #[must_use]
    pub fn follower(mut self) -> Self {
        self.follower = true;
        self
    }

    /// Called with a node's name when its status changed outside a reconcile (a
    /// component showed a new `_control` view): the runtime rewrites its status.
    #[must_use]
    pub fn on_change(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_change = Some(Arc::new(f));
        self
    }

    /// Fails a hop whose edge expression fails (code `MAPPING`), and a node whose
    /// settings expression fails, instead of going on as the Go SDK does (`null` for a
    /// whole-value expression; in a longer string, nothing for a missing path and the
    /// `{{...}}` text left in place for any other failure):
    /// for authors who would rather stop a flow than run it on a missing field. See
    /// [`FAILING_WINDOW`](super::FAILING_WINDOW) for what the lenient default reports.
    #[must_use]
    pub fn strict_expressions(mut self, strict: bool) -> Self {
        self.strict_expressions = strict;
        self
    }

    /// Where `[[secret:<name>/<key>]]` placeholders in settings and edge
    /// configurations get their values (see [`crate::secret`]). Without a source, a
    /// node with a placeholder does not load.
    #[must_use]
    pub fn secrets(mut self, source: Arc<dyn crate::secret::SecretSource>) -> Self {
        self.secrets = Some(source);
        self
    }

    /// Makes the engine's runs durable: hops of a run (see [`crate::run`]) go through
    /// the router to be stored, and each step a node runs is recorded in `store`
    /// (the runtime gives the JetStream KV `TINY_EXEC`). Without it a run's hops go as
    /// classic ones, as on Go's core transport.
    pub fn runs(mut self, store: Arc<dyn crate::run::RunStore>) -> Self {
        self.runs = Some(store);
        self
    }

    /// Where a component that begins a run can await its answer
    /// ([`Ctx::begin_run_answered`](crate::Ctx::begin_run_answered)): the runtime's
    /// JetStream transport.
    pub fn answers(mut self, inbox: Arc<dyn crate::run::AnswerInbox>) -> Self {
        self.answers = Some(inbox);
        self
    }

    /// Answers every outside call ([`Ctx::outside`](crate::Ctx::outside)) from `tape`
    /// instead of making it: how the harness replays a captured run without running
    /// its side effects again.
    #[must_use]
    pub fn call_tape(mut self, tape: Arc<dyn crate::run::CallTape>) -> Self {
        self.tape = Some(tape);
        self
    }

    /// The hops one root message may cause in all (default
    /// [`HOP_BUDGET`](crate::hop::HOP_BUDGET)); the hop past it fails with code
    /// [`HOP_BUDGET`](crate::error::code::HOP_BUDGET), naming the node and the limit.
    /// At least 1.
    #[must_use]
    pub fn hop_budget(mut self, hops: u32) -> Self {
        self.hop_budget = Some(hops.max(1));
        self
    }

    /// How many messages from other modules the module handles at once (default
    /// [`MAX_IN_FLIGHT`]): a transport takes a turn ([`Engine::admit`]) before it
    /// starts a message's task, so a flood waits in the broker's and the client's
    /// buffers instead of becoming tasks. At least 1.
    #[must_use]
    pub fn max_in_flight(mut self, messages: usize) -> Self {
        self.max_in_flight = Some(messages.max(1));
        self
    }

    /// The module name.
    pub fn module_name(&self) -> &str {
        &self.module
    }

    /// The engine.
    pub fn build(self) -> Engine {
        let in_flight_limit = self.max_in_flight.unwrap_or(MAX_IN_FLIGHT);
        let mut registry = self.registry;
        // Definitions are installed into this engine: not into one built from a clone.
        registry.defined = registry.defined.own_table();
        Engine {
            inner: Arc::new(Inner {
                module: self.module,
                registry,
                nodes: RwLock::new(HashMap::default()),
                cells: std::sync::Mutex::default(),
                router: self.router,
                observer: self.observers.into_observer(),
                client: self.client,
                node_wait: self.node_wait.unwrap_or(NODE_WAIT),
                directory: self.directory,
                leader: std::sync::atomic::AtomicBool::new(!self.follower),
                on_change: self.on_change,
                strict_expressions: self.strict_expressions,
                secrets: self.secrets,
                known: Arc::default(),
                runs: self.runs,
                answers: self.answers,
                tape: self.tape,
                steps: Default::default(),
                delivery_failures: std::sync::Mutex::default(),
                hop_budget: self.hop_budget.unwrap_or(crate::hop::HOP_BUDGET),
                in_flight: Arc::new(tokio::sync::Semaphore::new(in_flight_limit)),
                in_flight_limit,
            }),
        }
    }
}

impl Engine {
    /// Whether a message for `port` of `node` that belongs to no run starts one
    /// here: a business port of a node of this module labelled durable
    /// ([`EXECUTION_MODE_LABEL`](super::EXECUTION_MODE_LABEL)), on an engine with a run ledger. A node of this
    /// module that is still loading is waited for, as a delivery waits for it.
    ///
    /// A transport that stores its messages asks before delivering, to give the run
    /// an id of the message's own ([`run_id_from`](crate::run::run_id_from)) in a hop that
    /// carries it ([`RunStep::continued`](crate::run::RunStep::continued) at its root step key): a redelivery of the
    /// message, after its replica died before the first step was recorded, then
    /// continues that run instead of starting a second one.
    pub async fn starts_run(&self, node: &str, port: &str) -> bool {
        self.inner.starts_run(node, port).await
    }

    /// A turn to handle one message from another module: waits while
    /// [`max_in_flight`](EngineBuilder::max_in_flight) messages are being handled.
    /// Hold the permit until the message is answered.
    pub async fn admit(&self) -> tokio::sync::OwnedSemaphorePermit {
        match self.inner.in_flight.clone().acquire_owned().await {
            Ok(permit) => permit,
            // Never closed: the engine owns the semaphore and does not close it.
            Err(_) => unreachable!("the engine's in-flight semaphore is never closed"),
        }
    }

    /// The messages from other modules being handled now (taken turns).
    pub fn in_flight(&self) -> usize {
        self.max_in_flight_limit() - self.inner.in_flight.available_permits()
    }

    /// The most messages from other modules handled at once.
    pub fn max_in_flight_limit(&self) -> usize {
        self.inner.in_flight_limit
    }

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
                runner.instance.node().emitter.attach(&runner);
                runner.instance.node().mark_loaded();
                let resolved = !runner.resolved().is_empty();
                let had = slot.runner.as_ref().is_some_and(|r| !r.resolved().is_empty());
                self.inner.set_cell(&name, Some(runner.clone()));
                slot.runner = Some(runner);
                slot.error = None;
                if resolved || had {
                    refresh_known(&self.inner.known, &nodes);
                }
                Ok(())
            }
            Err(e) => {
                let e = e.at(|| format!("node `{name}`"));
                // Once per refusal: the same spec applied again (a status write, the
                // heartbeat) is not news.
                if slot.error.as_ref() != Some(&e) {
                    tracing::warn!(node = %name, error = %e, "node spec rejected");
                }
                slot.error = Some(e.clone());
                Err(e)
            }
        }
    }

    async fn build_runner(&self, name: &Arc<str>, node: Node) -> Result<Arc<Runner>> {
        let component = node.spec.component.as_str();
        let registry = &self.inner.registry;
        // A compiled component, else one defined as data (a TinyComponent) installed here.
        let make = match registry.get(component) {
            Some(entry) => Ok(entry.create),
            None => match registry.defined.get(component) {
                Some(installed) => Err(installed),
                None => {
                    return Err(Error::permanent(format!(
                        "unknown component `{component}` (this module has: {})",
                        registry.names().join(", ")
                    ))
                    .with_code(code::UNKNOWN_COMPONENT));
                }
            },
        };
        let previous = self.inner.runner(name);
        let (reused, replaced) = match previous {
            Some(r) if r.node.spec.component == node.spec.component && !r.instance.stale() => (Some(r), None),
            other => (None, other),
        };
        let fresh = reused.is_none();
        let instance = match &reused {
            Some(r) => r.instance.clone(),
            None => {
                let emitter = NodeEmitter::new(Arc::downgrade(&self.inner), name.clone());
                let id = identity(&node);
                let client = self.inner.client.as_ref().map(|factory| factory(&id));
                let ctx = NodeContext::new(id, emitter, client);
                match make {
                    Ok(create) => create(Arc::new(ctx)),
                    Err(installed) => super::defined::create(installed, &registry.defined, Arc::new(ctx))
                        .await
                        .map_err(|e| e.with_code(code::INVALID_SPEC))?,
                }
            }
        };
        instance.node().state().observe(&node.metadata);
        instance.node().metadata().observe(&node.metadata);
        // What the spec says that cannot run (a port, an expression, settings, an
        // edge, a policy) is the spec's fault, unless a finer code says more.
        let policy = super::mapping::Policy {
            strict: self.inner.strict_expressions,
            on_change: self.inner.on_change.clone(),
        };
        let fills = self.fills(&node).await;
        let mut runner =
            Runner::build(node, instance, policy, fills, self.inner.known.clone()).map_err(|e| match e.code() {
                Some(_) => e,
                None => e.with_code(code::INVALID_SPEC),
            })?;
        if let Some(old) = &reused {
            runner.keep_failures(old);
        }
        for failure in runner.new_settings_failures(reused.as_deref().or(replaced.as_deref())) {
            tracing::warn!(node = %name, error = %failure, "settings expression failed");
        }
        // The Go SDK's order: client, reconcile, then settings before any business
        // message (the runner is not reachable until it is in the table).
        if fresh {
            runner.instance.preset_settings(runner.settings.as_ref());
        }
        let hooks = async {
            if let Some(client) = runner.instance.node_client().filter(|_| fresh) {
                runner.instance.client(client).await?;
            }
            runner.instance.reconcile(&runner.node).await?;
            runner
                .instance
                .settings(runner.settings.as_ref())
                .await
                .map_err(|e| crate::redact::scrub_error(e, runner.secret_values()))
        };
        if let Err(e) = hooks.await {
            if fresh {
                // A new node that does not load: work its hooks started (waiting for
                // the node to load) stops with it.
                runner.instance.stop();
            }
            return Err(e);
        }
        runner.settle();
        if let Some(old) = replaced {
            // Another component now runs under this name: the old one's handlers stop.
            old.instance.stop();
            old.instance.node().emitter.detach();
        }
        Ok(Arc::new(runner))
    }

    /// The values of the secret placeholders of each `ports[]` entry of `node`, asked
    /// of the engine's source each time the node is applied (a runtime re-applies
    /// such nodes every TTL, so that a rotated Secret reaches the component).
    async fn fills(&self, node: &Node) -> Vec<super::runner::PortFills> {
        let source = self.inner.secrets.as_deref();
        // A Secret may be limited to named flows or nodes: the source is told who asks.
        let who = crate::secret::Requester {
            node: &node.name,
            flow: node
                .labels
                .get(crate::contract::label::FLOW_NAME)
                .map(String::as_str)
                .filter(|f| !f.is_empty()),
        };
        let mut out = Vec::with_capacity(node.spec.ports.len());
        for pc in &node.spec.ports {
            let Some(config) = &pc.configuration else {
                out.push(Ok(None));
                continue;
            };
            let where_ = if pc.from.is_empty() {
                format!("port `{}`", pc.port)
            } else {
                format!("port `{}` (edge from `{}`)", pc.port, pc.from)
            };
            out.push(match crate::secret::find(config.value()) {
                Ok(found) if found.is_empty() => Ok(None),
                Ok(found) => crate::secret::resolve(source, who, &found, &where_)
                    .await
                    .map(|values| Some((found, values))),
                Err((field, bad)) => {
                    Err(Error::permanent(format!("{where_} field `{field}`: {bad}")).with_code(code::SECRET))
                }
            });
        }
        out
    }

    /// Records that `node` is refused (its name or its object is unusable) without
    /// running it: messages for it then fail at once with `error`, rather than wait for
    /// a node that will never load. A runner it had keeps running, as after any
    /// rejected spec change.
    pub fn refuse(&self, node: Node, error: Error) {
        let name: Arc<str> = node.name.as_str().into();
        let mut nodes = self.inner.nodes_mut();
        let slot = nodes.entry(name.clone()).or_insert_with(|| Slot {
            node: node.clone(),
            runner: None,
            error: None,
        });
        // Once per refusal, as for a rejected spec.
        if slot.error.as_ref() != Some(&error) {
            tracing::warn!(node = %name, error = %error, "node refused");
        }
        slot.node = node;
        slot.error = Some(error);
    }

    /// Removes a node. With `destroyed`, the component's `on_destroy` runs first (the
    /// node was deleted, not merely stopped on this replica).
    pub async fn remove(&self, name: &str, destroyed: bool) -> Result<()> {
        let slot = {
            let mut nodes = self.inner.nodes_mut();
            let slot = nodes.remove(name);
            self.inner.set_cell(name, None);
            if slot
                .as_ref()
                .and_then(|s| s.runner.as_ref())
                .is_some_and(|r| !r.resolved().is_empty())
            {
                refresh_known(&self.inner.known, &nodes);
            }
            slot
        };
        let Some(runner) = slot.and_then(|s| s.runner) else {
            return Ok(());
        };
        // Handlers still running for the node are stopped, its emits fail from now
        // on; `on_destroy` runs after.
        runner.instance.stop();
        runner.instance.node().emitter.detach();
        if destroyed {
            runner.instance.destroy().await
        } else {
            Ok(())
        }
    }

    /// Sends `data` to `to` (`"<node>:<port>"`) from outside the flow, as a signal
    /// does, and waits for the whole chain's reply.
    pub async fn send(&self, to: &str, data: Value) -> Result<Reply> {
        self.deliver(Delivery::to(to, Msg::from_json(data))?).await
    }

    /// Delivers a message to a node of this module (or, for another module's node,
    /// through the router) and waits for the whole chain's reply: the one way in for
    /// signals, other modules' messages and tests that set the hop or send a typed
    /// message (a receiver of its type gets it without JSON in between, see [`Msg`]).
    ///
    /// A hop with no hop count yet ([`Cancel::is_unset`](crate::context::Cancel::is_unset))
    /// is a root message: it starts one here.
    pub async fn deliver(&self, mut delivery: Delivery<'_>) -> Result<Reply> {
        let attempt = delivery.attempt.max(1);
        if delivery.hop.cancel.is_unset() {
            delivery.hop.cancel.spend(0);
        }
        self.inner.deliver(delivery.attempt(attempt)).await
    }

    /// Whether this replica leads its module.
    pub fn is_leader(&self) -> bool {
        self.inner.leader.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// This replica gained or lost leadership. Losing it stops every node's
    /// leader-only work at once ([`Ctx::spawn_on_leader`](crate::Ctx::spawn_on_leader));
    /// gaining it runs every node's `on_reconcile`, where a component restarts the work
    /// its state says was running.
    pub async fn set_leader(&self, leads: bool) {
        let was = self.inner.leader.swap(leads, std::sync::atomic::Ordering::SeqCst);
        if was == leads {
            return;
        }
        let runners = self.runners();
        if !leads {
            for r in &runners {
                r.instance.node().work().stop_leader_only();
            }
            return;
        }
        for r in runners {
            if let Err(e) = r.instance.reconcile(&r.node).await {
                tracing::warn!(node = %r.name, error = %e, "on_reconcile failed after gaining leadership");
            }
        }
    }

    /// Stops every node's work, as the module shuts down (nothing is destroyed:
    /// another replica or the next start takes over from the nodes' state).
    pub fn shutdown(&self) {
        for r in self.runners() {
            r.instance.node().work().stop_all();
        }
    }

    /// Writes every node's state not written yet (see [`crate::state::WRITE_DELAY`]),
    /// before the module stops: a graceful stop loses none. Failures are logged.
    pub async fn flush_state(&self) {
        let runners = self.runners();
        let flushes = runners.iter().map(|r| async move {
            if let Err(e) = r.instance.node().state().flush().await {
                tracing::warn!(node = %r.name, error = %e, "node state not written before stopping");
            }
        });
        futures::future::join_all(flushes).await;
    }

    fn runners(&self) -> Vec<Arc<Runner>> {
        self.inner
            .nodes_read()
            .values()
            .filter_map(|s| s.runner.clone())
            .collect()
    }

    /// A node's `status.metadata` as this replica sees it, its own writes included:
    /// its state (`_state/<key>`, base64) and raw metadata (see
    /// [`Ctx::metadata`](crate::Ctx::metadata)). `None` when the node does not run.
    pub fn node_metadata(&self, name: &str) -> Option<std::collections::BTreeMap<String, String>> {
        let runner = self.inner.runner(name)?;
        let node = runner.instance.node();
        let mut out = std::collections::BTreeMap::new();
        let metadata = node.metadata();
        for key in metadata.keys() {
            if let Some(value) = metadata.get(&key) {
                out.insert(key, value);
            }
        }
        node.state().snapshot(&mut out);
        Some(out)
    }

    /// `f` of a running node's state (what its component reads), `None` when the node
    /// does not run.
    pub(crate) fn with_state<T>(&self, name: &str, f: impl FnOnce(&crate::NodeState) -> T) -> Option<T> {
        self.inner.runner(name).map(|r| f(r.instance.node().state()))
    }

    /// Resolves once node `name` runs no work it detached (`Ctx::detach`); at once
    /// when the node does not run.
    pub(crate) async fn detached_settled(&self, name: &str) {
        if let Some(runner) = self.inner.runner(name) {
            runner.instance.node().detached_settled().await;
        }
    }

    /// `true` when the node is in the table (running or failed).
    pub fn has_node(&self, name: &str) -> bool {
        self.inner.nodes_read().contains_key(name)
    }

    /// Names of all nodes.
    pub fn node_names(&self) -> Vec<String> {
        self.inner.nodes_read().keys().map(|k| k.to_string()).collect()
    }
}

/// Sets the engine's known secret values to those its running nodes resolved.
fn refresh_known(known: &super::masking::Known, nodes: &HashMap<Arc<str>, Slot>) {
    let mut values: Vec<String> = Vec::new();
    for runner in nodes.values().filter_map(|s| s.runner.as_ref()) {
        for v in runner.resolved() {
            if !values.contains(v) {
                values.push(v.clone());
            }
        }
    }
    known.set(values);
}

fn identity(node: &Node) -> NodeIdentity {
    NodeIdentity {
        node_name: node.name.clone(),
        namespace: node.namespace.clone(),
        flow_name: node
            .labels
            .get(crate::contract::label::FLOW_NAME)
            .cloned()
            .unwrap_or_default(),
        project_name: node
            .labels
            .get(crate::contract::label::PROJECT_NAME)
            .cloned()
            .unwrap_or_default(),
    }
}

//! Test flows without a cluster: build a flow from YAML or a builder, send messages,
//! and assert on what reached each port.
//!
//! ```
//! use serde_json::json;
//! use tiny_sdk::{harness::Harness, prelude::*};
//!
//! #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
//! struct Text { text: String }
//!
//! /// Upper-cases text.
//! #[derive(Component, Default)]
//! #[component(name = "upper")]
//! struct Upper {
//!     input: Input<Text>,
//!     out: Output<Text>,
//! }
//!
//! impl Upper {
//!     async fn on_input(&self, ctx: &Ctx<Self>, msg: Text) -> Result<Reply> {
//!         self.out.emit(ctx, Text { text: msg.text.to_uppercase() }).await
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let flow = tiny_sdk::flow::FlowBuilder::new()
//!     .node("a", "upper")
//!     .node("b", "upper")
//!     .edge("a:out", "b:input", json!({"text": "{{$.text + '!'}}"}))
//!     .build();
//! let h = Harness::builder().register::<Upper>().flow(flow).build().await.unwrap();
//! h.send("a:input", json!({"text": "hi"})).await.unwrap();
//! assert_eq!(h.emitted("b:out"), vec![json!({"text": "HI!"})]);
//! # });
//! ```

mod replay;

pub use replay::{ReplayDiff, ReplayOptions, ReplayReport, ShapeChange};

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
};

use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::{
    Component, Hooks,
    client::ResourceManager,
    contract::STATE_PREFIX,
    engine::{Engine, EngineBuilder, HopEvent, HopKind, NodeReport, Observer},
    error::{Error, Result},
    flow::Flow,
    message::Reply,
    secret::StaticSecrets,
};

/// A flow running in-process, recording every hop.
pub struct Harness {
    engine: Engine,
    log: Arc<Recorder>,
    flow: Flow,
    /// What a restarted module is built with.
    strict: bool,
    client: Option<Arc<dyn ResourceManager>>,
    secrets: Arc<StaticSecrets>,
}

/// Configures a [`Harness`].
#[derive(Default)]
pub struct HarnessBuilder {
    engine: EngineBuilder,
    flow: Flow,
    yaml_error: Option<Error>,
    strict: bool,
    client: Option<Arc<dyn ResourceManager>>,
    /// Node state to start with: (node, `_state/<key>`, base64 of the JSON).
    seeds: Vec<(String, String, String)>,
    secrets: Arc<StaticSecrets>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("engine", &self.engine)
            .field("flow", &self.flow)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for HarnessBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HarnessBuilder")
            .field("engine", &self.engine)
            .field("flow", &self.flow)
            .finish_non_exhaustive()
    }
}

impl HarnessBuilder {
    /// Adds a component the flow may use.
    #[must_use]
    pub fn register<C: Component + Hooks>(mut self) -> Self {
        self.engine = self.engine.register::<C>();
        self
    }

    /// Adds the nodes and signals of a YAML flow (see [`Flow::from_yaml`]).
    #[must_use]
    pub fn yaml(mut self, yaml: &str) -> Self {
        match Flow::from_yaml(yaml) {
            Ok(flow) => self = self.flow(flow),
            Err(e) => self.yaml_error = Some(e),
        }
        self
    }

    /// Adds the nodes and signals of a flow.
    #[must_use]
    pub fn flow(mut self, flow: Flow) -> Self {
        self.flow.nodes.extend(flow.nodes);
        self.flow.signals.extend(flow.signals);
        self
    }

    /// Sets `key` of the Secret `name`, for `[[secret:name/key]]` placeholders in
    /// settings and edge configurations (see [`crate::secret`]); as in a cluster, the
    /// component gets `value` and the node's records show `<redacted>`.
    #[must_use]
    pub fn secret(self, name: &str, key: &str, value: &str) -> Self {
        self.secrets.set(name, key, value);
        self
    }

    /// A resource manager for components' `_client` hooks.
    #[must_use]
    pub fn client(mut self, client: Arc<dyn ResourceManager>) -> Self {
        self.engine = self.engine.client(client.clone());
        self.client = Some(client);
        self
    }

    /// Starts node `node` with `value` in its state under `key`, as if an earlier run
    /// had stored it (what `ctx.state().get(key)` then reads). Raw metadata, such as a
    /// Go component's `ticker-running`, goes in the flow's YAML under
    /// `status: { metadata: {...} }`. A value that does not encode fails
    /// [`build`](Self::build).
    #[must_use]
    pub fn state(mut self, node: &str, key: &str, value: impl Serialize) -> Self {
        match serde_json::to_vec(&value) {
            Ok(bytes) => {
                use base64::Engine as _;
                let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
                self.seeds
                    .push((node.to_owned(), format!("{STATE_PREFIX}{key}"), encoded));
            }
            Err(e) => self.yaml_error = Some(Error::permanent(format!("seeded state `{key}` of `{node}`: {e}"))),
        }
        self
    }

    /// Fails a hop whose edge expression fails, as a module run with
    /// `--strict-expressions` does (see [`EngineBuilder::strict_expressions`]); by
    /// default, as in the Go SDK, the hop goes on with `null` in the field and the
    /// failure is recorded ([`Harness::expression_errors`]).
    #[must_use]
    pub fn strict_expressions(mut self) -> Self {
        self.engine = self.engine.strict_expressions(true);
        self.strict = true;
        self
    }

    /// The hops one root message may cause (see [`EngineBuilder::hop_budget`]).
    #[must_use]
    pub fn hop_budget(mut self, hops: u32) -> Self {
        self.engine = self.engine.hop_budget(hops);
        self
    }

    /// Starts every node; fails on the first node whose spec is wrong, as a cluster
    /// would refuse it, or whose wiring does not hold: a mapping for an edge the flow
    /// does not have, an edge to an input port its target does not have (a typo a
    /// cluster would leave unused).
    pub async fn build(self) -> Result<Harness> {
        let (h, errors) = self.build_lenient().await?;
        match errors.into_iter().next() {
            Some((_, e)) => Err(e),
            None => Ok(h),
        }
    }

    /// Starts every node it can, and returns the errors of those it cannot (the
    /// others run regardless: one broken node never stops the rest).
    pub async fn build_lenient(mut self) -> Result<(Harness, Vec<(String, Error)>)> {
        if let Some(e) = self.yaml_error {
            return Err(e);
        }
        for (node, key, value) in self.seeds {
            let Some(n) = self.flow.nodes.iter_mut().find(|n| n.name == node) else {
                return Err(Error::permanent(format!(
                    "state seeded for node `{node}`, which the flow does not have"
                )));
            };
            n.metadata.insert(key, value);
        }
        let log = Arc::new(Recorder::default());
        let engine = self
            .engine
            .secrets(self.secrets.clone())
            .observer(log.clone())
            .follower()
            .build();
        let errors = load(&engine, &self.flow.nodes).await;
        Ok((
            Harness {
                engine,
                log,
                flow: self.flow,
                strict: self.strict,
                client: self.client,
                secrets: self.secrets,
            },
            errors,
        ))
    }
}

/// Loads `nodes` as a module does (every node, then lead: leader-only work a node's
/// state says is running, a ticker, starts once the nodes it emits to are there), and
/// returns the errors of those that do not load.
async fn load(engine: &Engine, nodes: &[crate::flow::Node]) -> Vec<(String, Error)> {
    let mut errors = Vec::new();
    for node in nodes {
        let result = match cluster_name_check(node).and_then(|()| wiring_check(node, nodes, engine.registry())) {
            Ok(()) => engine.apply(node.clone()).await,
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            errors.push((node.name.clone(), e));
        }
    }
    engine.set_leader(true).await;
    errors
}

impl Harness {
    /// Starts configuring a harness.
    pub fn builder() -> HarnessBuilder {
        HarnessBuilder::default()
    }

    /// Sends `data` to `to` (`"<node>:<port>"`) as a signal would, and returns the
    /// reply of the whole chain.
    pub async fn send(&self, to: &str, data: impl Serialize) -> Result<Reply> {
        let data = serde_json::to_value(data)?;
        self.engine.send(to, data).await
    }

    /// Delivers the flow's signals in order and returns their results.
    pub async fn run_signals(&self) -> Vec<Result<Reply>> {
        let mut out = Vec::new();
        for s in &self.flow.signals {
            out.push(
                self.engine
                    .send(&format!("{}:{}", s.node, s.port), s.data.clone())
                    .await,
            );
        }
        out
    }

    /// Inputs handled at target port `at` (`"<node>:<port>"`), after their edge
    /// mapping, in arrival order.
    pub fn arrivals(&self, at: &str) -> Vec<Value> {
        self.log.get(HopKind::Delivered, at)
    }

    /// Messages a node emitted on source port `at` (`"<node>:<port>"`).
    pub fn emitted(&self, at: &str) -> Vec<Value> {
        self.log.get(HopKind::Emitted, at)
    }

    /// Handler failures, as `("<node>:<port>", error)`, in order.
    pub fn failures(&self) -> Vec<(String, Error)> {
        self.log.failures.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// Edge expressions that failed (and gave `null`, or left their text in place),
    /// as `("<node>:<port>", error)` of the port they fed, in order.
    pub fn expression_errors(&self) -> Vec<(String, crate::expr::EvalError)> {
        self.log.expressions.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// Forgets what was recorded so far.
    pub fn clear(&self) {
        if let Ok(mut e) = self.log.events.lock() {
            e.clear();
        }
        if let Ok(mut f) = self.log.failures.lock() {
            f.clear();
        }
        if let Ok(mut f) = self.log.expressions.lock() {
            f.clear();
        }
    }

    /// A node's status report (component, ports with schemas, error).
    pub fn report(&self, node: &str) -> Option<NodeReport> {
        self.engine.report(node)
    }

    /// Sets `key` of the Secret `name` (a rotation, or a Secret created late); nodes
    /// see it at the next [`refresh_secrets`](Self::refresh_secrets).
    pub fn set_secret(&self, name: &str, key: &str, value: &str) {
        self.secrets.set(name, key, value);
    }

    /// Deletes the Secret `name`; nodes see it at the next
    /// [`refresh_secrets`](Self::refresh_secrets).
    pub fn remove_secret(&self, name: &str) {
        self.secrets.remove(name);
    }

    /// Re-applies every node of the flow, as a runtime does every TTL for nodes with
    /// `[[secret:...]]` placeholders: a node whose resolved settings changed gets them
    /// on `_settings`; the errors of nodes that do not load are returned.
    pub async fn refresh_secrets(&self) -> Vec<(String, Error)> {
        let mut errors = Vec::new();
        for node in &self.flow.nodes {
            if let Err(e) = self.engine.apply(node.clone()).await {
                errors.push((node.name.clone(), e));
            }
        }
        errors
    }

    /// The engine underneath, to apply or remove nodes mid-test.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The value node `node` holds in its state under `key`, as its component reads it
    /// (`ctx.state().get(key)`); `None` when it holds none.
    pub fn state<T: DeserializeOwned>(&self, node: &str, key: &str) -> Result<Option<T>> {
        self.engine.with_state(node, |state| state.get(key)).unwrap_or(Ok(None))
    }

    /// Node `node`'s `status.metadata` as a module would write it to its TinyNode:
    /// its state (`_state/<key>`, base64 of the JSON) and its raw keys. `None` when
    /// the node does not run.
    pub fn metadata(&self, node: &str) -> Option<BTreeMap<String, String>> {
        self.engine.node_metadata(node)
    }

    /// Waits until the work node `node` detached (`Ctx::detach`: what an async
    /// component goes on with after it answered) has ended: a probe for a test that
    /// asserts what that work left behind. At once when the node does not run.
    ///
    /// ```no_run
    /// # async fn f(h: tiny_sdk::harness::Harness) {
    /// h.send("a:in", serde_json::json!({"context": 1})).await.ok(); // answered at once
    /// h.settled("a").await; // its background emit is done
    /// assert_eq!(h.arrivals("ans:input").len(), 1);
    /// # }
    /// ```
    pub async fn settled(&self, node: &str) {
        self.engine.detached_settled(node).await;
    }

    /// Restarts node `node` as a module does when its pod restarts: the component is
    /// stopped (its work too) and made anew, and starts from the state it had stored.
    pub async fn restart_node(&self, node: &str) -> Result<()> {
        let Some(mut spec) = self.flow.nodes.iter().find(|n| n.name == node).cloned() else {
            return Err(Error::permanent(format!("the flow has no node `{node}`")));
        };
        spec.metadata = self.metadata(node).unwrap_or(spec.metadata);
        self.engine.remove(node, false).await?;
        self.engine.apply(spec).await
    }

    /// Restarts the whole module: every node stops and loads anew on a fresh engine,
    /// from the state it had stored, and the replica leads again. Returns the errors of
    /// nodes that do not load.
    pub async fn restart(&mut self) -> Vec<(String, Error)> {
        let mut nodes = self.flow.nodes.clone();
        for n in &mut nodes {
            if let Some(stored) = self.engine.node_metadata(&n.name) {
                n.metadata = stored;
            }
        }
        for n in &nodes {
            let _ = self.engine.remove(&n.name, false).await;
        }
        self.engine.shutdown();
        let mut builder = Engine::builder()
            .registry(self.engine.registry().clone())
            .secrets(self.secrets.clone())
            .strict_expressions(self.strict)
            .observer(self.log.clone())
            .follower();
        if let Some(client) = &self.client {
            builder = builder.client(client.clone());
        }
        self.engine = builder.build();
        load(&self.engine, &nodes).await
    }
}

impl HarnessBuilder {
    /// Replays `run` against this harness's components and flow (its node names must
    /// be the recorded ones): the run's first message is sent again, every outside
    /// call ([`Ctx::outside`](crate::Ctx::outside)) is answered from the recording
    /// and never made, and what each port received is compared with the recording
    /// (ports that stopped or started receiving, counts, payload shapes, and values
    /// with [`ReplayOptions::values`]), as are failures.
    ///
    /// Fails (rather than reports) when the run cannot be replayed: the capture has
    /// no first message, or the harness does not build.
    pub async fn replay(self, run: &crate::run::CapturedRun, options: ReplayOptions) -> Result<ReplayReport> {
        let Some(entry) = &run.entry else {
            return Err(Error::permanent(format!(
                "run `{}` cannot be replayed: its capture has no first message",
                run.run_id
            ))
            .with_code(crate::error::code::INVALID));
        };
        let tape = Arc::new(crate::run::RecordedCalls::of(run));
        let mut builder = self;
        builder.engine = builder.engine.call_tape(tape.clone());
        let h = builder.build().await?;
        // A failure is compared, not returned: it is part of the outcome. A first
        // message that came along an edge goes along it again, so that its
        // target's mapping shapes it as it did in the run.
        let msg = crate::Msg::from_json(entry.data.clone());
        let _ = match (entry.from.is_empty(), entry.to.rsplit_once(':')) {
            (false, Some((node, port))) => {
                let source = crate::engine::Source::Edge {
                    from: &entry.from,
                    edge_id: &entry.edge_id,
                };
                h.engine
                    .deliver(crate::engine::Delivery::new(node, port, source, msg))
                    .await
            }
            _ => h.engine.send(&entry.to, entry.data.clone()).await,
        };
        Ok(replay::compare(
            run,
            &h.flow.nodes,
            |at| h.emitted(at),
            &h.failures(),
            &tape,
            options,
        ))
    }
}

/// Replays every captured run (`*.json`) under `dir`, each on a harness from
/// `builder`, and panics with every difference if one does not replay as recorded
/// (or does not read). What a module's one-line test calls:
///
/// ```no_run
/// # use tiny_sdk::harness::{Harness, replay_runs};
/// # async fn t() {
/// # const FLOW: &str = "";
/// // tests/replay.rs; FLOW is the flow's YAML, e.g. include_str!("../flows/main.yaml")
/// replay_runs(|| Harness::builder().yaml(FLOW), "tests/runs").await;
/// # }
/// ```
///
/// A relative `dir` is taken from the crate's folder (where `cargo test` runs
/// tests). Returns the reports, all green; panics when `dir` holds no capture, so
/// that a moved folder is not a silent pass.
pub async fn replay_runs(builder: impl Fn() -> HarnessBuilder, dir: impl AsRef<std::path::Path>) -> Vec<ReplayReport> {
    let dir = dir.as_ref();
    let mut files: Vec<_> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(e) => panic!("captured runs folder {}: {e}", dir.display()),
    };
    files.sort();
    assert!(!files.is_empty(), "no captured run (*.json) in {}", dir.display());
    let mut reports = Vec::new();
    let mut red = Vec::new();
    for file in files {
        let outcome = match std::fs::read_to_string(&file) {
            Ok(text) => match crate::run::CapturedRun::from_json(&text) {
                Ok(run) => builder().replay(&run, ReplayOptions::default()).await,
                Err(e) => Err(e),
            },
            Err(e) => Err(Error::permanent(e.to_string())),
        };
        match outcome {
            Ok(report) if report.is_green() => reports.push(report),
            Ok(report) => red.push(format!("{}: {report}", file.display())),
            Err(e) => red.push(format!("{}: {e}", file.display())),
        }
    }
    assert!(red.is_empty(), "captured runs that do not replay:\n{}", red.join("\n"));
    reports
}

/// Refuses, as the API server and a module's node controller would, a node name that is
/// not a Kubernetes name (RFC 1123: lowercase letters, digits, `-` and `.`), and a
/// dotted name that is not `{flow}.{module}.{component}-{suffix}` for its component
/// (`rate-limit-1` for `rate_limit`, as the Go SDK slugs it). A name without dots
/// (`a`, `sink`) is the harness's shorthand for a node of a test flow.
fn cluster_name_check(node: &crate::flow::Node) -> Result<()> {
    let name = node.name.as_str();
    if let Some(why) = crate::flow::kubernetes_name_error(name, &node.spec.component) {
        return Err(Error::permanent(why).with_code(crate::error::code::INVALID_NAME));
    }
    if name.contains('.') {
        crate::flow::check_node_name(name, &node.spec.component)
            .map_err(|e| Error::permanent(e).with_code(crate::error::code::INVALID_NAME))?;
    }
    Ok(())
}

/// The wiring written on `node` holds together: a mapping in its `ports[]` names a node
/// of the flow, an output of its component, and an edge of that node to here; each of
/// its edges to a node of the flow goes to an input of that node. A typo in any of them
/// (`helo-1:greeting`, `hello-1:greetin`, `to: "b:inptu"`), or a mapping whose edge was
/// never written, would otherwise load, and deliver nothing or the port's default in
/// silence. (A node of another module is not loaded here: its part is not checked.)
fn wiring_check(
    node: &crate::flow::Node,
    nodes: &[crate::flow::Node],
    registry: &crate::engine::Registry,
) -> Result<()> {
    let refuse = |why: String| Err(Error::permanent(why).with_code(crate::error::code::INVALID_SPEC));
    for pc in node.spec.ports.iter().filter(|p| !p.from.is_empty()) {
        let (from_node, from_port) = pc.from.rsplit_once(':').unwrap_or((pc.from.as_str(), ""));
        let why = match nodes.iter().find(|n| n.name == from_node) {
            // Another module's node: its part of the flow is not loaded here.
            None if other_module(from_node, node) => continue,
            None => format!("the flow has no node `{from_node}`"),
            Some(n) => match registry.get(&n.spec.component) {
                Some(entry) if !(entry.ports)().iter().any(|p| p.is_source() && p.answers(from_port)) => {
                    format!(
                        "component `{}` of `{from_node}` has no output `{from_port}`",
                        n.spec.component
                    )
                }
                _ if !n
                    .spec
                    .edges
                    .iter()
                    .any(|e| e.port == from_port && e.to == format!("{}:{}", node.name, pc.port)) =>
                {
                    format!(
                        "`{from_node}` has no edge from `{from_port}` to `{}:{}`, so the mapping is never used \
                         (write the edge in `{from_node}`'s `edges`)",
                        node.name, pc.port
                    )
                }
                _ => continue,
            },
        };
        return refuse(format!(
            "port `{}`: a mapping for an edge from `{}`, but {why}",
            pc.port, pc.from
        ));
    }
    for edge in &node.spec.edges {
        let (to_node, to_port) = edge.to.rsplit_once(':').unwrap_or((edge.to.as_str(), ""));
        // An edge to a node the flow lacks loads, as on a cluster where the node may
        // come later (a message then fails with NODE_NOT_FOUND); a node's ports are known.
        let why = match nodes.iter().find(|n| n.name == to_node) {
            None => continue,
            Some(n) => match registry.get(&n.spec.component) {
                Some(entry) if !(entry.ports)().iter().any(|p| !p.is_source() && p.answers(to_port)) => {
                    let inputs: Vec<&str> = (entry.ports)()
                        .iter()
                        .filter(|p| !p.is_source() && !p.name.starts_with('_'))
                        .map(|p| p.name)
                        .collect();
                    format!(
                        "component `{}` of `{to_node}` has no input `{to_port}` (inputs: {})",
                        n.spec.component,
                        inputs.join(", ")
                    )
                }
                _ => continue,
            },
        };
        return refuse(format!(
            "edge `{}` from port `{}` goes to `{}`, but {why}",
            edge.id, edge.port, edge.to
        ));
    }
    Ok(())
}

/// Whether node `name` (`{flow}.{module}.{component}-{suffix}`) belongs to a module
/// other than `node`'s.
fn other_module(name: &str, node: &crate::flow::Node) -> bool {
    let ours = crate::flow::parse_node_name(&node.name).map_or(node.spec.module.as_str(), |(m, _)| m);
    crate::flow::parse_node_name(name).is_some_and(|(module, _)| !crate::flow::module_matches(module, ours))
}

/// A ready pass-through component for wiring tests: component `relay`, input `input`,
/// output `out`; it emits what it receives and answers with the downstream reply.
///
/// A test helper: a module runs it only if it registers it, so a flow meant for a
/// cluster names the module's own components instead.
#[derive(Debug, Default, crate::Component)]
#[component(name = "relay", hooks)]
pub struct Relay {
    input: crate::Input<Value>,
    out: crate::Output<Value>,
}

// Not offered as an example in authors' "`Hooks` is not implemented" errors.
#[diagnostic::do_not_recommend]
impl crate::Hooks for Relay {}

impl Relay {
    async fn on_input(&self, ctx: &crate::Ctx<Self>, msg: Value) -> Result<Reply> {
        self.out.emit(ctx, msg).await
    }
}

#[derive(Debug, Default)]
struct Recorder {
    events: Mutex<HashMap<(HopKind, String), Vec<Value>>>,
    failures: Mutex<Vec<(String, Error)>>,
    expressions: Mutex<Vec<(String, crate::expr::EvalError)>>,
}

impl Recorder {
    fn get(&self, kind: HopKind, at: &str) -> Vec<Value> {
        self.events
            .lock()
            .ok()
            .and_then(|e| e.get(&(kind, at.to_owned())).cloned())
            .unwrap_or_default()
    }
}

impl Observer for Recorder {
    fn on_hop(&self, event: &HopEvent<'_>) {
        let at = format!("{}:{}", event.node, event.port);
        if let (Some(err), Ok(mut f)) = (event.error, self.failures.lock()) {
            f.push((at.clone(), err.clone()));
        }
        if !event.expression_errors.is_empty()
            && let Ok(mut f) = self.expressions.lock()
        {
            f.extend(event.expression_errors.iter().map(|e| (at.clone(), e.clone())));
        }
        if let Ok(mut e) = self.events.lock() {
            e.entry((event.kind, at))
                .or_default()
                .push(event.data.and_then(|d| d.json().ok()).cloned().unwrap_or(Value::Null));
        }
    }
}

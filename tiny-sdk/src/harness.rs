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

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use serde::Serialize;
use serde_json::Value;

use crate::{
    Component, Hooks,
    client::ResourceManager,
    engine::{Engine, EngineBuilder, HopEvent, HopKind, NodeReport, Observer},
    error::{Error, Result},
    flow::Flow,
    message::Reply,
    secret::StaticSecrets,
};

/// A flow running in-process, recording every hop.
#[derive(Debug)]
pub struct Harness {
    engine: Engine,
    log: Arc<Recorder>,
    flow: Flow,
    secrets: Arc<StaticSecrets>,
}

/// Configures a [`Harness`].
#[derive(Debug, Default)]
pub struct HarnessBuilder {
    engine: EngineBuilder,
    flow: Flow,
    yaml_error: Option<Error>,
    secrets: Arc<StaticSecrets>,
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
        self.engine = self.engine.client(client);
        self
    }

    /// Starts every node; fails on the first node whose spec is wrong.
    pub async fn build(self) -> Result<Harness> {
        let (h, errors) = self.build_lenient().await?;
        match errors.into_iter().next() {
            Some((_, e)) => Err(e),
            None => Ok(h),
        }
    }

    /// Starts every node it can, and returns the errors of those it cannot (the
    /// others run regardless: one broken node never stops the rest).
    pub async fn build_lenient(self) -> Result<(Harness, Vec<(String, Error)>)> {
        if let Some(e) = self.yaml_error {
            return Err(e);
        }
        let log = Arc::new(Recorder::default());
        // As a module does: load every node, then lead. Leader-only work a node's
        // state says is running (a ticker) starts once the nodes it emits to are there.
        let engine = self
            .engine
            .secrets(self.secrets.clone())
            .observer(log.clone())
            .follower()
            .build();
        let mut errors = Vec::new();
        for node in &self.flow.nodes {
            if let Err(e) = engine.apply(node.clone()).await {
                errors.push((node.name.clone(), e));
            }
        }
        engine.set_leader(true).await;
        Ok((
            Harness {
                engine,
                log,
                flow: self.flow,
                secrets: self.secrets,
            },
            errors,
        ))
    }
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

    /// Forgets what was recorded so far.
    pub fn clear(&self) {
        if let Ok(mut e) = self.log.events.lock() {
            e.clear();
        }
        if let Ok(mut f) = self.log.failures.lock() {
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
}

/// A ready pass-through component for wiring tests: component `relay`, input `input`,
/// output `out`; it emits what it receives and answers with the downstream reply.
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
        if let Ok(mut e) = self.events.lock() {
            e.entry((event.kind, at))
                .or_default()
                .push(event.data.and_then(|d| d.json().ok()).cloned().unwrap_or(Value::Null));
        }
    }
}

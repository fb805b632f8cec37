//! The context a handler runs in: its node, settings, hop and the way out.

use std::{fmt, sync::Arc};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    client::ResourceManager, component::Component, engine::NodeEmitter, error::Result, message::Reply, msg::Msg,
};

/// Who a node is, as the Go SDK's `NodeIdentity`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeIdentity {
    /// The TinyNode's name.
    pub node_name: String,
    /// Its namespace (empty in-process).
    pub namespace: String,
    /// The flow it belongs to.
    pub flow_name: String,
    /// The project it belongs to.
    pub project_name: String,
}

/// What stays the same for every message a node handles.
pub struct NodeContext {
    identity: NodeIdentity,
    emitter: NodeEmitter,
    client: Option<Arc<dyn ResourceManager>>,
    /// Cancelled when the node is removed or replaced: handlers still running for it
    /// are stopped.
    stopped: CancellationToken,
}

impl NodeContext {
    /// Built by the engine.
    pub(crate) fn new(identity: NodeIdentity, emitter: NodeEmitter, client: Option<Arc<dyn ResourceManager>>) -> Self {
        Self {
            identity,
            emitter,
            client,
            stopped: CancellationToken::new(),
        }
    }

    /// Stops the node's running handlers (it was removed or replaced).
    pub(crate) fn stop(&self) {
        self.stopped.cancel();
    }

    /// Resolves once the node was removed or replaced.
    pub(crate) async fn stopped(&self) {
        self.stopped.cancelled().await;
    }

    /// Whether any edge leaves the node's `port`.
    pub(crate) fn connected(&self, port: &str) -> bool {
        self.emitter.connected(port)
    }

    /// The node's identity.
    pub fn identity(&self) -> &NodeIdentity {
        &self.identity
    }

    /// The node's resource manager, if the runtime gave it one.
    pub fn client(&self) -> Option<&Arc<dyn ResourceManager>> {
        self.client.as_ref()
    }

    /// The node's way out.
    pub(crate) fn emitter(&self) -> &NodeEmitter {
        &self.emitter
    }
}

impl fmt::Debug for NodeContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeContext")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

/// Per-message facts carried from hop to hop.
#[derive(Debug, Clone, Default)]
pub struct Hop {
    /// How many hops the message has made; the engine refuses to go past its limit.
    pub depth: u32,
    /// Cancelled when the caller gave up or the node is being stopped.
    pub cancel: CancellationToken,
    /// Whether this replica leads (only the leader should do leader-only work).
    pub leader: bool,
}

/// The context of one handler call.
pub struct Ctx<C: Component> {
    node: Arc<NodeContext>,
    settings: Arc<C::Settings>,
    hop: Hop,
}

impl<C: Component> Ctx<C> {
    /// Built by the engine for each call.
    pub fn new(node: Arc<NodeContext>, settings: Arc<C::Settings>, hop: Hop) -> Self {
        Self { node, settings, hop }
    }

    /// The node's name (`<flow hash>.<module>.<component>-<suffix>` on Kubernetes).
    pub fn node_name(&self) -> &str {
        &self.node.identity.node_name
    }

    /// The node's identity.
    pub fn identity(&self) -> &NodeIdentity {
        &self.node.identity
    }

    /// The settings in force for this call.
    pub fn settings(&self) -> &C::Settings {
        &self.settings
    }

    /// Hop facts: depth, cancellation, leadership.
    pub fn hop(&self) -> &Hop {
        &self.hop
    }

    /// `true` when this replica leads its module.
    pub fn is_leader(&self) -> bool {
        self.hop.leader
    }

    /// Resolves when the caller gave up on this message, or the node was removed while
    /// the handler ran (the engine then drops the handler at its next `.await`).
    pub async fn cancelled(&self) {
        tokio::select! {
            () = self.hop.cancel.cancelled() => {}
            () = self.node.stopped.cancelled() => {}
        }
    }

    /// The runtime's resource manager (absent in-process unless a test provides one).
    pub fn client(&self) -> Option<&Arc<dyn ResourceManager>> {
        self.node.client.as_ref()
    }

    /// Emits an already-encoded message; prefer [`Output::emit`](crate::Output::emit),
    /// which checks the port and the type at compile time.
    pub async fn emit_value(&self, port: &str, data: Value) -> Result<Reply> {
        self.emit_msg(port, Msg::from_json(data)).await
    }

    /// Emits a message as it is (typed or JSON); prefer
    /// [`Output::emit`](crate::Output::emit).
    pub async fn emit_msg(&self, port: &str, msg: Msg) -> Result<Reply> {
        self.node.emitter.emit(port, msg, self.hop.clone()).await
    }
}

impl<C: Component> fmt::Debug for Ctx<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("node", &self.node.identity.node_name)
            .field("hop", &self.hop)
            .finish_non_exhaustive()
    }
}

//! What stays with a node while it runs, below its contexts: its identity, state,
//! metadata and work, and its way out, the [`Emit`] trait the engine implements. The
//! author's API ([`Ctx`](crate::Ctx), [`Output::emit`](crate::Output::emit)) reaches
//! the engine only through it.

use std::{
    fmt,
    sync::{Arc, Mutex, PoisonError},
};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    client::ResourceManager,
    error::Result,
    hop::Hop,
    message::Reply,
    metadata::NodeMetadata,
    msg::Msg,
    run::{AnswerInbox, RunStore},
    state::NodeState,
    work::NodeWork,
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

/// Where the layer above plugs its emitter in: this layer declares the slot, the
/// engine fills it (`impl Wired for Wiring` in `engine/emitter.rs`), and nothing here
/// names the engine. Everything this layer does with the emitter goes through
/// [`Emit`]; the projection is the engine's own type once compiled, so a hop's future
/// stays inline in the emitting handler's and a hop costs one allocation
/// (`tests/allocs.rs`), which a boxed or `dyn` emitter would double.
pub(crate) struct Wiring;

/// The slot [`Wiring`] fills: the emitter every node's context holds.
pub(crate) trait Wired {
    /// The engine's emitter.
    type Emitter: Emit;
}

/// The emitter every node's context holds, whichever layer provides it.
pub(crate) type NodeEmitter = <Wiring as Wired>::Emitter;

/// A node's way out, which the engine implements: where its emits go, and what the
/// author's API asks of the engine about the node.
pub(crate) trait Emit: Send + Sync {
    /// What an emit awaits.
    type Going: Future<Output = Result<Reply>> + Send + 'static;
    /// Sends `msg` along the edges of `port`, continuing `hop`. The edges are found
    /// now; the message goes when the returned future is awaited.
    fn emit(&self, port: &str, msg: Msg, hop: Hop) -> Self::Going;
    /// Whether this replica leads its module (in-process, an engine always leads).
    fn leads(&self) -> bool;
    /// Where the engine keeps its runs' ledger, when its runs are durable.
    fn runs(&self) -> Option<Arc<dyn RunStore>>;
    /// Where a run's answer can be awaited, when the engine's runs are durable.
    fn answers(&self) -> Option<Arc<dyn AnswerInbox>>;
    /// Where outside calls are answered from instead of made (a replay).
    fn tape(&self) -> Option<Arc<dyn crate::run::CallTape>>;
    /// The node's status changed outside a reconcile (its `_control` view).
    fn changed(&self);
    /// The values of the node's resolved `[[secret:...]]` placeholders.
    fn resolved(&self) -> Vec<String>;
    /// Whether any edge leaves `port`.
    fn connected(&self, port: &str) -> bool;
}

/// What stays the same for every message a node handles.
pub(crate) struct NodeContext {
    pub(crate) identity: NodeIdentity,
    pub(crate) emitter: NodeEmitter,
    pub(crate) client: Option<Arc<dyn ResourceManager>>,
    /// Cancelled when the node is removed or replaced: handlers still running for it
    /// are stopped.
    pub(crate) stopped: CancellationToken,
    /// Cancelled once the node first loaded (its edges are in place): work started
    /// by its first hooks waits for it, so that its first emits are not lost.
    pub(crate) loaded: CancellationToken,
    /// Work that outlives the calls that started it.
    pub(crate) work: NodeWork,
    /// The work `Ctx::detach` started, while it runs (`Harness::settled` waits for it).
    pub(crate) detached: tokio_util::task::TaskTracker,
    pub(crate) state: NodeState,
    /// The node's raw `status.metadata` keys (outside `_state/`).
    pub(crate) metadata: NodeMetadata,
    /// The `_control` view the component last showed (JSON), if it showed one.
    pub(crate) control: Mutex<Option<Value>>,
}

impl NodeContext {
    /// Built by the engine.
    pub(crate) fn new(identity: NodeIdentity, emitter: NodeEmitter, client: Option<Arc<dyn ResourceManager>>) -> Self {
        let state = NodeState::new(&identity.node_name, client.clone());
        let metadata = NodeMetadata::new(&identity.node_name, client.clone());
        Self {
            identity,
            emitter,
            client,
            stopped: CancellationToken::new(),
            loaded: CancellationToken::new(),
            work: NodeWork::default(),
            detached: tokio_util::task::TaskTracker::new(),
            state,
            metadata,
            control: Mutex::new(None),
        }
    }

    /// Stops the node's running handlers and its work (it was removed or replaced).
    pub(crate) fn stop(&self) {
        self.stopped.cancel();
        self.work.stop_all();
    }

    /// The node loaded: its edges are in place, and work waiting for them starts.
    pub(crate) fn mark_loaded(&self) {
        self.loaded.cancel();
    }

    /// The node's work, by name.
    pub(crate) fn work(&self) -> &NodeWork {
        &self.work
    }

    /// The node's state.
    pub(crate) fn state(&self) -> &NodeState {
        &self.state
    }

    /// The node's raw metadata.
    pub(crate) fn metadata(&self) -> &NodeMetadata {
        &self.metadata
    }

    /// The `_control` view the component shows, if it showed one.
    pub(crate) fn control_view(&self) -> Option<Value> {
        self.control.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Resolves once no work the node detached is running (a test's probe). The
    /// tracker stays closed: closing only lets `wait` end when it is empty, work
    /// detached later is still tracked, and two waiters never reopen it under each other.
    pub(crate) async fn detached_settled(&self) {
        self.detached.close();
        self.detached.wait().await;
    }

    /// Whether this replica leads its module (always, in-process).
    pub(crate) fn leads(&self) -> bool {
        self.emitter.leads()
    }

    /// A hop for a call the engine makes on its own (hooks, work): depth 0, stopped
    /// with the node, and this replica's leadership.
    pub(crate) fn system_hop(&self) -> Hop {
        Hop {
            depth: 0,
            cancel: self.stopped.child_token().into(),
            leader: self.leads(),
            run: None,
        }
    }

    /// Resolves once the node was removed or replaced.
    pub(crate) fn stopped(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.stopped.cancelled()
    }

    /// Whether the node was stopped (removed or replaced).
    pub(crate) fn is_stopped(&self) -> bool {
        self.stopped.is_cancelled()
    }

    /// Whether any edge leaves the node's `port`.
    pub(crate) fn connected(&self, port: &str) -> bool {
        self.emitter.connected(port)
    }

    /// The node's resource manager, if the runtime gave it one.
    pub fn client(&self) -> Option<&Arc<dyn ResourceManager>> {
        self.client.as_ref()
    }
}

impl fmt::Debug for NodeContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeContext")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

//! The engine's state: the node table and what every handle shares. Delivery,
//! emitting and the table's operations are built on it.

use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap as HashMap;

use crate::{client::ResourceManager, context::NodeIdentity, error::Error, flow::Node};

use super::{
    address::{ChangeFn, NodeDirectory, RemoteRouter},
    masking::Known,
    observe::Observer,
    registry::Registry,
    runner::Runner,
};

/// Makes the resource manager a node's `_client` hook receives.
pub type ClientFactory = Arc<dyn Fn(&NodeIdentity) -> Arc<dyn ResourceManager> + Send + Sync>;

/// One row of the node table.
pub(crate) struct Slot {
    pub node: Node,
    pub runner: Option<Arc<Runner>>,
    pub error: Option<Error>,
}

/// What the engine's handles share.
pub(crate) struct Inner {
    pub module: String,
    pub registry: Registry,
    pub nodes: RwLock<HashMap<Arc<str>, Slot>>,
    pub router: Option<Arc<dyn RemoteRouter>>,
    pub observer: Option<Arc<dyn Observer>>,
    pub client: Option<ClientFactory>,
    pub node_wait: std::time::Duration,
    /// Which nodes exist, when the runtime knows.
    pub directory: Option<Arc<dyn NodeDirectory>>,
    /// Whether this replica leads its module.
    pub leader: std::sync::atomic::AtomicBool,
    /// Told the name of a node whose status should be rewritten (its `_control` view
    /// changed).
    pub on_change: Option<ChangeFn>,
    /// Fail a hop whose edge expression fails, instead of going on as Go does.
    pub strict_expressions: bool,
    /// Where `[[secret:...]]` placeholders get their values.
    pub secrets: Option<Arc<dyn crate::secret::SecretSource>>,
    /// The values the nodes resolved from placeholders, masked in every node's records.
    pub known: Arc<Known>,
    /// Where durable runs keep their ledger: set when the runtime has a durable
    /// transport (JetStream); without it a run's hops go as classic ones.
    pub runs: Option<Arc<dyn crate::run::RunStore>>,
    /// Where a run's answer can be awaited (the durable transport's inboxes).
    pub answers: Option<Arc<dyn crate::run::AnswerInbox>>,
}

impl Inner {
    pub fn nodes_read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Arc<str>, Slot>> {
        self.nodes.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn nodes_mut(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Arc<str>, Slot>> {
        self.nodes.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn runner(&self, name: &str) -> Option<Arc<Runner>> {
        self.nodes_read().get(name).and_then(|s| s.runner.clone())
    }

    pub fn lookup(&self, node: &str) -> Option<(Option<Arc<Runner>>, Option<Error>)> {
        self.nodes_read()
            .get(node)
            .map(|slot| (slot.runner.clone(), slot.error.clone()))
    }

    /// Whether the directory says `node` does not exist.
    pub fn absent(&self, node: &str) -> bool {
        self.directory.as_ref().and_then(|d| d.exists(node)) == Some(false)
    }
}

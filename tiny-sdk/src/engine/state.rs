//! The engine's state: the node table and what every handle shares. Delivery,
//! emitting and the table's operations are built on it.

use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap as HashMap;

use crate::{client::ResourceManager, error::Error, flow::Node, node::NodeIdentity};

use super::{
    address::{ChangeFn, NodeDirectory, RemoteRouter},
    masking::Known,
    observe::Observer,
    registry::Registry,
    runner::{NodeCell, Runner},
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
    /// Each node's current runner, for the routes that lead to it (see [`NodeCell`]):
    /// written with `nodes`, under its lock.
    pub cells: std::sync::Mutex<HashMap<Arc<str>, Arc<NodeCell>>>,
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
    /// Where outside calls are answered from instead of made (a replay).
    pub tape: Option<Arc<dyn crate::run::CallTape>>,
    /// The run steps under way here, one delivery of each at a time.
    pub steps: super::steps::Steps,
    /// Per node, the last message it sent that the wire to another module refused
    /// (too large for the broker), for its status.
    pub delivery_failures: std::sync::Mutex<HashMap<String, (std::time::Instant, String)>>,
    /// The hops one root message may cause.
    pub hop_budget: u32,
    /// Turns for messages from other modules ([`Engine::admit`](super::Engine::admit)).
    pub in_flight: Arc<tokio::sync::Semaphore>,
    /// How many turns there are.
    pub in_flight_limit: usize,
}

impl Inner {
    /// Records that a message `from` (`<node>:<port>`) sent along `edge` to `to` was
    /// refused by the wire (`error`), and has the node's status rewritten.
    pub fn delivery_failed(&self, from: &str, edge: &str, to: &str, error: &crate::error::Error) {
        let node = from.split_once(':').map_or(from, |(n, _)| n);
        let text = format!("edge `{edge}` from `{from}` to `{to}`: {error}");
        self.delivery_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(node.to_owned(), (std::time::Instant::now(), text));
        if let Some(changed) = &self.on_change {
            changed(node);
        }
    }

    /// The delivery failure of `node` within [`FAILING_WINDOW`](super::FAILING_WINDOW).
    pub fn recent_delivery_failure(&self, node: &str) -> Option<String> {
        let mut failures = self
            .delivery_failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match failures.get(node) {
            Some((at, text)) if at.elapsed() < super::FAILING_WINDOW => Some(text.clone()),
            Some(_) => {
                failures.remove(node);
                None
            }
            None => None,
        }
    }

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

    /// The cell of node `name`, made (empty) if the node has none yet: a route may lead
    /// to a node before it loads.
    pub fn cell(&self, name: &str) -> Arc<NodeCell> {
        let mut cells = self.cells.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(cell) = cells.get(name) {
            return cell.clone();
        }
        let cell = Arc::new(NodeCell::default());
        cells.insert(name.into(), cell.clone());
        cell
    }

    /// Node `name` runs `runner` from now on, or no longer runs (`None`). Called with
    /// `nodes` locked for writing, so that the cell and the table agree. A removed
    /// node's cell goes when no route leads to it (a route made later makes another).
    pub fn set_cell(&self, name: &str, runner: Option<Arc<Runner>>) {
        let mut cells = self.cells.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match runner {
            Some(runner) => cells.entry(name.into()).or_default().set(Some(runner)),
            None => {
                if let Some(cell) = cells.get(name) {
                    cell.set(None);
                }
                // Cells no route holds and no node fills (this one, and those whose
                // routes went with their senders).
                cells.retain(|_, cell| Arc::strong_count(cell) > 1 || !cell.is_empty());
            }
        }
    }

    /// Whether the directory says `node` does not exist.
    pub fn absent(&self, node: &str) -> bool {
        self.directory.as_ref().and_then(|d| d.exists(node)) == Some(false)
    }
}

impl Drop for Inner {
    /// Empties the cells: routes hold them, runners hold routes, and cells hold
    /// runners, so a flow with a cycle would otherwise keep its runners (and their
    /// components) alive after the engine.
    fn drop(&mut self) {
        let cells = self.cells.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        for cell in cells.values() {
            cell.set(None);
        }
    }
}

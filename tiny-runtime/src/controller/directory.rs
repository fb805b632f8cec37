//! Which TinyNodes exist: the node watch's store, asked by the engine and by the
//! node controller.

use kube::{Api, runtime::reflector};

use crate::crd::{Decoded, TinyNode};

/// Which TinyNodes exist in the module's namespace: the node watch's store, once it
/// has listed. The engine asks it before waiting for a node of this module to load
/// ([`NodeDirectory`](tiny_sdk::engine::NodeDirectory)); the controller asks it which
/// nodes' edges lead nowhere.
#[derive(Default)]
pub(crate) struct Directory {
    namespace: String,
    pub(super) store: std::sync::OnceLock<reflector::Store<Decoded<TinyNode>>>,
    pub(super) ready: std::sync::atomic::AtomicBool,
    /// Where a node the store lacks is looked up before a message for it fails for good.
    client: Option<kube::Client>,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("namespace", &self.namespace)
            .field("ready", &self.ready)
            .finish_non_exhaustive()
    }
}

impl Directory {
    pub(crate) fn new(namespace: &str, client: kube::Client) -> Self {
        Self {
            namespace: namespace.to_owned(),
            client: Some(client),
            ..Self::default()
        }
    }

    fn key(&self, name: &str) -> reflector::ObjectRef<Decoded<TinyNode>> {
        reflector::ObjectRef::new(name).within(&self.namespace)
    }

    /// The nodes with an edge to a port of `target`.
    pub(super) fn senders_to(&self, target: &str) -> Vec<reflector::ObjectRef<Decoded<TinyNode>>> {
        let Some(store) = self.store.get() else {
            return Vec::new();
        };
        store
            .state()
            .iter()
            .filter(|n| {
                n.object()
                    .is_ok_and(|n| n.spec.edges.iter().any(|e| edge_target(&e.to) == target))
            })
            .map(|n| self.key(n.name()))
            .collect()
    }

    /// Whether `name` is in the store now.
    pub(super) fn has(&self, name: &str) -> bool {
        self.store.get().is_some_and(|s| s.get(&self.key(name)).is_some())
    }

    /// The input ports node `name` has, as its module last reported them on its status;
    /// `None` while unknown (not in the store, or not reported yet).
    pub(super) fn inputs_of(&self, name: &str) -> Option<Vec<String>> {
        let node = self.store.get()?.get(&self.key(name))?;
        inputs(node.object().ok()?)
    }
}

/// The input ports on `node`'s status; `None` before its module has reported them.
pub(super) fn inputs(node: &TinyNode) -> Option<Vec<String>> {
    let ports = &node.status.as_ref()?.ports;
    (!ports.is_empty()).then(|| ports.iter().filter(|p| !p.source).map(|p| p.name.clone()).collect())
}

impl tiny_sdk::engine::NodeDirectory for Directory {
    fn exists(&self, node: &str) -> Option<bool> {
        if !self.ready.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        Some(self.has(node))
    }

    /// Asks the API server: the watch's store lags behind a node created a moment ago
    /// (seconds on a loaded machine), and a flow used at once must not lose its first
    /// messages to that lag.
    fn confirm_absent<'a>(&'a self, node: &'a str) -> futures::future::BoxFuture<'a, Option<bool>> {
        Box::pin(async move {
            let client = self.client.clone()?;
            let nodes: Api<kube::core::PartialObjectMeta<TinyNode>> = Api::namespaced(client, &self.namespace);
            match nodes.get_metadata_opt(node).await {
                Ok(found) => Some(found.is_none()),
                Err(e) => {
                    tracing::debug!(node, error = %e, "could not ask the API server whether the node exists");
                    None
                }
            }
        })
    }
}

/// The node an edge's `to` (`<node>:<port>`) names.
pub(super) fn edge_target(to: &str) -> &str {
    to.rsplit_once(':').map_or(to, |(node, _)| node)
}

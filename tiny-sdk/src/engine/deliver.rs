//! Routing and delivery: a message for `node:port` goes to a local node (waiting a
//! little for one of this module that has not loaded yet), or to another module
//! through the [`RemoteRouter`].

use std::sync::{Arc, RwLock};

use futures::future::{BoxFuture, Either};
use rustc_hash::FxHashMap as HashMap;

use crate::{
    context::Hop,
    error::{Error, Result, code},
    flow::{Node, PortAddress, module_matches},
    message::Reply,
    msg::Msg,
};

use super::{observe::Observer, registry::Registry, runner::Runner, table::ClientFactory};

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

/// Carries messages to nodes of other modules (gRPC or NATS in `tiny-runtime`).
pub trait RemoteRouter: Send + Sync + 'static {
    /// Delivers `data` to `to` (`node:port`) in `module` as attempt `attempt` of the
    /// edge's retries (1 for the first; a router may tell the receiver, whose metrics
    /// and spans count retries). The message is typed or JSON;
    /// [`Msg::to_json_bytes`] writes it for the wire without a JSON tree.
    fn route_attempt(
        &self,
        module: &str,
        to: &PortAddress,
        source: Source<'_>,
        data: Msg,
        hop: Hop,
        attempt: u32,
    ) -> BoxFuture<'static, Result<Reply>>;

    /// [`route_attempt`](Self::route_attempt) as a first attempt.
    fn route(
        &self,
        module: &str,
        to: &PortAddress,
        source: Source<'_>,
        data: Msg,
        hop: Hop,
    ) -> BoxFuture<'static, Result<Reply>> {
        self.route_attempt(module, to, source, data, hop, 1)
    }
}

/// Tells the engine which nodes exist where its nodes come from (the cluster's
/// TinyNodes, in `tiny-runtime`), so that a message for a node of this module that does
/// not exist fails at once instead of waiting for it to load.
pub trait NodeDirectory: Send + Sync + 'static {
    /// `Some(true)`: the node exists (it may still be loading); `Some(false)`: it does
    /// not (the list is complete); `None`: not known yet (the module is starting).
    fn exists(&self, node: &str) -> Option<bool>;
}

/// How long a message waits for a node the [`NodeDirectory`] says does not exist, in
/// case its creation has not reached the watch yet.
const ABSENT_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a message for a node of this module waits for the node to load (the Go
/// SDK's 30 s): a module that just started gets messages before it read its nodes.
pub const NODE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// One row of the node table.
pub(crate) struct Slot {
    pub node: Node,
    pub runner: Option<Arc<Runner>>,
    pub error: Option<Error>,
}

/// Where a message goes, with the receiving node's module parsed once (when the
/// edge loaded, or once per signal).
#[derive(Debug, Clone, Copy)]
pub(crate) struct To<'a> {
    pub node: &'a str,
    pub port: &'a str,
    /// The module part of the node's name, when it has one.
    pub module: Option<&'a str>,
}

impl<'a> To<'a> {
    pub fn parse(node: &'a str, port: &'a str) -> Self {
        let module = crate::flow::parse_node_name(node).map(|(m, _)| m);
        To { node, port, module }
    }
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
    pub known: Arc<super::runner::Known>,
    /// Where durable runs keep their ledger: set when the runtime has a durable
    /// transport (JetStream); without it a run's hops go as classic ones.
    pub runs: Option<Arc<dyn crate::run::RunStore>>,
}

/// Told the name of a node whose status changed outside a reconcile.
pub type ChangeFn = Arc<dyn Fn(&str) + Send + Sync>;

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

    pub(super) fn lookup(&self, node: &str) -> Option<(Option<Arc<Runner>>, Option<Error>)> {
        self.nodes_read()
            .get(node)
            .map(|slot| (slot.runner.clone(), slot.error.clone()))
    }

    /// Whether the directory says `node` does not exist.
    fn absent(&self, node: &str) -> bool {
        self.directory.as_ref().and_then(|d| d.exists(node)) == Some(false)
    }

    /// Waits (bounded, with backoff) for a node of this module that is not loaded yet;
    /// for one the directory says does not exist, only [`ABSENT_GRACE`] (its creation
    /// may be on its way to the watch).
    pub(super) async fn wait_for(&self, node: &str, hop: &Hop) -> Option<(Option<Arc<Runner>>, Option<Error>)> {
        let start = tokio::time::Instant::now();
        let deadline = start + self.node_wait;
        let mut pause = std::time::Duration::from_millis(20);
        while tokio::time::Instant::now() < deadline {
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = hop.cancel.cancelled() => return None,
            }
            if let Some(found) = self.lookup(node) {
                return Some(found);
            }
            if start.elapsed() >= ABSENT_GRACE && self.absent(node) {
                return None;
            }
            pause = (pause * 2).min(std::time::Duration::from_millis(250));
        }
        None
    }

    /// Delivers to a local node, or hands the message to the remote router.
    pub fn deliver<'a>(
        &'a self,
        to: To<'a>,
        source: Source<'a>,
        data: Msg,
        hop: Hop,
    ) -> impl Future<Output = Result<Reply>> + Send + 'a {
        self.deliver_attempt(to, source, data, hop, 1)
    }

    /// [`deliver`](Self::deliver) as attempt `attempt` along an edge (1, then 2...
    /// for retries), which the hop's span and observers record.
    ///
    /// Not an `async fn`: the node is looked up before the future is made, so that a
    /// local delivery's future holds only what the hop needs after the handler starts
    /// (it is part of the sending handler's future, boxed once per hop: a small one
    /// stays cheap to allocate and to move).
    pub fn deliver_attempt<'a>(
        &'a self,
        to: To<'a>,
        source: Source<'a>,
        data: Msg,
        hop: Hop,
        attempt: u32,
    ) -> impl Future<Output = Result<Reply>> + Send + 'a {
        // A hop of a durable run never takes the local shortcut: it is stored, and
        // whichever replica takes it runs it.
        if hop.run.as_ref().is_some_and(|s| s.parent().is_some()) && self.runs.is_some() {
            let durable: BoxFuture<'a, Result<Reply>> = Box::pin(self.durable(to, source, data, hop, attempt));
            return Either::Right(durable);
        }
        match self.lookup(to.node) {
            Some((Some(runner), _)) => Either::Left(self.local(runner, to.port, source, data, hop, attempt)),
            // Rare (a node not loaded yet, a failed one, another module's): boxed, out
            // of the hop's inline future.
            found => Either::Right(Box::pin(self.elsewhere(found, to, source, data, hop, attempt)) as BoxFuture<'a, _>),
        }
    }

    /// Delivers to a loaded node of this module.
    fn local<'a>(
        &'a self,
        runner: Arc<Runner>,
        port: &'a str,
        source: Source<'a>,
        data: Msg,
        hop: Hop,
        attempt: u32,
    ) -> impl Future<Output = Result<Reply>> + Send + 'a {
        if self.runs.is_some() && (hop.run.is_some() || super::durable::mints(&runner, port)) {
            return Either::Right(Box::pin(self.step(runner, port, source, data, hop, attempt)));
        }
        Either::Left(runner.deliver(&self.module, port, source, data, hop, self.observer.as_deref(), attempt))
    }

    /// Delivers to a node that is not loaded here: one of this module that is still
    /// loading or failed, or another module's (through the router).
    async fn elsewhere(
        &self,
        found: Option<(Option<Arc<Runner>>, Option<Error>)>,
        to: To<'_>,
        source: Source<'_>,
        data: Msg,
        hop: Hop,
        attempt: u32,
    ) -> Result<Reply> {
        let To { node, port, module } = to;
        let ours = module.is_some_and(|m| module_matches(m, &self.module));
        let found = match found {
            Some(found) => Some(found),
            None if ours => self.wait_for(node, &hop).await,
            None => None,
        };
        // A node of ours that the cluster does not have will not load: said as such.
        let absent = ours && self.absent(node);
        let (runner, failure) = found.unwrap_or((None, None));
        if let Some(runner) = runner {
            return self.local(runner, port, source, data, hop, attempt).await;
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
                router.route_attempt(module, &to, source, data, hop, attempt).await
            }
            _ if absent => Err(Error::permanent(format!(
                "module `{}` has no node `{node}` (message for port `{port}`): no TinyNode of that name exists",
                self.module
            ))
            .with_code(code::NODE_NOT_FOUND)),
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

//! Routing and delivery: a message for `node:port` goes to a local node (waiting a
//! little for one of this module that has not loaded yet), or to another module
//! through the [`RemoteRouter`].

use std::sync::Arc;

use crate::{
    error::{Error, Result, code},
    flow::module_matches,
    hop::Hop,
    message::Reply,
};

use super::{
    address::Delivery,
    hop::{Along, HopFuture},
    runner::{Landing, Runner},
    state::Inner,
};

/// How long a message waits for a node the [`NodeDirectory`](super::NodeDirectory) says
/// does not exist before asking whether it really does not
/// ([`confirm_absent`](super::NodeDirectory::confirm_absent)), and then between two such
/// questions.
const ABSENT_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a message for a node of this module waits for the node to load (the Go
/// SDK's 30 s): a module that just started gets messages before it read its nodes.
pub const NODE_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What waiting for a node of this module came to.
enum Waited {
    /// The node loaded, or failed to: its runner or its failure.
    Found((Option<Arc<Runner>>, Option<Error>)),
    /// It does not exist: the directory's list lacks it and the directory confirmed it.
    Absent,
    /// Neither within the wait, or the hop was cancelled.
    NotYet,
}

impl Inner {
    /// Waits (bounded, with backoff) for a node of this module that is not loaded yet.
    /// One the directory's list lacks fails as [`Waited::Absent`] only once the
    /// directory confirms it is gone: a node created a moment ago reaches the API server
    /// before the module's watch, and a message sent into a new flow at once must wait
    /// for it, not fail.
    async fn wait_for(&self, node: &str, hop: &Hop) -> Waited {
        let start = tokio::time::Instant::now();
        let deadline = start + self.node_wait;
        let mut check_at = start + ABSENT_CHECK;
        let mut pause = std::time::Duration::from_millis(20);
        while tokio::time::Instant::now() < deadline {
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = hop.cancel.cancelled() => return Waited::NotYet,
            }
            if let Some(found) = self.lookup(node) {
                return Waited::Found(found);
            }
            if tokio::time::Instant::now() >= check_at && self.absent(node) {
                if let Some(directory) = &self.directory {
                    let gone = tokio::select! {
                        gone = directory.confirm_absent(node) => gone,
                        () = hop.cancel.cancelled() => return Waited::NotYet,
                    };
                    if gone == Some(true) {
                        return Waited::Absent;
                    }
                }
                check_at = tokio::time::Instant::now() + ABSENT_CHECK;
            }
            pause = (pause * 2).min(std::time::Duration::from_millis(250));
        }
        Waited::NotYet
    }

    /// [`wait_for`](Self::wait_for), for a caller that needs only the runner, if the node
    /// loads.
    pub(super) async fn wait_for_runner(&self, node: &str) -> Option<Arc<Runner>> {
        match self.wait_for(node, &Hop::default()).await {
            Waited::Found((runner, _)) => runner,
            Waited::Absent | Waited::NotYet => None,
        }
    }

    /// Delivers to a local node, or hands the message to the remote router: the one
    /// way in for a signal, another module's message and an edge's hop alike.
    ///
    /// Not an `async fn`: the node is looked up before the future is made, and a
    /// loaded node's delivery begins now: the hop's future is then
    /// [running](HopFuture::Running), as an emit's common hop is, and holds only what
    /// the hop needs after the handler starts.
    pub fn deliver<'a>(&'a self, d: Delivery<'a>) -> HopFuture<'a> {
        // A hop of a durable run never takes the local shortcut: it is stored, and
        // whichever replica takes it runs it.
        if d.hop.run.as_ref().is_some_and(|s| s.parent().is_some()) && self.runs.is_some() {
            return HopFuture::Boxed(Box::pin(self.durable(d)));
        }
        match self.lookup(d.node) {
            Some((Some(runner), _)) => self.local(runner, d),
            // Rare (a node not loaded yet, a failed one, another module's): boxed, out
            // of the hop's inline future.
            found => HopFuture::Boxed(Box::pin(self.elsewhere(found, d))),
        }
    }

    /// Delivers to a loaded node of this module.
    fn local<'a>(&'a self, runner: Arc<Runner>, d: Delivery<'a>) -> HopFuture<'a> {
        if self.runs.is_some() && (d.hop.run.is_some() || super::durable::mints(&runner, d.port)) {
            return HopFuture::Boxed(Box::pin(self.step(runner, d)));
        }
        self.run_here(runner, d)
    }

    /// Delivers to `runner`, a node loaded here, as it is (no durable step): its
    /// delivery begun now, the hop [running](HopFuture::Running).
    pub(super) fn run_here<'a>(&self, runner: Arc<Runner>, d: Delivery<'a>) -> HopFuture<'a> {
        let Delivery {
            port,
            source,
            msg,
            hop,
            attempt,
            ..
        } = d;
        let delivering = runner.open(
            &self.module,
            Landing::Port(port),
            &source,
            msg,
            hop,
            attempt,
            self.observer.as_ref(),
        );
        HopFuture::Running(delivering, Along::Given(source))
    }

    /// Delivers to a node that is not loaded here: one of this module that is still
    /// loading or failed, or another module's (through the router).
    async fn elsewhere(&self, found: Option<(Option<Arc<Runner>>, Option<Error>)>, d: Delivery<'_>) -> Result<Reply> {
        let (node, port, module) = (d.node, d.port, d.module());
        let ours = module.is_some_and(|m| module_matches(m, &self.module));
        // A node of ours that the cluster does not have will not load: said as such.
        let (found, absent) = match found {
            Some(found) => (Some(found), ours && self.absent(node)),
            None if ours => match self.wait_for(node, &d.hop).await {
                Waited::Found(found) => (Some(found), false),
                Waited::Absent => (None, true),
                Waited::NotYet => (None, false),
            },
            None => (None, false),
        };
        let (runner, failure) = found.unwrap_or((None, None));
        if let Some(runner) = runner {
            return self.local(runner, d).await;
        }
        if let Some(e) = failure {
            return Err(
                Error::permanent(format!("node `{node}` is not running: {e}")).with_code(code::NODE_NOT_RUNNING)
            );
        }
        match (module, &self.router) {
            (Some(module), Some(router)) if !ours => {
                let edge = match d.source {
                    super::address::Source::Edge { from, edge_id } => Some((from, edge_id)),
                    super::address::Source::Signal => None,
                };
                let routed = router.route(module, d).await;
                // The wire's limit is the sender's problem to see: shown on its node.
                if let (Err(e), Some((from, edge_id))) = (&routed, edge)
                    && e.code() == Some(code::MESSAGE_TOO_LARGE)
                {
                    self.delivery_failed(from, edge_id, node, e);
                }
                routed
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

impl Inner {
    /// See [`Engine::starts_run`](super::Engine::starts_run).
    pub(super) async fn starts_run(&self, node: &str, port: &str) -> bool {
        let inner = self;
        if inner.runs.is_none() || port.starts_with('_') {
            return false;
        }
        let runner = match inner.lookup(node) {
            Some((runner, _)) => runner,
            None => {
                let ours = crate::flow::parse_node_name(node)
                    .is_some_and(|(m, _)| crate::flow::module_matches(m, &inner.module));
                if !ours {
                    return false;
                }
                inner.wait_for_runner(node).await
            }
        };
        runner.is_some_and(|r| super::durable::mints(&r, port))
    }
}

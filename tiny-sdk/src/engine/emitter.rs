//! A node's way out: what its handlers' `emit` calls go through.
//!
//! The emitter belongs to the node's context and so outlives any one spec of the node:
//! the engine points it at the node's current [`Runner`] whenever the node loads, so
//! that an emit finds its edges without looking the node up by name. It needs nothing
//! from a handler call but the hop, so an owned handle can emit through it too.

use std::sync::{Arc, RwLock, Weak};

use crate::{
    error::{Error, Result},
    hop::Hop,
    message::Reply,
    msg::Msg,
    node::{Emit, Wired, Wiring},
    run::{AnswerInbox, RunStore},
};

use super::{
    fanout,
    hop::HopFuture,
    observe::{HopEvent, HopKind},
    runner::{Outlet, Runner},
    state::Inner,
};

/// The way out of one node.
pub(crate) struct NodeEmitter {
    engine: Weak<Inner>,
    node: Arc<str>,
    /// The node's current runner; empty before it first loads and after it is removed.
    runner: RwLock<Weak<Runner>>,
    /// For an agent-tool call's instance: where its answer is kept. Such an instance
    /// has no edges; every emit goes nowhere, and the first on the tool's output is
    /// the answer.
    capture: Option<Capture>,
}

/// The first message an agent-tool instance emitted on its output port.
pub(crate) struct Capture {
    port: &'static str,
    first: std::sync::Mutex<Option<Msg>>,
}

impl NodeEmitter {
    pub fn new(engine: Weak<Inner>, node: Arc<str>) -> Self {
        Self {
            engine,
            node,
            runner: RwLock::new(Weak::new()),
            capture: None,
        }
    }

    /// The emitter of an agent-tool call's instance, keeping the first emit on `port`.
    pub fn capturing(engine: Weak<Inner>, node: Arc<str>, port: &'static str) -> Self {
        Self {
            capture: Some(Capture {
                port,
                first: std::sync::Mutex::new(None),
            }),
            ..Self::new(engine, node)
        }
    }

    /// What a capturing emitter kept: the first emit on its port, once.
    pub fn captured(&self) -> Option<Msg> {
        let capture = self.capture.as_ref()?;
        capture
            .first
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// From now on, emits follow `runner`'s edges.
    pub fn attach(&self, runner: &Arc<Runner>) {
        *self.runner.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::downgrade(runner);
    }

    /// The node was removed: emits fail from now on.
    pub fn detach(&self) {
        *self.runner.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Weak::new();
    }

    /// Where `port`'s messages go, or what the emit answers at once: nothing, when no
    /// edge leaves the port; an error, when the node has no such port.
    fn outlet(
        &self,
        port: &str,
        msg: &Msg,
        hop: &Hop,
    ) -> std::result::Result<(Arc<Inner>, Arc<Outlet>), Result<Reply>> {
        let Some(engine) = self.engine.upgrade() else {
            return Err(Err(Error::permanent("the engine has stopped")));
        };
        let runner = self
            .runner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .upgrade();
        let Some(runner) = runner else {
            return Err(Err(Error::permanent(format!("node `{}` was removed", self.node))));
        };
        if let Some(observer) = &engine.observer {
            let secrets = runner.with_known(&runner.emit_secrets);
            observer.on_hop(&HopEvent {
                kind: HopKind::Emitted,
                node: &self.node,
                port,
                from: None,
                edge_id: None,
                data: Some(msg),
                started: std::time::SystemTime::now(),
                duration: std::time::Duration::ZERO,
                depth: hop.depth,
                error: None,
                attempt: 1,
                secrets: &secrets,
                expression_errors: &[],
            });
        }
        if let Some(outlet) = runner.outlet(port) {
            return Ok((engine, outlet.clone()));
        }
        let live = runner.instance.live_ports();
        if live
            .iter()
            .any(|p| p.name == port && p.spec.is_source() && !p.spec.is_system())
        {
            return Err(Ok(Reply::empty()));
        }
        let outputs: Vec<&str> = live
            .iter()
            .filter(|p| p.spec.is_source() && !p.spec.is_system())
            .map(|p| &*p.name)
            .collect();
        Err(Err(Error::permanent(format!(
            "no output port `{port}` with the settings in force (outputs: {})",
            outputs.join(", ")
        ))
        .with_code(crate::error::code::UNKNOWN_PORT)
        .at(|| format!("node `{}`", self.node))))
    }
}

/// Every node's context holds this emitter (the slot `node.rs` declares).
impl Wired for Wiring {
    type Emitter = NodeEmitter;
}

impl Emit for NodeEmitter {
    /// Whether this replica leads its module (in-process, an engine always leads).
    fn leads(&self) -> bool {
        self.engine
            .upgrade()
            .is_some_and(|e| e.leader.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Where the engine keeps its runs' ledger, when its runs are durable.
    fn runs(&self) -> Option<Arc<dyn RunStore>> {
        self.engine.upgrade().and_then(|e| e.runs.clone())
    }

    /// Where a run's answer can be awaited, when the engine's runs are durable.
    fn answers(&self) -> Option<Arc<dyn AnswerInbox>> {
        self.engine.upgrade().and_then(|e| e.answers.clone())
    }

    /// Where outside calls are answered from, in a replay.
    fn tape(&self) -> Option<Arc<dyn crate::run::CallTape>> {
        self.engine.upgrade().and_then(|e| e.tape.clone())
    }

    /// The node's status changed outside a reconcile (its `_control` view): tell the
    /// runtime, which rewrites it on the leader.
    fn changed(&self) {
        if let Some(f) = self.engine.upgrade().and_then(|e| e.on_change.clone()) {
            f(&self.node);
        }
    }

    /// The values of the node's resolved `[[secret:...]]` placeholders (see
    /// [`crate::secret`]), to keep out of an error that goes on into the flow.
    fn resolved(&self) -> Vec<String> {
        let runner = self
            .runner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .upgrade();
        runner.map(|r| r.resolved().to_vec()).unwrap_or_default()
    }

    /// Whether any edge leaves `port`: an error port nobody listens on must not
    /// swallow errors.
    fn connected(&self, port: &str) -> bool {
        let runner = self
            .runner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .upgrade();
        runner.is_some_and(|r| r.outlet(port).is_some_and(|o| !o.edges.is_empty()))
    }

    /// Sends `msg` along the edges of `port`, continuing `hop`.
    ///
    /// Not an `async fn`: the edges are found now, and for the common hop (one edge to
    /// a node loaded here) the receiving handler's future is made now too (see
    /// [`fanout::emit`]). The returned future is part of the emitting handler's, so
    /// every byte of it is allocated and moved once per hop.
    type Going = HopFuture<'static>;

    fn emit(&self, port: &str, msg: Msg, hop: Hop) -> HopFuture<'static> {
        if let Some(capture) = &self.capture {
            // Go's capture: the first emit on the tool's output is kept, every other
            // emit answers nothing.
            if port == capture.port {
                let mut first = capture.first.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if first.is_none() {
                    *first = Some(msg);
                }
            }
            return HopFuture::done(Ok(Reply::empty()));
        }
        match self.outlet(port, &msg, &hop) {
            Ok((engine, outlet)) => fanout::emit(engine, outlet, msg, hop),
            Err(done) => HopFuture::done(done),
        }
    }
}

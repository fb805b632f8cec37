//! The context a handler runs in: its node, settings, hop and the way out.

use std::{
    fmt,
    sync::{Arc, Mutex, PoisonError},
};

use futures::FutureExt as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    client::ResourceManager, component::Component, engine::NodeEmitter, error::Result, message::Reply,
    metadata::NodeMetadata, msg::Msg, state::NodeState, work::NodeWork,
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
pub(crate) struct NodeContext {
    identity: NodeIdentity,
    emitter: NodeEmitter,
    client: Option<Arc<dyn ResourceManager>>,
    /// Cancelled when the node is removed or replaced: handlers still running for it
    /// are stopped.
    stopped: CancellationToken,
    /// Cancelled once the node first loaded (its edges are in place): work started
    /// by its first hooks waits for it, so that its first emits are not lost.
    loaded: CancellationToken,
    /// Work that outlives the calls that started it.
    work: NodeWork,
    state: NodeState,
    /// The node's raw `status.metadata` keys (outside `_state/`).
    metadata: NodeMetadata,
    /// The `_control` view the component last showed (JSON), if it showed one.
    control: Mutex<Option<Value>>,
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
    pub cancel: Cancel,
    /// Whether this replica leads (only the leader should do leader-only work).
    pub leader: bool,
    /// The durable run step this hop belongs to, if any (see [`crate::run`]): a hop
    /// with a step travels through the durable transport.
    pub run: Option<Arc<crate::run::RunStep>>,
}

/// A hop's cancellation: a [`CancellationToken`] (it derefs to one) that every hop
/// of a message shares.
///
/// Copying a `CancellationToken` takes a lock (it counts its handles under the
/// token's mutex), and each hop copies its message's token; a `Cancel` is shared by
/// reference count instead, so a copy is one atomic increment.
///
/// ```
/// use tiny_sdk::context::Cancel;
/// use tokio_util::sync::CancellationToken;
///
/// let token = CancellationToken::new();
/// let cancel = Cancel::from(token.clone());
/// let copy = cancel.clone();
/// token.cancel();
/// assert!(copy.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<CancellationToken>);

impl Cancel {
    /// A fresh cancellation, under none.
    pub fn new() -> Self {
        Self::default()
    }

    /// The token itself (a copy of it: cancelling either cancels both).
    pub fn token(&self) -> CancellationToken {
        (*self.0).clone()
    }
}

impl std::ops::Deref for Cancel {
    type Target = CancellationToken;

    fn deref(&self) -> &CancellationToken {
        &self.0
    }
}

impl From<CancellationToken> for Cancel {
    fn from(token: CancellationToken) -> Self {
        Self(Arc::new(token))
    }
}

/// The context of one handler call, or of a node's [work](Ctx::spawn).
pub struct Ctx<C: Component> {
    node: Arc<NodeContext>,
    settings: Arc<C::Settings>,
    hop: Hop,
}

impl<C: Component> Clone for Ctx<C> {
    fn clone(&self) -> Self {
        Self {
            node: self.node.clone(),
            settings: self.settings.clone(),
            hop: self.hop.clone(),
        }
    }
}

impl<C: Component> Ctx<C> {
    /// Built by the engine for each call.
    pub(crate) fn new(node: Arc<NodeContext>, settings: Arc<C::Settings>, hop: Hop) -> Self {
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

    /// `true` when this replica leads its module (always in-process). Every replica
    /// runs every node; work that must happen once, such as a ticker's loop or a
    /// listener, belongs to the leader (see [`spawn_on_leader`](Self::spawn_on_leader)).
    pub fn is_leader(&self) -> bool {
        self.node.leads()
    }

    /// The node's state: typed values kept on the TinyNode, across restarts and
    /// replicas (see [`NodeState`]).
    pub fn state(&self) -> &NodeState {
        &self.node.state
    }

    /// The node's raw `status.metadata` strings outside `_state/`: where Go
    /// components that predate the State API keep theirs (`ticker-running`,
    /// `http-start`), for a component that takes over their nodes (see
    /// [`NodeMetadata`]). New state belongs in [`state`](Self::state).
    pub fn metadata(&self) -> &NodeMetadata {
        &self.node.metadata
    }

    /// Starts `work` as the node's work called `name`, and returns at once. The work
    /// runs until it returns, [`stop_work`](Self::stop_work) stops it, the node is
    /// removed or replaced, or the module shuts down. Work already running under
    /// `name` is stopped first. An error it returns is logged with the node and name.
    ///
    /// The work gets its own context: depth 0, [`cancelled`](Self::cancelled) when it
    /// is stopped, the settings in force now. Emit from it as from a handler.
    ///
    /// ```
    /// # use tiny_sdk::prelude::*;
    /// # use std::time::Duration;
    /// #[derive(Component, Default)]
    /// #[component(name = "beat", control = Start, hooks)]
    /// struct Beat {
    ///     #[port(position = Right)]
    ///     out: Output<u64>,
    /// }
    /// # #[derive(Debug, Default, Serialize, Deserialize, Schema)] struct Start { start: bool }
    ///
    /// impl Hooks for Beat {
    ///     async fn on_control(&self, ctx: &Ctx<Self>, _: Start) -> Result<Reply> {
    ///         let out = self.out; // handles are `Copy`: the work owns its own
    ///         ctx.spawn("beat", move |ctx| async move {
    ///             for n in 0.. {
    ///                 out.emit(&ctx, n).await?;
    ///                 tokio::time::sleep(Duration::from_secs(1)).await;
    ///             }
    ///             Ok(())
    ///         });
    ///         Ok(Reply::empty())
    ///     }
    /// }
    /// ```
    pub fn spawn<F, Fut>(&self, name: &'static str, work: F)
    where
        F: FnOnce(Ctx<C>) -> Fut,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        self.start_work(name, false, work);
    }

    /// [`spawn`](Self::spawn) for work that only the leader may do: it does not start
    /// on a replica that does not lead (`false` then), and stops when this replica
    /// stops leading. The new leader starts it again, typically from
    /// [`Hooks::on_reconcile`](crate::Hooks::on_reconcile), which runs on every node
    /// when a replica gains leadership, with what the node's [state](Self::state) says.
    pub fn spawn_on_leader<F, Fut>(&self, name: &'static str, work: F) -> bool
    where
        F: FnOnce(Ctx<C>) -> Fut,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        if !self.is_leader() {
            return false;
        }
        self.start_work(name, true, work);
        true
    }

    fn start_work<F, Fut>(&self, name: &'static str, leader_only: bool, work: F)
    where
        F: FnOnce(Ctx<C>) -> Fut,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        let node = &self.node;
        let (generation, token) = node.work.prepare();
        let ctx = Ctx {
            node: node.clone(),
            settings: self.settings.clone(),
            hop: Hop {
                depth: 0,
                cancel: token.clone().into(),
                leader: node.leads(),
                run: None,
            },
        };
        let fut = work(ctx);
        let weak = Arc::downgrade(node);
        let node_name = node.identity.node_name.clone();
        let loaded = node.loaded.clone();
        // The work starts once it is on the books, so that it sees itself running, and
        // once the node loaded: work that a new node's first hooks start (a ticker
        // its state says was running) would otherwise emit before the node has edges.
        let (booked, on_books) = tokio::sync::oneshot::channel::<()>();
        let handle = tokio::spawn(async move {
            if on_books.await.is_err() {
                return;
            }
            loaded.cancelled().await;
            match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::warn!(node = %node_name, work = name, error = %e, "node work failed"),
                Err(_) => tracing::error!(node = %node_name, work = name, "node work panicked"),
            }
            if let Some(node) = weak.upgrade() {
                node.work.finished(name, generation);
            }
        });
        node.work.insert(name, generation, leader_only, token, handle);
        let _ = booked.send(());
    }

    /// Runs `work` on its own, fire and forget (Go's `go Emit(...)`): the call returns
    /// at once and `work`'s result is logged, not returned. Unlike [`spawn`](Self::spawn)
    /// the work has no name, so many may run at once; they all stop with the node.
    /// The message depth carries over, so a loop through detached work still meets
    /// the cycle guard.
    pub fn detach<F, Fut>(&self, work: F)
    where
        F: FnOnce(Ctx<C>) -> Fut,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        let node = &self.node;
        let ctx = Ctx {
            node: node.clone(),
            settings: self.settings.clone(),
            hop: Hop {
                depth: self.hop.depth,
                cancel: node.stopped.child_token().into(),
                leader: node.leads(),
                run: None,
            },
        };
        let fut = work(ctx);
        let stopped = node.stopped.clone();
        let loaded = node.loaded.clone();
        let node_name = node.identity.node_name.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = stopped.cancelled() => {}
                // As for named work: not before the node has its edges.
                r = async move {
                    loaded.cancelled().await;
                    std::panic::AssertUnwindSafe(fut).catch_unwind().await
                } => match r {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!(node = %node_name, error = %e, "detached work failed"),
                    Err(_) => tracing::error!(node = %node_name, "detached work panicked"),
                },
            }
        });
    }

    /// A copy of this context whose hop has its own cancellation, under this one's:
    /// what a piece of work gives each request it serves, so that abandoning one (a
    /// timeout, a client that went away) stops that request's chain and nothing else.
    /// Cancel the returned token, or drop its `drop_guard()`, to abandon it.
    pub fn scoped(&self) -> (Ctx<C>, CancellationToken) {
        let cancel = self.hop.cancel.child_token();
        let ctx = Ctx {
            node: self.node.clone(),
            settings: self.settings.clone(),
            hop: Hop {
                depth: self.hop.depth,
                cancel: cancel.clone().into(),
                leader: self.hop.leader,
                run: self.hop.run.clone(),
            },
        };
        (ctx, cancel)
    }

    /// Starts a durable run (Go's `BeginRun`) and returns a context in it, with the
    /// run's id. Emits made with the returned context are durable: each is stored by
    /// the broker and returns as soon as it is, while the chain behind it runs on
    /// whichever replica takes it, surviving a crash; emits made with `self` stay
    /// blocking. In a run already, that run is returned, not a new one.
    ///
    /// Runs are durable on the JetStream transport (`TINY_NATS_TRANSPORT=jetstream`);
    /// elsewhere the id is minted all the same and the emits block, as on Go's core
    /// transport.
    ///
    /// ```
    /// # use tiny_sdk::prelude::*;
    /// # #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)] struct Job { n: u32 }
    /// # #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)] struct Started { run_id: String }
    /// #[derive(Component, Default)]
    /// #[component(name = "front-door")]
    /// struct FrontDoor {
    ///     input: Input<Job>,
    ///     work: Output<Job>,
    ///     started: Output<Started>,
    /// }
    ///
    /// impl FrontDoor {
    ///     async fn on_input(&self, ctx: &Ctx<Self>, job: Job) -> Result<Reply> {
    ///         let (run, run_id) = ctx.begin_run();
    ///         self.work.emit(&run, job).await?; // stored: returns at once
    ///         self.started.emit(ctx, Started { run_id }).await // answers the caller
    ///     }
    /// }
    /// ```
    pub fn begin_run(&self) -> (Ctx<C>, String) {
        self.begin(None)
    }

    /// [`begin_run`](Self::begin_run) with the run's answer addressed to the replica
    /// that waits for it (Go's `BeginRunWithReply`): the hop to `target`
    /// (`<node>:<port>`) is published on core NATS to `subject`, which that replica
    /// listens on, until `deadline_unix_ms`.
    pub fn begin_run_with_reply(&self, subject: &str, target: &str, deadline_unix_ms: i64) -> (Ctx<C>, String) {
        self.begin(Some(crate::run::ReplyAddress {
            subject: subject.to_owned(),
            target: target.to_owned(),
            deadline_unix_ms,
        }))
    }

    /// Begins a durable run whose answer comes back here: the hop the run sends to
    /// `target` (`<node>:<port>`, typically this node's response port) is published
    /// straight to this replica instead of the work queue, and the returned
    /// [`RunAnswer`](crate::run::RunAnswer) resolves to its payload (Go's
    /// `BeginRunWithReply`, with the waiting side built in). The steps between run
    /// durably, on any replica; a front door such as `http_server` holds its caller
    /// meanwhile. The answer fails with [`code::TIMEOUT`](crate::error::code::TIMEOUT)
    /// after `wait`.
    ///
    /// Fails with [`code::NO_RUN`](crate::error::code::NO_RUN) where runs are not
    /// durable (no JetStream transport), and in a run already.
    pub async fn begin_run_answered(
        &self,
        target: &str,
        wait: std::time::Duration,
    ) -> Result<(Ctx<C>, String, crate::run::RunAnswer)> {
        let no_run = |why: String| crate::Error::permanent(why).with_code(crate::error::code::NO_RUN);
        if let Some(step) = &self.hop.run {
            return Err(no_run(format!(
                "node `{}` is in run `{}` already: its answer goes where that run's does",
                self.node_name(),
                step.run_id()
            )));
        }
        let Some(inbox) = self.node.emitter().answers() else {
            return Err(no_run(format!(
                "node `{}` asked for a run's answer, and runs are not durable here: run the module with \
                 TINY_NATS_TRANSPORT=jetstream",
                self.node_name()
            )));
        };
        let (subject, answer) = inbox.open().await?;
        let deadline = std::time::SystemTime::now() + wait;
        let deadline_ms = deadline
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let (ctx, run_id) = self.begin_run_with_reply(&subject, target, deadline_ms);
        let id = run_id.clone();
        let answer = Box::pin(async move {
            match tokio::time::timeout(wait, answer).await {
                Ok(answer) => answer,
                Err(_) => Err(crate::Error::transient(format!(
                    "run `{id}` gave no answer within {} s",
                    wait.as_secs_f64()
                ))
                .with_code(crate::error::code::TIMEOUT)),
            }
        });
        Ok((ctx, run_id, crate::run::RunAnswer { answer }))
    }

    fn begin(&self, reply: Option<crate::run::ReplyAddress>) -> (Ctx<C>, String) {
        if let Some(step) = &self.hop.run {
            return (self.clone(), step.run_id().to_owned());
        }
        let step = Arc::new(crate::run::RunStep::mint(reply));
        let id = step.run_id().to_owned();
        let mut ctx = self.clone();
        ctx.hop.run = Some(step);
        (ctx, id)
    }

    /// The durable run this call belongs to, if any (Go's `RunID`).
    pub fn run_id(&self) -> Option<&str> {
        self.hop.run.as_deref().map(crate::run::RunStep::run_id)
    }

    /// The state of the durable run this call belongs to: values its steps share,
    /// whichever replica runs them (Go's `State.Scoped("execution", runID)`).
    ///
    /// Fails with [`code::NO_RUN`](crate::error::code::NO_RUN) outside a run, and
    /// without a durable transport (the Go SDK falls back to the node's state in
    /// silence; tiny says so, since values a run's steps share would then not be
    /// shared).
    pub fn run_state(&self) -> Result<crate::run::RunState> {
        let Some(step) = &self.hop.run else {
            return Err(crate::Error::permanent(format!(
                "node `{}` asked for its run's state outside a durable run (see `Ctx::begin_run`)",
                self.node_name()
            ))
            .with_code(crate::error::code::NO_RUN));
        };
        let Some(store) = self.run_store() else {
            return Err(crate::Error::permanent(format!(
                "node `{}` asked for the state of run `{}`, and runs are not durable here: run the module with \
                 TINY_NATS_TRANSPORT=jetstream",
                self.node_name(),
                step.run_id()
            ))
            .with_code(crate::error::code::NO_RUN));
        };
        Ok(crate::run::RunState::new(store, step.run_id()))
    }

    /// The store the module's durable runs are recorded in (the JetStream KV
    /// `TINY_EXEC`), for a component that reports on runs (`run_status`); `None`
    /// without a durable transport.
    pub fn run_store(&self) -> Option<Arc<dyn crate::run::RunStore>> {
        self.node.emitter().runs()
    }

    /// Stops the node's work called `name`; `true` if it was running.
    pub fn stop_work(&self, name: &str) -> bool {
        self.node.work.stop(name)
    }

    /// Whether the node's work called `name` runs.
    pub fn work_running(&self, name: &str) -> bool {
        self.node.work.running(name)
    }

    /// Shows `view` as the node's `_control` in the editor: its values become the
    /// port's configuration, and properties that `view` leaves out (an `Option` that
    /// is `None`, with `skip_serializing_if`) leave the schema, which is how a Start
    /// button turns into a Stop button. The leader writes it to the TinyNode status,
    /// only when it changed.
    pub fn show_control(&self, view: &C::Control) {
        let Ok(view) = serde_json::to_value(view) else {
            return;
        };
        let changed = {
            let mut control = self.node.control.lock().unwrap_or_else(PoisonError::into_inner);
            let changed = control.as_ref() != Some(&view);
            *control = Some(view);
            changed
        };
        if changed {
            self.node.emitter.changed();
        }
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
    pub fn emit_msg(&self, port: &str, msg: Msg) -> impl Future<Output = Result<Reply>> + Send + use<C> {
        self.node.emitter.emit(port, msg, self.hop.clone())
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

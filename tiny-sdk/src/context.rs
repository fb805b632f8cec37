//! The context a handler runs in: its node, settings, hop and the way out.

use std::sync::{Arc, PoisonError};

use futures::FutureExt as _;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    author::Component,
    client::ResourceManager,
    error::Result,
    message::{Message, Reply},
    metadata::NodeMetadata,
    msg::Msg,
    node::{Emit as _, NodeContext},
    port::{Output, Outputs, PortType},
    state::NodeState,
};
pub use crate::{
    author::Ctx,
    hop::{Cancel, Hop},
    node::NodeIdentity,
};

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
    /// The message depth and hop budget carry over, so a loop through detached work
    /// still meets the cycle guard and the budget.
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
                // The same root's work: a loop through detached work spends its budget;
                // nobody waits for it, so no deadline.
                cancel: self
                    .hop
                    .cancel
                    .without_deadline()
                    .with_token(node.stopped.child_token()),
                leader: node.leads(),
                run: None,
            },
        };
        let fut = work(ctx);
        let stopped = node.stopped.clone();
        let loaded = node.loaded.clone();
        let node_name = node.identity.node_name.clone();
        node.detached.spawn(async move {
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
                cancel: self.hop.cancel.with_token(cancel.clone()),
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
        let Some(inbox) = self.node.emitter.answers() else {
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

    /// Makes a call outside the module (an HTTP request, a payment, a model call)
    /// whose answer is worth keeping, under `name`, and returns its answer.
    ///
    /// - In a durable run, the answer is recorded in the ledger
    ///   (`exec/<runID>/call/<stepKey>/<name>/<n>`, removed with the run's records):
    ///   a step delivered again (its replica died before its record) gets the
    ///   recorded answer and does not make the call twice, a step re-driven by
    ///   `<module> redrive` gets the answers of the failed attempt, and
    ///   `capture-run` puts the answer in the captured run.
    /// - In a replay of a captured run ([`crate::harness::HarnessBuilder::replay`]), the
    ///   answer comes from the recording and `call` is never polled, so no side
    ///   effect runs again; a call the recording has no answer for fails with code
    ///   [`NOT_RECORDED`](crate::error::code::NOT_RECORDED).
    /// - Elsewhere it is `call.await`.
    ///
    /// A failed call is not recorded (it is made again on a redelivery).
    ///
    /// ```
    /// # use tiny_sdk::prelude::*;
    /// # #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)] struct Order { id: String }
    /// #[derive(Component, Default)]
    /// #[component(name = "charge")]
    /// struct Charge { input: Input<Order>, out: Output<Order> }
    ///
    /// impl Charge {
    ///     async fn on_input(&self, ctx: &Ctx<Self>, order: Order) -> Result<Reply> {
    ///         let receipt: String = ctx.outside("payment", async { Ok(format!("paid {}", order.id)) }).await?;
    ///         self.out.emit(ctx, Order { id: receipt }).await
    ///     }
    /// }
    /// ```
    pub async fn outside<T, F>(&self, name: &str, call: F) -> Result<T>
    where
        T: serde::Serialize + serde::de::DeserializeOwned,
        F: Future<Output = Result<T>>,
    {
        let decode = |value: &[u8], whence: &str| {
            serde_json::from_slice::<T>(value).map_err(|e| {
                crate::Error::permanent(format!(
                    "node `{}`: the {whence} answer of outside call `{name}` does not decode: {e}",
                    self.node_name()
                ))
                .with_code(crate::error::code::UNDECODABLE)
            })
        };
        if let Some(tape) = self.node.emitter.tape() {
            let answer = tape.answer(self.node_name(), name)?;
            return decode(&serde_json::to_vec(&answer)?, "recorded");
        }
        let (Some(step), Some(store)) = (self.hop.run.as_ref(), self.run_store()) else {
            return call.await;
        };
        let key = crate::run::call_key(step.run_id(), step.step_key(), name, step.next_call(name));
        if let Some(kept) = store.get(&key).await? {
            return decode(&kept, "kept");
        }
        let answer = call.await?;
        match serde_json::to_vec(&answer) {
            // Not keeping it costs a second call on a redelivery, not this answer.
            Ok(bytes) => {
                if let Err(e) = store.put(&key, bytes.into()).await {
                    tracing::warn!(node = self.node_name(), call = name, error = %e, "outside call answer not recorded");
                }
            }
            Err(e) => {
                tracing::warn!(node = self.node_name(), call = name, error = %e, "outside call answer does not encode")
            }
        }
        Ok(answer)
    }

    /// The store the module's durable runs are recorded in (the JetStream KV
    /// `TINY_EXEC`), for a component that reports on runs (`run_status`); `None`
    /// without a durable transport.
    pub fn run_store(&self) -> Option<Arc<dyn crate::run::RunStore>> {
        self.node.emitter.runs()
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

// The bound sits on the block: a non-message type then fails once per call, where a
// bound on each async method would be reported at several spans of the same call.
impl<T: Message, R: Message> Output<T, R> {
    /// Sends `msg` along every edge leaving this port and waits for the whole
    /// downstream chain. Returns the first non-empty reply, or the first error.
    ///
    /// Return it from a handler to pass the downstream reply up the chain.
    ///
    /// The message travels as it is: it is encoded only if something downstream needs
    /// its JSON (see [`Msg`]).
    ///
    /// The edges are found when `emit` is called; the message goes when the future
    /// is awaited.
    ///
    /// `msg` is a `T`: named through [`PortType`] rather than as `T`, so that a message of
    /// another type is one error on it, "expected `T`", with no note that the returned
    /// future's type follows from the argument's (it names `T`, as every `impl Future`
    /// of a method of `Output<T, R>` must).
    pub fn emit<C: Component>(
        &self,
        ctx: &Ctx<C>,
        msg: <Self as PortType>::Message,
    ) -> impl Future<Output = Result<Reply>> + Send + use<C, T, R> {
        ctx.emit_msg(self.name(), Msg::new(msg))
    }

    /// Like [`emit`](Self::emit), then decodes the reply into the port's response type.
    pub async fn request<C: Component>(&self, ctx: &Ctx<C>, msg: <Self as PortType>::Message) -> Result<R> {
        self.emit(ctx, msg)
            .await?
            .decode()
            .map_err(|e| e.context(format_args!("port `{}`", self.name())))
    }
}

impl<T: Message, R: Message> Outputs<T, R> {
    /// Sends `msg` on the family's port for `key` (see [`Output::emit`]; `msg` is a `T`).
    /// A key the settings do not give has no port: the emit fails, naming the ports
    /// there are.
    pub fn emit<C: Component>(
        &self,
        ctx: &Ctx<C>,
        key: &str,
        msg: <Self as PortType>::Message,
    ) -> impl Future<Output = Result<Reply>> + Send + use<C, T, R> {
        ctx.emit_msg(&self.port(key), Msg::new(msg))
    }
}

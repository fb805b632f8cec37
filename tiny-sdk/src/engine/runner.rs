//! One node: its component instance, compiled edge mappings, settings and edges.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use futures::future::BoxFuture;
use serde_json::Value;
use tiny_expr::EvalError;

use crate::{
    contract::port as system,
    error::{Error, Result},
    flow::Node,
    hop::Hop,
    message::Reply,
    msg::Msg,
    port::PortSpec,
    redact::Secrets,
};

pub(crate) use super::mapping::PortFills;
use super::{
    address::{Delivery, Source},
    instance::NodeInstance,
    mapping::{EdgeMapping, Failed, Policy, Site},
    masking::{Known, redact_with},
    observe::{HopEvent, HopKind, Observer},
    retry::Backoff,
    trace::{Entered, Recording},
};

/// A node ready to take messages. Rebuilt on every spec change; the instance (and so
/// the component's state) carries over when the component stays the same.
pub(crate) struct Runner {
    /// This runner among all the runners built in the process (never 0): what a
    /// route's [`InletCache`] is valid for.
    pub(super) id: u64,
    pub name: Arc<str>,
    pub node: Node,
    pub instance: Arc<dyn NodeInstance>,
    /// The business input ports, each with its mappings and default.
    pub(super) inputs: Vec<Inlet>,
    /// The settings JSON from the spec, already rendered.
    pub settings: Option<Value>,
    /// Source ports with edges, and where their messages go: a handful per node, so
    /// a scan beats hashing.
    pub(super) outlets: Vec<Arc<Outlet>>,
    /// Where the settings' secret fields are.
    pub(super) settings_secrets: Secrets,
    /// The secret values of the settings in the spec and of the node's resolved
    /// placeholders, searched for in this node's error messages (see [`crate::redact`]).
    pub(super) secret_values: Vec<String>,
    /// The values of the node's `[[secret:...]]` placeholders: masked wherever they
    /// appear in what tiny writes about the node (status, trace data, trackers).
    pub(super) resolved: Vec<String>,
    /// What masks the messages the node emits (its resolved values).
    pub emit_secrets: Secrets,
    /// The engine's resolved values.
    pub(super) known: Arc<Known>,
    /// What is wrong with a spec that runs anyway: edges that leave ports the
    /// settings switched off or removed (see [`settle`](Self::settle)).
    pub problem: Option<Error>,
    /// What a failing edge expression does.
    pub(super) policy: Policy,
    /// Settings expressions that failed (and gave `null`): they see no message.
    pub(super) settings_failures: Vec<String>,
}

/// One input port, resolved when the node loads.
pub(super) struct Inlet {
    pub(super) spec: &'static PortSpec,
    /// Edge mappings by sender (`"<node>:<port>"`).
    pub(super) mappings: Vec<EdgeMapping>,
    /// What an edge without a mapping delivers: the port's default configuration,
    /// encoded once.
    pub(super) default: Msg,
    /// Where the port's secret fields are.
    pub(super) secrets: Secrets,
}

/// The edges leaving one source port.
pub(crate) struct Outlet {
    /// The source port.
    pub port: String,
    /// `"<node>:<port>"`, the `from` the targets see.
    pub from: Arc<str>,
    pub edges: Vec<Arc<Route>>,
}

/// One edge, parsed.
pub(crate) struct Route {
    pub id: Arc<str>,
    pub node: Arc<str>,
    pub port: Arc<str>,
    /// The module part of the target's name, parsed once.
    pub module: Option<Arc<str>>,
    pub backoff: Backoff,
    /// The target's cell, found by its name on the first hop (see [`NodeCell`]).
    pub target: std::sync::OnceLock<Arc<NodeCell>>,
    /// The target's input and mapping indexes, per runner (see [`Route::target_inlet`]).
    pub(super) inlet_cache: InletCache,
}

/// Where a route's messages land in one runner of its target: the input port's index
/// and the index of that port's mapping for the route's sender, found by their names
/// on the first hop to that runner. One word, with the runner's id, so that a hop
/// reads it without a lock and a reload of the target (a new runner) is seen.
#[derive(Default)]
pub(super) struct InletCache(AtomicU64);

impl InletCache {
    /// Bits for each index; a larger index is looked up by name on every hop.
    const INDEX_BITS: u32 = 12;
    const INDEX_MASK: u64 = (1 << Self::INDEX_BITS) - 1;
    /// Bits for a runner's id: 40, so an id comes round again only after 2^40
    /// runners are built in one process.
    const ID_MASK: u64 = (1 << (64 - 2 * Self::INDEX_BITS)) - 1;

    /// The input's and the mapping's index, if they were found for runner `id`.
    fn get(&self, id: u64) -> Option<(usize, Option<usize>)> {
        let word = self.0.load(Ordering::Relaxed);
        (word != 0 && word >> (2 * Self::INDEX_BITS) == id & Self::ID_MASK).then(|| {
            let inlet = (word >> Self::INDEX_BITS) & Self::INDEX_MASK;
            let mapping = (word & Self::INDEX_MASK).checked_sub(1);
            (inlet as usize, mapping.map(|m| m as usize))
        })
    }

    /// Remembers the indexes found for runner `id` (the mapping's stored plus one:
    /// zero is none).
    fn set(&self, id: u64, inlet: usize, mapping: Option<usize>) {
        let (Ok(inlet), Ok(mapping)) = (u64::try_from(inlet), mapping.map_or(Ok(0), |m| u64::try_from(m + 1))) else {
            return;
        };
        if inlet <= Self::INDEX_MASK && mapping <= Self::INDEX_MASK {
            let word = (id & Self::ID_MASK) << (2 * Self::INDEX_BITS) | inlet << Self::INDEX_BITS | mapping;
            self.0.store(word, Ordering::Relaxed);
        }
    }
}

/// The runner a node of this engine has now, or none (not loaded yet, failed, or
/// removed). The engine keeps one per node name and swaps its runner when the node
/// loads again; a route holds the cell of its target, so that a hop finds the runner
/// without hashing the name and without the table's lock (it reads the node's own,
/// which only that node's reload writes).
///
/// Runners lead to one another through cells, in cycles when the flow has them: a
/// removed node's cell is emptied, and the engine empties every cell when it goes.
#[derive(Default)]
pub(crate) struct NodeCell {
    runner: std::sync::RwLock<Option<Arc<Runner>>>,
}

impl NodeCell {
    /// The node's runner now.
    pub fn runner(&self) -> Option<Arc<Runner>> {
        self.runner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether the node has no runner now.
    pub fn is_empty(&self) -> bool {
        self.runner
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_none()
    }

    /// From now on, the node runs `runner` (none: it does not run).
    pub fn set(&self, runner: Option<Arc<Runner>>) {
        *self.runner.write().unwrap_or_else(std::sync::PoisonError::into_inner) = runner;
    }
}

impl Route {
    /// Where this route's messages from `from` land in `runner`, its target's runner
    /// now: the input port's index (see [`Runner::inlet`]) and the index of that
    /// port's mapping for `from`, if it has one; `None` when the runner has no such
    /// input. Found by name on the first hop to each runner, read from the route after.
    pub fn target_inlet(&self, runner: &Runner, from: &str) -> Option<(usize, Option<usize>)> {
        if let Some(found) = self.inlet_cache.get(runner.id) {
            return Some(found);
        }
        let inlet = runner.inlet(&self.port)?;
        let mapping = runner.mapping(inlet, from);
        self.inlet_cache.set(runner.id, inlet, mapping);
        Some((inlet, mapping))
    }

    /// `msg` along this edge from `from`, as attempt `attempt`.
    pub fn delivery<'a>(&'a self, from: &'a str, msg: Msg, hop: Hop, attempt: u32) -> Delivery<'a> {
        let source = Source::Edge {
            from,
            edge_id: &self.id,
        };
        Delivery::along(
            (&self.node, &self.port, self.module.as_deref()),
            source,
            msg,
            hop,
            attempt,
        )
    }
}

impl Runner {
    /// The secret values of the node's settings, to keep out of what tiny prints.
    pub fn secret_values(&self) -> &[String] {
        &self.secret_values
    }

    /// The values of the node's resolved `[[secret:...]]` placeholders.
    pub fn resolved(&self) -> &[String] {
        &self.resolved
    }

    /// `base` with the engine's resolved values added, when there are any.
    pub fn with_known<'s>(&self, base: &'s Secrets) -> std::borrow::Cow<'s, Secrets> {
        match self.known.get() {
            None => std::borrow::Cow::Borrowed(base),
            Some(known) => std::borrow::Cow::Owned(base.clone().with_values(known.iter().cloned())),
        }
    }

    /// `e` without the node's secrets, and without those of `input` on `port`.
    fn redact(&self, e: Error, secrets: &Secrets, input: Option<&Msg>) -> Error {
        if secrets.is_empty() && self.secret_values.is_empty() {
            return e;
        }
        redact_with(e, secrets, input, self.secret_values.clone())
    }

    /// Where messages emitted on `port` go, if it has edges.
    pub fn outlet(&self, port: &str) -> Option<&Arc<Outlet>> {
        self.outlets.iter().find(|o| crate::name::same(&o.port, port))
    }

    /// The input for `inlet` from a message that came from `source`, with the edge
    /// expressions that failed on the way (see [`mapping`](super::mapping)).
    fn input(&self, inlet: &Inlet, mapping: Option<usize>, source: &Source<'_>, data: Msg) -> Result<(Msg, Failed)> {
        match source {
            Source::Signal => Ok((data, None)),
            Source::Edge { edge_id, .. } => match mapping.and_then(|m| inlet.mappings.get(m)) {
                Some(m) => m.apply(
                    data,
                    &self.policy,
                    &Site {
                        node: &self.name,
                        port: inlet.spec.name,
                        edge_id,
                        secret_values: &self.secret_values,
                        secrets: &inlet.secrets,
                    },
                ),
                // As in the Go SDK: an edge without a mapping delivers the port's
                // default configuration, not the sender's payload.
                None => Ok((inlet.default.clone(), None)),
            },
        }
    }

    /// The index of business input `port`, if the node has it (with the settings in
    /// force).
    pub fn inlet(&self, port: &str) -> Option<usize> {
        self.inputs.iter().position(|i| i.spec.name == port)
    }

    /// The index of business input `inlet`'s mapping for messages from `from`
    /// (`"<node>:<port>"`), if it has one.
    fn mapping(&self, inlet: usize, from: &str) -> Option<usize> {
        self.inputs[inlet].mappings.iter().position(|m| *m.from == *from)
    }

    /// Begins a delivery to one of this node's ports, where `landing` says, from
    /// `source`, as attempt `attempt` along the sender's edge: the hop's span, and in
    /// it what the delivery runs (a system port's hook, a business port's handler with
    /// its input, or the refusal), made now. What is left, running it and finishing,
    /// is the returned [`Delivering`]'s, which owns all it needs: the one way into a
    /// node, for the hop along an edge made where it is sent and for every other.
    #[inline(always)]
    #[allow(
        clippy::too_many_arguments,
        reason = "a hop's parts, taken apart once on its hot path"
    )]
    pub fn open(
        self: Arc<Self>,
        module: &str,
        landing: Landing<'_>,
        source: &Source<'_>,
        msg: Msg,
        hop: Hop,
        attempt: u32,
        observer: Option<&Arc<dyn Observer>>,
    ) -> Delivering {
        let depth = hop.depth;
        let observed = observer.is_some_and(|o| o.wants_data(&self.name));
        let port = match landing {
            Landing::Port(port) => port,
            Landing::Inlet(index, _) => self.inputs[index].spec.name,
        };
        let mut span = super::trace::Recording::start(module);
        let traced = span.as_ref().is_some_and(|s| s.sampled());
        let invocation = {
            let _entered = span.as_ref().map(|s| Entered::new(s.ids()));
            match landing {
                Landing::Inlet(index, mapping) => self.handler(index, mapping, source, msg, hop, observed, traced),
                Landing::Port(port) => self.call(port, source, msg, hop, observed, traced),
            }
        };
        let observing = observer.map(|o| (o.clone(), std::time::Instant::now()));
        let (future, landed, seen, expressions) = match invocation {
            Invocation::Handler {
                inlet,
                future,
                seen,
                expressions,
                payload,
            } => {
                if let (Some(span), Some(payload)) = (span.as_mut(), payload) {
                    span.set_payload(payload);
                }
                (future, Landed::Inlet(inlet as u32), seen, expressions)
            }
            Invocation::System(port, future) => (future, Landed::System(port), None, None),
            Invocation::Refused(e) => {
                // Finished now: the port it names may be no port of the node's.
                let at = Arrival { port, depth, attempt };
                let seen = InputKept {
                    inlet: None,
                    input: None,
                    expressions: &[],
                };
                let observer = observing.as_ref().map(|(o, clock)| (&**o, *clock, *source));
                let result = self.finish(Err(e), at, seen, observer, span.take(), source);
                let future = Box::pin(std::future::ready(result)) as BoxFuture<'static, _>;
                (future, Landed::Finished, None, None)
            }
        };
        Delivering {
            runner: self,
            future,
            span,
            seen,
            expressions,
            landed,
            depth,
            attempt,
            observing,
        }
    }

    /// After the handler: masks secrets out of an error, tells the observer (with
    /// when the handler started), logs a failure where it arose, and ends the span
    /// (the delivery came from `source`).
    #[allow(clippy::too_many_arguments, reason = "a hop's parts, which its delivery holds apart")]
    fn finish(
        &self,
        result: Result<Reply>,
        at: Arrival<'_>,
        seen: InputKept<'_>,
        observer: Option<(&dyn Observer, std::time::Instant, Source<'_>)>,
        span: Option<Box<Recording>>,
        source: &Source<'_>,
    ) -> Result<Reply> {
        let Arrival { port, depth, attempt } = at;
        let base = seen.inlet.map_or(Secrets::none(), |i| &self.inputs[i].secrets);
        // Only a failure or an observer reads them.
        let secrets = if result.is_err() || observer.is_some() {
            self.with_known(base)
        } else {
            std::borrow::Cow::Borrowed(base)
        };
        let secrets = &*secrets;
        let result = result.map_err(|e| self.redact(e, secrets, seen.input));
        if let Some((observer, clock, source)) = observer {
            let (from, edge_id) = match source {
                Source::Signal => (None, None),
                Source::Edge { from, edge_id } => (Some(from), Some(edge_id)),
            };
            let duration = clock.elapsed();
            let now = std::time::SystemTime::now();
            observer.on_hop(&HopEvent {
                kind: HopKind::Delivered,
                node: &self.name,
                port,
                from,
                edge_id,
                data: seen.input,
                started: now.checked_sub(duration).unwrap_or(now),
                duration,
                depth,
                error: result.as_ref().err(),
                attempt,
                secrets,
                expression_errors: seen.expressions,
            });
        }
        let result = result.map_err(|e| {
            // Logged once, where it arose: the hops it fails on its way up the chain
            // find the origin already set. Those hops' edges do not retry it: the edge
            // into the node where it arose did (a retry further up would run the whole
            // chain below again, attempts multiplying with every hop).
            // (A handler may also have marked its own error relayed: kept.)
            let fresh = e.origin().is_none();
            let e = if fresh { e } else { e.relayed() };
            let e = e.at(|| format!("node `{}` port `{port}`", self.name));
            if fresh {
                // In the hop's span: the line carries its trace id.
                let _entered = span.as_ref().map(|s| Entered::new(s.ids()));
                tracing::warn!(node = %self.name, port, error = %e, "message failed");
            }
            e
        });
        if let Some(span) = span {
            (*span).end(
                &self.node,
                port,
                source,
                depth,
                attempt,
                result.as_ref().err(),
                seen.expressions,
            );
        }
        result
    }

    /// What a message for `port` runs: a system port's hook, or a business port's
    /// handler with its input (kept in `seen` for an observer, or to mask a secret in
    /// an error).
    fn call(&self, port: &str, source: &Source<'_>, data: Msg, hop: Hop, observed: bool, traced: bool) -> Invocation {
        match port {
            system::SETTINGS => {
                let instance = self.instance.clone();
                let secrets = self.settings_secrets.clone();
                // One pass over the new settings' secrets and the node's (a secret
                // inside another is then masked whole).
                let redact = self.secret_values.clone();
                return Invocation::System(
                    system::SETTINGS,
                    Box::pin(async move {
                        let json = data.json()?;
                        match instance.settings(Some(json)).await {
                            Ok(_) => Ok(Reply::empty()),
                            Err(e) => Err(redact_with(e, &secrets, Some(&data), redact)),
                        }
                    }),
                );
            }
            system::CONTROL => {
                let instance = self.instance.clone();
                return Invocation::System(
                    system::CONTROL,
                    Box::pin(async move { instance.control(data.json()?, hop).await }),
                );
            }
            system::RECONCILE => {
                let (instance, node) = (self.instance.clone(), self.node.clone());
                return Invocation::System(
                    system::RECONCILE,
                    Box::pin(async move {
                        instance.reconcile(&node).await?;
                        Ok(Reply::empty())
                    }),
                );
            }
            _ => {}
        }
        let Some(index) = self.inlet(port) else {
            let ports = self.instance.ports();
            if ports.iter().any(|p| p.name == port && !p.is_source()) {
                return Invocation::Refused(
                    Error::permanent(format!(
                        "input port `{port}` of `{}` is switched off by the node's settings",
                        self.node.spec.component
                    ))
                    .with_code(crate::error::code::UNKNOWN_PORT),
                );
            }
            return Invocation::Refused(
                Error::permanent(format!(
                    "component `{}` has no input port `{port}` (inputs: {})",
                    self.node.spec.component,
                    port_list(ports, |p| !p.is_source() && !p.is_system())
                ))
                .with_code(crate::error::code::UNKNOWN_PORT),
            );
        };
        let mapping = match source {
            Source::Edge { from, .. } => self.mapping(index, from),
            Source::Signal => None,
        };
        self.handler(index, mapping, source, data, hop, observed, traced)
    }

    /// A business port's handler call, with its input made by the port's mapping
    /// `mapping` (see [`mapping`](Self::mapping)), or its default when it has none;
    /// the input's JSON for the span's `data` event when `traced`.
    #[allow(
        clippy::too_many_arguments,
        reason = "a hop's parts, taken apart once on its hot path"
    )]
    fn handler(
        &self,
        index: usize,
        mapping: Option<usize>,
        source: &Source<'_>,
        data: Msg,
        hop: Hop,
        observed: bool,
        traced: bool,
    ) -> Invocation {
        let inlet = &self.inputs[index];
        let (input, expressions) = match self.input(inlet, mapping, source, data) {
            Ok(input) => input,
            Err(e) => return Invocation::Refused(e),
        };
        let secrets = self.with_known(&inlet.secrets);
        let payload = traced.then(|| super::trace::payload(&input, &secrets));
        // The observer sees the input after the handler ran, and a secret is masked
        // out of an error with the input's values: keep a reference (the handler then
        // gets a copy; the JSON is made only if something asks).
        let seen = (observed || !secrets.is_empty()).then(|| input.clone());
        Invocation::Handler {
            inlet: index,
            future: self.instance.clone().handle(inlet.spec.name, input, hop),
            seen,
            expressions,
            payload,
        }
    }
}

/// Where a delivery lands in a runner: a port named by the message (a signal,
/// another module's message, a retry), or a business input found already (its index,
/// and that of its mapping for the sender: see [`Route::target_inlet`]).
#[derive(Clone, Copy)]
pub(crate) enum Landing<'p> {
    Port(&'p str),
    Inlet(usize, Option<usize>),
}

/// What a [`Delivering`] runs: a business port's handler, a system port's hook, or
/// an answer made already (the refusal, finished when the delivery began).
#[derive(Clone, Copy)]
enum Landed {
    Inlet(u32),
    System(&'static str),
    Finished,
}

/// A delivery begun (see [`Runner::open`]): runs the handler (or hook) in the hop's
/// span, then finishes: masks secrets out of an error, tells the observer, records
/// the outcome. A plain struct, not an `async` block: a hop's future is this and the
/// handler's box. Its owner, the [hop's future](super::hop::HopFuture), which knows
/// where the message came from, polls it with [`poll_from`](Self::poll_from).
pub(crate) struct Delivering {
    runner: Arc<Runner>,
    future: BoxFuture<'static, Result<Reply>>,
    /// The hop's span, while recorded.
    span: Option<Box<Recording>>,
    seen: Option<Msg>,
    expressions: Failed,
    /// Where it landed (a hop's future is allocated and moved with each hop: its
    /// fields are kept small).
    landed: Landed,
    depth: u32,
    attempt: u32,
    /// Only with an observer: it, and when the handler started.
    observing: Option<(Arc<dyn Observer>, std::time::Instant)>,
}

impl Delivering {
    /// Polls the handler; once it answered, finishes the delivery, which came from
    /// `source` (what an observer is told).
    #[inline]
    pub fn poll_from(&mut self, cx: &mut std::task::Context<'_>, source: Source<'_>) -> std::task::Poll<Result<Reply>> {
        let result = {
            let _entered = self.span.as_ref().map(|s| Entered::new(s.ids()));
            std::task::ready!(self.future.as_mut().poll(cx))
        };
        let runner = &self.runner;
        let (port, inlet) = match self.landed {
            Landed::Inlet(index) => (runner.inputs[index as usize].spec.name, Some(index as usize)),
            Landed::System(port) => (port, None),
            Landed::Finished => return std::task::Poll::Ready(result),
        };
        let at = Arrival {
            port,
            depth: self.depth,
            attempt: self.attempt,
        };
        let seen = InputKept {
            inlet,
            input: self.seen.as_ref(),
            expressions: self.expressions.as_deref().map_or(&[], Vec::as_slice),
        };
        let observer = self.observing.as_ref().map(|(o, clock)| (&**o, *clock, source));
        std::task::Poll::Ready(runner.finish(result, at, seen, observer, self.span.take(), &source))
    }

    /// Ends the span of a hop dropped before it answered (an edge's timeout, a
    /// cancellation, a caller gone), which came from `source`, as an error: its
    /// children, exported already, then find their parent.
    #[cold]
    pub(crate) fn abandon(&mut self, source: Source<'_>) {
        let Some(span) = self.span.take() else {
            return;
        };
        let port = match self.landed {
            Landed::Inlet(index) => self.runner.inputs[index as usize].spec.name,
            Landed::System(port) => port,
            Landed::Finished => return,
        };
        let error = Error::permanent(
            "abandoned: the hop was dropped before it answered (a timeout, a cancellation, or its caller went away)",
        )
        .with_code(crate::error::code::ABANDONED);
        let expressions = self.expressions.as_deref().map_or(&[][..], Vec::as_slice);
        (*span).end(
            &self.runner.node,
            port,
            &source,
            self.depth,
            self.attempt,
            Some(&error),
            expressions,
        );
    }

    /// Whether its span is still open (the hop has not answered).
    #[inline]
    pub(crate) fn open_span(&self) -> bool {
        self.span.is_some()
    }
}

/// Where a delivery went: what its end reports.
#[derive(Clone, Copy)]
struct Arrival<'a> {
    port: &'a str,
    depth: u32,
    attempt: u32,
}

/// What the end of a delivery knows of its input.
struct InputKept<'a> {
    /// The index of the business port, if it was one.
    inlet: Option<usize>,
    /// The input, when kept for an observer or to mask a secret in an error.
    input: Option<&'a Msg>,
    /// The edge expressions that failed making it.
    expressions: &'a [EvalError],
}

/// What a delivery runs, resolved when it starts.
enum Invocation {
    /// A business port's handler, `inlet` the index of its input port.
    Handler {
        inlet: usize,
        future: BoxFuture<'static, Result<Reply>>,
        seen: Option<Msg>,
        /// Edge expressions that failed making the input, if any did.
        expressions: Failed,
        /// The input's JSON for the span's `data` event, when recorded.
        payload: Option<String>,
    },
    /// A system port's hook, and the port.
    System(&'static str, BoxFuture<'static, Result<Reply>>),
    /// The message cannot be delivered (no such port, the mapping failed).
    Refused(Error),
}

pub(super) fn port_list(ports: &[PortSpec], keep: impl Fn(&PortSpec) -> bool) -> String {
    let names: Vec<&str> = ports.iter().filter(|p| keep(p)).map(|p| p.name).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

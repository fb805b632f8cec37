//! Emitting along a port's edges: in parallel, sharing one message, with retries.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::future::{BoxFuture, Either, join_all};
use tracing::Instrument as _;

use crate::{
    error::{Error, Result},
    hop::{Hop, MAX_DEPTH},
    message::Reply,
    msg::Msg,
};

use super::{
    address::Source,
    runner::{Delivering, Outlet, Route},
    state::Inner,
};

/// Sends `msg` along every edge of `outlet` and waits for all of them. The message is
/// shared, never copied per branch; each target takes (or maps) its own input.
///
/// Returns the first non-empty reply in edge order, else the first error, else an
/// empty reply (the Go SDK's rule).
///
/// The common hop, one edge to a node loaded here, is made now and returned as a
/// [`Local`](Emit::Local) future that owns what it needs (see [`local`]); every other
/// emit runs in a boxed future.
pub(crate) fn emit(engine: Arc<Inner>, outlet: Arc<Outlet>, msg: Msg, mut hop: Hop) -> Emit {
    if hop.depth >= MAX_DEPTH {
        return Emit::done(Err(Error::permanent(format!(
            "cycle guard: a message passed {MAX_DEPTH} hops and was stopped at `{}`",
            outlet.from
        ))
        .with_code(crate::error::code::CYCLE)));
    }
    hop.depth += 1;
    // Each edge is a hop: a fan-out spends one per branch.
    if hop.budget.spend(outlet.edges.len() as u32) > engine.hop_budget {
        return Emit::done(Err(over_budget(&outlet.from, engine.hop_budget)));
    }
    match outlet.edges.len() {
        0 => Emit::done(Ok(Reply::empty())),
        1 => match local(&engine, &outlet, 0, msg, hop, None) {
            Ok(hop) => Emit::Local(hop),
            Err((msg, hop)) => Emit::Boxed(Box::pin(emit_any(engine, outlet, msg, hop))),
        },
        _ => Emit::Boxed(Box::pin(emit_any(engine, outlet, msg, hop))),
    }
}

/// The refusal of a hop past the root message's budget, from `from`
/// (`<node>:<port>`). Cold: out of the hop's inline path.
#[cold]
fn over_budget(from: &str, budget: u32) -> Error {
    Error::permanent(format!(
        "hop budget: the message's root made {budget} hops (the limit) and was stopped at `{from}`"
    ))
    .with_code(crate::error::code::HOP_BUDGET)
}

/// What an emit awaits: its answer already, a hop to a local node, or anything else.
#[allow(
    clippy::large_enum_variant,
    reason = "the local hop is the common case: boxing it would cost every hop an allocation"
)]
pub(crate) enum Emit {
    Done(Option<Result<Reply>>),
    Local(LocalHop),
    Boxed(BoxFuture<'static, Result<Reply>>),
}

impl Emit {
    /// An emit answered at once.
    pub fn done(result: Result<Reply>) -> Self {
        Emit::Done(Some(result))
    }
}

impl Future for Emit {
    type Output = Result<Reply>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Reply>> {
        match self.get_mut() {
            Emit::Done(done) => Poll::Ready(
                done.take()
                    .unwrap_or_else(|| Err(Error::permanent("an emit was awaited after it answered"))),
            ),
            Emit::Local(hop) => Pin::new(hop).poll(cx),
            Emit::Boxed(future) => future.as_mut().poll(cx),
        }
    }
}

/// One hop along an edge to a node loaded here, its handler's future made: what most
/// hops are. Its retry (for an edge that may retry) is made only on a failure.
pub(crate) struct LocalHop {
    handling: Delivering,
    engine: Arc<Inner>,
    outlet: Arc<Outlet>,
    /// The edge's index in `outlet`.
    edge: u32,
    /// The handler failed and the retry runs in its place.
    retrying: bool,
    /// What another attempt needs, for an edge that may retry: the message, the hop,
    /// and when the first attempt started.
    kept: Option<(Msg, Hop, tokio::time::Instant)>,
}

impl Future for LocalHop {
    type Output = Result<Reply>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Reply>> {
        let this = &mut *self;
        if this.retrying {
            return this.handling.poll_replaced(cx);
        }
        let route = &this.outlet.edges[this.edge as usize];
        let source = Source::Edge {
            from: &this.outlet.from,
            edge_id: &route.id,
        };
        let err = match std::task::ready!(this.handling.poll_along(cx, source)) {
            Ok(reply) => return Poll::Ready(Ok(reply)),
            Err(err) => err,
        };
        let Some((msg, hop, started)) = this.kept.take() else {
            return Poll::Ready(Err(err));
        };
        let (engine, outlet, edge) = (this.engine.clone(), this.outlet.clone(), this.edge as usize);
        this.handling.replace(Box::pin(async move {
            let route = &outlet.edges[edge];
            let next = again(&engine, &outlet.from, route, &msg, &hop, 1);
            route.backoff.retry_after(err, started, &hop.cancel, next).await
        }));
        this.retrying = true;
        this.handling.poll_replaced(cx)
    }
}

/// The hop along edge `edge` of `outlet` (its hop's depth counted already), as a
/// [`LocalHop`] when it is the common case: a node of this module loaded here, a
/// business port, not a durable run's hop, no deadline on the edge, and no fresh task due (see
/// [`STACK_RESET_EVERY`]). Otherwise the message and hop come back, untouched.
/// `started` is when the send began, if the caller read the clock already.
///
/// Inlined: its result is large; made in place in the caller's, it is not moved.
#[inline(always)]
fn local(
    engine: &Arc<Inner>,
    outlet: &Arc<Outlet>,
    edge: usize,
    msg: Msg,
    hop: Hop,
    started: Option<tokio::time::Instant>,
) -> std::result::Result<LocalHop, (Msg, Hop)> {
    let route = &outlet.edges[edge];
    let elsewhere = route
        .module
        .as_deref()
        .is_some_and(|m| !crate::flow::module_matches(m, &engine.module));
    if elsewhere || hop.run.is_some() || route.backoff.timeout.is_some() || hop.depth.is_multiple_of(STACK_RESET_EVERY)
    {
        return Err((msg, hop));
    }
    let cell = route.target.get_or_init(|| engine.cell(&route.node));
    let Some(runner) = cell.runner() else {
        return Err((msg, hop));
    };
    let Some(landing) = route.target_inlet(&runner, &outlet.from) else {
        return Err((msg, hop));
    };
    if engine.runs.is_some() && super::durable::mints(&runner, &route.port) {
        return Err((msg, hop));
    }
    let kept = (route.backoff.max_attempts > 1).then(|| {
        let started = started.unwrap_or_else(tokio::time::Instant::now);
        (msg.clone(), hop.clone(), started)
    });
    Ok(LocalHop {
        handling: runner.start(
            &engine.module,
            landing,
            (&outlet.from, route),
            msg,
            hop,
            engine.observer.as_ref(),
        ),
        engine: engine.clone(),
        outlet: outlet.clone(),
        edge: edge as u32,
        retrying: false,
        kept,
    })
}

/// Any other emit (several edges, another module, a durable run, a node not loaded
/// yet...), its hop's depth counted already.
async fn emit_any(engine: Arc<Inner>, outlet: Arc<Outlet>, msg: Msg, hop: Hop) -> Result<Reply> {
    match outlet.edges.as_slice() {
        [] => Ok(Reply::empty()),
        [only] => send(&engine, &outlet.from, only, msg, hop, None).await,
        _ => fan_out(&engine, &outlet, msg, hop).await,
    }
}

/// Sends along several edges at once.
async fn fan_out(engine: &Arc<Inner>, outlet: &Arc<Outlet>, msg: Msg, hop: Hop) -> Result<Reply> {
    let (from, routes) = (&outlet.from, outlet.edges.as_slice());
    // The branches start together: one reading of the clock for all that may retry.
    let started = routes
        .iter()
        .any(|r| r.backoff.max_attempts > 1)
        .then(tokio::time::Instant::now);
    // Each branch holds a reference; the sender's goes before they run, so that when
    // the others are done with theirs by the time the last runs, its receiver may get
    // the value itself.
    // A branch to a node loaded here is made now, as the single hop is.
    let branches = join_all(routes.iter().enumerate().map(|(edge, route)| {
        match local(engine, outlet, edge, msg.clone(), hop.clone(), started) {
            Ok(local) => Either::Left(local),
            Err((msg, hop)) => Either::Right(send(engine, from, route, msg, hop, started)),
        }
    }));
    drop((msg, hop));
    let results = branches.await;
    let mut first_error = None;
    for result in results {
        match result {
            Ok(reply) if !reply.is_empty() => return Ok(reply),
            Ok(_) => {}
            Err(e) => {
                if first_error.is_some() {
                    tracing::warn!(from = %from, error = %e, "another branch failed too");
                }
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(Reply::empty()), Err)
}

/// Every this many hops, delivery continues on a fresh task: a chain of nested async
/// calls is polled recursively, and 256 hops of it would overflow a thread's stack.
const STACK_RESET_EVERY: u32 = 16;

/// Sends along one edge; `started` is when the send began, if the caller read the clock
/// already (see [`attempts`]).
fn send<'a>(
    engine: &'a Arc<Inner>,
    from: &'a Arc<str>,
    route: &'a Arc<Route>,
    msg: Msg,
    hop: Hop,
    started: Option<tokio::time::Instant>,
) -> impl Future<Output = Result<Reply>> + Send + 'a {
    let hop = if hop.run.is_some() {
        on_edge(engine, route, hop)
    } else {
        hop
    };
    if !hop.depth.is_multiple_of(STACK_RESET_EVERY) {
        return Either::Left(attempts(engine, from, route, msg, hop, started));
    }
    let (engine, from, route) = (engine.clone(), from.clone(), route.clone());
    // The task goes on in the sending hop's span, so the hops it makes stay its children.
    let task = tokio::spawn(async move { attempts(&engine, &from, &route, msg, hop, started).await }.in_current_span());
    Either::Right(async move {
        match task.await {
            Ok(result) => result,
            Err(e) => Err(Error::permanent(format!("delivery task failed: {e}"))),
        }
    })
}

/// A hop of a durable run, on its way along `route`: the next step of the run, keyed
/// before the retry loop so that every attempt carries the same key (the broker drops
/// the copies). Without a durable transport the hop goes as a classic one, as Go's
/// core mode does.
fn on_edge(engine: &Inner, route: &Route, mut hop: Hop) -> Hop {
    hop.run = match (hop.run.take(), &engine.runs) {
        (Some(step), Some(_)) => Some(step.child(&route.id)),
        _ => None,
    };
    hop
}

/// Delivers along one edge. An edge that may retry keeps the message for the next
/// attempt (so a receiver that takes the value gets a copy, one that borrows it does
/// not); one that may not hands the message over. An edge that may retry reads the
/// clock (`started`, unless given), to say in an error how long its attempts took.
fn attempts<'a>(
    engine: &'a Inner,
    from: &'a str,
    route: &'a Route,
    msg: Msg,
    hop: Hop,
    started: Option<tokio::time::Instant>,
) -> impl Future<Output = Result<Reply>> + Send + 'a {
    let backoff = &route.backoff;
    if backoff.timeout.is_some() {
        // Rare: kept out of the hop's inline future (a timer is large).
        return Either::Right(Either::Left(Box::pin(async move {
            backoff
                .run(&hop.cancel, again(engine, from, route, &msg, &hop, 0))
                .await
        })));
    }
    if backoff.max_attempts <= 1 {
        return Either::Left(engine.deliver(route.delivery(from, msg, hop, 1)));
    }
    let started = started.unwrap_or_else(tokio::time::Instant::now);
    Either::Right(Either::Right(async move {
        // The first attempt's future is made here, not before the block: a future
        // moved into an async block is held twice (as the captured value and as the
        // awaited one), and every byte of this one is moved once per hop.
        let first = engine.deliver(route.delivery(from, msg.clone(), hop.clone(), 1));
        let err = match first.await {
            Ok(reply) => return Ok(reply),
            Err(err) => err,
        };
        // Retrying (with its timers) is boxed, so that a hop that succeeds does not
        // carry, and copy, the retry loop's state.
        Box::pin(async move {
            let next = again(engine, from, route, &msg, &hop, 1);
            backoff.retry_after(err, started, &hop.cancel, next).await
        })
        .await
    }))
}

/// Delivers `msg` along `route` once more each time it is called, counting attempts
/// on from `done` (boxed: only retries and deadlines take this path). An edge with a
/// timeout gives each attempt its deadline, which another module's receiver honours.
fn again<'a>(
    engine: &'a Inner,
    from: &'a str,
    route: &'a Route,
    msg: &'a Msg,
    hop: &'a Hop,
    mut done: u32,
) -> impl FnMut() -> BoxFuture<'a, Result<Reply>> + 'a {
    move || {
        done += 1;
        let mut hop = hop.clone();
        if let Some(limit) = route.backoff.timeout {
            hop.budget = hop.budget.with_deadline(deadline_after(limit));
        }
        Box::pin(engine.deliver(route.delivery(from, msg.clone(), hop, done)))
    }
}

/// The deadline, in Unix ms, `limit` from now.
fn deadline_after(limit: std::time::Duration) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from((now + limit).as_millis()).unwrap_or(u64::MAX)
}

//! Emitting along a port's edges: in parallel, sharing one message, with retries.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::future::{BoxFuture, Either, join_all};
use tracing::Instrument as _;

use crate::{
    context::Hop,
    error::{Error, Result},
    message::Reply,
    msg::Msg,
};

use super::{
    MAX_DEPTH,
    runner::{Handling, Outlet, Route},
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
pub(crate) fn emit(engine: Arc<Inner>, outlet: Arc<Outlet>, msg: Msg, hop: Hop) -> Emit {
    if let [only] = outlet.edges.as_slice() {
        match local(&engine, &outlet, only, msg, hop) {
            Ok(hop) => Emit::Local(hop),
            Err((msg, hop)) => Emit::Boxed(Box::pin(emit_any(engine, outlet, msg, hop))),
        }
    } else if outlet.edges.is_empty() && hop.depth < MAX_DEPTH {
        Emit::Done(Some(Ok(Reply::empty())))
    } else {
        Emit::Boxed(Box::pin(emit_any(engine, outlet, msg, hop)))
    }
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
    handling: Handling,
    /// What another attempt needs, for an edge that may retry.
    kept: Option<Kept>,
    retrying: Option<BoxFuture<'static, Result<Reply>>>,
}

struct Kept {
    engine: Arc<Inner>,
    outlet: Arc<Outlet>,
    msg: Msg,
    hop: Hop,
    started: tokio::time::Instant,
}

impl Future for LocalHop {
    type Output = Result<Reply>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Reply>> {
        let this = &mut *self;
        if let Some(retrying) = &mut this.retrying {
            return retrying.as_mut().poll(cx);
        }
        let err = match std::task::ready!(Pin::new(&mut this.handling).poll(cx)) {
            Ok(reply) => return Poll::Ready(Ok(reply)),
            Err(err) => err,
        };
        let Some(Kept {
            engine,
            outlet,
            msg,
            hop,
            started,
        }) = this.kept.take()
        else {
            return Poll::Ready(Err(err));
        };
        let retrying = this.retrying.insert(Box::pin(async move {
            let route = &outlet.edges[0];
            let next = again(&engine, &outlet.from, route, &msg, &hop, 1);
            route.backoff.retry_after(err, started, &hop.cancel, next).await
        }));
        retrying.as_mut().poll(cx)
    }
}

/// The hop along `route`, `outlet`'s only edge, as a [`LocalHop`] when it is the
/// common case: a node loaded here, a business port, not a durable run's hop, no
/// deadline on the edge, and no fresh task due (see
/// [`STACK_RESET_EVERY`]). Otherwise the message and hop come back, untouched.
fn local(
    engine: &Arc<Inner>,
    outlet: &Arc<Outlet>,
    route: &Route,
    msg: Msg,
    mut hop: Hop,
) -> std::result::Result<LocalHop, (Msg, Hop)> {
    let depth = hop.depth + 1;
    if hop.depth >= MAX_DEPTH
        || hop.run.is_some()
        || route.backoff.timeout.is_some()
        || depth.is_multiple_of(STACK_RESET_EVERY)
    {
        return Err((msg, hop));
    }
    let Some(runner) = engine.runner(&route.node) else {
        return Err((msg, hop));
    };
    let Some(index) = runner.inlet(&route.port) else {
        return Err((msg, hop));
    };
    if engine.runs.is_some() && super::durable::mints(&runner, &route.port) {
        return Err((msg, hop));
    }
    hop.depth = depth;
    let kept = (route.backoff.max_attempts > 1).then(|| Kept {
        engine: engine.clone(),
        outlet: outlet.clone(),
        msg: msg.clone(),
        hop: hop.clone(),
        started: tokio::time::Instant::now(),
    });
    Ok(LocalHop {
        handling: runner.start(
            &engine.module,
            index,
            (&outlet.from, route),
            msg,
            hop,
            engine.observer.as_ref(),
        ),
        kept,
        retrying: None,
    })
}

/// Any other emit (several edges, another module, a durable run, a node not loaded
/// yet...).
async fn emit_any(engine: Arc<Inner>, outlet: Arc<Outlet>, msg: Msg, mut hop: Hop) -> Result<Reply> {
    if hop.depth >= MAX_DEPTH {
        return Err(Error::permanent(format!(
            "cycle guard: a message passed {MAX_DEPTH} hops and was stopped at `{}`",
            outlet.from
        ))
        .with_code(crate::error::code::CYCLE));
    }
    hop.depth += 1;
    match outlet.edges.as_slice() {
        [] => Ok(Reply::empty()),
        [only] => send(&engine, &outlet.from, only, msg, hop, None).await,
        many => fan_out(&engine, &outlet.from, many, msg, hop).await,
    }
}

/// Sends along several edges at once.
async fn fan_out(engine: &Arc<Inner>, from: &Arc<str>, routes: &[Arc<Route>], msg: Msg, hop: Hop) -> Result<Reply> {
    // The branches start together: one reading of the clock for all that may retry.
    let started = routes
        .iter()
        .any(|r| r.backoff.max_attempts > 1)
        .then(tokio::time::Instant::now);
    // Each branch holds a reference; the sender's goes before they run, so that when
    // the others are done with theirs by the time the last runs, its receiver may get
    // the value itself.
    let branches = join_all(
        routes
            .iter()
            .map(|route| send(engine, from, route, msg.clone(), hop.clone(), started)),
    );
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
/// on from `done` (boxed: only retries and deadlines take this path).
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
        Box::pin(engine.deliver(route.delivery(from, msg.clone(), hop.clone(), done)))
    }
}

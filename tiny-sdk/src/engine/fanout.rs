//! Emitting along a port's edges: in parallel, sharing one message, with retries.

use std::sync::Arc;

use futures::future::{Either, join_all};
use tracing::Instrument as _;

use crate::{
    error::{Error, Result},
    hop::{Hop, MAX_DEPTH},
    message::Reply,
    msg::Msg,
};

use super::{
    address::Source,
    hop::{Along, HopFuture, again},
    runner::{Landing, Outlet, Route},
    state::Inner,
};

/// Sends `msg` along every edge of `outlet` and waits for all of them. The message is
/// shared, never copied per branch; each target takes (or maps) its own input.
///
/// Returns the first non-empty reply in edge order, else the first error, else an
/// empty reply (the Go SDK's rule).
///
/// The common hop, one edge to a node loaded here, is made now and returned
/// [running](HopFuture::Running), owning what it needs (see [`local`]); every other
/// emit runs in a boxed future.
pub(crate) fn emit(engine: Arc<Inner>, outlet: Arc<Outlet>, msg: Msg, mut hop: Hop) -> HopFuture<'static> {
    if hop.depth >= MAX_DEPTH {
        return HopFuture::done(Err(Error::permanent(format!(
            "cycle guard: a message passed {MAX_DEPTH} hops and was stopped at `{}`",
            outlet.from
        ))
        .with_code(crate::error::code::CYCLE)));
    }
    hop.depth += 1;
    // Each edge is a hop: a fan-out spends one per branch.
    if hop.cancel.spend(outlet.edges.len() as u32) > engine.hop_budget {
        return HopFuture::done(Err(over_budget(&outlet.from, engine.hop_budget)));
    }
    match outlet.edges.len() {
        0 => HopFuture::done(Ok(Reply::empty())),
        1 => match local(&engine, &outlet, 0, msg, hop, None) {
            Ok(hop) => hop,
            Err((msg, hop)) => HopFuture::Boxed(Box::pin(emit_any(engine, outlet, msg, hop))),
        },
        _ => HopFuture::Boxed(Box::pin(emit_any(engine, outlet, msg, hop))),
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

/// The hop along edge `edge` of `outlet` (its hop's depth counted already),
/// [running](HopFuture::Running) when it is the common case: a node of this module loaded here, a
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
) -> std::result::Result<HopFuture<'static>, (Msg, Hop)> {
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
    let (index, mapping) = landing;
    let source = Source::Edge {
        from: &outlet.from,
        edge_id: &route.id,
    };
    let delivering = runner.open(
        &engine.module,
        Landing::Inlet(index, mapping),
        &source,
        msg,
        hop,
        1,
        engine.observer.as_ref(),
    );
    Ok(HopFuture::Running(
        delivering,
        Along::Edge {
            engine: engine.clone(),
            outlet: outlet.clone(),
            edge: edge as u32,
            kept,
        },
    ))
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
    // The task goes on under the sending hop (and in the runtime's span around it), so
    // the hops it makes stay its children.
    let task = tokio::spawn(
        super::trace::InHop::new(Box::pin(async move {
            attempts(&engine, &from, &route, msg, hop, started).await
        }))
        .in_current_span(),
    );
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

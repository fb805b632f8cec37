//! Emitting along a port's edges: in parallel, sharing one message, with retries.

use std::sync::Arc;

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
    runner::{Outlet, Route},
    state::Inner,
};

/// Sends `msg` along every edge of `outlet` and waits for all of them. The message is
/// shared, never copied per branch; each target takes (or maps) its own input.
///
/// Returns the first non-empty reply in edge order, else the first error, else an
/// empty reply (the Go SDK's rule).
///
/// This future owns the engine and the outlet; the steps below it are plain functions
/// that borrow them and return their futures, so that a hop's future holds each thing
/// once (it is part of the emitting handler's future, boxed once per hop).
pub(crate) async fn emit(engine: Arc<Inner>, outlet: Arc<Outlet>, msg: Msg, mut hop: Hop) -> Result<Reply> {
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
        // Its branches live in one allocation anyway: boxed, so that a single edge's
        // future does not carry the fan-out's.
        many => Box::pin(fan_out(&engine, &outlet.from, many, msg, hop)).await,
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

//! Emitting along a port's edges: in parallel, sharing one message, with retries.

use std::sync::Arc;

use futures::future::join_all;
use tracing::Instrument as _;

use crate::{
    context::Hop,
    error::{Error, Result},
    message::Reply,
    msg::Msg,
};

use super::{
    MAX_DEPTH,
    deliver::{Inner, Source},
    runner::{Outlet, Route},
};

/// Sends `msg` along every edge of `outlet` and waits for all of them. The message is
/// shared, never copied per branch; each target takes (or maps) its own input.
///
/// Returns the first non-empty reply in edge order, else the first error, else an
/// empty reply (the Go SDK's rule).
pub(crate) async fn emit(engine: &Arc<Inner>, outlet: &Outlet, msg: Msg, hop: Hop) -> Result<Reply> {
    if hop.depth >= MAX_DEPTH {
        return Err(Error::permanent(format!(
            "cycle guard: a message passed {MAX_DEPTH} hops and was stopped at `{}`",
            outlet.from
        )));
    }
    let next = Hop {
        depth: hop.depth + 1,
        ..hop
    };
    match outlet.edges.as_slice() {
        [] => Ok(Reply::empty()),
        [only] => send(engine, outlet, only, msg, next).await,
        [first @ .., last] => {
            // The last branch takes the message itself: when the others are done with
            // their references by the time it runs, its receiver may get the value.
            let mut branches: Vec<_> = first
                .iter()
                .map(|route| send(engine, outlet, route, msg.clone(), next.clone()))
                .collect();
            branches.push(send(engine, outlet, last, msg, next));
            let results = join_all(branches).await;
            let mut first_error = None;
            for result in results {
                match result {
                    Ok(reply) if !reply.is_empty() => return Ok(reply),
                    Ok(_) => {}
                    Err(e) => {
                        if first_error.is_some() {
                            tracing::warn!(from = %outlet.from, error = %e, "another branch failed too");
                        }
                        first_error.get_or_insert(e);
                    }
                }
            }
            first_error.map_or(Ok(Reply::empty()), Err)
        }
    }
}

/// Every this many hops, delivery continues on a fresh task: a chain of nested async
/// calls is polled recursively, and 256 hops of it would overflow a thread's stack.
const STACK_RESET_EVERY: u32 = 16;

async fn send(engine: &Arc<Inner>, outlet: &Outlet, route: &Arc<Route>, msg: Msg, hop: Hop) -> Result<Reply> {
    if !hop.depth.is_multiple_of(STACK_RESET_EVERY) {
        return attempts(engine, &outlet.from, route, msg, hop).await;
    }
    let (engine, from, route) = (engine.clone(), outlet.from.clone(), route.clone());
    // The task goes on in the sending hop's span, so the hops it makes stay its children.
    let task = tokio::spawn(async move { attempts(&engine, &from, &route, msg, hop).await }.in_current_span());
    match task.await {
        Ok(result) => result,
        Err(e) => Err(Error::permanent(format!("delivery task failed: {e}"))),
    }
}

/// Delivers along one edge. An edge that may retry keeps the message for the next
/// attempt (so its receiver gets a copy); one that may not hands the message over.
async fn attempts(engine: &Inner, from: &str, route: &Route, msg: Msg, hop: Hop) -> Result<Reply> {
    let source = Source::Edge {
        from,
        edge_id: &route.id,
    };
    let to = route.to();
    let backoff = &route.backoff;
    if backoff.timeout.is_some() {
        // Rare: kept out of the hop's inline future (a timer is large).
        let mut attempt = 0;
        let each = || {
            attempt += 1;
            engine.deliver_attempt(to, source, msg.clone(), hop.clone(), attempt)
        };
        return Box::pin(backoff.run(&hop.cancel, each)).await;
    }
    if backoff.max_attempts <= 1 {
        return engine.deliver(to, source, msg, hop).await;
    }
    let started = tokio::time::Instant::now();
    match engine.deliver(to, source, msg.clone(), hop.clone()).await {
        Ok(reply) => Ok(reply),
        // Retrying (with its timers) is boxed, so that a hop that succeeds does not
        // carry, and copy, the retry loop's state.
        Err(err) => {
            let mut attempt = 1;
            let again = || {
                attempt += 1;
                engine.deliver_attempt(to, source, msg.clone(), hop.clone(), attempt)
            };
            Box::pin(backoff.retry_after(err, started, &hop.cancel, again)).await
        }
    }
}

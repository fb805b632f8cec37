//! Emitting along a port's edges: in parallel, sharing one payload, with retries.

use std::sync::Arc;

use futures::future::join_all;
use serde_json::Value;

use crate::{
    context::Hop,
    error::{Error, Result},
    message::Reply,
};

use super::{
    MAX_DEPTH,
    runner::{Outlet, Route},
    scheduler::{Inner, Source},
};

/// Sends `data` along every edge of `outlet` and waits for all of them. The payload is
/// shared, never copied per branch; each target's mapping builds its own input.
///
/// Returns the first non-empty reply in edge order, else the first error, else an
/// empty reply (the Go SDK's rule).
pub(crate) async fn emit(engine: &Arc<Inner>, outlet: &Outlet, data: Arc<Value>, hop: Hop) -> Result<Reply> {
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
        [only] => send(engine, outlet, only, data, next).await,
        many => {
            let branches = many
                .iter()
                .map(|route| send(engine, outlet, route, data.clone(), next.clone()));
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

async fn send(engine: &Arc<Inner>, outlet: &Outlet, route: &Route, data: Arc<Value>, hop: Hop) -> Result<Reply> {
    let cancel = hop.cancel.clone();
    if !hop.depth.is_multiple_of(STACK_RESET_EVERY) {
        let source = Source::Edge {
            from: &outlet.from,
            edge_id: &route.id,
        };
        return route
            .backoff
            .run(&cancel, || {
                engine.deliver(&route.node, &route.port, source, data.clone(), hop.clone())
            })
            .await;
    }
    let (engine, from, id) = (engine.clone(), outlet.from.clone(), route.id.clone());
    let (node, port, backoff) = (route.node.clone(), route.port.clone(), route.backoff.clone());
    let task = tokio::spawn(async move {
        let source = Source::Edge {
            from: &from,
            edge_id: &id,
        };
        backoff
            .run(&cancel, || {
                engine.deliver(&node, &port, source, data.clone(), hop.clone())
            })
            .await
    });
    match task.await {
        Ok(result) => result,
        Err(e) => Err(Error::permanent(format!("delivery task failed: {e}"))),
    }
}

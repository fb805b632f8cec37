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
pub(crate) async fn emit(engine: &Inner, outlet: &Outlet, data: Arc<Value>, hop: Hop) -> Result<Reply> {
    if hop.depth >= MAX_DEPTH {
        return Err(Error::permanent(format!(
            "cycle guard: a message passed {MAX_DEPTH} hops and was stopped at `{}`",
            outlet.from
        )));
    }
    let next = Hop { depth: hop.depth + 1, ..hop };
    match outlet.edges.as_slice() {
        [] => Ok(Reply::empty()),
        [only] => send(engine, outlet, only, data, next).await,
        many => {
            let branches = many.iter().map(|route| send(engine, outlet, route, data.clone(), next.clone()));
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

async fn send(engine: &Inner, outlet: &Outlet, route: &Route, data: Arc<Value>, hop: Hop) -> Result<Reply> {
    let source = Source::Edge { from: &outlet.from, edge_id: &route.id };
    let cancel = hop.cancel.clone();
    route
        .backoff
        .run(&cancel, || engine.deliver(&route.node, &route.port, source, data.clone(), hop.clone()))
        .await
}

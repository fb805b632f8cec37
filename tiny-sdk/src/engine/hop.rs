//! One hop's future: what an emit, a signal, another module's message and each
//! attempt of a retry await, whichever way the message goes. Its common state is the
//! fast path: the handler of a node loaded here, made where the hop is sent and run
//! in place; everything else is one boxed future.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::future::BoxFuture;

use crate::{
    error::{Error, Result},
    hop::Hop,
    message::Reply,
    msg::Msg,
};

use super::{
    address::Source,
    runner::{Delivering, Outlet, Route},
    state::Inner,
};

/// One hop, on its way to a node's port and back with the answer.
#[allow(
    clippy::large_enum_variant,
    reason = "running here is the common case: boxing it would cost every hop an allocation"
)]
pub(crate) enum HopFuture<'a> {
    /// Answered already: the cycle guard, the hop budget, a port without edges.
    Done(Option<Result<Reply>>),
    /// The fast path: a node loaded here runs the message, its delivery begun
    /// ([`Runner::open`](super::runner::Runner::open)).
    Running(Delivering, Along<'a>),
    /// Anything else: a node not loaded yet, another module's, a durable step, several
    /// edges, a fresh task, a deadline, the attempts after a failed one.
    Boxed(BoxFuture<'a, Result<Reply>>),
}

/// Where a running hop's message came from.
pub(crate) enum Along<'a> {
    /// As its delivery said: from outside, or along an edge whose attempts (or
    /// branches) the sender's own future runs.
    Given(Source<'a>),
    /// Along edge `edge` of `outlet`, its first attempt: a failure it may retry
    /// becomes the retry loop, made only then, from what `kept` keeps.
    Edge {
        engine: Arc<Inner>,
        outlet: Arc<Outlet>,
        edge: u32,
        /// For an edge that may retry: the message, the hop, and when the first
        /// attempt started.
        kept: Option<(Msg, Hop, tokio::time::Instant)>,
    },
}

impl HopFuture<'_> {
    /// A hop answered at once.
    pub fn done(result: Result<Reply>) -> Self {
        HopFuture::Done(Some(result))
    }
}

impl Future for HopFuture<'_> {
    type Output = Result<Reply>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Reply>> {
        let this = self.get_mut();
        let mut retry = match this {
            HopFuture::Done(done) => {
                return Poll::Ready(
                    done.take()
                        .unwrap_or_else(|| Err(Error::permanent("a hop was awaited after it answered"))),
                );
            }
            HopFuture::Boxed(future) => return future.as_mut().poll(cx),
            HopFuture::Running(delivering, Along::Given(source)) => return delivering.poll_from(cx, *source),
            HopFuture::Running(
                delivering,
                Along::Edge {
                    engine,
                    outlet,
                    edge,
                    kept,
                },
            ) => {
                let route = &outlet.edges[*edge as usize];
                let source = Source::Edge {
                    from: &outlet.from,
                    edge_id: &route.id,
                };
                let err = match std::task::ready!(delivering.poll_from(cx, source)) {
                    Ok(reply) => return Poll::Ready(Ok(reply)),
                    Err(err) => err,
                };
                let Some((msg, hop, started)) = kept.take() else {
                    return Poll::Ready(Err(err));
                };
                // The retry loop takes the hop's place: boxed, so that a hop that
                // succeeds does not carry (and move) its state.
                let (engine, outlet, edge) = (engine.clone(), outlet.clone(), *edge as usize);
                Box::pin(async move {
                    let route = &outlet.edges[edge];
                    let next = again(&engine, &outlet.from, route, &msg, &hop, 1);
                    route.backoff.retry_after(err, started, &hop.cancel, next).await
                }) as BoxFuture<'static, Result<Reply>>
            }
        };
        let polled = retry.as_mut().poll(cx);
        *this = HopFuture::Boxed(retry);
        polled
    }
}

/// A hop dropped while its handler runs (an edge's timeout, a cancellation, a caller
/// gone) still ends its span, as abandoned ([`Delivering::abandon`]).
impl Drop for HopFuture<'_> {
    #[inline]
    fn drop(&mut self) {
        if let HopFuture::Running(delivering, along) = self
            && delivering.open_span()
        {
            let source = match along {
                Along::Given(source) => *source,
                Along::Edge { outlet, edge, .. } => Source::Edge {
                    from: &outlet.from,
                    edge_id: &outlet.edges[*edge as usize].id,
                },
            };
            delivering.abandon(source);
        }
    }
}

/// Delivers `msg` along `route` once more each time it is called, counting attempts
/// on from `done` (boxed: only retries and deadlines take this path). An edge with a
/// timeout gives each attempt its deadline, which another module's receiver honours.
pub(super) fn again<'a>(
    engine: &'a Inner,
    from: &'a str,
    route: &'a Route,
    msg: &'a Msg,
    hop: &'a Hop,
    mut done: u32,
) -> impl FnMut() -> HopFuture<'a> + 'a {
    move || {
        done += 1;
        let mut hop = hop.clone();
        if let Some(limit) = route.backoff.timeout {
            hop.cancel = hop.cancel.with_deadline(deadline_after(limit));
        }
        engine.deliver(route.delivery(from, msg.clone(), hop, done))
    }
}

/// The deadline, in Unix ms, `limit` from now.
fn deadline_after(limit: std::time::Duration) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from((now + limit).as_millis()).unwrap_or(u64::MAX)
}

//! What both receivers on the broker (core NATS and JetStream) do with a message
//! once their own framing is read: the hop it carries delivered to the engine in
//! the server span, and the answer published to whoever waits. Each receiver keeps
//! only what differs (subscriptions or consumers, acks, runs).

use std::sync::Arc;

use async_nats::{Client, HeaderMap, Subject};
use bytes::Bytes;
use tiny_sdk::{
    Hop, Reply, Result,
    engine::{Delivery, Engine, Source},
    run::RunStep,
};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::wire;
use crate::{
    inbound::{self, Envelope, Inbound},
    remote::LeaderFn,
};

/// What every message a receiver handles shares: the engine it delivers to, who
/// leads, and the receiver's stop (in-flight hops see it).
pub(crate) struct Listening {
    pub(crate) engine: Engine,
    pub(crate) leader: Option<LeaderFn>,
    pub(crate) stopping: CancellationToken,
}

impl Listening {
    /// Delivering to `engine`, with a stop of its own.
    pub(crate) fn new(engine: Engine, leader: Option<LeaderFn>) -> Self {
        Self {
            engine,
            leader,
            stopping: CancellationToken::new(),
        }
    }

    /// Delivers the hop `hop` with `payload`, in `span`. As in Go, a business message
    /// is handled without leadership and outside any run; a system port hears whether
    /// this replica leads, and never runs in a run.
    pub(crate) async fn deliver(
        &self,
        hop: Envelope<'_>,
        payload: Bytes,
        is_system: bool,
        run: Option<Arc<RunStep>>,
        span: tracing::Span,
    ) -> Result<Reply> {
        let inbound = Inbound {
            envelope: Envelope {
                // A durable hop's deadline is its run's answer's (Go checks it nowhere):
                // the run goes on after its origin stops waiting.
                deadline_unix_ms: if run.is_some() { None } else { hop.deadline_unix_ms },
                ..hop
            },
            payload: payload.into(),
            cancel: self.stopping.child_token(),
            leader: is_system && self.leader.as_ref().is_some_and(|f| f()),
            run: if is_system { None } else { run },
            on_system_subject: Some(is_system),
        };
        inbound::deliver(&self.engine, inbound)
            .instrument(span)
            .await
            .map_err(|(e, _)| e)
    }
}

impl Listening {
    /// An agent-tool call (`x-mode: rpc`, `x-to` the bare component): the component
    /// run on its own, as Go's scheduler serves it (see [`Engine::call_tool`]).
    pub(crate) async fn call_tool(&self, component: &str, payload: Bytes, span: tracing::Span) -> Result<Reply> {
        self.engine
            .call_tool(component, &payload, self.stopping.child_token())
            .instrument(span)
            .await
    }
}

/// Whether a business message is an agent-tool call: `x-mode: rpc`, as Go's
/// `wire.PublishRPC` sends it.
pub(crate) fn is_tool_call(headers: Option<&HeaderMap>, is_system: bool) -> bool {
    !is_system && wire::get(headers, wire::header::MODE) == Some(wire::RPC_MODE)
}

/// Which receiver on the broker a message came through.
#[derive(Clone, Copy)]
pub(crate) enum Broker {
    /// Core NATS: a request.
    Core,
    /// JetStream: a stored message, taken by a consumer.
    JetStream,
}

/// The server span of a message on the broker, as both receivers open it; a
/// JetStream message's run and step, when it has them.
pub(crate) fn server_span(
    broker: Broker,
    subject: &Subject,
    hop: &Envelope<'_>,
    run: Option<&RunStep>,
) -> tracing::Span {
    // The span's name and kind are literals: one expansion for each receiver.
    macro_rules! span {
        ($name:literal, $kind:literal) => {
            tracing::info_span!(
                target: tiny_sdk::engine::TRACE_TARGET,
                $name,
                otel.name = %subject,
                otel.kind = $kind,
                messaging.system = "nats",
                messaging.destination.name = %subject,
                to = hop.to,
                from = hop.from,
                tiny.run = run.map(RunStep::run_id),
                tiny.step = run.map(RunStep::step_key),
            )
        };
    }
    match broker {
        Broker::Core => span!("nats.server", "server"),
        Broker::JetStream => span!("jetstream.server", "consumer"),
    }
}

/// Publishes `body` to `to`: with no headers at all (a plain PUB) when there are
/// none, as Go's `RespondMsg` answers a message without a header.
pub(crate) async fn respond(
    client: &Client,
    to: Subject,
    headers: Option<HeaderMap>,
    body: Bytes,
) -> std::result::Result<(), async_nats::PublishError> {
    match headers {
        None => client.publish(to, body).await,
        Some(h) => client.publish_with_headers(to, h, body).await,
    }
}

/// Counts a handled message in the server metrics.
pub(crate) fn count(outcome: &Result<Reply>) {
    crate::metrics::nats().server_call(if outcome.is_ok() { "OK" } else { "Error" });
}

/// The answer to a message, as its wire writes it.
pub(crate) fn answer(outcome: &Result<Reply>) -> (Option<HeaderMap>, Bytes) {
    wire::reply(outcome)
}

/// A delivery as a request on the broker carries it: the target `<node>:<port>`,
/// where it comes from, its JSON bytes (straight from a typed value: no JSON tree on
/// the way), the hop and the attempt.
pub(crate) struct Outgoing<'a> {
    pub(crate) to: String,
    pub(crate) source: Source<'a>,
    pub(crate) payload: Result<Vec<u8>>,
    pub(crate) hop: Hop,
    pub(crate) attempt: u32,
}

impl<'a> From<Delivery<'a>> for Outgoing<'a> {
    fn from(d: Delivery<'a>) -> Self {
        let to = format!("{}:{}", d.node, d.port);
        let Delivery {
            source,
            msg,
            hop,
            attempt,
            ..
        } = d;
        Self {
            to,
            source,
            payload: msg.to_json_bytes(),
            hop,
            attempt,
        }
    }
}

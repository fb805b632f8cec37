//! The sending side on JetStream: a blocking hop is stored and answered on an inbox;
//! a hop of a durable run is stored under its step key and not waited for.

use std::{sync::Arc, time::Duration};

use async_nats::HeaderMap;
use bytes::Bytes;
use futures::{StreamExt as _, future::BoxFuture};
use tiny_sdk::{
    Error, Hop, Reply, Result,
    engine::{Delivery, RemoteRouter, Source},
    error::code,
    run::{EmitRecord, RunStep, RunStore as _, StepRecord},
};
use tracing::{Instrument as _, field::Empty};

use super::{JetStream, broker, refusal};
use crate::nats::{
    router::request_headers,
    serve::Outgoing,
    wire::{self, header},
};

/// Carries the engine's hops over JetStream, as the Go SDK's JetStream transport.
#[derive(Debug, Clone)]
pub struct JetStreamRouter {
    js: Arc<JetStream>,
    timeout: Duration,
}

impl JetStreamRouter {
    /// A router on `js`, waiting up to [`wire::DEFAULT_REQUEST_TIMEOUT`] for the
    /// answer of a blocking hop.
    pub fn new(js: Arc<JetStream>) -> Self {
        Self {
            js,
            timeout: wire::DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// How long a blocking hop waits for its answer.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn unreachable(&self, module: &str) -> Option<Error> {
        (!self.js.link.is_up()).then(|| {
            Error::transient(format!(
                "module `{module}` is unreachable: the NATS broker at {} does not answer",
                self.js.link.url()
            ))
            .with_code(code::UNREACHABLE)
        })
    }

    /// A blocking hop: stored with `x-reply-inbox`, answered on that inbox.
    async fn blocking(self, module: String, to: String, headers: HeaderMap, payload: Bytes, hop: Hop) -> Result<Reply> {
        if let Some(e) = self.unreachable(&module) {
            return Err(e);
        }
        let client = self.js.link.client().clone();
        let inbox = client.new_inbox();
        let mut answers = client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| broker(format_args!("listening for the answer of module `{module}`"), e))?;
        let mut headers = headers;
        headers.insert(wire::name(header::REPLY_INBOX), wire::header_value(&inbox));
        let subject = wire::subject(&module);
        store(&self.js, subject.clone(), headers, payload, &module).await?;
        let answer = tokio::select! {
            a = tokio::time::timeout(self.timeout, answers.next()) => a,
            () = hop.cancel.cancelled() => {
                return Err(Error::permanent(format!("cancelled while waiting for module `{module}`")));
            }
        };
        match answer {
            Ok(Some(msg)) => wire::decode_reply(msg.headers.as_ref(), msg.payload, || format!("module `{module}`")),
            Ok(None) => Err(broker(format_args!("waiting for `{to}`"), "the connection closed")),
            Err(_) => Err(Error::transient(format!(
                "module `{module}` did not answer for `{to}` on `{subject}` within {} s",
                self.timeout.as_secs_f64()
            ))
            .with_code(code::TIMEOUT)),
        }
    }

    /// A hop of a durable run: stored under its step key (so a re-emit after a
    /// redelivery is dropped by the broker), noted on the emitting step, not waited
    /// for. The run's answer goes straight to the origin's subject instead, with a
    /// step record of its own so the run is not left with a hop nobody records.
    /// `span` is the `jetstream.client` producer span: the stored message names it as
    /// its parent, as a blocking hop's does.
    async fn durable(
        self,
        module: String,
        to: String,
        edge: Edge,
        payload: Bytes,
        hop: Hop,
        span: tracing::Span,
    ) -> Result<Reply> {
        let Some(step) = hop.run.clone() else {
            return Err(Error::permanent("a durable hop without its run"));
        };
        if let Some(e) = self.unreachable(&module) {
            return Err(e);
        }
        let reply = step.reply().cloned();
        let emit = EmitRecord {
            to: to.clone(),
            from: edge.from.clone(),
            edge_id: edge.id.clone(),
            step_key: step.step_key().to_owned(),
            data: payload.clone(),
            reply_subject: reply.as_ref().map(|r| r.subject.clone()).unwrap_or_default(),
            reply_target: reply.as_ref().map(|r| r.target.clone()).unwrap_or_default(),
            reply_deadline_unix_ms: reply.as_ref().map_or(0, |r| r.deadline_unix_ms),
        };
        if step.is_reply_hop(&to) {
            return self.answer(step, emit, payload).await;
        }
        let mut headers = durable_headers(&emit, step.run_id(), hop.depth);
        crate::nats::trace::inject_nats(&span, &mut headers);
        store(&self.js, wire::subject(&module), headers, payload, &module).await?;
        step.stored(emit);
        Ok(Reply::empty())
    }

    /// The run's answer: a core publish of the bare payload to the origin's subject
    /// (Go's addressed response: best effort, dropped if nobody listens), recorded
    /// as a done step.
    async fn answer(self, step: Arc<RunStep>, emit: EmitRecord, payload: Bytes) -> Result<Reply> {
        let subject = emit.reply_subject.clone();
        self.js
            .link
            .client()
            .publish(subject.clone(), payload)
            .await
            .map_err(|e| broker(format_args!("answering the run on `{subject}`"), e))?;
        let record = StepRecord::finished(emit.to.clone(), None, Vec::new(), tiny_sdk::run::Timestamp::now());
        let key = tiny_sdk::run::step_record_key(step.run_id(), step.step_key());
        self.js.put(&key, record.to_json_bytes()?.into()).await?;
        step.stored(emit);
        Ok(Reply::empty())
    }
}

/// Stores `payload` on `subject` and waits for the broker's acknowledgement.
pub(super) async fn store(
    js: &JetStream,
    subject: String,
    headers: HeaderMap,
    payload: Bytes,
    module: &str,
) -> Result<()> {
    let ack = js
        .jetstream()
        .publish_with_headers(subject, headers, payload)
        .await
        .map_err(|e| broker(format_args!("sending to module `{module}`"), e))?;
    let ack = match ack.await {
        Ok(ack) => ack,
        Err(e) => {
            return Err(match refusal::of(&e) {
                Some(refused) => {
                    let what = format!("the message for module `{module}`");
                    let after = "it goes through once the module's consumers take stored messages";
                    refusal::limit_error(js.jetstream(), refused, super::config::EDGES_STREAM, &what, after).await
                }
                None => broker(format_args!("storing the message for module `{module}`"), e),
            });
        }
    };
    if ack.duplicate {
        // A redelivered handler re-emitting a hop it emitted before: dropped.
        tracing::debug!(stream = %ack.stream, seq = ack.sequence, "duplicate hop dropped by the broker");
    }
    Ok(())
}

/// Go's headers of a durable hop: `x-from`, `x-to`, `x-edge-id`, `x-run-id`,
/// `x-step-key` and `Nats-Msg-Id` (both the step key), the reply address when the
/// run has one, `x-message-depth` above 0.
pub(super) fn durable_headers(hop: &EmitRecord, run_id: &str, depth: u32) -> HeaderMap {
    let source = Source::Edge {
        from: &hop.from,
        edge_id: &hop.edge_id,
    };
    let mut headers = request_headers(&hop.to, &source, Some(&hop.step_key), depth, 1);
    headers.insert(wire::name(header::RUN_ID), wire::header_value(run_id));
    headers.insert(wire::name(header::STEP_KEY), wire::header_value(&hop.step_key));
    if !hop.reply_subject.is_empty() {
        headers.insert(
            wire::name(header::REPLY_SUBJECT),
            wire::header_value(&hop.reply_subject),
        );
        headers.insert(wire::name(header::REPLY_TARGET), wire::header_value(&hop.reply_target));
        if hop.reply_deadline_unix_ms > 0 {
            headers.insert(
                wire::name(header::REPLY_DEADLINE),
                hop.reply_deadline_unix_ms.to_string().as_str(),
            );
        }
    }
    headers
}

/// The edge a hop travels, owned (the hop's future outlives the engine's borrow).
struct Edge {
    from: String,
    id: String,
}

impl Edge {
    fn of(source: &Source<'_>) -> Self {
        match source {
            Source::Signal => Edge {
                from: wire::FROM_SIGNAL.to_owned(),
                id: String::new(),
            },
            Source::Edge { from, edge_id } => Edge {
                from: (*from).to_owned(),
                id: (*edge_id).to_owned(),
            },
        }
    }
}

impl RemoteRouter for JetStreamRouter {
    fn route(&self, module: &str, d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        let Outgoing {
            to,
            source,
            payload,
            hop,
            attempt,
        } = d.into();
        let payload = match payload {
            Ok(p) => Bytes::from(p),
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let router = self.clone();
        let module = module.to_owned();
        let span = tracing::info_span!(
            target: tiny_sdk::engine::TRACE_TARGET,
            "jetstream.client",
            otel.kind = "producer",
            messaging.system = "nats",
            to = %to,
            tiny.module = %module,
            tiny.depth = hop.depth,
            tiny.run = hop.run.as_deref().map(RunStep::run_id),
            otel.status_code = Empty,
            otel.status_description = Empty,
        );
        crate::telemetry::under_hop(&span);
        if hop.run.as_ref().is_some_and(|s| s.parent().is_some()) {
            let edge = Edge::of(&source);
            let outcome = router.durable(module, to, edge, payload, hop, span.clone());
            return Box::pin(record(outcome, span));
        }
        // A blocking hop: Go sends no `Nats-Msg-Id` (a deduplicated copy would leave
        // the sender waiting for an answer that never comes).
        let mut headers = request_headers(&to, &source, None, hop.depth, attempt);
        crate::nats::router::limit_headers(&mut headers, &hop);
        crate::nats::trace::inject_nats(&span, &mut headers);
        Box::pin(record(router.blocking(module, to, headers, payload, hop), span))
    }
}

async fn record(outcome: impl Future<Output = Result<Reply>>, span: tracing::Span) -> Result<Reply> {
    let result = outcome.instrument(span.clone()).await;
    tiny_sdk::engine::record_outcome(&span, &result);
    result
}

// A module is reached by its subject: nothing to learn of where it is.
impl crate::discovery::Discovery for JetStreamRouter {
    fn register(&self, _module: &str, _addr: &str) {}

    fn deregister(&self, _module: &str) {}
}

impl crate::carrier::Carrier for JetStreamRouter {
    fn name(&self) -> &'static str {
        "jetstream"
    }

    fn listens_at(&self, addr: &str) -> bool {
        wire::is_nats_addr(addr)
    }

    fn reaches(&self, _module: &str) -> bool {
        true
    }

    fn claims(&self, delivery: &Delivery<'_>) -> bool {
        delivery.hop.run.as_ref().is_some_and(|s| s.parent().is_some())
    }

    fn health(&self) -> std::result::Result<(), String> {
        crate::nats::router::link_health(&self.js.link)
    }
}

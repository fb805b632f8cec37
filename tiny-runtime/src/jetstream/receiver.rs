//! The receiving side on JetStream: the module's consumers, bound as Go binds them,
//! and each message handled on its own task, kept alive with in-progress acks while
//! its handler runs, then acked, nak'ed or terminated as Go decides.

use std::sync::Arc;

use async_nats::{
    HeaderMap, Subject,
    jetstream::{
        AckKind, Message,
        consumer::{Consumer, pull},
        context::ConsumerInfoErrorKind,
        stream::Stream,
    },
};
use futures::StreamExt as _;
use tiny_sdk::{
    Reply, Result,
    engine::Engine,
    run::{self, ReplyAddress, RunStep},
};

use super::{JetStream, broker, config};
use crate::{
    inbound,
    nats::{
        Receiver,
        serve::{self, Listening, respond},
        wire::{self, get, header},
    },
    remote::LeaderFn,
};

/// What every handler task of a JetStream receiver shares.
struct Consuming {
    js: Arc<JetStream>,
    listening: Listening,
}

/// Binds `engine`'s module to its consumers on `js` and handles what they deliver
/// until [`Receiver::stop`] (the core transport's receiver: stopping cancels the hops
/// in flight and waits for the loop). The streams, the bucket and the consumers are made (as
/// Go makes them) once the broker answers, and made again whenever one is lost.
pub fn listen(js: Arc<JetStream>, engine: Engine, leader: Option<LeaderFn>) -> Receiver {
    let listening = Listening::new(engine, leader);
    let stop = listening.stopping.clone();
    let shared = Arc::new(Consuming { js, listening });
    let task = tokio::spawn(async move {
        loop {
            match consume(&shared).await {
                Ok(()) => break,
                Err(e) => tracing::warn!(error = %e, "JetStream consumers lost: rebuilding"),
            }
            tokio::select! {
                () = tokio::time::sleep(config::REBUILD_AFTER) => {}
                () = shared.listening.stopping.cancelled() => break,
            }
        }
    });
    Receiver::new(stop, task)
}

/// Makes the streams, bucket and consumers, and handles messages until stopped (Ok)
/// or until something is lost (Err).
async fn consume(shared: &Arc<Consuming>) -> Result<()> {
    while !shared.js.link.is_up() {
        tokio::select! {
            () = tokio::time::sleep(config::REBUILD_AFTER) => {}
            () = shared.listening.stopping.cancelled() => return Ok(()),
        }
    }
    shared.js.ensure().await?;
    let module = shared.js.module.clone();
    let context = shared.js.jetstream();
    let edges: Stream = context
        .get_stream(config::EDGES_STREAM)
        .await
        .map_err(|e| broker("finding `module-edges`", e))?;
    let sysmsgs: Stream = context
        .get_stream(config::SYSMSGS_STREAM)
        .await
        .map_err(|e| broker("finding `module-sysmsgs`", e))?;
    let business: Consumer<pull::Config> = edges
        .create_consumer(config::business_consumer(&module))
        .await
        .map_err(|e| broker(format_args!("binding the consumer `{module}`"), e))?;
    let system_name = config::system_consumer_name(&module, &shared.js.hostname);
    let system: Consumer<pull::Config> = sysmsgs
        .create_consumer(config::system_consumer(&module, &shared.js.hostname))
        .await
        .map_err(|e| broker(format_args!("binding the consumer `{system_name}`"), e))?;
    let mut business_messages = business
        .messages()
        .await
        .map_err(|e| broker("taking business messages", e))?;
    let mut system_messages = system
        .messages()
        .await
        .map_err(|e| broker("taking system messages", e))?;
    tracing::info!(module = %module, consumer = %module, system = %system_name, "JetStream consumers bound");
    let mut health = tokio::time::interval(config::HEALTH_EVERY);
    health.tick().await;
    // The turn the next business message will take, had before it is pulled: a
    // module at its cap leaves the rest on the broker.
    let mut turn = None;
    loop {
        let (message, is_system) = tokio::select! {
            permit = shared.listening.engine.admit(), if turn.is_none() => {
                turn = Some(permit);
                continue;
            }
            m = business_messages.next(), if turn.is_some() => (m, false),
            m = system_messages.next() => (m, true),
            _ = health.tick() => {
                // A consumer deleted under us (or a broker that lost its state) is
                // rebuilt rather than waited on. Only that, as Go: a check that timed
                // out under load keeps the messages already pulled.
                for (name, result) in [
                    (module.as_str(), business.clone().info().await.map(|_| ())),
                    (system_name.as_str(), system.clone().info().await.map(|_| ())),
                ] {
                    match result {
                        Ok(()) => {}
                        Err(e) if matches!(e.kind(), ConsumerInfoErrorKind::NotFound | ConsumerInfoErrorKind::StreamNotFound) => {
                            return Err(broker(format_args!("checking the consumer `{name}`"), e));
                        }
                        Err(e) => tracing::debug!(consumer = name, error = %e, "JetStream consumer check failed; kept"),
                    }
                }
                continue;
            }
            () = shared.listening.stopping.cancelled() => return Ok(()),
        };
        match message {
            Some(Ok(message)) => {
                let permit = if is_system { None } else { turn.take() };
                tokio::spawn(handle(shared.clone(), message, is_system, permit));
            }
            Some(Err(e)) => {
                // Heartbeats missed and the like: the stream goes on, or ends.
                tracing::debug!(error = %e, "JetStream consumer hiccup");
            }
            None => return Err(broker("taking messages", "the consumer's stream ended")),
        }
    }
}

/// One message: delivered (kept in progress meanwhile), answered when a sender
/// waits, then acked, nak'ed (a retryable failure nobody waits for) or terminated.
/// Its turn (`_turn`) is held until the message is acked.
async fn handle(
    shared: Arc<Consuming>,
    message: Message,
    is_system: bool,
    _turn: Option<tokio::sync::OwnedSemaphorePermit>,
) {
    let headers = message.headers.as_ref();
    let inbox = get(headers, header::REPLY_INBOX)
        .filter(|i| !i.is_empty())
        .map(Subject::from);
    let subject = message.subject.clone();
    // The message's place in its stream, for good: what a run it starts is named after.
    let seed = message.info().ok().map(|i| {
        format!(
            "{}:{}:{}",
            i.stream,
            i.stream_sequence,
            i.published.unix_timestamp_nanos()
        )
    });
    let delivery = receive(
        &shared.listening,
        &subject,
        headers,
        message.payload.clone(),
        is_system,
        seed,
    );
    let outcome = {
        let mut delivery = std::pin::pin!(delivery);
        // First due one period in. (Awaiting an interval's immediate first tick
        // would hold every message until the timer's next millisecond.)
        let every = config::IN_PROGRESS_EVERY;
        let mut progress = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            tokio::select! {
                outcome = &mut delivery => break outcome,
                _ = progress.tick() => {
                    if let Err(e) = message.ack_with(AckKind::Progress).await {
                        tracing::debug!(error = %e, "in-progress ack not sent");
                    }
                }
            }
        }
    };
    serve::count(&outcome);
    if let Some(to) = &inbox {
        let (reply_headers, body) = serve::answer(&outcome);
        if let Err(e) = respond(shared.js.link.client(), to.clone(), reply_headers, body).await {
            tracing::warn!(subject = %subject, error = %e, "answer not sent");
        }
    }
    let ack = match &outcome {
        Ok(_) => AckKind::Ack,
        Err(e) if inbox.is_none() && e.is_retryable() => AckKind::Nak(None),
        Err(e) => {
            if inbox.is_none() {
                tracing::warn!(subject = %subject, error = %e, "message failed (nobody waits for it): not redelivered");
            }
            AckKind::Term
        }
    };
    if let Err(e) = message.ack_with(ack).await {
        tracing::warn!(subject = %subject, error = %e, "ack not sent: the broker redelivers the message");
    }
}

/// The run step a message is, from its headers.
fn run_step(headers: Option<&HeaderMap>) -> Option<Arc<RunStep>> {
    let run_id = get(headers, header::RUN_ID).filter(|r| !r.is_empty())?;
    let step_key = get(headers, header::STEP_KEY).unwrap_or_default();
    let reply = match (get(headers, header::REPLY_SUBJECT), get(headers, header::REPLY_TARGET)) {
        (Some(subject), Some(target)) if !subject.is_empty() && !target.is_empty() => Some(ReplyAddress {
            subject: subject.to_owned(),
            target: target.to_owned(),
            deadline_unix_ms: get(headers, header::REPLY_DEADLINE)
                .and_then(|d| d.trim().parse().ok())
                .unwrap_or(0),
        }),
        _ => None,
    };
    Some(Arc::new(RunStep::continued(run_id, step_key, reply)))
}

/// The run a message that carries none starts, if its node starts one (Go's mint):
/// named after the stored message (`seed`), not at random, so that when the message
/// comes again because its replica died before the run's first step was recorded,
/// the step is the same one (skipped if recorded meanwhile, its hops deduplicated by
/// their keys) rather than the first of a second run.
async fn minted(listening: &Listening, to: &str, seed: Option<String>) -> Option<Arc<RunStep>> {
    let seed = seed?;
    let (node, port) = inbound::split_target(to).ok()?;
    if !listening.engine.starts_run(node, port).await {
        return None;
    }
    let run_id = run::run_id_from(&seed);
    Some(Arc::new(RunStep::continued(
        &run_id,
        &run::root_step_key(&run_id),
        None,
    )))
}

/// Handles one message as the receiver of [`listen`] does once its consumer has
/// delivered it: the hop headers read and checked (a message without `x-to`, or
/// with a hop count that is no number, is refused with code `INVALID_MESSAGE` naming
/// the header), an agent-tool call (`x-mode: rpc`) told from a hop, the durable run
/// the hop continues read from `x-run-id`, `x-step-key` and `x-reply-*`, or, for a
/// business message without one to a node that starts runs, a run minted from `seed`
/// (the stored message's place, `<stream>:<sequence>:<published ns>`), and the hop
/// run on `engine`. `system` says whether it came through the system consumer. The
/// outcome decides the answer and the ack.
///
/// Public so that this decoding runs without a broker: the `nats` fuzz target feeds
/// it arbitrary subjects, header blocks and payloads.
pub async fn receive_message(
    engine: &Engine,
    subject: &str,
    headers: Option<&HeaderMap>,
    payload: bytes::Bytes,
    system: bool,
    seed: Option<&str>,
) -> Result<Reply> {
    let listening = Listening::new(engine.clone(), None);
    receive(
        &listening,
        &Subject::from(subject),
        headers,
        payload,
        system,
        seed.map(str::to_owned),
    )
    .await
}

async fn receive(
    listening: &Listening,
    subject: &Subject,
    headers: Option<&HeaderMap>,
    payload: bytes::Bytes,
    is_system: bool,
    seed: Option<String>,
) -> Result<Reply> {
    let hop = wire::hop_headers(subject, headers)?;
    if serve::is_tool_call(headers, is_system) {
        // Outside any flow, so outside any run.
        let span = serve::server_span(serve::Broker::JetStream, subject, &hop, None);
        return listening.call_tool(hop.to, payload, span).await;
    }
    let run = match run_step(headers) {
        Some(step) => Some(step),
        // System ports never run in a run (Go's rule).
        None if !is_system => minted(listening, hop.to, seed).await,
        None => None,
    };
    let span = serve::server_span(serve::Broker::JetStream, subject, &hop, run.as_deref());
    listening.deliver(hop, payload, is_system, run, span).await
}

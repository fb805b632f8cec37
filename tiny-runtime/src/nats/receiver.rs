//! The receiving side: other modules' messages and the platform's signals, from the
//! broker into this module's [`Engine`].
//!
//! Business messages arrive on `tinymodule.<module>.msg` in the queue group
//! `<module>`, so the replicas of a module share them; system-port messages
//! (`_control`, `_settings`, ...) on `tinymodule.<module>.sysmsg`, which every
//! replica hears, with the handler told whether its replica leads. Every message is
//! handled on its own task: a handler that sends to its own module and waits does not
//! block the one that will answer it. A business message is taken from the
//! subscription only once the engine gives it a turn
//! ([`Engine::admit`](tiny_sdk::engine::Engine::admit)): under a flood the backlog
//! waits in the client's buffer (and past it, is dropped and counted as a slow
//! consumer), not in tasks.

use std::sync::Arc;

use async_nats::{Client, HeaderMap, Message, Subject};
use bytes::Bytes;
use futures::StreamExt as _;
use tiny_sdk::{Error, Reply, Result, engine::Engine, error::code};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{
    serve::{self, Listening, respond},
    wire::{self, get, header},
};
use crate::remote::LeaderFn;

/// What every handler task of a core NATS receiver shares.
struct Subscribed {
    client: Client,
    listening: Listening,
}

/// A running receiver, from [`listen`] (or the JetStream transport's
/// [`listen`](crate::jetstream::listen)). Dropping it leaves it running;
/// [`stop`](Self::stop) ends it.
#[derive(Debug)]
pub struct Receiver {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Receiver {
    /// The receiver whose loop is `task`, which ends once `stop` is cancelled.
    pub(crate) fn new(stop: CancellationToken, task: JoinHandle<()>) -> Self {
        Self { stop, task }
    }

    /// Unsubscribes, cancels the hops in flight and waits for the loop to end.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// Subscribes `engine`'s module to its two subjects on `client` and handles what
/// arrives until [`Receiver::stop`]. The subscriptions are made before this returns
/// (the client sends them once it is connected, and again after every reconnect).
pub async fn listen(client: Client, engine: Engine, leader: Option<LeaderFn>) -> Result<Receiver> {
    let module = engine.module().to_owned();
    let unreachable = |e: async_nats::SubscribeError| {
        Error::transient(format!("subscribing to the subjects of module `{module}`: {e}")).with_code(code::UNREACHABLE)
    };
    let mut business = client
        .queue_subscribe(wire::subject(&module), module.clone())
        .await
        .map_err(unreachable)?;
    let mut system = client
        .subscribe(wire::system_subject(&module))
        .await
        .map_err(unreachable)?;
    let listening = Listening::new(engine, leader);
    let stop = listening.stopping.clone();
    let shared = Arc::new(Subscribed { client, listening });
    let task = tokio::spawn(async move {
        // The turn the next business message will take: had before it is read, so
        // that a module at its cap leaves the rest in the subscription's buffer.
        let mut turn = None;
        loop {
            let (msg, is_system) = tokio::select! {
                permit = shared.listening.engine.admit(), if turn.is_none() => {
                    turn = Some(permit);
                    continue;
                }
                Some(m) = business.next(), if turn.is_some() => (m, false),
                Some(m) = system.next() => (m, true),
                () = shared.listening.stopping.cancelled() => break,
                else => break,
            };
            let permit = if is_system { None } else { turn.take() };
            // Each on its own task, from the start: a handler that computes before its
            // first wait must not hold up the module's other messages (measured: polling
            // each inline first would save a wake-up, 14% of throughput in the bench).
            tokio::spawn(handle(shared.clone(), msg, is_system, permit));
        }
        let _ = business.unsubscribe().await;
        let _ = system.unsubscribe().await;
    });
    Ok(Receiver { stop, task })
}

/// One message: delivered, and answered when the sender waits; its turn (`_turn`)
/// held until then.
async fn handle(
    shared: Arc<Subscribed>,
    msg: Message,
    is_system: bool,
    _turn: Option<tokio::sync::OwnedSemaphorePermit>,
) {
    let Message {
        subject,
        reply,
        payload,
        headers,
        ..
    } = msg;
    // The native reply subject, else `x-reply-inbox` (a sender whose native reply is
    // taken, as on JetStream): one answer, never two.
    let answer_to: Option<Subject> = reply.or_else(|| get(headers.as_ref(), header::REPLY_INBOX).map(Subject::from));
    let outcome = if crate::telemetry::tracing_enabled() {
        use opentelemetry::context::FutureExt as _;
        let parent = crate::nats::trace::extract_nats(headers.as_ref());
        receive(&shared.listening, &subject, headers.as_ref(), payload, is_system)
            .with_context(parent)
            .await
    } else {
        receive(&shared.listening, &subject, headers.as_ref(), payload, is_system).await
    };
    serve::count(&outcome);
    let Some(to) = answer_to else {
        if let Err(e) = &outcome {
            // Fire and forget: nobody hears the failure, so the log does.
            tracing::warn!(subject = %subject, error = %e, "message failed (the sender did not wait for a reply)");
        }
        return;
    };
    let (reply_headers, body) = serve::answer(&outcome);
    match respond(&shared.client, to.clone(), reply_headers, body).await {
        Ok(()) => {}
        // Over the broker's payload limit: the sender hears that instead of waiting.
        Err(e) if e.kind() == async_nats::client::PublishErrorKind::MaxPayloadExceeded => {
            let e = Error::permanent(format!("the reply to a message on `{subject}` is too large: {e}"))
                .with_code(code::MESSAGE_TOO_LARGE);
            tracing::warn!(error = %e, "reply not sent");
            let _ = respond(&shared.client, to, Some(wire::error_headers(&e)), Bytes::new()).await;
        }
        // The connection is gone: nothing else would get through either.
        Err(e) => tracing::warn!(subject = %subject, error = %e, "reply not sent"),
    }
}

/// Handles one message as the receiver of [`listen`] does once the client has read
/// its frame: the hop headers read and checked (a message
/// without `x-to`, or with a hop count that is no number, is refused with code
/// `INVALID_MESSAGE` naming the header), an agent-tool call (`x-mode: rpc`) told from
/// a hop, and either one run on `engine`. `system` says whether it came on the
/// system subject (the handler then hears that this replica does not lead). The
/// outcome is what [`wire::reply`] writes back to a sender that waits.
///
/// Public so that this decoding runs without a broker: the `nats` fuzz target feeds
/// it arbitrary subjects, header blocks and payloads.
pub async fn receive_message(
    engine: &Engine,
    subject: &str,
    headers: Option<&HeaderMap>,
    payload: Bytes,
    system: bool,
) -> Result<Reply> {
    let listening = Listening::new(engine.clone(), None);
    receive(&listening, &Subject::from(subject), headers, payload, system).await
}

/// Reads the headers, checks them and delivers.
async fn receive(
    listening: &Listening,
    subject: &Subject,
    headers: Option<&HeaderMap>,
    payload: Bytes,
    is_system: bool,
) -> Result<Reply> {
    let hop = wire::hop_headers(subject, headers)?;
    let span = serve::server_span(serve::Broker::Core, subject, &hop, None);
    if serve::is_tool_call(headers, is_system) {
        // Go's core receiver answers only a native reply subject, which its RPC
        // caller does not set; tiny answers `x-reply-inbox` here too (`handle`).
        return listening.call_tool(hop.to, payload, span).await;
    }
    listening.deliver(hop, payload, is_system, None, span).await
}

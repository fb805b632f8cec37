//! The sending side: the engine's messages for nodes of other modules, as NATS
//! requests on `tinymodule.<module>.msg`, answered as the Go SDK answers them.

use std::{
    collections::HashMap,
    sync::{Arc, PoisonError, RwLock},
    time::Duration,
};

use async_nats::{HeaderMap, Request, RequestErrorKind, Subject};
use bytes::Bytes;
use futures::future::BoxFuture;
use tiny_sdk::{
    Error, Hop, Reply, Result,
    engine::{Delivery, RemoteRouter, Source},
    error::code,
};
use tracing::{Instrument as _, field::Empty};

use super::{
    link::Link,
    serve::Outgoing,
    wire::{self, header},
};

/// Carries the engine's messages for other modules over NATS request/reply.
///
/// Every hop is one request to `tinymodule.<module>.msg`, where `<module>` is the
/// second part of the target node's name (as Go's sender takes it), with Go's
/// headers; the reply is read as Go reads it. While the broker is unreachable a hop
/// fails at once with a transient [`code::UNREACHABLE`] error (the edge's retry
/// policy decides what follows) instead of waiting for a reconnection.
#[derive(Debug, Clone)]
pub struct NatsRouter {
    link: Link,
    timeout: Duration,
    /// Each module's name and subject, made at its first hop: a hop clones them (two
    /// reference counts) instead of formatting and copying them.
    subjects: Arc<RwLock<Subjects>>,
    /// Go's four request headers that stay the same along an edge (`x-from`, `x-to`,
    /// `x-edge-id`, `Nats-Msg-Id`), by target and then source, made at the edge's first
    /// hop: a hop copies them, as the bare echo copies its map, instead of building and
    /// hashing each header again.
    fixed: Arc<RwLock<FixedHeaders>>,
}

/// By module: its name and subject.
type Subjects = HashMap<String, (Arc<str>, Subject)>;

/// By `x-to`: `(x-from, x-edge-id, headers)`.
type FixedHeaders = HashMap<String, Vec<(Box<str>, Box<str>, HeaderMap)>>;

/// Sources a router keeps the fixed headers of for one target.
const MAX_SOURCES: usize = 64;

/// Modules whose subject a router keeps; past them (flows naming that many modules)
/// a hop makes its own.
const MAX_SUBJECTS: usize = 1024;

impl NatsRouter {
    /// A router on `link`, waiting up to [`wire::DEFAULT_REQUEST_TIMEOUT`] (5 min,
    /// Go's) for a reply.
    pub fn new(link: Link) -> Self {
        Self {
            link,
            timeout: wire::DEFAULT_REQUEST_TIMEOUT,
            subjects: Arc::default(),
            fixed: Arc::default(),
        }
    }

    /// The fixed headers of a hop from `from` along `edge_id` to `to`, made once.
    fn fixed_headers(&self, to: &str, from: &str, edge_id: &str) -> HeaderMap {
        let find = |all: &FixedHeaders| {
            all.get(to).and_then(|sources| {
                sources
                    .iter()
                    .find(|(f, e, _)| **f == *from && **e == *edge_id)
                    .map(|(_, _, h)| h.clone())
            })
        };
        if let Some(known) = find(&self.fixed.read().unwrap_or_else(PoisonError::into_inner)) {
            return known;
        }
        let made = fixed_headers(to, from, edge_id, Some(edge_id));
        let mut all = self.fixed.write().unwrap_or_else(PoisonError::into_inner);
        if find(&all).is_none() && (all.len() < MAX_SUBJECTS || all.contains_key(to)) {
            let sources = all.entry(to.to_owned()).or_default();
            if sources.len() < MAX_SOURCES {
                sources.push((from.into(), edge_id.into(), made.clone()));
            }
        }
        made
    }

    /// `module`'s name and subject, made once.
    fn subject(&self, module: &str) -> (Arc<str>, Subject) {
        if let Some(known) = self.subjects.read().unwrap_or_else(PoisonError::into_inner).get(module) {
            return known.clone();
        }
        let made = (Arc::<str>::from(module), Subject::from(wire::subject(module)));
        let mut subjects = self.subjects.write().unwrap_or_else(PoisonError::into_inner);
        if subjects.len() < MAX_SUBJECTS {
            subjects.insert(module.to_owned(), made.clone());
        }
        made
    }

    /// How long a hop waits for its reply.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The connection it sends on.
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// Sends one message and waits for the reply of the chain behind it.
    async fn request(
        self,
        (module, subject): (Arc<str>, Subject),
        to: String,
        headers: HeaderMap,
        payload: Result<Vec<u8>>,
        hop: Hop,
    ) -> Result<Reply> {
        let payload = Bytes::from(payload?);
        let span = tracing::info_span!(
            target: tiny_sdk::engine::TRACE_TARGET,
            "nats.client",
            otel.name = %subject,
            otel.kind = "client",
            messaging.system = "nats",
            messaging.destination.name = %subject,
            to = %to,
            tiny.module = %module,
            tiny.depth = hop.depth,
            tiny.outcome = Empty,
            otel.status_code = Empty,
            otel.status_description = Empty,
        );
        crate::telemetry::under_hop(&span);
        let mut headers = headers;
        crate::nats::trace::inject_nats(&span, &mut headers);
        // A hop given up before its reply (the edge's timeout, a cancelled flow) is
        // counted too: on core NATS that is how a message lost in flight shows.
        let mut abandoned = Abandoned(Some(&*module));
        let result = self
            .exchange(&module, &subject, headers, payload, &hop)
            .instrument(span.clone())
            .await;
        abandoned.0 = None;
        crate::metrics::nats().client_call(
            &module,
            match &result {
                Ok(_) => "OK",
                Err(e) if e.code() == Some(code::UNREACHABLE) => "Unreachable",
                Err(e) if e.code() == Some(code::TIMEOUT) => "Timeout",
                Err(_) => "Error",
            },
        );
        tiny_sdk::engine::record_outcome(&span, &result);
        result
    }

    async fn exchange(
        &self,
        module: &str,
        subject: &Subject,
        headers: HeaderMap,
        payload: Bytes,
        hop: &Hop,
    ) -> Result<Reply> {
        if !self.link.is_up() {
            return Err(Error::transient(format!(
                "module `{module}` is unreachable: the NATS broker at {} does not answer",
                self.link.url()
            ))
            .with_code(code::UNREACHABLE));
        }
        let client = self.link.client();
        let max = client.max_payload();
        if max > 0 && payload.len() > max {
            return Err(too_large(module, subject, payload.len(), max));
        }
        let request = Request::new()
            .headers(headers)
            .payload(payload)
            .timeout(Some(self.timeout));
        let sent = tokio::select! {
            r = client.send_request(subject.clone(), request) => r,
            () = hop.cancel.cancelled() => {
                return Err(Error::permanent(format!("cancelled while waiting for module `{module}`")));
            }
        };
        match sent {
            Ok(msg) => wire::decode_reply(msg.headers.as_ref(), msg.payload, || format!("module `{module}`")),
            Err(e) => Err(match e.kind() {
                RequestErrorKind::NoResponders => Error::transient(format!(
                    "module `{module}` is unreachable: no replica listens on `{subject}`"
                ))
                .with_code(code::UNREACHABLE),
                RequestErrorKind::TimedOut => Error::transient(format!(
                    "module `{module}` did not answer on `{subject}` within {} s",
                    self.timeout.as_secs_f64()
                ))
                .with_code(code::TIMEOUT),
                RequestErrorKind::MaxPayloadExceeded => too_large(module, subject, 0, max),
                _ => Error::transient(format!("module `{module}` over NATS: {e}")).with_code(code::UNREACHABLE),
            }),
        }
    }
}

/// Counts a request dropped before it ended as `Abandoned`.
struct Abandoned<'a>(Option<&'a str>);

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if let Some(module) = self.0 {
            crate::metrics::nats().client_call(module, "Abandoned");
        }
    }
}

fn too_large(module: &str, subject: &str, size: usize, max: usize) -> Error {
    let size = if size > 0 {
        format!("{size} bytes, ")
    } else {
        String::new()
    };
    Error::permanent(format!(
        "the message for module `{module}` on `{subject}` is too large ({size}the broker takes at most {max} bytes)"
    ))
    .with_code(code::MESSAGE_TOO_LARGE)
}

/// Go's request headers for one hop: `x-from`, `x-to`, `x-edge-id` (always set,
/// even empty), `Nats-Msg-Id` when given (core NATS: the edge id, even empty;
/// JetStream: none on a blocking hop, the step key on a durable one),
/// `x-message-depth` when above 0; tiny's `x-hop-attempt` on a retry.
pub(crate) fn request_headers(
    to: &str,
    source: &Source<'_>,
    msg_id: Option<&str>,
    depth: u32,
    attempt: u32,
) -> HeaderMap {
    let (from, edge_id) = wire_source(source);
    let mut h = fixed_headers(to, from, edge_id, msg_id);
    count_headers(&mut h, depth, attempt);
    h
}

/// `x-from` and `x-edge-id` of `source`.
fn wire_source<'a>(source: &Source<'a>) -> (&'a str, &'a str) {
    match source {
        Source::Signal => (wire::FROM_SIGNAL, ""),
        Source::Edge { from, edge_id } => (*from, *edge_id),
    }
}

/// The headers of [`request_headers`] that stay the same along an edge.
fn fixed_headers(to: &str, from: &str, edge_id: &str, msg_id: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(wire::name(header::FROM), wire::header_value(from));
    h.insert(wire::name(header::TO), wire::header_value(to));
    h.insert(wire::name(header::EDGE_ID), wire::header_value(edge_id));
    if let Some(id) = msg_id {
        h.insert(wire::name(header::MSG_ID), wire::header_value(id));
    }
    h
}

/// The headers of [`request_headers`] that count: depth and attempt.
fn count_headers(h: &mut HeaderMap, depth: u32, attempt: u32) {
    if depth > 0 {
        h.insert(wire::name(header::DEPTH), depth.to_string());
    }
    if attempt > 1 {
        h.insert(wire::name(header::ATTEMPT), attempt.to_string());
    }
}

/// tiny's `x-message-hops` (the root's hops so far) when they pass the depth, and Go's
/// `x-reply-deadline` when the hop has one (not on a durable hop: there it is the
/// run's answer's, written from the run). A chain without branches has made as many
/// hops as its depth says, so it sends Go's headers alone; the receiver takes the
/// larger of the two.
pub(crate) fn limit_headers(h: &mut HeaderMap, hop: &Hop) {
    let spent = hop.cancel.spent();
    if spent > hop.depth {
        h.insert(wire::name(header::HOPS), spent.to_string());
    }
    if let Some(ms) = hop.cancel.deadline_unix_ms() {
        h.insert(wire::name(header::REPLY_DEADLINE), ms.to_string());
    }
}

impl RemoteRouter for NatsRouter {
    fn route(&self, module: &str, d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        let out = Outgoing::from(d);
        // Core NATS: `Nats-Msg-Id` is the edge id, as Go's core sender sets it.
        let (from, edge_id) = wire_source(&out.source);
        let mut headers = self.fixed_headers(&out.to, from, edge_id);
        count_headers(&mut headers, out.hop.depth, out.attempt);
        limit_headers(&mut headers, &out.hop);
        Box::pin(
            self.clone()
                .request(self.subject(module), out.to, headers, out.payload, out.hop),
        )
    }
}

/// `Ok` while `link` is connected, else why not: what `/readyz` and the `Transport`
/// condition say of a broker (after `NATS: `).
pub(crate) fn link_health(link: &Link) -> std::result::Result<(), String> {
    match &*link.state().borrow() {
        super::LinkState::Connected => Ok(()),
        super::LinkState::Connecting => Err(format!("not connected to {} yet", link.url())),
        super::LinkState::Down(why) => Err(format!(
            "the broker at {} does not answer ({why}), reconnecting every {} s",
            link.url(),
            super::RECONNECT_WAIT.as_secs()
        )),
    }
}

// A module is reached by its subject: nothing to learn of where it is.
impl crate::discovery::Discovery for NatsRouter {
    fn register(&self, _module: &str, _addr: &str) {}

    fn deregister(&self, _module: &str) {}
}

impl crate::carrier::Carrier for NatsRouter {
    fn name(&self) -> &'static str {
        "nats"
    }

    fn listens_at(&self, addr: &str) -> bool {
        wire::is_nats_addr(addr)
    }

    fn reaches(&self, _module: &str) -> bool {
        true
    }

    fn health(&self) -> std::result::Result<(), String> {
        link_health(&self.link)
    }
}

//! Spans of the flow: one hop span per delivery to a node, handed, once it ended, to
//! the [`HopSpans`] sink installed ([`set_hop_spans`]); without one a hop pays one
//! atomic load.
//!
//! A hop's span is made here rather than by `tracing`: a recorded hop then costs the
//! ids, two clock reads and what the sink does with [`EndedHop`] (`tiny-runtime` builds
//! the OpenTelemetry span data from it and hands it to the batch exporter), instead of
//! a `tracing` span visited field by field and an OpenTelemetry span built from it.
//!
//! While a hop's handler runs, its span is the [current hop](current_hop), so
//! everything the handler emits is delivered in hop spans that are its children: a
//! flow run is one tree. A hop no other hop sent asks the sink for its parent (the
//! runtime's span around it: a signal, another module's request). The attribute names
//! the Go SDK uses on its spans are kept (`to`, `from`, `edgeID`, `flowID`,
//! `projectID`), so a mixed Go and Rust flow reads the same; tiny's own are under
//! `tiny.`. The runtime's own spans (a signal, a gRPC or NATS call) are `tracing` spans
//! under the target [`TARGET`].

use std::{
    cell::{Cell, RefCell},
    sync::{
        Arc, PoisonError, RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::SystemTime,
};

use tracing::Span;

use crate::{error::Error, flow::Node, msg::Msg, redact::Secrets};

use super::address::Source;

/// The `tracing` target of the runtime's spans around hops (a signal, a call to another
/// module) and of their events.
pub const TARGET: &str = "tiny::flow";

/// The most bytes of a payload a `data` event keeps.
pub const MAX_PAYLOAD: usize = 16 * 1024;

use crate::contract::label::{FLOW_NAME as FLOW_LABEL, PROJECT_NAME as PROJECT_LABEL};

/// A span's identity, as W3C trace context carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanIds {
    /// The trace's id (never 0).
    pub trace_id: u128,
    /// The span's id (never 0).
    pub span_id: u64,
    /// Whether the trace is recorded (W3C's `sampled` flag).
    pub sampled: bool,
}

/// The parent of a hop span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpanParent {
    /// The parent's identity.
    pub ids: SpanIds,
    /// Whether it is another process's span (read from a request's trace context).
    pub remote: bool,
}

/// What becomes of hop spans: installed once by whoever exports them
/// ([`set_hop_spans`]).
pub trait HopSpans: Send + Sync {
    /// The parent of a hop that no other hop sent (a signal's, another module's
    /// message's), from what is current where it is delivered; `None` starts a trace.
    fn parent(&self) -> Option<SpanParent>;

    /// Whether the trace `trace_id`, begun by a hop without a parent, is sampled (the
    /// exporter's sampler decides, as for any root span); the hops under it inherit
    /// the decision. Every trace, unless the sink says otherwise.
    fn sample_root(&self, trace_id: u128) -> bool {
        let _ = trace_id;
        true
    }

    /// A recorded hop span ended (a hop whose trace is not sampled is not given).
    fn ended(&self, hop: EndedHop<'_>);
}

/// A hop span that ended, borrowed from the engine; `payload`, the `data` event's
/// JSON, is the sink's to keep.
#[derive(Debug)]
pub struct EndedHop<'a> {
    /// The span's identity.
    pub ids: SpanIds,
    /// Its parent, if any.
    pub parent: Option<SpanParent>,
    /// When the delivery began.
    pub start: SystemTime,
    /// When it answered.
    pub end: SystemTime,
    /// The module's name (`tiny.module`).
    pub module: &'a str,
    /// The node (`tiny.node`); the span is named `node:port` (`to`).
    pub node: &'a str,
    /// The port (`tiny.port`).
    pub port: &'a str,
    /// The node's component (`tiny.component`).
    pub component: &'a str,
    /// The sender, `node:port`, or `signal` (`from`).
    pub from: &'a str,
    /// The edge it came along, empty for none (`edgeID`).
    pub edge_id: &'a str,
    /// The flow's name, empty for none (`flowID`).
    pub flow_id: &'a str,
    /// The project's name, empty for none (`projectID`).
    pub project_id: &'a str,
    /// Hops from the flow run's start (`tiny.depth`).
    pub depth: u32,
    /// The attempt along the edge, from 1 (`tiny.attempt`).
    pub attempt: u32,
    /// How it failed, secrets masked; `None` when it answered.
    pub error: Option<&'a Error>,
    /// The input, as JSON masked and cut at [`MAX_PAYLOAD`] bytes (the Go SDK's `data`
    /// event); `None` when there was none (a system port, a refusal).
    pub payload: Option<String>,
    /// The edge expressions that failed making the input (Go's `expression_error`
    /// events).
    pub expressions: &'a [tiny_expr::EvalError],
}

/// Whether a sink is installed: what an unrecorded hop reads (one atomic load).
static RECORDING: AtomicBool = AtomicBool::new(false);

/// The sink installed.
static SINK: RwLock<Option<&'static dyn HopSpans>> = RwLock::new(None);

/// Installs what becomes of hop spans; `None` stops recording them.
pub fn set_hop_spans(sink: Option<&'static dyn HopSpans>) {
    *SINK.write().unwrap_or_else(PoisonError::into_inner) = sink;
    RECORDING.store(sink.is_some(), Ordering::Release);
}

#[inline]
fn sink() -> Option<&'static dyn HopSpans> {
    if !RECORDING.load(Ordering::Acquire) {
        return None;
    }
    *SINK.read().unwrap_or_else(PoisonError::into_inner)
}

thread_local! {
    /// The hop whose handler runs on this thread.
    static CURRENT: Cell<Option<SpanIds>> = const { Cell::new(None) };
}

/// The hop span whose handler runs here, while a sink is installed: the parent of a
/// span the runtime makes for what the handler sends (a call to another module). A
/// hop of a trace not sampled is current too (`sampled` is false): what it sends
/// inherits the decision, and a log line leaves its ids out.
pub fn current_hop() -> Option<SpanIds> {
    CURRENT.with(Cell::get)
}

/// Makes `ids` the [current hop](current_hop) until dropped.
pub(crate) struct Entered(Option<SpanIds>);

impl Entered {
    #[inline]
    pub(crate) fn new(ids: SpanIds) -> Self {
        Entered(CURRENT.with(|c| c.replace(Some(ids))))
    }
}

impl Drop for Entered {
    #[inline]
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

/// A future that runs with the hop current where it was made: a delivery moved to a
/// task of its own stays under the hop that sent it.
pub(crate) struct InHop<F> {
    hop: Option<SpanIds>,
    future: F,
}

impl<F> InHop<F> {
    pub(crate) fn new(future: F) -> Self {
        InHop {
            hop: current_hop(),
            future,
        }
    }
}

impl<F: Future + Unpin> Future for InHop<F> {
    type Output = F::Output;

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        let _entered = self.hop.map(Entered::new);
        std::pin::Pin::new(&mut self.future).poll(cx)
    }
}

/// Random span and trace ids: a per-thread xorshift seeded from the system's generator
/// (ids must be unique, not secret).
fn random() -> u64 {
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            let mut b = [0u8; 8];
            // A failing generator still gives distinct threads distinct streams.
            if getrandom::fill(&mut b).is_err() {
                b = (std::ptr::from_ref(s) as u64 ^ 0x9e37_79b9_7f4a_7c15).to_le_bytes();
            }
            x = u64::from_le_bytes(b) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) | 1
    })
}

/// A hop span being recorded: what its end needs that the delivery does not keep.
pub(crate) struct Recording {
    sink: &'static dyn HopSpans,
    ids: SpanIds,
    parent: Option<SpanParent>,
    start: SystemTime,
    module: Arc<str>,
    payload: Option<String>,
}

/// The module's name, shared: one engine's hops all name the same module, so the
/// last one made on this thread serves (no copy per hop).
fn module_name(module: &str) -> Arc<str> {
    thread_local! {
        static LAST: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some(name) if **name == *module => name.clone(),
            _ => {
                let name: Arc<str> = module.into();
                *last = Some(name.clone());
                name
            }
        }
    })
}

impl Recording {
    /// Begins a hop's span when a sink is installed: under the current hop, else
    /// where the sink says.
    #[inline]
    pub(crate) fn start(module: &str) -> Option<Box<Recording>> {
        let sink = sink()?;
        Some(Self::begin(sink, module))
    }

    #[inline(never)]
    fn begin(sink: &'static dyn HopSpans, module: &str) -> Box<Recording> {
        let parent = match current_hop() {
            Some(ids) => Some(SpanParent { ids, remote: false }),
            None => sink.parent(),
        };
        let ids = match parent {
            Some(p) => SpanIds {
                trace_id: p.ids.trace_id,
                span_id: random(),
                sampled: p.ids.sampled,
            },
            None => {
                let trace_id = (u128::from(random()) << 64) | u128::from(random());
                SpanIds {
                    trace_id,
                    span_id: random(),
                    sampled: sink.sample_root(trace_id),
                }
            }
        };
        Box::new(Recording {
            sink,
            ids,
            parent,
            start: SystemTime::now(),
            module: module_name(module),
            payload: None,
        })
    }

    /// The span's identity.
    #[inline]
    pub(crate) fn ids(&self) -> SpanIds {
        self.ids
    }

    /// Whether its input is worth encoding for the `data` event.
    #[inline]
    pub(crate) fn sampled(&self) -> bool {
        self.ids.sampled
    }

    /// Keeps the input's JSON for the `data` event.
    pub(crate) fn set_payload(&mut self, payload: String) {
        self.payload = Some(payload);
    }

    /// Ends the span and hands it to the sink.
    #[allow(clippy::too_many_arguments, reason = "a hop's parts, which its delivery holds apart")]
    pub(crate) fn end(
        self,
        node: &Node,
        port: &str,
        source: &Source<'_>,
        depth: u32,
        attempt: u32,
        error: Option<&Error>,
        expressions: &[tiny_expr::EvalError],
    ) {
        if !self.ids.sampled {
            return;
        }
        let (from, edge_id) = match source {
            Source::Signal => ("signal", ""),
            Source::Edge { from, edge_id } => (*from, *edge_id),
        };
        let Recording {
            sink,
            ids,
            parent,
            start,
            module,
            payload,
        } = self;
        sink.ended(EndedHop {
            ids,
            parent,
            start,
            end: SystemTime::now(),
            module: &module,
            node: &node.name,
            port,
            component: &node.spec.component,
            from,
            edge_id,
            flow_id: node.labels.get(FLOW_LABEL).map_or("", String::as_str),
            project_id: node.labels.get(PROJECT_LABEL).map_or("", String::as_str),
            depth,
            attempt,
            error,
            payload,
            expressions,
        });
    }
}

/// Records how a call ended on its span: `tiny.outcome` is `ok` or `error`; an error
/// also sets the span's OpenTelemetry status and, on a span with the field,
/// `tiny.error.code`. Nothing on a span that is not recorded. The runtime's `tracing`
/// spans (a gRPC or NATS request, a signal) record alike.
pub fn record_outcome<T>(span: &Span, result: &Result<T, Error>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(_) => {
            span.record("tiny.outcome", "ok");
        }
        Err(e) => {
            span.record("tiny.outcome", "error");
            span.record("otel.status_code", "ERROR");
            span.record("otel.status_description", tracing::field::display(e));
            if let Some(code) = e.code() {
                span.record("tiny.error.code", code);
            }
        }
    }
}

/// A hop's input as its span's `data` event keeps it (the Go SDK's event): the JSON,
/// secret fields masked, cut at [`MAX_PAYLOAD`] bytes.
pub(crate) fn payload(input: &Msg, secrets: &Secrets) -> String {
    // Straight from the typed value, unless something may need masking: a declared
    // secret, or a key that may name a credential.
    let direct = if secrets.is_empty() {
        input
            .to_json_bytes()
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .filter(|text| !may_hold_credential(text))
    } else {
        None
    };
    let text = direct.or_else(|| input.json().ok().map(|v| secrets.masked_published(v).to_string()));
    let Some(mut text) = text else {
        return "<not JSON>".to_owned();
    };
    if text.len() > MAX_PAYLOAD {
        let mut cut = MAX_PAYLOAD;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// A message's masked JSON ([`payload`]), for the tests.
#[cfg(test)]
struct Payload<'a>(&'a Msg, &'a Secrets);

#[cfg(test)]
impl std::fmt::Display for Payload<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&payload(self.0, self.1))
    }
}

/// Whether JSON `text` may hold something masking would hide: an object key that
/// names a credential ([`is_credential_key`](crate::redact::is_credential_key)), or a
/// string under `key` or `name` that does (a `{key, value}` pair such as a header
/// list). Reads only the keys and those values, not every byte (a recorded hop runs it
/// over its whole input). A string with an escape in such a place counts as a yes (it
/// may spell a name in escapes), and so does text that does not read as JSON: the
/// payload then takes the masking way, which decides on the parsed value.
fn may_hold_credential(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    // Whether the last key read was `key` or `name`.
    let mut pair_key = false;
    while let Some(open) = bytes[at..].iter().position(|&b| b == b'"') {
        let start = at + open + 1;
        let mut end = start;
        let mut escaped = false;
        loop {
            match bytes.get(end) {
                None => return true,
                Some(b'\\') => {
                    escaped = true;
                    end += 2;
                }
                Some(b'"') => break,
                Some(_) => end += 1,
            }
        }
        at = end + 1;
        let is_key = bytes[at..]
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|&b| b == b':');
        // `start` follows a quote and `end` stands on one: both are char boundaries.
        let string = &text[start..end];
        if is_key {
            if escaped || crate::redact::is_credential_key(string) {
                return true;
            }
            pair_key = !escaped && (string == "key" || string == "name");
        } else if pair_key {
            if escaped || crate::redact::is_credential_key(string) {
                return true;
            }
            pair_key = false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A span's `data` payload masks declared secrets and, as Go's spans, whatever a
    /// credential-shaped key holds; a payload with neither is written as it is.
    #[test]
    fn a_payload_masks_credential_shaped_keys() {
        let plain = Msg::new(json!({"city": "Oslo"}));
        assert_eq!(Payload(&plain, Secrets::none()).to_string(), r#"{"city":"Oslo"}"#);
        let keyed = Msg::new(json!({"city": "Oslo", "auth": {"api_key": "sk-1"}}));
        assert_eq!(
            Payload(&keyed, Secrets::none()).to_string(),
            r#"{"city":"Oslo","auth":{"api_key":"<redacted>"}}"#
        );
        // A value that only mentions a credential's name is not masked.
        let mention = Msg::new(json!({"note": "reset your password"}));
        assert_eq!(
            Payload(&mention, Secrets::none()).to_string(),
            r#"{"note":"reset your password"}"#
        );
    }

    /// What the payload's quick look lets through unmasked is only what masking would
    /// leave alone: a `{key, value}` or `{name, value}` pair naming a credential, and a
    /// key spelled in escapes (as a peer's raw JSON may), are masked too.
    #[test]
    fn a_payload_masks_credential_pairs_and_escaped_keys() {
        let pair = Msg::new(json!({"headers": [{"key": "Authorization", "value": "Bearer x"}]}));
        assert_eq!(
            Payload(&pair, Secrets::none()).to_string(),
            r#"{"headers":[{"key":"Authorization","value":"<redacted>"}]}"#
        );
        let named = Msg::new(json!({"headers": [{"name": "X-Api-Key", "value": "k-1"}], "n": 1}));
        assert_eq!(
            Payload(&named, Secrets::none()).to_string(),
            r#"{"headers":[{"name":"X-Api-Key","value":"<redacted>"}],"n":1}"#
        );
        let escaped = Msg::from_json_bytes(br#"{"p\u0061ssword" : "hunter2", "user": "ada"}"#.to_vec());
        assert_eq!(
            Payload(&escaped, Secrets::none()).to_string(),
            r#"{"password":"<redacted>","user":"ada"}"#
        );
        // A pair whose name is no credential, and a credential's name as a plain
        // value, stay as they are.
        let plain = Msg::new(json!({"headers": [{"key": "Accept", "value": "*/*"}], "note": "token"}));
        assert_eq!(
            Payload(&plain, Secrets::none()).to_string(),
            r#"{"headers":[{"key":"Accept","value":"*/*"}],"note":"token"}"#
        );
    }
}

//! Hooks that see every hop: the harness collects arrivals with one, the runtime
//! records TinyTracker hops and spans with another.

use std::{
    borrow::Cow,
    sync::Arc,
    time::{Duration, SystemTime},
};

use serde_json::Value;

use crate::{error::Error, msg::Msg, redact::Secrets};

/// What happened at a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HopKind {
    /// A node emitted on one of its source ports (before fan-out).
    Emitted,
    /// A node's target port handled a message (after the edge mapping).
    Delivered,
}

/// One event at one port.
#[derive(Debug)]
pub struct HopEvent<'a> {
    /// Emitted or delivered.
    pub kind: HopKind,
    /// The node.
    pub node: &'a str,
    /// The port on that node.
    pub port: &'a str,
    /// For deliveries along an edge: `"<node>:<port>"` it came from.
    pub from: Option<&'a str>,
    /// For deliveries along an edge: the edge's id.
    pub edge_id: Option<&'a str>,
    /// The payload (for deliveries, the port's input after mapping). Typed or JSON:
    /// [`Msg::json`] makes (and keeps) its JSON, so an observer that does not read the
    /// payload costs no encoding.
    ///
    /// `None` for a delivery when no observer [wants the data](Observer::wants_data)
    /// of the node: the handler then gets the value itself, not a copy kept for
    /// the observer.
    pub data: Option<&'a Msg>,
    /// When it started.
    pub started: SystemTime,
    /// How long the handler (and everything downstream of it) took; zero for emits.
    pub duration: Duration,
    /// The hop's depth.
    pub depth: u32,
    /// The failure, if the handler failed (secrets of the node already masked in
    /// its message).
    pub error: Option<&'a Error>,
    /// Which delivery attempt along the edge this was: 1, then 2... for retries.
    pub attempt: u32,
    /// Where the port's secret fields are in `data`: an observer that writes or
    /// prints the payload uses [`HopEvent::redacted_json`].
    pub secrets: &'a Secrets,
    /// For deliveries along an edge: the edge expressions that failed making the
    /// input (each gave `null` or left its text in place, as in the Go SDK), secret
    /// values masked. Empty when all rendered, or when the engine runs strict (the
    /// hop then fails with code `MAPPING`).
    pub expression_errors: &'a [tiny_expr::EvalError],
}

impl HopEvent<'_> {
    /// The payload as JSON with the port's secret fields masked: what an observer may
    /// write or print. Borrowed when the port has no secrets.
    /// `None` when the event carries no payload.
    pub fn redacted_json(&self) -> crate::Result<Option<Cow<'_, Value>>> {
        let Some(data) = self.data else { return Ok(None) };
        Ok(Some(self.secrets.masked_published(data.json()?)))
    }
}

/// Sees every hop. Called inline on the hot path: keep it cheap.
pub trait Observer: Send + Sync + 'static {
    /// One event.
    fn on_hop(&self, event: &HopEvent<'_>);

    /// Whether this observer reads [`HopEvent::data`] of deliveries to `node`. To
    /// show the input after the handler ran, the engine keeps a reference to it, so
    /// the handler gets a copy of the value rather than the value: an observer that
    /// only counts (metrics) says `false`. Asked once per delivery: keep it cheap.
    fn wants_data(&self, node: &str) -> bool {
        let _ = node;
        true
    }
}

/// Several observers, each seeing every hop in order: the runtime's metrics, its
/// TinyTracker recorder, a test's collector...
#[derive(Default, Clone)]
pub struct Observers(Vec<Arc<dyn Observer>>);

impl Observers {
    /// Adds one.
    pub fn push(&mut self, observer: Arc<dyn Observer>) {
        self.0.push(observer);
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// `true` when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// One observer for the engine: none, the only one, or all of them in turn.
    pub fn into_observer(mut self) -> Option<Arc<dyn Observer>> {
        match self.0.len() {
            0 => None,
            1 => self.0.pop(),
            _ => Some(Arc::new(self)),
        }
    }
}

impl std::fmt::Debug for Observers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observers").field("len", &self.0.len()).finish()
    }
}

impl Observer for Observers {
    fn on_hop(&self, event: &HopEvent<'_>) {
        for observer in &self.0 {
            observer.on_hop(event);
        }
    }

    fn wants_data(&self, node: &str) -> bool {
        self.0.iter().any(|o| o.wants_data(node))
    }
}

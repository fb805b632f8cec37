//! Hooks that see every hop: the harness collects arrivals with one, the runtime
//! records TinyTracker hops and spans with another.

use std::time::{Duration, SystemTime};

use crate::{error::Error, msg::Msg};

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
    pub data: &'a Msg,
    /// When it started.
    pub started: SystemTime,
    /// How long the handler (and everything downstream of it) took; zero for emits.
    pub duration: Duration,
    /// The hop's depth.
    pub depth: u32,
    /// The failure, if the handler failed.
    pub error: Option<&'a Error>,
}

/// Sees every hop. Called inline on the hot path: keep it cheap.
pub trait Observer: Send + Sync + 'static {
    /// One event.
    fn on_hop(&self, event: &HopEvent<'_>);
}

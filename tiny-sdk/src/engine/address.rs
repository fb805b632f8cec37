//! What a delivery is addressed with, and the traits the runtime plugs in: the bottom
//! of the engine, which every other part may use and which uses none of them.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::{error::Result, flow::PortAddress, hop::Hop, message::Reply, msg::Msg};

/// Where a delivered message came from.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// From outside the flow (a signal, a test, another process): the payload is
    /// decoded as it is.
    Signal,
    /// Along an edge: the target's mapping for `from` shapes the input.
    Edge {
        /// `"<node>:<port>"` of the sender.
        from: &'a str,
        /// The edge's id.
        edge_id: &'a str,
    },
}

/// Carries messages to nodes of other modules (gRPC, NATS or JetStream in
/// `tiny-runtime`).
pub trait RemoteRouter: Send + Sync + 'static {
    /// Delivers `delivery` to its node in `module`. The message is typed or JSON
    /// ([`Msg::to_json_bytes`] writes it for the wire without a JSON tree); its
    /// [`attempt`](Delivery::attempt) along the sender's edge may be told to the
    /// receiver, whose metrics and spans count retries; a hop of a durable run
    /// ([`Hop::run`]) is stored, not waited for.
    fn route(&self, module: &str, delivery: Delivery<'_>) -> BoxFuture<'static, Result<Reply>>;
}

/// Tells the engine which nodes exist where its nodes come from (the cluster's
/// TinyNodes, in `tiny-runtime`), so that a message for a node of this module that does
/// not exist fails at once instead of waiting for it to load.
pub trait NodeDirectory: Send + Sync + 'static {
    /// `Some(true)`: the node exists (it may still be loading); `Some(false)`: it does
    /// not (the list is complete); `None`: not known yet (the module is starting).
    fn exists(&self, node: &str) -> Option<bool>;

    /// Whether a node that [`exists`](Self::exists) says is not there is really gone.
    /// The list may follow a watch, which lags behind a node created a moment ago: before
    /// a message for the node fails for good, the engine asks here (the runtime asks the
    /// API server). `Some(true)`: gone; `Some(false)`: it exists and the list has not
    /// caught up (the message waits for it to load); `None`: cannot tell now (it waits,
    /// and asks again). The default believes the list.
    fn confirm_absent<'a>(&'a self, node: &'a str) -> BoxFuture<'a, Option<bool>> {
        Box::pin(std::future::ready(self.exists(node).map(|exists| !exists)))
    }
}

/// One message on its way to a node's port: what every layer of a delivery passes
/// on, from the transport (or the emitting node) to the handler.
///
/// ```
/// use tiny_sdk::{Hop, Msg, engine::{Delivery, Source}};
/// let d = Delivery::new("f.m.greeter-1", "input", Source::Signal, Msg::from_json(serde_json::json!({"name": "Ada"})))
///     .hop(Hop::default())
///     .attempt(2);
/// assert_eq!(d.module(), Some("m"));
/// let parsed = Delivery::to("f.m.greeter-1:input", Msg::from_json(serde_json::json!(null))).expect("an address");
/// assert_eq!((parsed.node, parsed.port), ("f.m.greeter-1", "input"));
/// ```
#[derive(Debug)]
pub struct Delivery<'a> {
    /// The receiving node.
    pub node: &'a str,
    /// Its port.
    pub port: &'a str,
    /// Where the message came from.
    pub source: Source<'a>,
    /// The message.
    pub msg: Msg,
    /// Depth, cancellation, leadership and the durable run, if any.
    pub hop: Hop,
    /// Which attempt along the sender's edge this is (1 for the first).
    pub attempt: u32,
    /// The module part of `node`, parsed once (when the edge loaded, or here).
    module: Option<&'a str>,
}

impl<'a> Delivery<'a> {
    /// `msg` for `node`'s `port`, from `source`: a first attempt with a fresh hop.
    pub fn new(node: &'a str, port: &'a str, source: Source<'a>, msg: Msg) -> Self {
        let module = crate::flow::parse_node_name(node).map(|(m, _)| m);
        Self {
            node,
            port,
            source,
            msg,
            hop: Hop::default(),
            attempt: 1,
            module,
        }
    }

    /// `msg` from outside the flow for `address` (`"<node>:<port>"`), as a signal
    /// sends it; an address without both parts is refused.
    pub fn to(address: &'a str, msg: Msg) -> Result<Self> {
        // Split as `PortAddress::parse` does, without copying the parts.
        match address.rsplit_once(':') {
            Some((node, port)) if !node.is_empty() && !port.is_empty() => {
                Ok(Self::new(node, port, Source::Signal, msg))
            }
            _ => Err(PortAddress::parse(address)
                .err()
                .unwrap_or_else(|| crate::Error::permanent(format!("`{address}` is not `<node>:<port>`")))),
        }
    }

    /// Along an edge whose target's module was parsed when it loaded.
    pub(crate) fn along(
        (node, port, module): (&'a str, &'a str, Option<&'a str>),
        source: Source<'a>,
        msg: Msg,
        hop: Hop,
        attempt: u32,
    ) -> Self {
        Self {
            node,
            port,
            source,
            msg,
            hop,
            attempt,
            module,
        }
    }

    /// With these hop facts.
    #[must_use]
    pub fn hop(mut self, hop: Hop) -> Self {
        self.hop = hop;
        self
    }

    /// As attempt `attempt` along the sender's edge.
    #[must_use]
    pub fn attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }

    /// The module part of the node's name, when it has one.
    pub fn module(&self) -> Option<&'a str> {
        self.module
    }

    /// `"<node>:<port>"`.
    pub fn address(&self) -> PortAddress {
        PortAddress {
            node: self.node.to_owned(),
            port: self.port.to_owned(),
        }
    }
}

/// Told the name of a node whose status changed outside a reconcile.
pub type ChangeFn = Arc<dyn Fn(&str) + Send + Sync>;

//! Which wire a module speaks to other modules, and what it tells the cluster about it.
//!
//! Without `TINY_NATS_URL` a module is on gRPC, as before. With it, the module
//! listens on its NATS subjects and, beside them, still serves gRPC: while the broker
//! answers, its TinyModule advertises `nats://tinymodule.<module>.msg`, `/readyz` is
//! ready and the `Transport` condition is `True`; while it does not (at start, or
//! after the broker went away), the TinyModule advertises the gRPC address (tiny
//! peers reach it there meanwhile), `/readyz` says why it is not ready and the
//! condition is `False`. The Go SDK falls back to gRPC in silence and only at start.
//!
//! [`Routes`] sends each message the way its peer listens: over NATS to a module
//! that advertises a `nats://` address (or none: Go modules on NATS are reached by
//! subject alone), over gRPC to one that advertises `host:port`.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError, RwLock},
};

use futures::{future::BoxFuture, stream::BoxStream};
use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use tiny_sdk::{
    Reply, Result,
    engine::{Delivery, RemoteRouter},
};
use tokio::sync::watch;

use crate::{
    carrier::Carrier,
    discovery::Discovery,
    grpc::Pool,
    jetstream::JetStreamRouter,
    nats::{Credentials, Link, LinkError, LinkState, NatsRouter, wire},
};

/// The TinyModule condition that says whether the module is on the wire it was told
/// to use.
pub const CONDITION: &str = "Transport";

/// The module's wire: gRPC, or NATS (with gRPC beside it).
#[derive(Debug)]
pub struct Transport {
    module: String,
    grpc_addr: String,
    nats: Nats,
    /// When the condition last changed, and to what.
    since: Mutex<Option<(bool, Time)>>,
}

#[derive(Debug)]
enum Nats {
    /// Not asked for.
    Off,
    /// Asked for, and connecting or connected.
    On(Link),
    /// Asked for with a URL that cannot be used.
    Unusable(String),
}

impl Transport {
    /// gRPC only, advertising `grpc_addr`.
    pub fn grpc(module: &str, grpc_addr: &str) -> Self {
        tiny_sdk::limits::set_wire_max(crate::grpc::DEFAULT_MAX_MESSAGE_SIZE);
        Self::new(module, grpc_addr, Nats::Off)
    }

    /// NATS on `link`, gRPC at `grpc_addr` while the broker does not answer.
    pub fn nats(module: &str, grpc_addr: &str, link: Link) -> Self {
        Self::new(module, grpc_addr, Nats::On(link))
    }

    /// NATS was asked for but cannot be used (`why`): gRPC, and the condition and
    /// `/readyz` say so.
    pub fn nats_unusable(module: &str, grpc_addr: &str, why: String) -> Self {
        Self::new(module, grpc_addr, Nats::Unusable(why))
    }

    /// What a module binary does with `TINY_NATS_URL` (`nats_url`): connect, waiting up
    /// to [`CONNECT_TIMEOUT`](crate::nats::CONNECT_TIMEOUT) for the broker, and go on
    /// (on gRPC while the broker does not answer); a URL that cannot be used is logged
    /// and shown. No URL: gRPC.
    pub async fn connect(module: &str, grpc_addr: &str, nats_url: Option<&str>) -> Self {
        Self::connect_with(module, grpc_addr, nats_url, Ok(Credentials::Url)).await
    }

    /// [`connect`](Self::connect) proving who the module is with `credentials` (its
    /// own nkey or `.creds` file); credentials that could not be read make NATS
    /// unusable, as a bad URL does, and say why.
    pub async fn connect_with(
        module: &str,
        grpc_addr: &str,
        nats_url: Option<&str>,
        credentials: Result<Credentials, LinkError>,
    ) -> Self {
        let Some(url) = nats_url.map(str::trim).filter(|u| !u.is_empty()) else {
            return Self::grpc(module, grpc_addr);
        };
        let link = match credentials {
            Ok(c) => Link::connect_with_credentials(url, Some(module), &c).await,
            Err(e) => Err(e),
        };
        match link {
            Ok(link) => {
                if link.wait_up(crate::nats::CONNECT_TIMEOUT).await {
                    // What the broker takes, read once at connect: components whose
                    // own limits are larger say so (a default broker takes 1 MiB).
                    let max = link.client().server_info().max_payload;
                    tiny_sdk::limits::set_wire_max(max);
                    tracing::info!(url = %link.url(), max_payload = max, "NATS broker connected");
                } else {
                    tracing::warn!(
                        url = %link.url(),
                        grpc = %grpc_addr,
                        "NATS does not answer; serving gRPC meanwhile and reconnecting every 2 s (see /readyz and the TinyModule's Transport condition)"
                    );
                }
                Self::nats(module, grpc_addr, link)
            }
            Err(e) => {
                tracing::error!(error = %e, grpc = %grpc_addr, "NATS cannot be used; serving gRPC only");
                Self::nats_unusable(module, grpc_addr, e.to_string())
            }
        }
    }

    fn new(module: &str, grpc_addr: &str, nats: Nats) -> Self {
        Self {
            module: module.to_owned(),
            grpc_addr: grpc_addr.to_owned(),
            nats,
            since: Mutex::new(None),
        }
    }

    /// The NATS connection, when there is one.
    pub fn link(&self) -> Option<&Link> {
        match &self.nats {
            Nats::On(link) => Some(link),
            _ => None,
        }
    }

    /// Whether messages come over NATS now (the broker answers).
    fn on_nats(&self) -> bool {
        self.link().is_some_and(Link::is_up)
    }

    /// `nats` while messages come over NATS, else `grpc` (for logs and metrics).
    pub fn current(&self) -> &'static str {
        if self.on_nats() { "nats" } else { "grpc" }
    }

    /// What the TinyModule's `status.addr` says now.
    pub fn advertised(&self) -> String {
        if self.on_nats() {
            wire::advertised_addr(&self.module)
        } else {
            self.grpc_addr.clone()
        }
    }

    /// Why the module is not on the wire it was told to use (`/readyz`'s reason);
    /// `Ok` on plain gRPC and while NATS answers.
    pub fn check(&self) -> std::result::Result<(), String> {
        match &self.nats {
            Nats::Off => Ok(()),
            Nats::Unusable(why) => Err(format!("NATS: {why}; serving gRPC at {} instead", self.grpc_addr)),
            Nats::On(link) => crate::nats::router::link_health(link)
                .map_err(|why| format!("NATS: {why}; serving gRPC at {} meanwhile", self.grpc_addr)),
        }
    }

    /// The `Transport` condition, on a module asked to use NATS.
    pub fn condition(&self) -> Option<Condition> {
        if matches!(self.nats, Nats::Off) {
            return None;
        }
        let result = self.check();
        let ok = result.is_ok();
        let time = {
            let mut since = self.since.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match &*since {
                Some((was, t)) if *was == ok => t.clone(),
                _ => {
                    let t = Time(Timestamp::now());
                    *since = Some((ok, t.clone()));
                    t
                }
            }
        };
        let (status, reason, message) = match result {
            Ok(()) => (
                "True",
                "Nats",
                format!("on NATS: {}", wire::advertised_addr(&self.module)),
            ),
            Err(why) if matches!(self.nats, Nats::Unusable(_)) => ("False", "NatsUnusable", why),
            Err(why) => ("False", "NatsUnreachable", why),
        };
        Some(Condition {
            type_: CONDITION.into(),
            status: status.into(),
            reason: reason.into(),
            message,
            last_transition_time: time,
            observed_generation: None,
        })
    }

    /// Changes of the broker connection, when there is one.
    pub fn changes(&self) -> Option<watch::Receiver<LinkState>> {
        self.link().map(Link::state)
    }
}

/// Sends each message the way its peer listens (see the module docs), over
/// [`Carrier`]s it knows only by their trait: the direct one (gRPC) for modules that
/// advertise an address it takes, and a broker (NATS or JetStream), when there is
/// one, for the others and for the hops it claims.
#[derive(Debug)]
pub struct Routes {
    direct: Arc<dyn Carrier>,
    broker: Option<Arc<dyn Carrier>>,
    /// This module's own wire: what it advertises and how it is doing.
    own: Option<Arc<Transport>>,
    /// Modules whose advertised address no carrier here listens at (a module on NATS,
    /// seen from one that is not), with that address.
    elsewhere: RwLock<HashMap<String, String>>,
}

impl Routes {
    /// gRPC through `pool`, and NATS through `nats` when given.
    pub fn new(pool: Arc<Pool>, nats: Option<NatsRouter>) -> Self {
        Self::over(pool, nats.map(|r| Arc::new(r) as Arc<dyn Carrier>))
    }

    /// gRPC through `pool`, and JetStream through `router` (Go's
    /// `TINY_NATS_TRANSPORT=jetstream`): a durable run's hops always go there.
    pub fn jetstream(pool: Arc<Pool>, router: JetStreamRouter) -> Self {
        Self::over(pool, Some(Arc::new(router)))
    }

    /// gRPC through `pool`, and NATS when `transport` has a link.
    pub fn for_transport(pool: Arc<Pool>, transport: &Transport) -> Self {
        Self::new(pool, transport.link().cloned().map(NatsRouter::new))
    }

    /// `direct` for the modules that advertise an address it listens at, `broker`
    /// (when given) for every other module and for the hops it
    /// [claims](Carrier::claims): any two carriers, whatever their wire.
    pub fn over(direct: Arc<dyn Carrier>, broker: Option<Arc<dyn Carrier>>) -> Self {
        Self {
            direct,
            broker,
            own: None,
            elsewhere: RwLock::default(),
        }
    }

    /// Tells the cluster what `transport` says of this module's wire: its address,
    /// its `Transport` condition, its readiness (see [`Carrier::advertised`]).
    #[must_use]
    pub fn advertising(mut self, transport: Arc<Transport>) -> Self {
        self.own = Some(transport);
        self
    }

    fn elsewhere(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, String>> {
        self.elsewhere.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The carrier for `module`, or why it cannot be reached from here.
    fn pick(&self, module: &str) -> std::result::Result<&dyn Carrier, tiny_sdk::Error> {
        // A peer that advertises a direct address is reached there.
        if self.direct.reaches(module) {
            return Ok(&*self.direct);
        }
        if let Some(broker) = &self.broker {
            return Ok(&**broker);
        }
        let elsewhere = self.elsewhere.read().unwrap_or_else(PoisonError::into_inner);
        match elsewhere.get(module) {
            Some(addr) => Err(tiny_sdk::Error::permanent(format!(
                "module `{module}` listens at {addr}, which this module cannot reach (a module on NATS needs TINY_NATS_URL)"
            ))
            .with_code(tiny_sdk::error::code::UNREACHABLE)),
            // The direct carrier says why (an unknown module).
            None => Ok(&*self.direct),
        }
    }
}

impl RemoteRouter for Routes {
    fn route(&self, module: &str, d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        if let Some(broker) = self.broker.as_ref().filter(|b| b.claims(&d)) {
            return broker.route(module, d);
        }
        match self.pick(module) {
            Ok(carrier) => carrier.route(module, d),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

impl Discovery for Routes {
    fn register(&self, module: &str, addr: &str) {
        let on_broker = self.broker.as_ref().filter(|b| b.listens_at(addr));
        if on_broker.is_some() || !self.direct.listens_at(addr) {
            // On the broker now, or where no carrier here goes: no longer at a
            // direct address.
            self.direct.deregister(module);
            self.elsewhere().insert(module.to_owned(), addr.trim().to_owned());
            if let Some(broker) = on_broker {
                broker.register(module, addr);
            }
        } else {
            self.elsewhere().remove(module);
            self.direct.register(module, addr);
        }
    }

    fn deregister(&self, module: &str) {
        self.elsewhere().remove(module);
        self.direct.deregister(module);
        if let Some(broker) = &self.broker {
            broker.deregister(module);
        }
    }
}

// All the carriers as one: what a module holds.
impl Carrier for Routes {
    fn name(&self) -> &'static str {
        match &self.broker {
            Some(broker) if broker.health().is_ok() => broker.name(),
            _ => self.direct.name(),
        }
    }

    fn listens_at(&self, addr: &str) -> bool {
        self.direct.listens_at(addr) || self.broker.as_ref().is_some_and(|b| b.listens_at(addr))
    }

    fn reaches(&self, module: &str) -> bool {
        self.pick(module).is_ok_and(|c| c.reaches(module))
    }

    fn claims(&self, delivery: &Delivery<'_>) -> bool {
        self.broker.as_ref().is_some_and(|b| b.claims(delivery))
    }

    fn health(&self) -> std::result::Result<(), String> {
        if let Some(own) = &self.own {
            return own.check();
        }
        self.direct.health()?;
        self.broker.as_ref().map_or(Ok(()), |b| b.health())
    }

    fn advertised(&self) -> Option<String> {
        self.own.as_ref().map(|own| own.advertised())
    }

    fn condition(&self) -> Option<Condition> {
        self.own.as_ref()?.condition()
    }

    fn changes(&self) -> Option<BoxStream<'static, ()>> {
        let link = self.own.as_ref()?.changes()?;
        let changed = futures::stream::unfold(link, |mut link| async move {
            link.changed().await.ok().map(|()| ((), link))
        });
        Some(Box::pin(changed))
    }
}

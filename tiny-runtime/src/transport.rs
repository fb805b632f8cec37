//! Which wire a module speaks to other modules, and what it tells the cluster about it.
//!
//! Without a broker a module is on gRPC, as before. With one (`TINY_NATS_URL`), the
//! module listens there and, beside it, still serves gRPC: while the broker answers,
//! its TinyModule advertises the broker's address (`nats://tinymodule.<module>.msg`),
//! `/readyz` is ready and the `Transport` condition is `True`; while it does not (at
//! start, or after the broker went away), the TinyModule advertises the gRPC address
//! (tiny peers reach it there meanwhile), `/readyz` says why it is not ready and the
//! condition is `False`. The Go SDK falls back to gRPC in silence and only at start.
//! [`Transport`] knows the broker only as a [`Presence`].
//!
//! [`Routes`] sends each message the way its peer listens, over a list of
//! [`Carrier`]s it knows only by their trait: over the broker to a module that
//! advertises the broker's address (or none: Go modules on NATS are reached by subject
//! alone), over gRPC to one that advertises `host:port`.

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

use crate::{
    carrier::{Carrier, Down, Presence},
    discovery::Discovery,
};

/// The TinyModule condition that says whether the module is on the wire it was told
/// to use.
pub const CONDITION: &str = "Transport";

/// The module's wire: gRPC, or a broker (with gRPC beside it).
#[derive(Debug)]
pub struct Transport {
    grpc_addr: String,
    /// The broker the module was told to use, if any.
    broker: Option<Arc<dyn Presence>>,
    /// When the condition last changed, and to what.
    since: Mutex<Option<(bool, Time)>>,
}

impl Transport {
    /// gRPC only, advertising `grpc_addr`.
    pub fn grpc(grpc_addr: &str) -> Self {
        tiny_sdk::limits::set_wire_max(crate::grpc::DEFAULT_MAX_MESSAGE_SIZE);
        Self {
            grpc_addr: grpc_addr.to_owned(),
            broker: None,
            since: Mutex::new(None),
        }
    }

    /// On `broker` (as [`nats::Broker`](crate::nats::Broker)), gRPC at `grpc_addr`
    /// while the broker does not carry.
    pub fn beside(grpc_addr: &str, broker: Arc<dyn Presence>) -> Self {
        Self {
            grpc_addr: grpc_addr.to_owned(),
            broker: Some(broker),
            since: Mutex::new(None),
        }
    }

    /// Whether messages come over the broker now.
    fn on_broker(&self) -> Option<&dyn Presence> {
        self.broker.as_deref().filter(|b| b.state().is_ok())
    }

    /// `nats` while messages come over the broker, else `grpc` (for logs and metrics).
    pub fn current(&self) -> &'static str {
        self.on_broker().map_or("grpc", Presence::name)
    }

    /// What the TinyModule's `status.addr` says now.
    pub fn advertised(&self) -> String {
        match self.on_broker() {
            Some(broker) => broker.address(),
            None => self.grpc_addr.clone(),
        }
    }

    /// Why the module is not on the wire it was told to use (`/readyz`'s reason);
    /// `Ok` on plain gRPC and while the broker answers.
    pub fn check(&self) -> std::result::Result<(), String> {
        self.down()
            .map_or(Ok(()), |(broker, down)| Err(self.why(broker, &down)))
    }

    /// The broker, when it was asked for and does not carry, and why.
    fn down(&self) -> Option<(&dyn Presence, Down)> {
        let broker = self.broker.as_deref()?;
        broker.state().err().map(|down| (broker, down))
    }

    fn why(&self, broker: &dyn Presence, down: &Down) -> String {
        let instead = match down {
            Down::Unusable(_) => "instead",
            Down::Unreachable(_) => "meanwhile",
        };
        format!(
            "{}: {}; serving gRPC at {} {instead}",
            broker.label(),
            down.why(),
            self.grpc_addr
        )
    }

    /// The `Transport` condition, on a module asked to use a broker.
    pub fn condition(&self) -> Option<Condition> {
        let broker = self.broker.as_deref()?;
        let down = broker.state().err();
        let ok = down.is_none();
        let time = {
            let mut since = self.since.lock().unwrap_or_else(PoisonError::into_inner);
            match &*since {
                Some((was, t)) if *was == ok => t.clone(),
                _ => {
                    let t = Time(Timestamp::now());
                    *since = Some((ok, t.clone()));
                    t
                }
            }
        };
        let (status, reason, message) = match down {
            None => (
                "True",
                broker.reason().to_owned(),
                format!("on {}: {}", broker.label(), broker.address()),
            ),
            Some(down) => (
                "False",
                format!("{}{}", broker.reason(), down.reason()),
                self.why(broker, &down),
            ),
        };
        Some(Condition {
            type_: CONDITION.into(),
            status: status.into(),
            reason,
            message,
            last_transition_time: time,
            observed_generation: None,
        })
    }

    /// Yields whenever what [`advertised`](Self::advertised),
    /// [`check`](Self::check) or [`condition`](Self::condition) say may have changed;
    /// `None`: they never do.
    pub fn changes(&self) -> Option<BoxStream<'static, ()>> {
        self.broker.as_ref()?.changes()
    }
}

/// Sends each message the way its peer listens (see the module docs), over
/// [`Carrier`]s it knows only by their trait, in the order given: a hop goes to the
/// first carrier that [claims](Carrier::claims) it (JetStream: a durable run's), else
/// to the first that [reaches](Carrier::reaches) its module (gRPC once the module
/// advertised `host:port`; a broker reaches every module, so it comes after the
/// carriers that reach only the modules they learnt of). A module is learnt by the
/// first carrier that [listens at](Carrier::listens_at) its address, and forgotten by
/// the others.
#[derive(Debug)]
pub struct Routes {
    carriers: Vec<Arc<dyn Carrier>>,
    /// This module's own wire: what it advertises and how it is doing.
    own: Option<Arc<Transport>>,
    /// Modules whose advertised address no carrier here listens at (a module on NATS,
    /// seen from one that is not), with that address.
    elsewhere: RwLock<HashMap<String, String>>,
}

impl Routes {
    /// Over `carriers`, the first one first (see [`Routes`]): any carriers, whatever
    /// their wire.
    pub fn over(carriers: impl IntoIterator<Item = Arc<dyn Carrier>>) -> Self {
        Self {
            carriers: carriers.into_iter().collect(),
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
        if let Some(carrier) = self.carriers.iter().find(|c| c.reaches(module)) {
            return Ok(&**carrier);
        }
        let unreachable =
            |why: String| Err(tiny_sdk::Error::permanent(why).with_code(tiny_sdk::error::code::UNREACHABLE));
        let elsewhere = self.elsewhere.read().unwrap_or_else(PoisonError::into_inner);
        match (elsewhere.get(module), self.carriers.first()) {
            (Some(addr), _) => unreachable(format!(
                "module `{module}` listens at {addr}, which no transport of this module reaches (a module on NATS needs TINY_NATS_URL)"
            )),
            // The first carrier says why (an unknown module).
            (None, Some(first)) => Ok(&**first),
            (None, None) => unreachable(format!(
                "module `{module}`: this module has no transport to other modules"
            )),
        }
    }
}

impl RemoteRouter for Routes {
    fn route(&self, module: &str, d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        let carrier = match self.carriers.iter().find(|c| c.claims(&d)) {
            Some(claimed) => Ok(&**claimed),
            None => self.pick(module),
        };
        match carrier {
            Ok(carrier) => carrier.route(module, d),
            Err(e) => Box::pin(std::future::ready(Err(e))),
        }
    }
}

impl Discovery for Routes {
    fn register(&self, module: &str, addr: &str) {
        let at = self.carriers.iter().position(|c| c.listens_at(addr));
        for (i, carrier) in self.carriers.iter().enumerate() {
            if Some(i) == at {
                carrier.register(module, addr);
            } else {
                // Moved away from it (to a broker, or where no carrier here goes).
                carrier.deregister(module);
            }
        }
        if at.is_some() {
            self.elsewhere().remove(module);
        } else {
            self.elsewhere().insert(module.to_owned(), addr.trim().to_owned());
        }
    }

    fn deregister(&self, module: &str) {
        self.elsewhere().remove(module);
        for carrier in &self.carriers {
            carrier.deregister(module);
        }
    }
}

// All the carriers as one: what a module holds.
impl Carrier for Routes {
    /// The last healthy carrier's (a broker's while it answers), else the first's.
    fn name(&self) -> &'static str {
        let healthy = self.carriers.iter().rev().find(|c| c.health().is_ok());
        healthy.or(self.carriers.first()).map_or("none", |c| c.name())
    }

    fn listens_at(&self, addr: &str) -> bool {
        self.carriers.iter().any(|c| c.listens_at(addr))
    }

    fn reaches(&self, module: &str) -> bool {
        self.pick(module).is_ok_and(|c| c.reaches(module))
    }

    fn claims(&self, delivery: &Delivery<'_>) -> bool {
        self.carriers.iter().any(|c| c.claims(delivery))
    }

    fn health(&self) -> std::result::Result<(), String> {
        if let Some(own) = &self.own {
            return own.check();
        }
        self.carriers.iter().try_for_each(|c| c.health())
    }

    fn advertised(&self) -> Option<String> {
        self.own.as_ref().map(|own| own.advertised())
    }

    fn condition(&self) -> Option<Condition> {
        self.own.as_ref()?.condition()
    }

    fn changes(&self) -> Option<BoxStream<'static, ()>> {
        self.own.as_ref()?.changes()
    }
}

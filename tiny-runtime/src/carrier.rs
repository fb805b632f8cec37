//! One shape for every transport to other modules, on the ground floor: gRPC, NATS
//! and JetStream implement [`Carrier`] as siblings, and
//! [`Routes`](crate::transport::Routes) chooses among trait objects, so that a later
//! transport is one more implementation and touches none of the others.

use futures::stream::BoxStream;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use tiny_sdk::engine::{Delivery, RemoteRouter};

use crate::discovery::Discovery;

/// Carries hops to other modules' nodes and their replies back: send to a node's
/// port and await the reply ([`RemoteRouter::route`]), learn where modules are
/// ([`Discovery`]), and say whether it can carry now ([`health`](Self::health)) and
/// what the module tells the cluster of it ([`advertised`](Self::advertised),
/// [`condition`](Self::condition)). The controllers hold one, whatever the wire.
pub trait Carrier: RemoteRouter + Discovery + std::fmt::Debug {
    /// `grpc`, `nats` or `jetstream`: for logs and metrics.
    fn name(&self) -> &'static str;

    /// Whether a module that advertises `addr` (its TinyModule's `status.addr`)
    /// listens on this carrier.
    fn listens_at(&self, addr: &str) -> bool;

    /// Whether this carrier knows how to reach `module`: gRPC once the module
    /// advertised an address, a broker for every module (subjects need no address).
    fn reaches(&self, module: &str) -> bool;

    /// Whether `delivery` must take this carrier whatever module it is for: a hop of
    /// a durable run is stored on JetStream, whoever takes it.
    fn claims(&self, delivery: &Delivery<'_>) -> bool {
        let _ = delivery;
        false
    }

    /// `Ok` while it can carry hops, else why not (`/readyz`'s words).
    fn health(&self) -> Result<(), String> {
        Ok(())
    }

    /// The address other modules reach this one at, for its TinyModule's
    /// `status.addr`; `None`: the one in the module's config.
    fn advertised(&self) -> Option<String> {
        None
    }

    /// The TinyModule condition that says how this module's wire is doing, if it
    /// has one.
    fn condition(&self) -> Option<Condition> {
        None
    }

    /// Yields whenever [`health`](Self::health), [`advertised`](Self::advertised) or
    /// [`condition`](Self::condition) may have changed; `None`: they never do.
    fn changes(&self) -> Option<BoxStream<'static, ()>> {
        None
    }
}

//! One shape for every transport to other modules, on the ground floor: gRPC, NATS
//! and JetStream implement [`Carrier`] (the sending half), [`Listen`] (the receiving
//! half) and [`Transceiver`] (the two as one, with the run stores of a transport that
//! keeps runs) as siblings. The transport layer chooses them from the module's
//! settings; [`Routes`](crate::transport::Routes) holds their carriers as trait objects
//! and the module binary starts their listeners as trait objects, so that a later
//! transport is one more implementation and touches none of the others.

use std::{future::Future, sync::Arc, task::Poll};

use futures::{future::BoxFuture, stream::BoxStream};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use tiny_sdk::{
    engine::{Delivery, Engine, RemoteRouter},
    run::{AnswerInbox, RunStore},
};

use crate::{discovery::Discovery, leader::Leadership};

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

/// A wire a module is told to be reached on beside its direct address (a broker:
/// NATS), as the module tells the cluster of it: the address it advertises there while
/// the wire is up, and why not when it is down.
/// [`Transport`](crate::transport::Transport) reports it (the TinyModule's
/// `status.addr`, its `Transport` condition, `/readyz`) knowing it only by this trait.
pub trait Presence: Send + Sync + std::fmt::Debug {
    /// `nats`: for logs and metrics while messages come this way.
    fn name(&self) -> &'static str;

    /// The condition's reason while the wire is up (`Nats`); down, the reason is this
    /// and [`Down`]'s word (`NatsUnreachable`, `NatsUnusable`).
    fn reason(&self) -> &'static str;

    /// How `/readyz` and the condition name it (`NATS`).
    fn label(&self) -> &'static str;

    /// Where other modules reach this one over it (`nats://tinymodule.<module>.msg`).
    fn address(&self) -> String;

    /// `Ok` while messages come this way, else why not.
    fn state(&self) -> Result<(), Down>;

    /// Yields whenever [`state`](Self::state) may have changed; `None`: it never does.
    fn changes(&self) -> Option<BoxStream<'static, ()>>;
}

/// Why a [`Presence`] does not carry messages now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Down {
    /// It cannot be used at all (a URL or credentials that do not work): it will not
    /// come up without a change of settings.
    Unusable(String),
    /// Not reachable now (connecting, or gone away): it may come back by itself.
    Unreachable(String),
}

impl Down {
    /// The words after the wire's name in the condition's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Unusable(_) => "Unusable",
            Self::Unreachable(_) => "Unreachable",
        }
    }

    /// Why, in words.
    pub fn why(&self) -> &str {
        match self {
            Self::Unusable(why) | Self::Unreachable(why) => why,
        }
    }
}

/// The receiving half of a transport: hands what other modules and the platform send
/// this one to its engine. gRPC ([`Grpc`](crate::grpc::Grpc)), core NATS
/// ([`nats::Subscriptions`](crate::nats::Subscriptions)) and JetStream
/// ([`jetstream::Consumers`](crate::jetstream::Consumers)) implement it as siblings;
/// the module binary starts the ones it is configured with through this trait alone
/// ([`listen_all`]).
pub trait Listen: Send + std::fmt::Debug {
    /// `grpc`, `nats` or `jetstream`: for logs.
    fn name(&self) -> &'static str;

    /// Starts handing what arrives to `engine`, each handler told by `leadership`
    /// whether this replica leads; it goes on until [`Serving::stop`].
    fn listen(
        self: Box<Self>,
        engine: Engine,
        leadership: Leadership,
    ) -> BoxFuture<'static, Result<Serving, crate::Error>>;
}

/// A whole transport, both halves as one value: it receives (it is a [`Listen`]) and
/// it sends ([`carrier`](Self::carrier)); a transport that stores durable runs
/// (JetStream) says where ([`runs`](Self::runs), [`answers`](Self::answers)). gRPC
/// ([`Grpc`](crate::grpc::Grpc)), core NATS ([`nats::Subscriptions`](crate::nats::Subscriptions))
/// and JetStream ([`jetstream::Consumers`](crate::jetstream::Consumers)) implement it
/// as siblings; the module binary gets the ones its settings choose from the
/// transport layer as trait objects, so a later transport is one more implementation.
pub trait Transceiver: Listen {
    /// Its sending half, for the [`Routes`](crate::transport::Routes) the engine and
    /// the controllers hold; taken before listening starts.
    fn carrier(&self) -> Arc<dyn Carrier>;

    /// Where durable runs are recorded, on a transport that stores them.
    fn runs(&self) -> Option<Arc<dyn RunStore>> {
        None
    }

    /// Where a component that begins a run awaits its answer, on a transport that
    /// stores runs.
    fn answers(&self) -> Option<Arc<dyn AnswerInbox>> {
        None
    }
}

/// Started listeners ([`Listen::listen`], [`listen_all`]): serve until one ends
/// ([`until`](Self::until)), then [`stop`](Self::stop).
#[derive(Default)]
#[must_use = "a listener whose serving future is never polled serves nothing"]
pub struct Serving {
    parts: Vec<Part>,
}

/// One started listener.
struct Part {
    name: &'static str,
    /// Serving that runs as the caller's future (gRPC's server): polled by
    /// [`Serving::until`], stopped by being dropped; it ends only when serving does.
    serve: Option<BoxFuture<'static, Result<(), crate::Error>>>,
    /// Stops what runs on tasks of its own (a broker's receiver).
    stop: Option<BoxFuture<'static, ()>>,
}

impl Serving {
    /// A listener whose serving is the future `serve`, which ends only when it stops
    /// serving (`Err` on failure); dropping it stops it.
    pub fn future(name: &'static str, serve: impl Future<Output = Result<(), crate::Error>> + Send + 'static) -> Self {
        Self {
            parts: vec![Part {
                name,
                serve: Some(Box::pin(serve)),
                stop: None,
            }],
        }
    }

    /// A listener that runs on tasks of its own, ended by `stop`.
    pub fn tasks(name: &'static str, stop: impl Future<Output = ()> + Send + 'static) -> Self {
        Self {
            parts: vec![Part {
                name,
                serve: None,
                stop: Some(Box::pin(stop)),
            }],
        }
    }

    /// These listeners and `other`'s, stopped in the reverse order.
    pub fn and(mut self, other: Serving) -> Self {
        self.parts.extend(other.parts);
        self
    }

    /// The listeners' names, in the order they started.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.parts.iter().map(|p| p.name)
    }

    /// Serves until `shutdown` resolves (`Ok`) or a listener stops serving of itself:
    /// `Ok` when it ended, its error when it failed.
    pub async fn until(&mut self, shutdown: impl Future<Output = ()>) -> Result<(), crate::Error> {
        let ended = std::future::poll_fn(|cx| {
            for part in &mut self.parts {
                if let Some(serve) = part.serve.as_mut()
                    && let Poll::Ready(result) = serve.as_mut().poll(cx)
                {
                    // A finished future is not polled again.
                    part.serve = None;
                    return Poll::Ready(result);
                }
            }
            Poll::Pending
        });
        tokio::select! {
            result = ended => result,
            () = shutdown => Ok(()),
        }
    }

    /// Stops every listener: first the ones served as futures (dropped), then the
    /// others, the last started first.
    pub async fn stop(self) {
        let mut parts = self.parts;
        for part in &mut parts {
            part.serve = None;
        }
        for part in parts.into_iter().rev() {
            if let Some(stop) = part.stop {
                stop.await;
            }
        }
    }
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Starts every one of `listeners` on `engine`, in order; the first that cannot
/// start is the error, and the ones started before it are stopped.
pub async fn listen_all(
    listeners: Vec<Box<dyn Listen>>,
    engine: &Engine,
    leadership: &Leadership,
) -> Result<Serving, crate::Error> {
    let mut serving = Serving::default();
    for listener in listeners {
        match listener.listen(engine.clone(), leadership.clone()).await {
            Ok(started) => serving = serving.and(started),
            Err(e) => {
                serving.stop().await;
                return Err(e);
            }
        }
    }
    Ok(serving)
}

//! What tiny's tests, benches and fuzz harnesses share, so that none of them writes it
//! again.
//!
//! - [`components`]: the usual test components (an echo, one that says where it ran,
//!   one that fails on demand, one that never answers, one that says who leads).
//! - [`seen`]: what test components saw, recorded by node for the test to take.
//! - [`cluster`] (feature `cluster`, on by default): a control plane with the CRDs,
//!   flows and objects applied from YAML, TinySignals sent and awaited, nodes awaited
//!   Ready; [`Replica`]: a module binary run as a process (start, probe, metrics,
//!   SIGKILL); and, re-exported from `tiny-testenv`, [`eventually`], [`TestEnv`],
//!   [`NatsServer`] and [`RawNats`]; [`durable_module`]: a module on JetStream in
//!   this process (engine, router, run ledger, consumers); [`nats`]: a client whose
//!   events (the broker's refusals) a test reads.
//!
//! A dev-dependency only: it is not published.

#![warn(missing_docs)]

pub mod components;
pub mod seen;

#[cfg(feature = "cluster")]
pub mod cluster;
#[cfg(feature = "cluster")]
mod durable;
#[cfg(feature = "cluster")]
pub mod nats;
#[cfg(feature = "cluster")]
mod replica;

#[cfg(feature = "cluster")]
pub use durable::{DurableModule, durable_module};
#[cfg(feature = "cluster")]
pub use replica::{Replica, ReplicaBuilder, the_leader};
#[cfg(feature = "cluster")]
pub use tiny_testenv::{NatsServer, RawMessage, RawNats, TestEnv, eventually};

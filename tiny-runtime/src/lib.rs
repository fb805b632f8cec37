//! # tiny-runtime
//!
//! Runs a tiny module on Kubernetes: reconciles the module's TinyNodes into the
//! [`tiny_sdk::engine::Engine`], delivers TinySignals, publishes the module in its
//! TinyModule, elects a leader, and carries messages to other modules over gRPC.
//!
//! - [`crd`]: the custom resources.
//! - [`runtime`]: everything put together (the TinyNode, TinySignal, TinyModule and
//!   TinyTracker controllers, probes); [`cli`]: the module binary's commands, Helm hooks
//!   and logs.
//! - [`config`]: who the module is; [`leader`]: whether this replica leads.
//! - [`resources`]: the resource manager components receive on `_client`;
//!   [`secrets`]: the Secrets `[[secret:<name>/<key>]]` placeholders are resolved from.
//! - [`grpc`], [`nats`]: messages to and from other modules (gRPC, or NATS as a
//!   current TinySystems cluster runs it); [`transport`]: which one a module uses.
//! - [`rbac`]: the permissions a module needs (what the API server refused it is shown
//!   in its TinyModule's `Permitted` condition); [`metrics`]: the counters of `/metrics`.

#![warn(missing_docs)]

pub mod carrier;
pub mod cli;
pub mod config;
mod controller;
pub mod crd;
mod discovery;
mod error;
pub mod grpc;
mod health;
mod hooks;
mod inbound;
pub mod jetstream;
pub mod leader;
mod listen;
pub mod metrics;
pub mod nats;
mod permissions;
pub mod rbac;
mod remote;
pub mod resources;
pub mod runtime;
pub mod secrets;
mod status;
mod telemetry;
pub mod transport;
mod upgrade;
mod wiring;

pub use error::{Error, HookError};

/// A fast global allocator (mimalloc), for module binaries that choose it with the
/// `fast-alloc` feature and one line:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOC: tiny_runtime::FastAlloc = tiny_runtime::FastAlloc;
/// ```
///
/// A library never picks the allocator; the binary does. `cargo bench -p tiny-runtime
/// --bench hop --features fast-alloc` and `make bench-flow` measure the difference.
#[cfg(feature = "fast-alloc")]
pub use tiny_sdk::FastAlloc;

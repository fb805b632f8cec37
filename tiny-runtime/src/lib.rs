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

pub mod cli;
pub mod config;
mod controller;
pub mod crd;
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
pub mod resources;
pub mod runtime;
pub mod secrets;
mod status;
mod telemetry;
pub mod transport;

pub use hooks::HookError;

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

/// Why the runtime could not start or stopped. Each variant keeps its cause as the
/// error's `source`; [`Error::is_forbidden`] tells a missing RBAC rule from the rest.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The leader Lease could not be read or created.
    #[error("leader election: {0}")]
    LeaderElection(#[source] kube::Error),
    /// The module's TinyModule could not be created.
    #[error("registering the TinyModule: {0}")]
    Register(#[source] kube::Error),
    /// A listening address could not be bound.
    #[error("binding the {what} address {addr}: {source}")]
    Bind {
        /// What was to listen there (`probe`, `gRPC`).
        what: &'static str,
        /// The address.
        addr: std::net::SocketAddr,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// The gRPC server stopped with an error.
    #[error("gRPC server: {0}")]
    Serve(#[source] tonic::transport::Error),
    /// Kubernetes configuration could not be read or used.
    #[error("kubeconfig{}: {source}", .path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Config {
        /// The kubeconfig file, when one was named.
        path: Option<std::path::PathBuf>,
        /// Why not.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The NATS subjects could not be subscribed to.
    #[error("NATS: {0}")]
    Nats(#[source] tiny_sdk::Error),
    /// A Helm hook (`pre-install`, `pre-delete`) failed.
    #[error(transparent)]
    Hook(#[from] hooks::HookError),
}

impl Error {
    /// Whether the API server refused for want of permission (HTTP 403): the module's
    /// Role lacks a rule.
    pub fn is_forbidden(&self) -> bool {
        match self {
            Error::Register(e) => permissions::is_forbidden(e),
            Error::LeaderElection(e) => permissions::is_forbidden(e),
            Error::Hook(e) => e.is_forbidden(),
            _ => false,
        }
    }
}

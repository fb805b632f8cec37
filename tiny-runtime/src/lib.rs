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
//! - [`resources`]: the resource manager components receive on `_client`.
//! - [`grpc`]: messages to and from other modules.
//! - [`rbac`]: the permissions a module needs; [`metrics`]: the counters of `/metrics`.

#![warn(missing_docs)]

pub mod cli;
pub mod config;
mod controller;
pub mod crd;
pub mod grpc;
mod health;
mod hooks;
pub mod leader;
pub mod metrics;
pub mod rbac;
pub mod resources;
pub mod runtime;
mod status;
mod telemetry;

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
/// --bench hop --features fast-alloc` measures the difference.
#[cfg(feature = "fast-alloc")]
pub use mimalloc::MiMalloc as FastAlloc;

/// Why the runtime could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Start-up failed.
    #[error("start-up failed: {0}")]
    Startup(String),
    /// Kubernetes configuration could not be read.
    #[error("kubeconfig: {0}")]
    Config(String),
    /// A Helm hook (`pre-install`, `pre-delete`) failed.
    #[error(transparent)]
    Hook(#[from] hooks::HookError),
}

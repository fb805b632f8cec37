//! gRPC between modules, wire compatible with the Go SDK.
//!
//! A message for a node of another module leaves the engine through the [`Pool`]
//! (its [`RemoteRouter`](tiny_sdk::engine::RemoteRouter)) as a unary
//! `module.ModuleService/Message` call, and enters the other module's engine through
//! its server ([`serve`], [`spawn`]). The proto is the Go SDK's, field for field, so Go
//! and tiny modules call each other; on top of it, tiny keeps an error's kind and code
//! across the wire (in the `x-error-*` metadata), so the sender's edge retry policy
//! applies to cross-module hops.
//!
//! - [`proto`]: the generated messages, client and server (for peers and wire tests).
//! - [`serve`], [`spawn`]: the service over an [`Engine`](tiny_sdk::engine::Engine), plus health.
//! - [`Pool`]: connections to other modules, by module name.
//! - [`Grpc`]: the bound listener and the pool, as the binary uses them.

mod endpoint;
mod pool;
pub mod proto;
mod server;
pub(crate) mod wire;

pub use endpoint::Grpc;
pub use pool::{DEFAULT_TIMEOUT, Pool, PoolOptions};
pub use server::{LeaderFn, ServerHandle, ServerOptions, serve, spawn};
pub use wire::DEFAULT_MAX_MESSAGE_SIZE;

/// The service [`serve`] runs, without a listener: for the fuzz target, which calls it
/// in-process. Not a public API.
#[doc(hidden)]
pub use server::module_service;

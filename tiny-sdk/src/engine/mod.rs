//! The in-process flow engine: one component instance per node, messages routed along
//! edges, edge mappings evaluated, retries, a cycle guard, and failures kept to the
//! node they belong to.
//!
//! The same engine runs in an author's unit tests (through [`harness`](crate::harness))
//! and inside a module on Kubernetes (through `tiny-runtime`, which feeds it TinyNodes
//! and routes other modules' traffic over gRPC with a [`RemoteRouter`]).
//!
//! - [`registry`]: which components this module can run.
//! - [`instance`]: a component instance behind a type-erased handle.
//! - [`runner`]: one node: its instance, compiled mappings, settings and edges.
//! - [`scheduler`]: the node table and message delivery.
//! - [`fanout`]: emitting along edges, in parallel, with retries.
//! - [`retry`]: retry policies and backoff.
//! - [`observe`]: hooks that see every hop (test collectors, tracers, TinyTracker).

pub mod fanout;
pub mod instance;
pub mod observe;
pub mod registry;
pub mod retry;
pub mod runner;
pub mod scheduler;

pub use observe::{HopEvent, HopKind, Observer};
pub use registry::Registry;
pub use retry::Backoff;
pub use scheduler::{ClientFactory, Engine, EngineBuilder, NODE_WAIT, NodeReport, PortReport, RemoteRouter, Source};

/// The cycle guard: a message that has made this many hops is refused (the Go SDK's
/// `MaxMessageDepth`).
pub const MAX_DEPTH: u32 = 256;

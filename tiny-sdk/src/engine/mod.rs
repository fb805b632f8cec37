//! The in-process flow engine: one component instance per node, messages routed along
//! edges, edge mappings evaluated, retries, a cycle guard, and failures kept to the
//! node they belong to.
//!
//! The same engine runs in an author's unit tests (through [`harness`](crate::harness))
//! and inside a module on Kubernetes (through `tiny-runtime`, which feeds it TinyNodes
//! and routes other modules' traffic over gRPC or NATS with a [`RemoteRouter`]).
//!
//! Messages travel as [`Msg`](crate::Msg): the typed value a port declared, JSON only
//! when something needs it (see [`msg`](crate::msg) for the rule).
//!
//! Each part uses only the ones listed above it:
//!
//! - `address`: where a message goes and where it came from ([`Source`]), and the
//!   traits the runtime plugs in ([`RemoteRouter`], [`NodeDirectory`]).
//! - `observe`, `retry`, `instance`, `registry`: hooks that see every hop, retry
//!   policies, a component instance behind a type-erased handle, the components.
//! - `masking`: what the engine masks (values resolved from placeholders).
//! - `steps`: the run steps under way in this replica, one delivery of each at a time.
//! - `trace`: a `tracing` span per hop, so a flow run is one trace.
//! - `mapping`: edge mappings, and what a failing expression does (Go's `null`).
//! - `runner`: one node: its instance, compiled mappings, settings and edges.
//! - `state`: the node table and what the engine's handles share.
//! - `durable`, `deliver`: delivery to a local node or another module, and a durable
//!   run's steps.
//! - `fanout`: emitting along edges, in parallel, with retries; the common hop (one
//!   edge to a node loaded here) made when the handler emits, as one small future.
//! - `emitter`: a node's way out, resolved when the node loads.
//! - `table`: the public [`Engine`] and its builder; `report`: what a node's status shows.
//! - `defined`: components defined as data (a TinyComponent), their runtimes, and
//!   tiny's own `expr` runtime.
//! - `install`: installing and uninstalling defined components in a running engine.
//! - `tool`: agent-tool calls ([`Engine::call_tool`]): a component on its own, no flow.

mod address;
mod compile;
mod defined;
mod deliver;
mod durable;
mod emitter;
mod fanout;
mod hop;
mod install;
mod instance;
mod mapping;
mod masking;
mod observe;
mod registry;
mod report;
mod retry;
mod runner;
mod state;
mod steps;
mod table;
mod tool;
mod trace;

pub use address::{Delivery, NodeDirectory, RemoteRouter, Source};
pub use defined::{
    CompiledScript, ComponentRuntime, DEFINED_TAG, DefineError, Definition, EXPR_RUNTIME, ExprRuntime, REQUEST_PORT,
    RESPONSE_PORT, Script,
};
pub use deliver::NODE_WAIT;
pub use durable::EXECUTION_MODE_LABEL;
pub use mapping::FAILING_WINDOW;
pub use observe::{HopEvent, HopKind, Observer, Observers};
pub use registry::{ComponentEntry, Registry};
pub use report::{NodeReport, PortReport};
pub use retry::{Backoff, MIN_RETRY_DELAY};
pub use state::ClientFactory;
pub use table::{Engine, EngineBuilder, MAX_IN_FLIGHT};
pub use trace::{
    EndedHop, HopSpans, MAX_PAYLOAD, SpanIds, SpanParent, TARGET as TRACE_TARGET, current_hop, record_outcome,
    set_hop_spans,
};

pub use crate::hop::{HOP_BUDGET, MAX_DEPTH};

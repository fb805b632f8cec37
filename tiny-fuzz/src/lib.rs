//! What the fuzz targets run, one module per target, each with a `run(&[u8])` that
//! must never panic, hang or allocate without bound, whatever the bytes.
//!
//! The libFuzzer targets in `fuzz/` (a separate cargo project, so the normal build
//! never compiles libFuzzer) call these functions, and so does `tests/replay.rs`,
//! which replays the committed corpus and every crash found so far in `cargo test`.
//!
//! - [`expr`]: expression and template compile and render (`tiny-expr`).
//! - [`flow`]: a TinyNode spec through [`Engine::apply`](tiny_sdk::engine::Engine::apply)
//!   to a runner, then messages sent to it.
//! - [`grpc`]: a raw gRPC request through the module server's service.
//! - [`nats`]: a raw NATS delivery (subject, header block, payload) through the core
//!   and JetStream receivers' decoding to the engine, and its reply back.
//! - [`schema`]: the editor-shape rewrite of a JSON Schema.
//!
//! Inputs with two parts (template and message, spec and message...) split them at
//! the first NUL byte; see [`split`].

pub mod expr;
pub mod flow;
pub mod grpc;
pub mod nats;
pub mod schema;

mod input;
pub use input::{json_or_yaml, runtime, split};

/// What a fuzz target runs on one input.
pub type Target = fn(&[u8]);

/// The fuzz targets by name, with their function, as `fuzz/fuzz_targets/` has them.
pub const TARGETS: [(&str, Target); 5] = [
    ("expr", expr::run),
    ("flow", flow::run),
    ("grpc", grpc::run),
    ("nats", nats::run),
    ("schema", schema::run),
];

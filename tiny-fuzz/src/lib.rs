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
//! - [`schema`]: the editor-shape rewrite of a JSON Schema.
//!
//! Inputs with two parts (template and message, spec and message...) split them at
//! the first NUL byte; see [`split`].

pub mod expr;
pub mod flow;
pub mod grpc;
pub mod schema;

use serde_json::Value;

/// What a fuzz target runs on one input.
pub type Target = fn(&[u8]);

/// The fuzz targets by name, with their function, as `fuzz/fuzz_targets/` has them.
pub const TARGETS: [(&str, Target); 4] = [
    ("expr", expr::run),
    ("flow", flow::run),
    ("grpc", grpc::run),
    ("schema", schema::run),
];

/// The part before the first NUL byte, and the part after it (if any).
pub fn split(data: &[u8]) -> (&[u8], Option<&[u8]>) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    }
}

/// The JSON value of `bytes`, or, when they are not JSON, a YAML value, or `None`.
pub fn json_or_yaml(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice(bytes)
        .ok()
        .or_else(|| serde_yaml::from_slice(bytes).ok())
}

/// A single-threaded runtime with paused time: sleeps (retry back-offs, node waits,
/// hop timeouts) complete as soon as nothing else can run, so a fuzzed delay of
/// hours costs nothing while a real busy loop still shows as a hang. Time is paused
/// with the `paused-time` feature only (the fuzz targets and this crate's tests turn it
/// on); without it, sleeps take their real time.
pub fn runtime() -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_time();
    #[cfg(feature = "paused-time")]
    builder.start_paused(true);
    match builder.build() {
        Ok(rt) => rt,
        // Only fails when the OS refuses a thread-local timer: nothing to fuzz then.
        Err(e) => panic!("cannot start a tokio runtime: {e}"),
    }
}

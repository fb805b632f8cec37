//! Go's js-module in tiny: a module with no compiled components of its own, serving
//! components defined as data (TinyComponents) in two runtimes, `js` (QuickJS, through
//! [`tiny_js::JsRuntime`]) and tiny's `expr` (an edge mapping over `inputData`, no
//! interpreter). A module author adds a runtime the same way: [`Registry::runtime`].

use tiny_sdk::engine::{ExprRuntime, Registry};

/// The name Go's module carries, which its nodes' names and `spec.module` give.
pub const MODULE: &str = "js-module";

/// The module's registry: the `js` runtime with its default limits (a 30 s watchdog,
/// memory and stack limits) and `expr`.
pub fn registry() -> Registry {
    let mut registry = Registry::default();
    registry.runtime(tiny_js::JsRuntime::default()).runtime(ExprRuntime);
    registry
}

//! Names of the system ports, as the Go SDK spells them.

/// Settings, delivered before business messages.
pub const SETTINGS: &str = "_settings";
/// Dashboard controls.
pub const CONTROL: &str = "_control";
/// Periodic and on-change reconcile.
pub const RECONCILE: &str = "_reconcile";
/// The resource manager hand-over.
pub const CLIENT: &str = "_client";
/// The conventional error port (not a system port: it is routed like any other).
pub const ERROR: &str = "error";

/// `true` for ports the engine handles itself rather than routing to handlers.
pub fn is_system_port(port: &str) -> bool {
    port.starts_with('_')
}

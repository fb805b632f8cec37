//! The wire contract with the Go SDK and the platform, in one place: the names of system
//! ports, the labels, annotations and finalizer on the custom resources, the status
//! metadata layout. A Go module, the platform's UI and `kubectl` scripts read and write
//! these names, so none of them may change; every other place names them through here.
//!
//! ```
//! use tiny_sdk::contract::{label, port};
//!
//! assert_eq!(port::SETTINGS, "_settings");
//! assert_eq!(label::FLOW_NAME, "tinysystems.io/flow-name");
//! ```

/// The API group of the custom resources (TinyNode, TinyModule, TinySignal, ...).
pub const GROUP: &str = "operator.tinysystems.io";
/// The API version of the custom resources.
pub const VERSION: &str = "v1alpha1";

/// Finalizer on TinyNodes: the component's destroy hook runs before deletion.
pub const NODE_FINALIZER: &str = "io.tinysystems/node-finalizer";

/// The prefix of the TinyNode status metadata keys that hold a node's state
/// ([`NodeState`](crate::NodeState)), as in the Go SDK.
pub const STATE_PREFIX: &str = "_state/";

/// Names of the system ports, as the Go SDK spells them. A port whose name starts
/// with `_` is the engine's ([`is_system`](port::is_system)), not a handler's.
pub mod port {
    /// Settings, delivered before business messages.
    pub const SETTINGS: &str = "_settings";
    /// Dashboard controls.
    pub const CONTROL: &str = "_control";
    /// Periodic and on-change reconcile.
    pub const RECONCILE: &str = "_reconcile";
    /// The Go SDK's resource manager hand-over (tiny hands it over in
    /// [`Hooks::on_client`](crate::Hooks::on_client); no port carries it).
    pub const CLIENT: &str = "_client";
    /// The Go SDK's node identity hand-over (tiny's context carries the node's name; no
    /// port carries it).
    pub const IDENTITY: &str = "_identity";
    /// The conventional error port (not a system port: it is routed like any other).
    pub const ERROR: &str = "error";

    /// `true` for ports the engine handles itself rather than routing to handlers.
    pub fn is_system(port: &str) -> bool {
        port.starts_with('_')
    }
}

/// Label keys on the custom resources and the objects a module makes.
pub mod label {
    /// The flow a node or widget belongs to.
    pub const FLOW_NAME: &str = "tinysystems.io/flow-name";
    /// The project a flow belongs to.
    pub const PROJECT_NAME: &str = "tinysystems.io/project-name";
    /// The node a signal is for (historical).
    pub const NODE_NAME: &str = "tinysystems.io/node-name";
    /// Marks a dashboard widget node.
    pub const DASHBOARD: &str = "tinysystems.io/dashboard";
    /// On a namespace: tiny modules may be installed there (`true`).
    pub const MANAGED: &str = "tinysystems.io/managed";
    /// On Services and Ingresses a module exposed for a node: the port.
    pub const EXPOSED_PORT: &str = "tinysystems.io/exposed-port";
}

/// Annotation keys.
pub mod annotation {
    /// On TinyFlows: the flow's display name.
    pub const FLOW_DESCRIPTION: &str = "tinysystems.io/flow-description";
    /// On Services and Ingresses a module exposed: the node they were made for (an
    /// annotation, as label values are limited to 63 characters and node names are not).
    pub const EXPOSED_FOR_NODE: &str = "tinysystems.io/node-name";
    /// On a Kubernetes Secret: the only flows (comma-separated flow names) whose nodes
    /// may resolve its placeholders. tiny's own (the Go SDK has no such limit).
    pub const SECRET_ALLOWED_FLOWS: &str = "tinysystems.io/allowed-flows";
    /// On a Kubernetes Secret: the only nodes (comma-separated TinyNode names) that may
    /// resolve its placeholders. tiny's own (the Go SDK has no such limit).
    pub const SECRET_ALLOWED_NODES: &str = "tinysystems.io/allowed-nodes";
}

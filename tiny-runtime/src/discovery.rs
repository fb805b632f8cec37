//! How the runtime learns where other modules are: on the ground floor, below the
//! controllers that feed it and the transports that implement it.

/// Learns where other modules are (the gRPC pool implements it).
pub trait Discovery: Send + Sync + 'static {
    /// `module` is reachable at `addr`.
    fn register(&self, module: &str, addr: &str);
    /// `module` went away.
    fn deregister(&self, module: &str);
}

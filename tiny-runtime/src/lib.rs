//! # tiny-runtime
//!
//! Runs a tiny module on Kubernetes: reconciles the module's TinyNodes into the
//! [`tiny_sdk::engine::Engine`], delivers TinySignals, publishes the module in its
//! TinyModule, elects a leader, and carries messages to other modules over gRPC.
//!
//! - [`crd`]: the custom resources.

pub mod crd;

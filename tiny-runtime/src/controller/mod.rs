//! The controllers: small loops that feed plain reconcile functions.
//!
//! - [`node`]: TinyNodes of this module into the engine, status back.
//! - [`signal`]: TinySignals delivered once, by the leader.
//! - [`module`]: this module's TinyModule, and discovery of the others.
//! - [`component`]: TinyComponents of a runtime this module serves, installed.
//! - [`tracker`]: hops of tracked flows into TinyTracker status.

pub(crate) mod component;
pub(crate) mod module;
pub(crate) mod node;
mod retries;
pub(crate) mod signal;
pub(crate) mod tracker;
mod watch;

mod context;
mod directory;
mod tracking;

pub(crate) use context::{ReconcileError, Reconciling};
pub(crate) use directory::Directory;
pub use tracking::Tracking;

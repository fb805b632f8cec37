//! NATS between modules, byte for byte as the Go SDK speaks it (core request/reply).
//!
//! A module run with `TINY_NATS_URL` (or `--nats-url`) takes its business messages
//! from `tinymodule.<module>.msg` in a queue group (its replicas share them) and its
//! system-port messages from `tinymodule.<module>.sysmsg` (every replica), answers as
//! Go answers, and sends to other modules with requests on their subjects. Its
//! TinyModule advertises `nats://tinymodule.<module>.msg`.
//!
//! - [`wire`]: subjects, header names, replies.
//! - [`Link`]: the connection (Go's options; reconnects by itself; says whether the
//!   broker answers); [`Broker`]: the module's place on the broker, as the cluster is
//!   told of it.
//! - [`listen`]: the receiving side, over an [`Engine`](tiny_sdk::engine::Engine);
//!   [`Subscriptions`] starts it as a [`Listen`](crate::carrier::Listen)er.
//! - [`NatsRouter`]: the sending side, the engine's
//!   [`RemoteRouter`](tiny_sdk::engine::RemoteRouter).
//! - [`send`]: a message into a node from outside a flow (Go's `wire.Publish`; the
//!   module binary's `send` command).
//!
//! Core NATS delivers at most once: a message in flight when a replica dies is lost,
//! and the sender's edge retry policy is what recovers it (see `docs/delivery.md`).

mod broker;
mod link;
mod receiver;
pub(crate) mod router;
mod send;
pub(crate) mod serve;
mod subscriptions;
pub(crate) mod trace;
pub mod wire;

pub use broker::Broker;
pub use link::{
    CONNECT_TIMEOUT, Credentials, CredentialsProblem, Link, LinkError, LinkState, RECONNECT_WAIT, inbox_prefix,
    with_token, with_user,
};
pub use receiver::{Receiver, listen, receive_message};
pub use router::NatsRouter;
pub(crate) use send::envelope;
pub use send::{SendOptions, send};
pub use subscriptions::Subscriptions;

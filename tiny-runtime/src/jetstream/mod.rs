//! JetStream between modules, and durable runs, as the Go SDK's JetStream transport
//! (`TINY_NATS_TRANSPORT=jetstream`).
//!
//! Every hop is a message stored in a stream: business messages in `module-edges`
//! (a work queue the module's replicas share), system-port messages in
//! `module-sysmsgs` (every replica reads them). A blocking hop is answered on the
//! inbox its `x-reply-inbox` names. A hop of a durable run is fire and forget: it is
//! stored under its step key, any replica may take it, a crash redelivers it, and the
//! step it runs is recorded in the KV bucket `TINY_EXEC` before the message is acked,
//! in Go's layout, so that Go and tiny modules share runs on one broker.
//!
//! - [`config`]: Go's streams, consumers and bucket, field for field.
//! - [`JetStream`]: the connection's JetStream side, and the run ledger
//!   ([`RunStore`](tiny_sdk::run::RunStore)) on `TINY_EXEC`.
//! - [`listen`]: the receiving side (consumers, in-progress, ack/nak/term);
//!   [`Consumers`] starts it, and the reconciler, as a
//!   [`Listen`](crate::carrier::Listen)er.
//! - [`JetStreamRouter`]: the sending side.
//! - [`reconciler`]: the leader's pass over stuck runs.
//! - [`redrive`]: a failed run's step run again, as a new attempt (`<module> redrive`).

pub mod config;
mod consumers;
mod receiver;
pub mod reconciler;
mod redrive;
mod refusal;
mod router;
mod stream;

pub use consumers::Consumers;
pub use receiver::{listen, receive_message};
pub use redrive::redrive;
pub use router::JetStreamRouter;
use stream::broker;
pub use stream::{JetStream, refuse_core_beside_jetstream};

//! Go's JetStream objects, configured exactly as the Go SDK configures them: every pod
//! of every module creates or updates them, and the last writer's configuration
//! wins, so a different field here would silently change Go's streams.

use std::time::Duration;

use async_nats::jetstream::{
    consumer::{AckPolicy, DeliverPolicy, ReplayPolicy, pull},
    kv,
    stream::{self, RetentionPolicy, StorageType},
};

use crate::nats::wire;

/// The stream of business messages (a work queue: a message is gone once acked).
pub const EDGES_STREAM: &str = "module-edges";
/// The stream of system-port messages (limits: every replica's consumer reads it).
pub const SYSMSGS_STREAM: &str = "module-sysmsgs";
/// The KV bucket of durable runs: step records, re-drive counts, run-scoped state.
pub const EXEC_BUCKET: &str = "TINY_EXEC";

/// How long a stored message lives.
const MAX_AGE: Duration = Duration::from_secs(3600);
/// The window in which a repeated `Nats-Msg-Id` is dropped.
const DUPLICATES: Duration = Duration::from_secs(120);
/// How long a taken message may go without an ack before it is redelivered.
pub const ACK_WAIT: Duration = Duration::from_secs(30);
/// How many times a message is delivered at most.
pub const MAX_DELIVER: i64 = 3;
/// How often a running handler tells the broker it is still at work.
pub const IN_PROGRESS_EVERY: Duration = Duration::from_secs(10);
/// How often the receiver checks its consumers still exist.
pub const HEALTH_EVERY: Duration = Duration::from_secs(20);
/// The pause before the receiver rebuilds its streams and consumers.
pub const REBUILD_AFTER: Duration = Duration::from_secs(2);
/// How long a JetStream API request (a ledger read or write, a consumer's info, a
/// stream's creation) waits for the broker's answer: nats.go's default. The
/// connection itself has no request timeout (each hop has its deadline), and an
/// answer lost when the broker dies would otherwise be waited for forever.
pub const API_TIMEOUT: Duration = Duration::from_secs(5);
/// When a replica's system consumer is reaped after the replica went away.
const SYSTEM_INACTIVE: Duration = Duration::from_secs(300);

/// `module-edges`: `tinymodule.*.msg`, file storage, work queue, 1 h, 2 min.
pub fn edges_stream() -> stream::Config {
    stream::Config {
        name: EDGES_STREAM.to_owned(),
        subjects: vec!["tinymodule.*.msg".to_owned()],
        storage: StorageType::File,
        retention: RetentionPolicy::WorkQueue,
        max_age: MAX_AGE,
        duplicate_window: DUPLICATES,
        ..Default::default()
    }
}

/// `module-sysmsgs`: `tinymodule.*.sysmsg`, file storage, limits, 1 h, 2 min.
pub fn sysmsgs_stream() -> stream::Config {
    stream::Config {
        name: SYSMSGS_STREAM.to_owned(),
        subjects: vec!["tinymodule.*.sysmsg".to_owned()],
        storage: StorageType::File,
        retention: RetentionPolicy::Limits,
        max_age: MAX_AGE,
        duplicate_window: DUPLICATES,
        ..Default::default()
    }
}

/// The module's business consumer, shared by its replicas (so they share the work):
/// durable `<module>`, all messages, explicit acks, 30 s, 3 deliveries.
pub fn business_consumer(module: &str) -> pull::Config {
    pull::Config {
        durable_name: Some(module.to_owned()),
        filter_subject: wire::subject(module),
        deliver_policy: DeliverPolicy::All,
        ack_policy: AckPolicy::Explicit,
        ack_wait: ACK_WAIT,
        max_deliver: MAX_DELIVER,
        replay_policy: ReplayPolicy::Instant,
        ..Default::default()
    }
}

/// The name of a replica's system consumer.
pub fn system_consumer_name(module: &str, hostname: &str) -> String {
    format!("{module}-sys-{hostname}")
}

/// A replica's own system consumer (every replica hears every system message):
/// durable `<module>-sys-<HOSTNAME>`, new messages only, reaped 5 min after its
/// replica went away.
pub fn system_consumer(module: &str, hostname: &str) -> pull::Config {
    pull::Config {
        durable_name: Some(system_consumer_name(module, hostname)),
        filter_subject: wire::system_subject(module),
        deliver_policy: DeliverPolicy::New,
        ack_policy: AckPolicy::Explicit,
        ack_wait: ACK_WAIT,
        max_deliver: MAX_DELIVER,
        replay_policy: ReplayPolicy::Instant,
        inactive_threshold: SYSTEM_INACTIVE,
        ..Default::default()
    }
}

/// `TINY_EXEC`: file storage, one value per key, no TTL.
pub fn exec_bucket() -> kv::Config {
    kv::Config {
        bucket: EXEC_BUCKET.to_owned(),
        storage: StorageType::File,
        history: 1,
        ..Default::default()
    }
}

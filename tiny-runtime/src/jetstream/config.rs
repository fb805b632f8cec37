//! Go's JetStream objects, configured exactly as the Go SDK configures them: every pod
//! of every module creates or updates them, and the last writer's configuration
//! wins, so a different field here would silently change Go's streams.
//!
//! Beyond Go's fields, tiny bounds what the streams and the bucket hold
//! ([`JetStreamLimits`]; Go sets no limit). [`JetStreamLimits::merge`] decides what a
//! pod writes when the object already exists: a limit the broker has is kept, one it
//! lacks is added (docs/limits.md).

use std::time::Duration;

use async_nats::jetstream::{
    consumer::{AckPolicy, DeliverPolicy, ReplayPolicy, pull},
    kv,
    stream::{self, DiscardPolicy, RetentionPolicy, StorageType},
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

/// `module-edges`: `tinymodule.*.msg`, file storage, work queue, 1 h, 2 min, and
/// `limits`, discarding new messages when full: a full work queue refuses the
/// publish (the sender's hop fails) rather than drop stored work.
pub fn edges_stream(limits: &StoreLimits) -> stream::Config {
    stream::Config {
        name: EDGES_STREAM.to_owned(),
        subjects: vec!["tinymodule.*.msg".to_owned()],
        storage: StorageType::File,
        retention: RetentionPolicy::WorkQueue,
        max_age: MAX_AGE,
        duplicate_window: DUPLICATES,
        max_bytes: limits.max_bytes,
        max_messages: limits.max_msgs,
        max_message_size: limits.max_msg_size,
        discard: DiscardPolicy::New,
        ..Default::default()
    }
}

/// `module-sysmsgs`: `tinymodule.*.sysmsg`, file storage, limits, 1 h, 2 min, and
/// `limits`, discarding the oldest messages when full: its messages stay after every
/// consumer read them (fan-out), so refusing new ones would refuse every system
/// message for up to an hour; the oldest are the ones already read.
pub fn sysmsgs_stream(limits: &StoreLimits) -> stream::Config {
    stream::Config {
        name: SYSMSGS_STREAM.to_owned(),
        subjects: vec!["tinymodule.*.sysmsg".to_owned()],
        storage: StorageType::File,
        retention: RetentionPolicy::Limits,
        max_age: MAX_AGE,
        duplicate_window: DUPLICATES,
        max_bytes: limits.max_bytes,
        max_messages: limits.max_msgs,
        max_message_size: limits.max_msg_size,
        discard: DiscardPolicy::Old,
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

/// `TINY_EXEC`: file storage, one value per key, no TTL, and `limits` (a KV bucket
/// discards new values when full, Go's as well: a ledger write is refused, never an
/// older record dropped). A bucket has no message count of its own: one value per
/// key, so `max_bytes` bounds it.
pub fn exec_bucket(limits: &StoreLimits) -> kv::Config {
    kv::Config {
        bucket: EXEC_BUCKET.to_owned(),
        storage: StorageType::File,
        history: 1,
        max_bytes: limits.max_bytes,
        max_value_size: limits.max_msg_size,
        ..Default::default()
    }
}

/// The stream that holds the bucket `TINY_EXEC`.
pub const EXEC_BUCKET_STREAM: &str = "KV_TINY_EXEC";

/// What one stream or bucket may hold; a value of 0 or less is no limit (the
/// broker's `-1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Bytes stored in all.
    pub max_bytes: i64,
    /// Messages stored in all (not used by the bucket: see [`exec_bucket`]).
    pub max_msgs: i64,
    /// Bytes of one message (headers and payload).
    pub max_msg_size: i32,
}

/// 1 MiB: one message, as the broker's default `max_payload` (which bounds every
/// publish anyway).
pub const MAX_MSG_SIZE: i32 = 1 << 20;

/// How much `module-edges`, `module-sysmsgs` and `TINY_EXEC` may hold (Go sets no
/// limit). The defaults: `module-edges` 1 GiB and 1,000,000 messages,
/// `module-sysmsgs` 256 MiB and 100,000 messages, `TINY_EXEC` 1 GiB; 1 MiB a message
/// for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JetStreamLimits {
    /// `module-edges`.
    pub edges: StoreLimits,
    /// `module-sysmsgs`.
    pub sysmsgs: StoreLimits,
    /// `TINY_EXEC`.
    pub exec: StoreLimits,
}

impl Default for JetStreamLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl JetStreamLimits {
    /// The defaults (see [`JetStreamLimits`]).
    pub const DEFAULT: Self = Self {
        edges: StoreLimits {
            max_bytes: 1 << 30,
            max_msgs: 1_000_000,
            max_msg_size: MAX_MSG_SIZE,
        },
        sysmsgs: StoreLimits {
            max_bytes: 256 << 20,
            max_msgs: 100_000,
            max_msg_size: MAX_MSG_SIZE,
        },
        exec: StoreLimits {
            max_bytes: 1 << 30,
            max_msgs: -1,
            max_msg_size: MAX_MSG_SIZE,
        },
    };
}

/// One limit this module would set that the broker has at another value, kept as
/// the broker has it (see [`JetStreamLimits::merge`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptLimit {
    /// The stream (`KV_TINY_EXEC` for the bucket).
    pub stream: String,
    /// The field, as the broker names it (`max_bytes`, `max_msgs`, `max_msg_size`).
    pub field: &'static str,
    /// What the broker has.
    pub kept: i64,
    /// What this module is configured with.
    pub configured: i64,
}

impl JetStreamLimits {
    /// What to write for a stream that `existing` describes, when this module would
    /// write `wanted`: every limit the broker already has (greater than 0) is kept,
    /// even if this module is configured with another, and so is its discard policy;
    /// a limit the broker lacks is added, with `wanted`'s discard policy when the
    /// stream had none. Neither lowering nor raising a limit another writer (an
    /// operator, a module with other flags) chose: a lowered limit would refuse work
    /// others are sending, and two modules would rewrite each other's at every
    /// start. Returns the configuration and the limits kept at another value.
    pub fn merge(mut wanted: stream::Config, existing: &stream::Config) -> (stream::Config, Vec<KeptLimit>) {
        let mut kept = Vec::new();
        let mut keep = |field: &'static str, existing: i64, wanted: i64| {
            if existing <= 0 {
                return wanted;
            }
            if wanted != existing {
                kept.push((field, existing, wanted));
            }
            existing
        };
        wanted.max_bytes = keep("max_bytes", existing.max_bytes, wanted.max_bytes);
        wanted.max_messages = keep("max_msgs", existing.max_messages, wanted.max_messages);
        let size = keep(
            "max_msg_size",
            i64::from(existing.max_message_size),
            i64::from(wanted.max_message_size),
        );
        wanted.max_message_size = i32::try_from(size).unwrap_or(i32::MAX);
        if existing.max_bytes > 0 || existing.max_messages > 0 || existing.max_message_size > 0 {
            wanted.discard = existing.discard;
        }
        let kept = kept
            .into_iter()
            .map(|(field, kept, configured)| KeptLimit {
                stream: wanted.name.clone(),
                field,
                kept,
                configured,
            })
            .collect();
        (wanted, kept)
    }
}

//! The JetStream side of a module's broker connection, and the run ledger on it.

use std::sync::{Arc, OnceLock, RwLock};

use async_nats::jetstream::{self, kv, stream};
use bytes::Bytes;
use futures::{TryStreamExt as _, future::BoxFuture};
use tiny_sdk::{Error, Result, error::code, run::RunStore};

use super::config;
use crate::nats::Link;

/// The JetStream side of a module's broker connection: its streams, its consumers'
/// names and the run ledger.
#[derive(Debug)]
pub struct JetStream {
    pub(super) link: Link,
    pub(super) module: String,
    pub(super) hostname: String,
    /// The connection's JetStream context, made on first use.
    pub(super) context: OnceLock<jetstream::Context>,
    /// `TINY_EXEC`, once [`ensure`](Self::ensure) made or found it (shared: a
    /// handle holds the stream's whole configuration, too much to copy per step).
    pub(super) bucket: RwLock<Option<Arc<kv::Store>>>,
    /// What the streams and the bucket may hold, when this module creates them.
    pub(super) limits: config::JetStreamLimits,
}

impl JetStream {
    /// For `module` on `link`; `hostname` names this replica's system consumer.
    pub fn new(link: Link, module: &str, hostname: &str) -> Arc<Self> {
        Self::with_limits(link, module, hostname, config::JetStreamLimits::default())
    }

    /// As [`new`](Self::new), giving the streams and the bucket `limits` where the
    /// broker has none (see [`config::JetStreamLimits::merge`]).
    pub fn with_limits(link: Link, module: &str, hostname: &str, limits: config::JetStreamLimits) -> Arc<Self> {
        Arc::new(Self {
            link,
            module: module.to_owned(),
            hostname: hostname.to_owned(),
            context: OnceLock::new(),
            bucket: RwLock::new(None),
            limits,
        })
    }

    /// The connection.
    pub fn link(&self) -> &Link {
        &self.link
    }

    /// The module.
    pub fn module(&self) -> &str {
        &self.module
    }

    /// The JetStream context on the connection. There is one per handle: each
    /// context runs a task of its own (for the acknowledgements nobody awaits), too
    /// much to make per message.
    pub fn context(&self) -> jetstream::Context {
        self.jetstream().clone()
    }

    /// The context, borrowed. Made on first use, from within the runtime.
    pub(super) fn jetstream(&self) -> &jetstream::Context {
        self.context.get_or_init(|| context(&self.link))
    }

    /// Creates or updates the two streams and the bucket with Go's configurations
    /// and this module's limits, keeping the limits the broker already has (a kept
    /// limit that differs from this module's is logged).
    pub async fn ensure(&self) -> Result<()> {
        let js = self.jetstream();
        for wanted in [
            config::edges_stream(&self.limits.edges),
            config::sysmsgs_stream(&self.limits.sysmsgs),
        ] {
            let name = wanted.name.clone();
            let config = self.merged(wanted).await?;
            js.create_or_update_stream(config)
                .await
                .map_err(|e| broker(format_args!("creating the stream `{name}`"), e))?;
        }
        // The bucket's limits are its stream's: merged as a stream's, written as a bucket's.
        let mut bucket = config::exec_bucket(&self.limits.exec);
        let as_stream = async_nats::jetstream::stream::Config {
            name: config::EXEC_BUCKET_STREAM.to_owned(),
            max_bytes: bucket.max_bytes,
            max_messages: -1,
            max_message_size: bucket.max_value_size,
            ..Default::default()
        };
        let merged = self.merged(as_stream).await?;
        bucket.max_bytes = merged.max_bytes;
        bucket.max_value_size = merged.max_message_size;
        let bucket = js
            .create_or_update_key_value(bucket)
            .await
            .map_err(|e| broker(format_args!("creating the bucket `{}`", config::EXEC_BUCKET), e))?;
        *self.bucket.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(bucket));
        Ok(())
    }

    /// Binds the bucket `TINY_EXEC` as the broker has it, creating and changing
    /// nothing: for a tool that reads runs (`capture-run`) rather than a module.
    /// Fails with code `RUN_STORE` when there is no such bucket.
    pub async fn open_ledger(&self) -> Result<()> {
        let bucket = self
            .jetstream()
            .get_key_value(config::EXEC_BUCKET)
            .await
            .map_err(|e| ledger("opening the bucket", e))?;
        *self.bucket.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(bucket));
        Ok(())
    }

    /// `wanted` with the limits the broker's stream of that name already has (none
    /// if there is no such stream yet).
    async fn merged(&self, wanted: stream::Config) -> Result<stream::Config> {
        let name = wanted.name.clone();
        let existing = match self.jetstream().get_stream(&name).await {
            Ok(stream) => stream.cached_info().config.clone(),
            Err(e) if is_stream_not_found(&e) => return Ok(wanted),
            Err(e) => return Err(broker(format_args!("reading the stream `{name}`"), e)),
        };
        let (config, kept) = config::JetStreamLimits::merge(wanted, &existing);
        for k in kept {
            tracing::warn!(
                stream = %k.stream,
                field = k.field,
                broker = k.kept,
                configured = k.configured,
                "the stream has another limit than this module's: kept as the broker has it (docs/limits.md)"
            );
        }
        Ok(config)
    }

    pub(super) fn bucket(&self) -> Result<Arc<kv::Store>> {
        self.bucket
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or_else(|| {
                Error::transient(format!(
                    "the run ledger (`{}`) is not ready: the NATS broker at {} has not answered yet",
                    config::EXEC_BUCKET,
                    self.link.url()
                ))
                .with_code(code::RUN_STORE)
            })
    }
}

/// Whether `e` says the stream does not exist (the broker's error code, not its text).
fn is_stream_not_found(e: &async_nats::jetstream::context::GetStreamError) -> bool {
    use async_nats::jetstream::{ErrorCode, context::GetStreamErrorKind};
    matches!(e.kind(), GetStreamErrorKind::JetStream(j) if j.error_code() == ErrorCode::STREAM_NOT_FOUND)
}

/// A JetStream context on `link` whose API requests give up after
/// [`config::API_TIMEOUT`].
pub(super) fn context(link: &Link) -> jetstream::Context {
    jetstream::ContextBuilder::new()
        .timeout(config::API_TIMEOUT)
        .build(link.client().clone())
}

/// A broker failure while doing `what`: transient, since the broker may come back.
pub(super) fn broker(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error::transient(format!("{what} on NATS JetStream: {e}")).with_code(code::UNREACHABLE)
}

/// A failure of the run ledger: transient, with the store's code.
pub(super) fn ledger(what: impl std::fmt::Display, e: impl std::fmt::Display) -> Error {
    Error::transient(format!("{what} in `{}` on NATS JetStream: {e}", config::EXEC_BUCKET)).with_code(code::RUN_STORE)
}

impl RunStore for JetStream {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>>> {
        Box::pin(async move {
            self.bucket()?
                .get(key)
                .await
                .map_err(|e| ledger(format_args!("reading `{key}`"), e))
        })
    }

    fn put<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            match self.bucket()?.put(key, value).await {
                Ok(_) => Ok(()),
                Err(e) => Err(match super::refusal::of(&e) {
                    Some(refused) => {
                        let what = format!("the run record `{key}` of `{}`", config::EXEC_BUCKET);
                        let after = "it goes in once finished runs are removed (TINY_RUN_GC_AFTER)";
                        super::refusal::limit_error(self.jetstream(), refused, config::EXEC_BUCKET_STREAM, &what, after)
                            .await
                    }
                    None => ledger(format_args!("writing `{key}`"), e),
                }),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.bucket()?
                .delete(key)
                .await
                .map_err(|e| ledger(format_args!("deleting `{key}`"), e))
        })
    }

    fn keys<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        Box::pin(async move {
            let bucket = self.bucket()?;
            let listing = |e: &dyn std::fmt::Display| ledger(format_args!("listing `{prefix}*`"), e);
            let keys = match bucket.keys().await {
                Ok(keys) => keys,
                Err(e) => return Err(listing(&e)),
            };
            let mut keys: Vec<String> = keys
                .try_filter(|k| std::future::ready(k.starts_with(prefix)))
                .try_collect()
                .await
                .map_err(|e| listing(&e))?;
            keys.sort();
            Ok(keys)
        })
    }
}

/// Refuses to run `module` on core NATS beside JetStream modules: once the stream
/// `module-edges` exists, it stores every message on `tinymodule.*.msg`, so a core
/// request would be answered by the broker's acknowledgement and its edge id taken as
/// a duplicate for 2 min (Go's silent hazard). A broker that does not answer yet is
/// not checked.
pub async fn refuse_core_beside_jetstream(link: &Link, module: &str) -> std::result::Result<(), crate::Error> {
    if !link.is_up() {
        return Ok(());
    }
    match context(link).get_stream(config::EDGES_STREAM).await {
        Ok(_) => Err(crate::Error::Nats(
            Error::permanent(format!(
                "module `{module}` is on core NATS (TINY_NATS_TRANSPORT=core), but the broker at {} has the JetStream \
                 stream `{}`: its modules run TINY_NATS_TRANSPORT=jetstream, and that stream would capture this \
                 module's requests on `tinymodule.*.msg`. Run every module on this broker with the same \
                 TINY_NATS_TRANSPORT (here: jetstream)",
                link.url(),
                config::EDGES_STREAM
            ))
            .with_code(code::INVALID_SPEC),
        )),
        Err(_) => Ok(()),
    }
}

impl tiny_sdk::run::AnswerInbox for JetStream {
    fn open(&self) -> BoxFuture<'_, Result<(String, BoxFuture<'static, Result<Bytes>>)>> {
        Box::pin(async move {
            let client = self.link.client();
            let subject = client.new_inbox();
            let mut answers = client
                .subscribe(subject.clone())
                .await
                .map_err(|e| broker(format_args!("listening on `{subject}` for a run's answer"), e))?;
            let waiting = subject.clone();
            let answer: BoxFuture<'static, Result<Bytes>> = Box::pin(async move {
                use futures::StreamExt as _;
                match answers.next().await {
                    Some(msg) => Ok(msg.payload),
                    None => Err(broker(
                        format_args!("waiting on `{waiting}` for a run's answer"),
                        "the connection closed",
                    )),
                }
            });
            Ok((subject, answer))
        })
    }
}

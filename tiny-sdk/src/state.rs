//! Node state: small typed values a node keeps across restarts, shared by replicas.
//!
//! Stored where the Go SDK stores them, so that either SDK reads what the other wrote:
//! in the TinyNode's `status.metadata`, under `_state/<key>`, as base64 of the bytes
//! (tiny writes JSON bytes). The total is capped at 900 KiB, as in Go, because the
//! whole object must fit in etcd.
//!
//! Reads come from the node as this replica last saw it, with this replica's own
//! writes laid over for a few seconds (until the watch shows them), so that a value
//! just written is read back. A write goes to the cluster through the runtime's
//! resource manager; in-process (harness) it stays in memory.
//!
//! ```
//! # use tiny_sdk::prelude::*;
//! # #[derive(Component, Default)] #[component(name = "counter")]
//! # struct Counter { #[port] tick: Input<()> }
//! # impl Counter {
//! async fn on_tick(&self, ctx: &Ctx<Self>, _: ()) -> Result<()> {
//!     let n: u64 = ctx.state().get("count")?.unwrap_or(0);
//!     ctx.state().set("count", &(n + 1)).await
//! }
//! # }
//! ```

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use base64::{Engine as _, engine::general_purpose::STANDARD};
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    client::ResourceManager,
    contract::STATE_PREFIX,
    error::{Error, Result, code},
};

/// The most state a node may hold, all keys together (the Go SDK's `MaxStateBytes`).
pub const MAX_STATE_BYTES: usize = 900 * 1024;

/// How long this replica's own writes win over what the watch last showed.
const OVERLAY: Duration = Duration::from_secs(5);

/// A node's state (see the [module docs](self)).
pub struct NodeState {
    inner: Mutex<Cache>,
    store: Option<Arc<dyn ResourceManager>>,
    node: String,
}

#[derive(Default)]
struct Cache {
    /// `_state/` entries (key without the prefix, base64 value) as last seen on the node.
    seen: BTreeMap<String, String>,
    /// This replica's recent writes (`None`: deleted), until the watch shows them.
    pending: HashMap<String, (Option<String>, Instant)>,
}

impl Cache {
    fn current(&self, key: &str) -> Option<&String> {
        match self.pending.get(key) {
            Some((value, at)) if at.elapsed() < OVERLAY => value.as_ref(),
            _ => self.seen.get(key),
        }
    }

    fn keys(&self) -> Vec<String> {
        let mut keys: std::collections::BTreeSet<&String> = self.seen.keys().collect();
        for (k, (v, at)) in &self.pending {
            if at.elapsed() < OVERLAY {
                if v.is_some() {
                    keys.insert(k);
                } else {
                    keys.remove(k);
                }
            }
        }
        keys.into_iter().cloned().collect()
    }

    fn size_with(&self, key: &str, value: Option<&str>) -> usize {
        self.keys()
            .iter()
            .filter(|k| k.as_str() != key)
            .filter_map(|k| self.current(k).map(|v| k.len() + v.len()))
            .sum::<usize>()
            + value.map_or(0, |v| key.len() + v.len())
    }
}

impl NodeState {
    pub(crate) fn new(node: &str, store: Option<Arc<dyn ResourceManager>>) -> Self {
        Self {
            inner: Mutex::default(),
            store,
            node: node.to_owned(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes in the node's metadata as the watch shows it now.
    pub(crate) fn observe(&self, metadata: &BTreeMap<String, String>) {
        let seen: BTreeMap<String, String> = metadata
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(STATE_PREFIX)?.to_owned(), v.clone())))
            .collect();
        let mut cache = self.cache();
        // A pending write the node now shows (or one too old to trust) is done.
        cache
            .pending
            .retain(|k, (v, at)| at.elapsed() < OVERLAY && seen.get(k) != v.as_ref());
        cache.seen = seen;
    }

    /// The value under `key`, decoded from JSON; `None` when there is none.
    ///
    /// A value that is not base64 of JSON of `T` (another SDK's bytes, or another
    /// type) is an error naming the key.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let Some(bytes) = self.get_bytes(key)? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::permanent(format!(
                "node state `{key}` of node `{}` does not decode: {e}",
                self.node
            ))
            .with_code(code::STATE_UNDECODABLE)
        })
    }

    /// The raw bytes under `key`.
    pub fn get_bytes(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let cache = self.cache();
        let Some(encoded) = cache.current(key) else {
            return Ok(None);
        };
        STANDARD.decode(encoded).map(Some).map_err(|e| {
            Error::permanent(format!("node state `{key}` of node `{}` is not base64: {e}", self.node))
                .with_code(code::STATE_UNDECODABLE)
        })
    }

    /// The keys that hold a value, sorted.
    pub fn keys(&self) -> Vec<String> {
        self.cache().keys()
    }

    /// Stores `value` (as JSON) under `key`.
    pub async fn set<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<()> {
        let bytes = serde_json::to_vec(value).map_err(|e| {
            Error::permanent(format!("node state `{key}`: value does not encode: {e}"))
                .with_code(code::STATE_UNDECODABLE)
        })?;
        self.set_bytes(key, &bytes).await
    }

    /// Stores raw bytes under `key`.
    pub async fn set_bytes(&self, key: &str, bytes: &[u8]) -> Result<()> {
        self.write(key, Some(STANDARD.encode(bytes))).await
    }

    /// Removes `key` (idempotent).
    pub async fn delete(&self, key: &str) -> Result<()> {
        self.write(key, None).await
    }

    async fn write(&self, key: &str, value: Option<String>) -> Result<()> {
        check_key(key)?;
        {
            let mut cache = self.cache();
            if cache.current(key) == value.as_ref() {
                return Ok(());
            }
            let size = cache.size_with(key, value.as_deref());
            if size > MAX_STATE_BYTES {
                return Err(Error::permanent(format!(
                    "node state of node `{}` would hold {size} bytes with `{key}`, over the {MAX_STATE_BYTES}-byte cap",
                    self.node
                ))
                .with_code(code::STATE_TOO_LARGE));
            }
            cache.pending.insert(key.to_owned(), (value.clone(), Instant::now()));
        }
        if let Some(store) = &self.store {
            let entry = (format!("{STATE_PREFIX}{key}"), value);
            if let Err(e) = store.update_metadata(vec![entry]).await {
                // Not written: do not pretend it was.
                self.cache().pending.remove(key);
                return Err(e.context(format_args!("node state `{key}`")));
            }
        } else {
            // In-process: memory is the store.
            let mut cache = self.cache();
            match value {
                Some(v) => cache.seen.insert(key.to_owned(), v),
                None => cache.seen.remove(key),
            };
            cache.pending.remove(key);
        }
        Ok(())
    }
}

/// Keys become part of a metadata key: Kubernetes allows `[-._a-zA-Z0-9/]` there.
fn check_key(key: &str) -> Result<()> {
    let ok = !key.is_empty()
        && key.len() <= 200
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if ok {
        Ok(())
    } else {
        Err(Error::permanent(format!(
            "node state key `{key}` must be 1 to 200 of `A-Z a-z 0-9 - _ . /`"
        ))
        .with_code(code::STATE_KEY))
    }
}

impl std::fmt::Debug for NodeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeState")
            .field("node", &self.node)
            .field("keys", &self.keys())
            .finish_non_exhaustive()
    }
}

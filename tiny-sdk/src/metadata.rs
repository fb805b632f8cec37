//! Node metadata: the TinyNode's raw `status.metadata` strings, outside `_state/`.
//!
//! [Node state](crate::state) is what a component written with either SDK's State API
//! keeps. Many Go components predate it and keep their own keys in `status.metadata`
//! instead, as plain strings: Go's ticker `ticker-running` and `ticker-config`, its
//! http_server `http-start` and `port`. A tiny component that takes over such a
//! node (a drop-in for a Go module) reads and writes those keys here, so that what
//! ran under Go carries on.
//!
//! Values are strings, stored as they are (no base64, no JSON unless the caller
//! writes JSON text). Keys under `_state/` belong to [`NodeState`](crate::NodeState)
//! and are refused here. As with state, reads come from the node as this replica last
//! saw it, with this replica's own writes laid over for a few seconds; a write goes
//! to the cluster through the runtime's resource manager (in the harness, to memory).
//!
//! ```
//! # use tiny_sdk::prelude::*;
//! # #[derive(Component, Default)] #[component(name = "legacy")]
//! # struct Legacy { #[port] go: Input<()> }
//! # impl Legacy {
//! async fn on_go(&self, ctx: &Ctx<Self>, _: ()) -> Result<()> {
//!     let running = ctx.metadata().get("ticker-running").is_some();
//!     if !running {
//!         ctx.metadata().update(&[("ticker-running", Some("true"))]).await?;
//!     }
//!     Ok(())
//! }
//! # }
//! ```

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
};

use crate::{
    client::ResourceManager,
    contract::STATE_PREFIX,
    error::{Error, Result, code},
    overlay::Overlay,
};

/// The most that a node's raw metadata (every key outside `_state/`, keys and
/// values together) may hold. Node state has its own 900 KiB; the whole TinyNode
/// must fit in etcd's 1.5 MiB object limit.
pub const MAX_METADATA_BYTES: usize = 256 * 1024;

/// A node's raw metadata (see the [module docs](self)).
pub struct NodeMetadata {
    inner: Mutex<Overlay>,
    /// Held through a write: a node's writes go one at a time, in the order they were
    /// made (two patches in flight may land the other way round, the older winning).
    writing: tokio::sync::Mutex<()>,
    store: Option<Arc<dyn ResourceManager>>,
    node: String,
}

impl NodeMetadata {
    pub(crate) fn new(node: &str, store: Option<Arc<dyn ResourceManager>>) -> Self {
        Self {
            inner: Mutex::default(),
            writing: tokio::sync::Mutex::default(),
            store,
            node: node.to_owned(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Overlay> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes in the node's metadata as the watch shows it now.
    pub(crate) fn observe(&self, metadata: &BTreeMap<String, String>) {
        let seen: BTreeMap<String, String> = metadata
            .iter()
            .filter(|(k, _)| !k.starts_with(STATE_PREFIX))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self.cache().observe(seen);
    }

    /// The value under `key`; `None` when there is none.
    pub fn get(&self, key: &str) -> Option<String> {
        self.cache().current(key, None).cloned()
    }

    /// The keys that hold a value (`_state/` keys excluded), sorted.
    pub fn keys(&self) -> Vec<String> {
        self.cache().keys([])
    }

    /// Stores `value` under `key`.
    pub async fn set(&self, key: &str, value: &str) -> Result<()> {
        self.update(&[(key, Some(value))]).await
    }

    /// Removes `key` (idempotent).
    pub async fn delete(&self, key: &str) -> Result<()> {
        self.update(&[(key, None)]).await
    }

    /// Sets (`Some`) and removes (`None`) several keys in one write, as one status
    /// patch: a reader never sees some of them changed and not the others. Keys that
    /// already hold what is asked are left out; nothing left, nothing is written. A
    /// node's writes go one at a time, so they land in the order they were made.
    pub async fn update(&self, changes: &[(&str, Option<&str>)]) -> Result<()> {
        for (key, _) in changes {
            self.check_key(key)?;
        }
        let _writing = self.writing.lock().await;
        let entries: Vec<(String, Option<String>)> = {
            let mut cache = self.cache();
            // The last change of a key given twice wins, as in a merge patch.
            let wanted: BTreeMap<&str, Option<&str>> = changes.iter().copied().collect();
            let wanted: BTreeMap<&str, Option<&str>> = wanted
                .into_iter()
                .filter(|(k, v)| cache.current(k, None).map(String::as_str) != *v)
                .collect();
            if wanted.is_empty() {
                return Ok(());
            }
            let size = cache.size_without(|k| wanted.contains_key(k), &BTreeMap::new())
                + wanted
                    .iter()
                    .filter_map(|(k, v)| v.map(|v| k.len() + v.len()))
                    .sum::<usize>();
            if size > MAX_METADATA_BYTES {
                return Err(Error::permanent(format!(
                    "metadata of node `{}` would hold {size} bytes, over the {MAX_METADATA_BYTES}-byte cap",
                    self.node
                ))
                .with_code(code::METADATA_TOO_LARGE));
            }
            for (k, v) in &wanted {
                cache.wrote((*k).to_owned(), v.map(str::to_owned));
            }
            wanted
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.map(str::to_owned)))
                .collect()
        };
        if let Some(store) = &self.store {
            if let Err(e) = store.update_metadata(entries.clone()).await {
                // Not written: do not pretend it was.
                let mut cache = self.cache();
                for (k, _) in &entries {
                    cache.unwrote(k);
                }
                return Err(e.context(format_args!("metadata of node `{}`", self.node)));
            }
        } else {
            // In-process: memory is the store.
            let mut cache = self.cache();
            for (k, v) in entries {
                cache.store(k, v);
            }
        }
        Ok(())
    }

    /// Keys become keys of `status.metadata`; `_state/` is node state's.
    fn check_key(&self, key: &str) -> Result<()> {
        let fits = !key.is_empty()
            && key.len() <= 253
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
        if !fits {
            return Err(Error::permanent(format!(
                "metadata key `{key}` of node `{}` must be 1 to 253 of `A-Z a-z 0-9 - _ . /`",
                self.node
            ))
            .with_code(code::METADATA_KEY));
        }
        if key.starts_with(STATE_PREFIX) {
            return Err(Error::permanent(format!(
                "metadata key `{key}` of node `{}` is node state's: use `ctx.state()` for `{STATE_PREFIX}` keys",
                self.node
            ))
            .with_code(code::METADATA_KEY));
        }
        Ok(())
    }
}

impl std::fmt::Debug for NodeMetadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeMetadata")
            .field("node", &self.node)
            .field("keys", &self.keys())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::client::fake::Patches;

    fn node_metadata(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[tokio::test]
    async fn reads_what_the_node_shows_outside_state_and_writes_in_memory_in_process() {
        let m = NodeMetadata::new("n", None);
        m.observe(&node_metadata(&[("ticker-running", "true"), ("_state/ticks", "NDE=")]));
        assert_eq!(m.get("ticker-running").as_deref(), Some("true"));
        assert_eq!(m.get("_state/ticks"), None, "state is not metadata's");
        assert_eq!(m.keys(), ["ticker-running"]);
        m.set("port", "8080").await.expect("set");
        m.delete("ticker-running").await.expect("delete");
        assert_eq!(m.keys(), ["port"]);
        assert_eq!(m.get("port").as_deref(), Some("8080"));
    }

    #[tokio::test]
    async fn writes_go_through_the_store_as_one_patch_and_read_back_at_once() {
        let store = Arc::new(Patches::default());
        let m = NodeMetadata::new("n", Some(store.clone()));
        m.observe(&node_metadata(&[("cron-error", "bad")]));
        m.update(&[
            ("cron-running", Some("true")),
            ("cron-context", Some("{\"a\":1}")),
            ("cron-error", None),
            ("absent", None),
        ])
        .await
        .expect("written");
        let patches = store.seen.lock().expect("lock").clone();
        assert_eq!(
            patches,
            [vec![
                ("cron-context".to_owned(), Some("{\"a\":1}".to_owned())),
                ("cron-error".to_owned(), None),
                ("cron-running".to_owned(), Some("true".to_owned())),
            ]],
            "one patch, without the key that was already absent"
        );
        // Read-your-writes before the watch shows them, and after a stale event.
        m.observe(&node_metadata(&[("cron-error", "bad")]));
        assert_eq!(m.get("cron-running").as_deref(), Some("true"));
        assert_eq!(m.get("cron-error"), None);
        // Writing what is there already writes nothing.
        m.set("cron-running", "true").await.expect("no-op");
        assert_eq!(store.seen.lock().expect("lock").len(), 1);
    }

    #[tokio::test]
    async fn a_failed_write_is_not_read_back() {
        let store = Arc::new(Patches::default());
        store.fail.store(true, std::sync::atomic::Ordering::SeqCst);
        let m = NodeMetadata::new("n", Some(store));
        let err = m.set("port", "8080").await.expect_err("the store failed");
        assert!(err.to_string().contains("metadata of node `n`"), "{err}");
        assert_eq!(m.get("port"), None);
    }

    #[tokio::test]
    async fn writes_of_a_node_go_one_at_a_time_in_the_order_made() {
        use std::sync::atomic::Ordering::SeqCst;
        let store = Arc::new(Patches::default());
        store.slow_ms.store(100, SeqCst);
        let m = NodeMetadata::new("n", Some(store.clone()));
        // Start, then Stop at once, as two quick presses would.
        let (started, stopped) = tokio::join!(m.set("ticker-running", "true"), async {
            tokio::task::yield_now().await;
            m.delete("ticker-running").await
        });
        started.expect("written");
        stopped.expect("written");
        assert_eq!(store.most_at_once.load(SeqCst), 1, "patches overlapped");
        let patches = store.seen.lock().expect("lock").clone();
        assert_eq!(
            patches,
            [
                vec![("ticker-running".to_owned(), Some("true".to_owned()))],
                vec![("ticker-running".to_owned(), None)],
            ]
        );
        assert_eq!(m.get("ticker-running"), None, "stopped");
    }

    #[tokio::test]
    async fn bad_keys_and_oversized_values_are_refused_with_their_codes() {
        let m = NodeMetadata::new("n", None);
        for key in ["", "with space", "_state/ticks"] {
            let err = m.set(key, "x").await.expect_err(key);
            assert_eq!(err.code(), Some(code::METADATA_KEY), "{key}: {err}");
        }
        let err = m
            .set("big", &"x".repeat(MAX_METADATA_BYTES))
            .await
            .expect_err("too large");
        assert_eq!(err.code(), Some(code::METADATA_TOO_LARGE), "{err}");
        assert!(m.keys().is_empty());
    }
}

//! Node state: small typed values a node keeps across restarts, shared by replicas.
//!
//! Stored where the Go SDK stores them, so that either SDK reads what the other wrote:
//! in the TinyNode's `status.metadata`, under `_state/<key>`, as base64 of the bytes
//! (tiny writes JSON bytes). The total is capped at 900 KiB, as in Go, because the
//! whole object must fit in etcd.
//!
//! Reads come from the node as this replica last saw it, with this replica's own
//! writes laid over (until the watch shows them), so that a value just written is read
//! back at once.
//!
//! **What a write costs.** Writes are batched like the `_control` view: a `set`,
//! `update` or `delete` takes effect for readers at once and reaches the cluster, with
//! every other write of the node in the same window, as **one** status patch within
//! [`WRITE_DELAY`] (250 ms). A rate limiter that counts a storm of messages writes about
//! four patches a second, not one per message. A node's patches go one at a time, so
//! they land in the order their values were written. A write that fails for a reason
//! that may pass (the API server away, a conflict) is tried again, once a second, until
//! it lands; one the API server refuses for good (over the cap, not allowed) is logged
//! and dropped, and readers see the node's stored value again. A component that must
//! know a value is stored before it goes on (before it answers, or before the process
//! may be killed) awaits [`flush`](NodeState::flush), which writes now and returns the
//! API server's answer. In-process (harness) state lives in memory and is written at
//! once.
//!
//! ```
//! # use tiny_sdk::prelude::*;
//! # #[derive(Component, Default)] #[component(name = "counter")]
//! # struct Counter { #[port] tick: Input<()> }
//! # impl Counter {
//! async fn on_tick(&self, ctx: &Ctx<Self>, _: ()) -> Result<()> {
//!     // Read, add and write as one step: no other message of this replica can
//!     // interleave between the read and the write.
//!     let n: u64 = ctx.state().update("count", |n: Option<u64>| n.unwrap_or(0) + 1).await?;
//!     if n % 1000 == 0 {
//!         ctx.state().flush().await?; // stored before going on
//!     }
//!     Ok(())
//! }
//! # }
//! ```

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use base64::{Engine as _, engine::general_purpose::STANDARD};
use serde::{Serialize, de::DeserializeOwned};

use crate::{
    client::ResourceManager,
    contract::STATE_PREFIX,
    error::{Error, Result, code},
    overlay::Overlay,
};

/// The most state a node may hold, all keys together (the Go SDK's `MaxStateBytes`).
pub const MAX_STATE_BYTES: usize = 900 * 1024;

/// How long node state writes gather before they are sent as one status patch.
pub const WRITE_DELAY: Duration = Duration::from_millis(250);

/// The wait before a write that failed for a passing reason is tried again.
const RETRY_DELAY: Duration = Duration::from_secs(1);

/// A node's state (see the [module docs](self)).
pub struct NodeState {
    inner: Arc<Shared>,
    store: Option<Arc<dyn ResourceManager>>,
    node: Arc<str>,
}

/// What a node's state and its background writes share.
#[derive(Default)]
struct Shared {
    cache: Mutex<Cache>,
    /// Held while a patch is on its way: one at a time, so patches land in the order
    /// their values were written (two in flight may land the other way round, and the
    /// older value would win), and a failed one is put back before the next is taken.
    writing: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Cache {
    /// `_state/` entries (key without the prefix, base64 value) as last seen on the
    /// node, with this replica's written values over them.
    overlay: Overlay,
    /// Values not written yet: the next flush sends them all in one patch.
    dirty: BTreeMap<String, Option<String>>,
    /// A flush is scheduled.
    scheduled: bool,
    /// How many patches were refused for good, and the last refusal: a flush that
    /// waited behind a patch which carried its values and was refused says so.
    refusals: u64,
    last_refusal: Option<Error>,
}

impl Cache {
    fn current(&self, key: &str) -> Option<&String> {
        self.overlay.current(key, self.dirty.get(key))
    }

    fn keys(&self) -> Vec<String> {
        self.overlay.keys(&self.dirty)
    }

    /// Moves the unwritten values to the written ones, as the patch that carries them.
    fn take_dirty(&mut self) -> Vec<(String, Option<String>)> {
        let dirty = std::mem::take(&mut self.dirty);
        dirty
            .into_iter()
            .map(|(k, v)| {
                self.overlay.wrote(k.clone(), v.clone());
                (format!("{STATE_PREFIX}{k}"), v)
            })
            .collect()
    }

    /// A patch did not land: its values are unwritten again (unless written anew
    /// since), to be tried again; or, when `drop` says it never will, forgotten.
    fn put_back(&mut self, batch: Vec<(String, Option<String>)>, drop: bool) {
        for (k, v) in batch {
            let Some(key) = k.strip_prefix(STATE_PREFIX) else {
                continue;
            };
            self.overlay.unwrote(key);
            if !drop && !self.dirty.contains_key(key) {
                self.dirty.insert(key.to_owned(), v);
            }
        }
    }

    fn size_with(&self, key: &str, value: Option<&str>) -> usize {
        self.overlay.size_without(|k| k == key, &self.dirty) + value.map_or(0, |v| key.len() + v.len())
    }
}

impl NodeState {
    pub(crate) fn new(node: &str, store: Option<Arc<dyn ResourceManager>>) -> Self {
        Self {
            inner: Arc::default(),
            store,
            node: node.into(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        lock(&self.inner.cache)
    }

    /// Takes in the node's metadata as the watch shows it now.
    pub(crate) fn observe(&self, metadata: &BTreeMap<String, String>) {
        let seen: BTreeMap<String, String> = metadata
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(STATE_PREFIX)?.to_owned(), v.clone())))
            .collect();
        self.cache().overlay.observe(seen);
    }

    /// The value under `key`, decoded from JSON; `None` when there is none.
    ///
    /// A value that is not base64 of JSON of `T` (another SDK's bytes, or another
    /// type) is an error naming the key.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        match self.cache().current(key) {
            Some(encoded) => self.decode(key, encoded).map(Some),
            None => Ok(None),
        }
    }

    /// The raw bytes under `key`.
    pub fn get_bytes(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let cache = self.cache();
        let Some(encoded) = cache.current(key) else {
            return Ok(None);
        };
        self.bytes(key, encoded).map(Some)
    }

    /// The keys that hold a value, sorted.
    pub fn keys(&self) -> Vec<String> {
        self.cache().keys()
    }

    /// Adds the state as this replica sees it, as `status.metadata` holds it
    /// (`_state/<key>`: base64), to `into`.
    pub(crate) fn snapshot(&self, into: &mut BTreeMap<String, String>) {
        let cache = self.cache();
        for key in cache.keys() {
            if let Some(value) = cache.current(&key) {
                into.insert(format!("{STATE_PREFIX}{key}"), value.clone());
            }
        }
    }

    /// Stores `value` (as JSON) under `key`.
    ///
    /// Readers see it at once; it reaches the cluster within [`WRITE_DELAY`], with the
    /// node's other writes of that window (see the [module docs](self)).
    pub async fn set<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<()> {
        let bytes = encode(key, value)?;
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

    /// Reads `key`, computes its new value with `f` and stores it, as one step for
    /// this replica: no other write of this node's state comes between the read and the
    /// write (a counter under a storm of messages counts every one). Returns the value
    /// stored. Replicas do not share the step: state a node's replicas all update
    /// belongs to the leader (`ctx.spawn_on_leader`, or `ctx.is_leader()`).
    ///
    /// ```
    /// # async fn f(state: &tiny_sdk::NodeState) -> tiny_sdk::Result<()> {
    /// let hits: u64 = state.update("hits", |n: Option<u64>| n.unwrap_or(0) + 1).await?;
    /// # let _ = hits; Ok(()) }
    /// ```
    pub async fn update<T, F>(&self, key: &str, f: F) -> Result<T>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce(Option<T>) -> T,
    {
        check_key(key)?;
        let mut cache = self.cache();
        let old = match cache.current(key) {
            Some(encoded) => Some(self.decode::<T>(key, encoded)?),
            None => None,
        };
        let new = f(old);
        let bytes = encode(key, &new)?;
        self.stage(&mut cache, key, Some(STANDARD.encode(bytes)))?;
        drop(cache);
        Ok(new)
    }

    /// Sends every write not sent yet now, as one patch, and returns the API server's
    /// answer: after `Ok`, the values are stored. A patch already on its way is waited
    /// for first (patches of a node go one at a time, in order): values it failed to
    /// store for a passing reason go along in this one, and its refusal for good is
    /// this call's error. Nothing to send is `Ok` once that patch has landed.
    pub async fn flush(&self) -> Result<()> {
        let Some(store) = &self.store else { return Ok(()) };
        let refusals = self.cache().refusals;
        flush(&self.inner, store.as_ref(), &self.node).await?;
        let cache = self.cache();
        match &cache.last_refusal {
            Some(e) if cache.refusals != refusals => Err(e.clone()),
            _ => Ok(()),
        }
    }

    async fn write(&self, key: &str, value: Option<String>) -> Result<()> {
        check_key(key)?;
        let mut cache = self.cache();
        self.stage(&mut cache, key, value)
    }

    /// Lays `value` over `key` for readers and schedules its write.
    fn stage(&self, cache: &mut Cache, key: &str, value: Option<String>) -> Result<()> {
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
        let Some(store) = &self.store else {
            // In-process: memory is the store.
            cache.overlay.store(key.to_owned(), value);
            return Ok(());
        };
        cache.dirty.insert(key.to_owned(), value);
        if !cache.scheduled {
            cache.scheduled = true;
            tokio::spawn(flush_later(self.inner.clone(), store.clone(), self.node.clone()));
        }
        Ok(())
    }

    /// The bytes a stored value stands for.
    fn bytes(&self, key: &str, encoded: &str) -> Result<Vec<u8>> {
        STANDARD.decode(encoded).map_err(|e| {
            Error::permanent(format!("node state `{key}` of node `{}` is not base64: {e}", self.node))
                .with_code(code::STATE_UNDECODABLE)
        })
    }

    fn decode<T: DeserializeOwned>(&self, key: &str, encoded: &str) -> Result<T> {
        let bytes = self.bytes(key, encoded)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            Error::permanent(format!(
                "node state `{key}` of node `{}` does not decode: {e}",
                self.node
            ))
            .with_code(code::STATE_UNDECODABLE)
        })
    }
}

fn lock(cache: &Mutex<Cache>) -> std::sync::MutexGuard<'_, Cache> {
    cache.lock().unwrap_or_else(PoisonError::into_inner)
}

fn encode<T: Serialize + ?Sized>(key: &str, value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| {
        Error::permanent(format!("node state `{key}`: value does not encode: {e}")).with_code(code::STATE_UNDECODABLE)
    })
}

/// After [`WRITE_DELAY`], sends the node's unwritten state; a write that may pass is
/// tried again every [`RETRY_DELAY`], one refused for good is logged and dropped.
async fn flush_later(inner: Arc<Shared>, store: Arc<dyn ResourceManager>, node: Arc<str>) {
    let mut delay = WRITE_DELAY;
    loop {
        tokio::time::sleep(delay).await;
        lock(&inner.cache).scheduled = false;
        match flush(&inner, store.as_ref(), &node).await {
            Ok(()) => return,
            Err(e) if e.is_retryable() => {
                tracing::debug!(node = %node, error = %e, "node state not written yet; trying again");
                let mut cache = lock(&inner.cache);
                if cache.scheduled {
                    return; // a newer write scheduled a flush, which takes these along
                }
                cache.scheduled = true;
                delay = RETRY_DELAY;
            }
            Err(e) => {
                tracing::error!(node = %node, error = %e, "node state write refused; the values are dropped");
                return;
            }
        }
    }
}

/// Sends the node's unwritten state as one patch, once the patch on its way (if any)
/// has landed or been put back.
async fn flush(inner: &Shared, store: &dyn ResourceManager, node: &str) -> Result<()> {
    let _writing = inner.writing.lock().await;
    let batch = lock(&inner.cache).take_dirty();
    if batch.is_empty() {
        return Ok(());
    }
    match store.update_metadata(batch.clone()).await {
        Ok(()) => Ok(()),
        Err(e) => {
            let keys: Vec<&str> = batch.iter().filter_map(|(k, _)| k.strip_prefix(STATE_PREFIX)).collect();
            let e = e.context(format_args!("node state of node `{node}` ({})", keys.join(", ")));
            let mut cache = lock(&inner.cache);
            let refused = !e.is_retryable();
            cache.put_back(batch, refused);
            if refused {
                cache.refusals += 1;
                cache.last_refusal = Some(e.clone());
            }
            Err(e)
        }
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::client::fake::Patches;

    fn state(store: &Arc<Patches>) -> NodeState {
        NodeState::new("n", Some(store.clone() as Arc<dyn ResourceManager>))
    }

    fn patches(store: &Patches) -> Vec<Vec<(String, Option<String>)>> {
        store.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    #[tokio::test]
    async fn a_storm_of_writes_is_one_patch_and_read_back_at_once() {
        let store = Arc::new(Patches::default());
        let s = state(&store);
        for _ in 0..1000 {
            s.update("count", |n: Option<u64>| n.unwrap_or(0) + 1)
                .await
                .expect("staged");
        }
        s.set("last", "x").await.expect("staged");
        s.delete("gone").await.expect("staged");
        assert_eq!(s.get::<u64>("count").expect("reads"), Some(1000), "read your writes");
        assert!(patches(&store).is_empty(), "nothing sent before the window closes");
        tokio::time::sleep(WRITE_DELAY * 2).await;
        let sent = patches(&store);
        assert_eq!(sent.len(), 1, "{sent:?}");
        let keys: Vec<&str> = sent[0].iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            ["_state/count", "_state/last"],
            "a delete of nothing sends nothing"
        );
        assert_eq!(s.get::<u64>("count").expect("reads"), Some(1000));
    }

    #[tokio::test]
    async fn flush_writes_now_and_says_how_it_went() {
        let store = Arc::new(Patches::default());
        let s = state(&store);
        s.set("a", &1).await.expect("staged");
        s.flush().await.expect("stored");
        assert_eq!(patches(&store).len(), 1);
        s.flush().await.expect("nothing to send");
        assert_eq!(patches(&store).len(), 1);
        store.fail.store(true, Ordering::SeqCst);
        s.set("a", &2).await.expect("staged");
        let err = s.flush().await.expect_err("the API server is away");
        assert!(err.is_retryable(), "{err}");
        let said = err.to_string();
        assert!(said.contains("node state of node `n` (a)"), "{said}");
        assert_eq!(s.get::<u64>("a").expect("reads"), Some(2), "still this replica's value");
        // Tried again in the background once the API server answers.
        store.fail.store(false, Ordering::SeqCst);
        tokio::time::sleep(RETRY_DELAY * 2).await;
        let sent = patches(&store);
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(sent[1], [("_state/a".to_owned(), Some(STANDARD.encode("2")))]);
    }

    #[tokio::test]
    async fn patches_go_one_at_a_time_and_the_newest_value_lands_last() {
        let store = Arc::new(Patches::default());
        store.slow_ms.store(300, Ordering::SeqCst);
        store.fail_next.store(1, Ordering::SeqCst);
        let s = state(&store);
        s.set("n", &1).await.expect("staged");
        while store.in_flight.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The background patch of 1 is on its way (and will fail) when 2 is written
        // and flushed: 2 must not go out beside it, nor 1 be put back over 2.
        s.set("n", &2).await.expect("staged");
        s.flush().await.expect("stored");
        assert_eq!(store.most_at_once.load(Ordering::SeqCst), 1, "patches overlapped");
        tokio::time::sleep(RETRY_DELAY * 2).await;
        let two = Some(STANDARD.encode("2"));
        assert_eq!(
            patches(&store),
            [[("_state/n".to_owned(), two)]],
            "only 2 is stored, once"
        );
    }

    #[tokio::test]
    async fn a_flush_behind_a_patch_refused_for_good_says_so() {
        let store = Arc::new(Patches::default());
        store.slow_ms.store(300, Ordering::SeqCst);
        store.fail_next.store(1, Ordering::SeqCst);
        store.refuse.store(true, Ordering::SeqCst);
        let s = state(&store);
        s.set("n", &1).await.expect("staged");
        while store.in_flight.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // 1 is on its way and will be refused: the flush has nothing left to send.
        let err = s.flush().await.expect_err("the patch carrying 1 was refused");
        assert!(!err.is_retryable(), "{err}");
        assert!(err.to_string().contains("node state of node `n` (n)"), "{err}");
        assert_eq!(s.get::<u64>("n").expect("reads"), None, "dropped");
        s.flush().await.expect("nothing refused since");
    }

    #[tokio::test]
    async fn the_cap_and_the_key_are_checked_when_written() {
        let store = Arc::new(Patches::default());
        let s = state(&store);
        let big = "x".repeat(MAX_STATE_BYTES);
        let err = s.set("big", &big).await.expect_err("over the cap");
        assert_eq!(err.code(), Some(code::STATE_TOO_LARGE));
        let err = s
            .update("bad key!", |n: Option<u64>| n.unwrap_or(0))
            .await
            .expect_err("key");
        assert_eq!(err.code(), Some(code::STATE_KEY));
        tokio::time::sleep(WRITE_DELAY * 2).await;
        assert!(patches(&store).is_empty());
    }
}

//! [`RunStore`]: the key-value store the ledger and run-scoped state live in, and
//! reading a run out of it.

use std::{
    collections::BTreeMap,
    sync::{Mutex, PoisonError},
};

use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt as _};

use super::{RunStatus, StepRecord, step_records_prefix};
use crate::error::{Error, Result};

/// The key-value store of durable runs: one bucket for every run of every module on
/// the broker (JetStream KV `TINY_EXEC` in `tiny-runtime`). Keys are laid out by
/// [`step_record_key`](super::step_record_key) and its siblings.
///
/// A backend failure is an [`Error`] with code [`RUN_STORE`](crate::error::code::RUN_STORE),
/// transient when trying again may work (the broker is away).
pub trait RunStore: Send + Sync {
    /// The value at `key`; `None` if there is none.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>>>;

    /// Sets the value at `key`.
    fn put<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<()>>;

    /// Removes the value at `key`; done also if there was none.
    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>>;

    /// Every key that starts with `prefix` (all with `""`), sorted; empty if none.
    fn keys<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>>>;
}

/// A [`RunStore`] in memory, for the harness and tests.
#[derive(Debug, Default)]
pub struct MemoryRunStore {
    entries: Mutex<BTreeMap<String, Bytes>>,
}

impl MemoryRunStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every `(key, value)`, by key: what a reconciler pass reads (see
    /// [`Plan::compute`](super::Plan::compute)).
    pub fn entries(&self) -> Vec<(String, Bytes)> {
        self.lock().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Bytes>> {
        // Every operation is one map call: a panic cannot leave the map half-changed.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RunStore for MemoryRunStore {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Bytes>>> {
        let value = self.lock().get(key).cloned();
        futures::future::ready(Ok(value)).boxed()
    }

    fn put<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<()>> {
        self.lock().insert(key.to_owned(), value);
        futures::future::ready(Ok(())).boxed()
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<()>> {
        self.lock().remove(key);
        futures::future::ready(Ok(())).boxed()
    }

    fn keys<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>>> {
        let keys = self
            .lock()
            .range(prefix.to_owned()..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(prefix))
            .cloned()
            .collect();
        futures::future::ready(Ok(keys)).boxed()
    }
}

/// The step records of run `run_id` as `(stepKey, record)` pairs, by step key. A
/// record deleted while reading is left out; one that does not read is an error
/// (code [`RUN_RECORD`](crate::error::code::RUN_RECORD)) naming its key.
pub async fn read_run<S: RunStore + ?Sized>(store: &S, run_id: &str) -> Result<Vec<(String, StepRecord)>> {
    let prefix = step_records_prefix(run_id);
    let mut records = Vec::new();
    for key in store.keys(&prefix).await? {
        let Some(value) = store.get(&key).await? else {
            continue;
        };
        let record = StepRecord::from_json_slice(&value).map_err(|e| e.context(format_args!("ledger key {key:?}")))?;
        let step_key = key.strip_prefix(prefix.as_str()).unwrap_or(&key).to_owned();
        records.push((step_key, record));
    }
    Ok(records)
}

/// The status of run `run_id` (Go's `run_status`): see [`RunStatus::from_records`].
/// Fails on an empty run id, as Go's does.
pub async fn run_status<S: RunStore + ?Sized>(store: &S, run_id: &str) -> Result<RunStatus> {
    if run_id.is_empty() {
        return Err(Error::permanent("run status: the run id is empty"));
    }
    Ok(RunStatus::from_records(&read_run(store, run_id).await?))
}

//! Run-scoped state: values a durable run's steps share, whichever replica runs
//! them, in the run store under `exec/<runID>/<key>` (Go's
//! `State.Scoped("execution", runID)`).

use std::sync::Arc;

use bytes::Bytes;
use serde::{Serialize, de::DeserializeOwned};

use super::{RunStore, exec_prefix, scoped_key};
use crate::error::{Error, Result, code};

/// The state of one durable run (see [`Ctx::run_state`](crate::Ctx::run_state)).
///
/// Keys are sanitised as Go sanitises them (characters outside `[A-Za-z0-9-_/.=]`
/// become `_`), so a Go step and a Rust step of one run read each other's values.
/// Values are JSON; [`get_bytes`](Self::get_bytes) and [`set_bytes`](Self::set_bytes)
/// take them raw.
#[derive(Clone)]
pub struct RunState {
    store: Arc<dyn RunStore>,
    run_id: String,
}

impl std::fmt::Debug for RunState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunState")
            .field("run_id", &self.run_id)
            .finish_non_exhaustive()
    }
}

impl RunState {
    /// The state of run `run_id` in `store`.
    pub fn new(store: Arc<dyn RunStore>, run_id: &str) -> Self {
        Self {
            store,
            run_id: run_id.to_owned(),
        }
    }

    /// The run.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The raw value at `key`.
    pub async fn get_bytes(&self, key: &str) -> Result<Option<Bytes>> {
        self.store.get(&scoped_key(&self.run_id, key)).await
    }

    /// The value at `key`, decoded; an error names the key if it does not decode.
    pub async fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>> {
        let Some(bytes) = self.get_bytes(key).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::permanent(format!("run `{}` state `{key}` does not decode: {e}", self.run_id))
                .with_code(code::UNDECODABLE)
        })
    }

    /// Sets `key` to the raw `value`.
    pub async fn set_bytes(&self, key: &str, value: impl Into<Bytes>) -> Result<()> {
        self.store.put(&scoped_key(&self.run_id, key), value.into()).await
    }

    /// Sets `key` to `value`'s JSON.
    pub async fn set<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<()> {
        let bytes = serde_json::to_vec(value)
            .map_err(|e| Error::permanent(format!("run `{}` state `{key}` does not encode: {e}", self.run_id)))?;
        self.set_bytes(key, bytes).await
    }

    /// Removes `key`.
    pub async fn delete(&self, key: &str) -> Result<()> {
        self.store.delete(&scoped_key(&self.run_id, key)).await
    }

    /// The run's keys that start with `prefix` (sanitised), without the run's
    /// namespace, sorted (Go's `List`). The ledger's keys are among them: step
    /// records under `step/`, and tiny's outside call answers (`call/`) and first
    /// message (`entry/`).
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let namespace = exec_prefix(&self.run_id);
        let keys = self.store.keys(&scoped_key(&self.run_id, prefix)).await?;
        Ok(keys
            .into_iter()
            .filter_map(|k| k.strip_prefix(&namespace).map(str::to_owned))
            .collect())
    }
}

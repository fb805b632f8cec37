//! How soon a failed reconcile is tried again: one second, doubling with each failure
//! of the same object up to a minute, forgotten once it succeeds. (controller-runtime,
//! under the Go SDK, also backs off per object; a fixed short delay made a lasting
//! failure, a refused write, repeat every second for ever.)

use std::{collections::HashMap, sync::Mutex, time::Duration};

const FIRST: Duration = Duration::from_secs(1);
const MOST: Duration = Duration::from_secs(60);

/// Failures in a row, per object: its kind (the controller's watch) and name.
#[derive(Debug, Default)]
pub(crate) struct Retries(Mutex<HashMap<(&'static str, String), u32>>);

impl Retries {
    /// Object `name` of `kind` failed again: how long to wait before the next try.
    pub(crate) fn failed(&self, kind: &'static str, name: &str) -> Duration {
        let Ok(mut failures) = self.0.lock() else { return FIRST };
        let n = failures.entry((kind, name.to_owned())).or_insert(0);
        *n = n.saturating_add(1);
        FIRST.saturating_mul(1u32 << (*n - 1).min(6)).min(MOST)
    }

    /// Runs `reconcile` of object `name` of `kind`; its success forgets the object's
    /// failures, so that the next one starts over.
    pub(crate) async fn track<T, E>(
        &self,
        kind: &'static str,
        name: String,
        reconcile: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        let done = reconcile.await;
        if done.is_ok()
            && let Ok(mut failures) = self.0.lock()
        {
            failures.remove(&(kind, name));
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lasting_failure_backs_off_and_a_success_starts_over() {
        let r = Retries::default();
        let waits: Vec<u64> = (0..9).map(|_| r.failed("nodes", "a").as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(r.failed("nodes", "b"), FIRST, "per object");
        assert_eq!(r.failed("signals", "a"), FIRST, "per kind");
        let failed: Result<(), ()> = r.track("nodes", "a".into(), async { Err(()) }).await;
        assert!(failed.is_err());
        assert_eq!(r.failed("nodes", "a"), MOST, "a failure does not start over");
        let ok: Result<(), ()> = r.track("nodes", "a".into(), async { Ok(()) }).await;
        assert!(ok.is_ok());
        assert_eq!(r.failed("nodes", "a"), FIRST);
    }
}

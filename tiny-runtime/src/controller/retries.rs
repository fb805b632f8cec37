//! How soon a failed reconcile is tried again: one second, doubling with each failure
//! of the same object up to a minute, forgotten once it succeeds. (controller-runtime,
//! under the Go SDK, also backs off per object; a fixed short delay made a lasting
//! failure, a refused write, repeat every second for ever.)

use std::{collections::HashMap, sync::Mutex, time::Duration};

const FIRST: Duration = Duration::from_secs(1);
const MOST: Duration = Duration::from_secs(60);

/// Failures in a row, per object (`"<kind>/<name>"`).
#[derive(Debug, Default)]
pub(crate) struct Retries(Mutex<HashMap<String, u32>>);

impl Retries {
    /// `key` failed again: how long to wait before the next try.
    pub(crate) fn failed(&self, key: &str) -> Duration {
        let Ok(mut failures) = self.0.lock() else { return FIRST };
        let n = failures.entry(key.to_owned()).or_insert(0);
        *n = n.saturating_add(1);
        FIRST.saturating_mul(1u32 << (*n - 1).min(6)).min(MOST)
    }

    /// `key` reconciled: its next failure starts over.
    pub(crate) fn succeeded(&self, key: &str) {
        if let Ok(mut failures) = self.0.lock() {
            failures.remove(key);
        }
    }

    /// Runs `reconcile` of `key`, whose success forgets its failures.
    pub(crate) async fn track<T, E>(&self, key: &str, reconcile: impl Future<Output = Result<T, E>>) -> Result<T, E> {
        let done = reconcile.await;
        if done.is_ok() {
            self.succeeded(key);
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lasting_failure_backs_off_and_a_success_starts_over() {
        let r = Retries::default();
        let waits: Vec<u64> = (0..9).map(|_| r.failed("node/a").as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(r.failed("node/b"), FIRST, "per object");
        r.succeeded("node/a");
        assert_eq!(r.failed("node/a"), FIRST);
    }
}

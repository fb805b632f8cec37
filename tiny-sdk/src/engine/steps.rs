//! The run steps under way in this replica: one delivery of a step at a time.

use std::sync::{Arc, Mutex, PoisonError};

use rustc_hash::FxHashMap as HashMap;
use tokio::sync::Notify;

/// The steps of runs under way in this replica, by ledger key: one delivery of a step
/// runs at a time, so that the ledger read before a handler call sees the record of
/// any call of the same step that ran here before it.
#[derive(Default)]
pub(crate) struct Steps {
    /// A step is under way while its key is here; its waiters are woken through the
    /// [`Notify`] when it ends.
    running: Mutex<HashMap<String, Arc<Notify>>>,
}

/// A delivery's turn at a step, until dropped.
pub(super) struct Turn<'a> {
    steps: &'a Steps,
    key: &'a str,
    done: Arc<Notify>,
}

impl Steps {
    /// Waits until no other delivery of step `key` runs here, or `None` when
    /// `cancel` fires first.
    pub(super) async fn turn<'a>(
        &'a self,
        key: &'a str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Option<Turn<'a>> {
        loop {
            let running;
            let ended;
            {
                let mut table = self.table();
                match table.get(key) {
                    Some(done) => {
                        running = done.clone();
                        // Made under the table's lock, before the end can be told (a
                        // `Notified` counts every `notify_waiters` after it is made).
                        ended = running.notified();
                    }
                    None => {
                        let done = Arc::new(Notify::new());
                        table.insert(key.to_owned(), done.clone());
                        return Some(Turn { steps: self, key, done });
                    }
                }
            }
            tracing::debug!(step = key, "an earlier delivery of this step runs here: waiting for it");
            tokio::select! {
                () = ended => {}
                () = cancel.cancelled() => return None,
            }
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Notify>>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many steps are under way here.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table().len()
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.steps.table().remove(self.key);
        self.done.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use super::Steps;

    #[tokio::test]
    async fn a_step_runs_one_delivery_at_a_time_and_leaves_nothing_behind() {
        let steps = Steps::default();
        let cancel = CancellationToken::new();
        let first = steps.turn("r.s", &cancel).await.expect("a turn");
        let other = steps.turn("r.t", &cancel).await.expect("another step is not held up");
        drop(other);
        let waiting = tokio::time::timeout(Duration::from_millis(20), steps.turn("r.s", &cancel)).await;
        assert!(waiting.is_err(), "the second delivery waits");
        let stopping = CancellationToken::new();
        stopping.cancel();
        assert!(steps.turn("r.s", &stopping).await.is_none(), "a stopped wait gives up");
        assert_eq!(steps.len(), 1, "given-up waits leave the running step alone");

        // Two wait; the first's end lets both in, one after the other.
        let (a, b, ()) = tokio::join!(
            async { steps.turn("r.s", &cancel).await.is_some() },
            async { steps.turn("r.s", &cancel).await.is_some() },
            async {
                tokio::time::sleep(Duration::from_millis(10)).await;
                drop(first);
            }
        );
        assert!(a && b);
        assert_eq!(steps.len(), 0);
    }
}

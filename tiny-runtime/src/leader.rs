//! Leader election on a `coordination.k8s.io/v1` Lease. Every replica runs every node;
//! only the leader writes status and delivers signals.

use std::time::Duration;

use futures::{Stream, StreamExt as _};
use kube_lease_manager::LeaseManagerBuilder;
use tokio::{sync::watch, task::JoinHandle};
use tokio_stream_shim::WatchStream;

/// Whether this replica leads, and when that changes.
#[derive(Debug, Clone)]
pub struct Leadership {
    rx: watch::Receiver<bool>,
    /// Kept so that a fixed leadership's channel never closes.
    _tx: Option<std::sync::Arc<watch::Sender<bool>>>,
}

impl Leadership {
    /// A replica that always (or never) leads: for single-replica runs and tests.
    pub fn fixed(leader: bool) -> Self {
        let (tx, rx) = watch::channel(leader);
        Self {
            rx,
            _tx: Some(std::sync::Arc::new(tx)),
        }
    }

    /// `true` while this replica leads.
    pub fn is_leader(&self) -> bool {
        *self.rx.borrow()
    }

    /// Yields once each time this replica becomes the leader (and once at start if it is).
    pub(crate) fn gained(&self) -> impl Stream<Item = ()> + Send + 'static {
        WatchStream::new(self.rx.clone()).filter_map(|leads| async move { leads.then_some(()) })
    }

    /// Waits until leadership changes; returns the new state.
    pub(crate) async fn changed(&mut self) -> bool {
        let _ = self.rx.changed().await;
        *self.rx.borrow()
    }
}

/// Runs the election for `lease` in `namespace` as `identity`. The lease lasts
/// `duration`; the holder renews it ahead of expiry, so a dead leader is replaced within
/// about `duration`.
pub(crate) async fn elect(
    client: kube::Client,
    namespace: &str,
    lease: &str,
    identity: &str,
    duration: Duration,
) -> Result<(Leadership, JoinHandle<()>), kube_lease_manager::LeaseManagerError> {
    let secs = duration.as_secs().max(2);
    let manager = LeaseManagerBuilder::new(client, lease)
        .with_namespace(namespace)
        .with_identity(identity)
        .with_duration(secs)
        .with_grace((secs / 3).max(1))
        .with_field_manager("tiny-runtime")
        .build()
        .await?;
    let (rx, handle) = manager.watch().await;
    let task = tokio::spawn(async move {
        match handle.await {
            Ok(Ok(_)) => tracing::info!("leader election stopped"),
            Ok(Err(e)) => tracing::error!(error = %e, "leader election failed"),
            Err(e) => tracing::error!(error = %e, "leader election task panicked"),
        }
    });
    Ok((Leadership { rx, _tx: None }, task))
}

/// `tokio::sync::watch` as a stream, without pulling in tokio-stream.
mod tokio_stream_shim {
    use std::{
        pin::Pin,
        task::{Context, Poll},
    };

    use futures::{Stream, future::BoxFuture};
    use tokio::sync::watch;

    /// Yields the current value, then every change.
    pub struct WatchStream {
        next: BoxFuture<'static, Option<(bool, watch::Receiver<bool>)>>,
    }

    impl WatchStream {
        pub fn new(rx: watch::Receiver<bool>) -> Self {
            let first = *rx.borrow();
            Self {
                next: Box::pin(async move { Some((first, rx)) }),
            }
        }
    }

    impl Stream for WatchStream {
        type Item = bool;

        fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<bool>> {
            match self.next.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Ready(Some((value, mut rx))) => {
                    self.next = Box::pin(async move {
                        rx.changed().await.ok()?;
                        let v = *rx.borrow_and_update();
                        Some((v, rx))
                    });
                    Poll::Ready(Some(value))
                }
            }
        }
    }
}

//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go (the Go SDK's)
//! does it, so that tiny and Go replicas of one module agree on who leads. Every
//! replica runs every node; only the leader writes status and delivers signals.

use std::time::Duration;

use futures::{Stream, StreamExt as _};
use k8s_openapi::{
    api::coordination::v1::{Lease, LeaseSpec},
    apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta},
    jiff::Timestamp,
};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use tokio::{sync::watch, task::JoinHandle, time::Instant};
use tokio_stream_shim::WatchStream;
use tokio_util::sync::CancellationToken;

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

/// Runs the election for `lease` in `namespace` as `identity`, by client-go's rules (the
/// Go SDK's), scaled to the lease's `duration` (Go: 15 s):
///
/// - every retry period (`duration` / 7.5; Go: 2 s) a replica tries to take or renew
///   the lease, each try bounded by that period (a hung API server is a failed try);
/// - the holder stops leading once it has not renewed for the renew deadline
///   (`duration` × 2/3; Go: 10 s), before another replica may take the lease: a leader
///   cut off from the API server does not lead beside the next one;
/// - a replica takes a lease its holder has not renewed for `duration`, measured on its
///   own clock from when it last saw the lease change (no trust in other clocks);
/// - when `stop` fires, the holder releases the lease, so the next replica takes over
///   at once rather than after `duration`.
///
/// Fails at once only if the Lease cannot be read (a missing RBAC rule).
pub(crate) async fn elect(
    client: kube::Client,
    namespace: &str,
    lease: &str,
    identity: &str,
    duration: Duration,
    stop: CancellationToken,
) -> Result<(Leadership, JoinHandle<()>), kube::Error> {
    let api: Api<Lease> = Api::namespaced(client, namespace);
    api.get_opt(lease).await?;
    let (tx, rx) = watch::channel(false);
    let mut elector = Elector {
        api,
        name: lease.to_owned(),
        identity: identity.to_owned(),
        duration: duration.max(Duration::from_secs(2)),
        seen: None,
    };
    let task = tokio::spawn(async move {
        let timing = Timing::of(elector.duration);
        let mut renewed: Option<Instant> = None;
        let mut failing = false;
        loop {
            let attempt = tokio::time::timeout(timing.retry, elector.try_acquire_or_renew()).await;
            let now = Instant::now();
            let failure = match attempt {
                Ok(Ok(holds)) => {
                    renewed = holds.then_some(now);
                    None
                }
                Ok(Err(e)) => Some(e.to_string()),
                Err(_) => Some("the API server did not answer in time".to_owned()),
            };
            // Said once per spell of failures.
            if let Some(error) = &failure
                && !failing
            {
                tracing::warn!(lease = %elector.name, %error, "leader election: the Lease could not be read or written");
            }
            failing = failure.is_some();
            let leads = timing.leads(renewed, now);
            if !leads {
                renewed = None;
            }
            tx.send_if_modified(|l| std::mem::replace(l, leads) != leads);
            tokio::select! {
                () = tokio::time::sleep(timing.retry) => {}
                () = stop.cancelled() => {
                    if renewed.is_some() {
                        tx.send_replace(false);
                        match tokio::time::timeout(timing.retry, elector.release()).await {
                            Ok(Ok(())) => tracing::info!(lease = %elector.name, "leader election: the Lease released"),
                            Ok(Err(e)) => tracing::warn!(lease = %elector.name, error = %e, "leader election: the Lease not released"),
                            Err(_) => tracing::warn!(lease = %elector.name, "leader election: the Lease not released in time"),
                        }
                    }
                    return;
                }
            }
        }
    });
    Ok((Leadership { rx, _tx: None }, task))
}

/// How often an election tries, and how long a holder leads without renewing.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Timing {
    retry: Duration,
    renew_deadline: Duration,
}

impl Timing {
    /// client-go's proportions (15 s, 10 s, 2 s) for a lease of `duration`. A try
    /// lasts at most `retry`, so a holder stops within `renew_deadline + 2 retry`,
    /// under `duration`.
    fn of(duration: Duration) -> Self {
        Timing {
            retry: duration.mul_f64(2.0 / 15.0),
            renew_deadline: duration.mul_f64(2.0 / 3.0),
        }
    }

    /// Whether a holder whose last renewal was at `renewed` still leads at `now`: while
    /// the renewal is recent enough, so a failed try keeps the lead only until the renew
    /// deadline.
    fn leads(self, renewed: Option<Instant>, now: Instant) -> bool {
        renewed.is_some_and(|t| now.duration_since(t) <= self.renew_deadline)
    }
}

/// One replica's view of one Lease.
struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
    /// The record last read, and when (this replica's clock).
    seen: Option<(Record, Instant)>,
}

/// What says a lease was renewed: its holder and renew time.
type Record = (Option<String>, Option<MicroTime>);

impl Elector {
    /// Takes the lease if it is free or expired, renews it if this replica holds it:
    /// whether this replica holds it now. A write that loses a race is `Ok(false)`.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let secs = i32::try_from(self.duration.as_secs()).unwrap_or(i32::MAX);
        let Some(current) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(secs),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = current.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let record = (holder.clone(), spec.renew_time.clone());
        let observed = match &self.seen {
            Some((seen, at)) if *seen == record => *at,
            _ => {
                self.seen = Some((record, Instant::now()));
                Instant::now()
            }
        };
        let holds = holder.as_deref() == Some(self.identity.as_str());
        let lasts = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map_or(self.duration, Duration::from_secs);
        if holder.is_some() && !holds && observed.elapsed() <= lasts {
            return Ok(false);
        }
        let mut patch = serde_json::json!({
            "metadata": { "resourceVersion": current.metadata.resource_version },
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": secs,
                "renewTime": now,
            },
        });
        if !holds {
            patch["spec"]["acquireTime"] = serde_json::to_value(&now).unwrap_or_default();
            patch["spec"]["leaseTransitions"] = (spec.lease_transitions.unwrap_or(0) + 1).into();
        }
        match self
            .api
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(true),
            // Lost a race to take it. (A holder's renewal that conflicts is a failed
            // try: it leads on until the renew deadline, and reads the lease again.)
            Err(kube::Error::Api(e)) if e.code == 409 && !holds => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives the lease up, as client-go does: no holder, and a duration of one second.
    async fn release(&self) -> Result<(), kube::Error> {
        let Some(current) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        let holder = current.spec.as_ref().and_then(|s| s.holder_identity.as_deref());
        if holder != Some(self.identity.as_str()) {
            return Ok(());
        }
        let patch = serde_json::json!({
            "metadata": { "resourceVersion": current.metadata.resource_version },
            "spec": { "holderIdentity": null, "leaseDurationSeconds": 1 },
        });
        self.api
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
    }
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

#[cfg(test)]
mod timing_tests {
    use super::*;

    /// The election loop as it runs against an API server that stopped answering right
    /// after a renewal: each try times out after `retry`, then the loop sleeps `retry`.
    /// When does the holder stop leading, counted from that renewal?
    fn steps_down_after(duration: Duration) -> Duration {
        let timing = Timing::of(duration);
        let start = Instant::now();
        let renewed = Some(start);
        let mut now = start;
        loop {
            now += timing.retry; // the try that times out
            if !timing.leads(renewed, now) {
                return now - start;
            }
            now += timing.retry; // the pause before the next try
        }
    }

    #[test]
    fn a_cut_off_holder_steps_down_after_the_renew_deadline_and_before_the_lease_ends() {
        for seconds in [2u64, 4, 15, 60] {
            let duration = Duration::from_secs(seconds);
            let timing = Timing::of(duration);
            let took = steps_down_after(duration);
            assert!(took > timing.renew_deadline, "{seconds} s: {took:?}");
            assert!(took < duration, "{seconds} s: stepped down after {took:?}");
            // The bound the docs state: within the deadline and two tries.
            assert!(
                took <= timing.renew_deadline + timing.retry * 2,
                "{seconds} s: {took:?}"
            );
        }
        // Go's numbers for its 15 s lease.
        let go = Timing::of(Duration::from_secs(15));
        assert_eq!(
            (go.retry, go.renew_deadline),
            (Duration::from_secs(2), Duration::from_secs(10))
        );
    }

    #[test]
    fn a_holder_that_renews_keeps_leading_and_one_that_never_did_does_not() {
        let timing = Timing::of(Duration::from_secs(4));
        let t = Instant::now();
        assert!(timing.leads(Some(t), t + timing.renew_deadline));
        assert!(!timing.leads(Some(t), t + timing.renew_deadline + Duration::from_millis(1)));
        assert!(!timing.leads(None, t));
    }
}

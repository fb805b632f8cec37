//! TinyTracker: while one exists for a flow, every hop of that flow's nodes is
//! recorded (node, port, time, duration, error, a data preview) and the leader writes
//! the latest ones to the tracker's status, capped so it never grows without bound.

use std::{sync::Arc, time::Duration};

use futures::{StreamExt as _, TryStreamExt as _};
use kube::{
    Api, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::watcher,
};
use serde_json::json;

use super::{
    Reconciling,
    tracking::{DEFAULT_HOPS, Tracking},
};
use crate::{
    crd::{Decoded, TinyTracker},
    permissions::Operation,
};

/// Follows TinyTrackers and, while leading, flushes recorded hops every `every`.
pub async fn run(
    shared: Arc<Reconciling>,
    tracking: Arc<Tracking>,
    every: Duration,
    shutdown: impl Future<Output = ()> + Send,
) {
    let api: Api<TinyTracker> = shared.api();
    let follow = {
        // Leniently: one malformed tracker must not stop the others.
        let (api, tracking) = (shared.api::<Decoded<TinyTracker>>(), tracking.clone());
        async move {
            let mut events = watcher(api, watcher::Config::default()).boxed();
            loop {
                match events.try_next().await {
                    Ok(Some(watcher::Event::Apply(t) | watcher::Event::InitApply(t))) => match t.object() {
                        Ok(t) => {
                            tracking.start(&t.spec.flow_id, &t.name_any(), t.spec.max_hops.unwrap_or(DEFAULT_HOPS));
                        }
                        Err(bad) => tracing::warn!(error = %bad, "TinyTracker ignored"),
                    },
                    Ok(Some(watcher::Event::Delete(t))) => {
                        if let Ok(t) = t.object() {
                            tracking.stop(&t.spec.flow_id);
                        }
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(error = %e, "TinyTracker watch");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        }
    };
    let flush = async move {
        loop {
            tokio::time::sleep(every).await;
            if !shared.leadership.is_leader() {
                continue;
            }
            for (flow, tracker, total, hops) in tracking.drain_dirty() {
                let patch = Patch::Merge(json!({ "status": { "total": total, "hops": hops } }));
                let written = api.patch_status(&tracker, &PatchParams::default(), &patch).await;
                shared.permissions.observe(Operation::WriteTrackerStatus, &written);
                if let Err(e) = written {
                    tracing::debug!(%tracker, error = %e, "tracker status");
                    // Not lost: the next flush writes these hops (and any newer ones).
                    tracking.redirty(&flow);
                }
            }
        }
    };
    tokio::select! {
        () = follow => {}
        () = flush => {}
        () = shutdown => {}
    }
}

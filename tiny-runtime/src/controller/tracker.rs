//! TinyTracker: while one exists for a flow, every hop of that flow's nodes is
//! recorded (node, port, time, duration, error, a data preview) and the leader writes
//! the latest ones to the tracker's status, capped so it never grows without bound.

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::watcher,
};
use serde_json::json;
use tiny_sdk::engine::{HopEvent, HopKind, Observer};

use super::Shared;
use crate::{
    crd::{Decoded, TinyTracker, TrackedHop},
    permissions::Operation,
};

/// The most hops a tracker keeps.
pub const MAX_HOPS: u32 = 500;
/// Hops kept when the tracker does not say.
pub const DEFAULT_HOPS: u32 = 100;
/// Bytes of each hop's input kept as a preview.
pub const PREVIEW_BYTES: usize = 256;

#[derive(Debug, Default)]
struct Track {
    tracker: String,
    cap: usize,
    total: u64,
    hops: VecDeque<TrackedHop>,
    dirty: bool,
}

/// Records hops of tracked flows; the engine calls it on every hop.
#[derive(Debug, Default)]
pub struct Tracking {
    any: AtomicBool,
    /// Flow name -> its track.
    tracks: RwLock<HashMap<String, Arc<Mutex<Track>>>>,
    /// Node name -> flow name, from the nodes' `tinysystems.io/flow-name` label.
    flows: RwLock<HashMap<String, String>>,
}

impl Tracking {
    /// The track of `node`'s flow, when a tracker follows it.
    fn track(&self, node: &str) -> Option<Arc<Mutex<Track>>> {
        if !self.any.load(Ordering::Relaxed) {
            return None;
        }
        let flows = self.flows.read().ok()?;
        let flow = flows.get(node)?;
        self.tracks.read().ok()?.get(flow).cloned()
    }

    /// Remembers which flow `node` belongs to.
    pub fn set_flow(&self, node: &str, flow: Option<&str>) {
        if let Ok(mut f) = self.flows.write() {
            match flow {
                Some(flow) => f.insert(node.to_owned(), flow.to_owned()),
                None => f.remove(node),
            };
        }
    }

    fn start(&self, flow: &str, tracker: &str, cap: u32) {
        let cap = cap.clamp(1, MAX_HOPS) as usize;
        if let Ok(mut t) = self.tracks.write() {
            let track = t.entry(flow.to_owned()).or_default();
            if let Ok(mut track) = track.lock() {
                track.tracker = tracker.to_owned();
                track.cap = cap;
                while track.hops.len() > cap {
                    track.hops.pop_front();
                }
            }
            self.any.store(true, Ordering::Relaxed);
        }
    }

    fn stop(&self, flow: &str) {
        if let Ok(mut t) = self.tracks.write() {
            t.remove(flow);
            self.any.store(!t.is_empty(), Ordering::Relaxed);
        }
    }

    /// Takes the tracks with new hops: (flow, tracker name, total, hops).
    fn drain_dirty(&self) -> Vec<(String, String, u64, Vec<TrackedHop>)> {
        let Ok(tracks) = self.tracks.read() else {
            return Vec::new();
        };
        tracks
            .iter()
            .filter_map(|(flow, t)| {
                let mut t = t.lock().ok()?;
                if !t.dirty {
                    return None;
                }
                t.dirty = false;
                Some((
                    flow.clone(),
                    t.tracker.clone(),
                    t.total,
                    t.hops.iter().cloned().collect(),
                ))
            })
            .collect()
    }

    /// `flow`'s hops were not written: try again at the next flush.
    fn redirty(&self, flow: &str) {
        if let Ok(tracks) = self.tracks.read()
            && let Some(t) = tracks.get(flow)
            && let Ok(mut t) = t.lock()
        {
            t.dirty = true;
        }
    }
}

impl Observer for Tracking {
    /// Only a node of a tracked flow: elsewhere the handler takes the value itself.
    fn wants_data(&self, node: &str) -> bool {
        self.track(node).is_some()
    }

    fn on_hop(&self, event: &HopEvent<'_>) {
        if event.kind != HopKind::Delivered {
            return;
        }
        let Some(track) = self.track(event.node) else {
            return;
        };
        // Only a tracked flow pays for the payload's JSON, written straight from the
        // value unless the port has secret fields to mask first.
        let mut data = if event.secrets.is_empty() {
            event
                .data
                .and_then(|d| d.to_json_bytes().ok())
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default()
        } else {
            event
                .redacted_json()
                .ok()
                .flatten()
                .and_then(|v| serde_json::to_string(&*v).ok())
                .unwrap_or_default()
        };
        if data.len() > PREVIEW_BYTES {
            let mut cut = PREVIEW_BYTES;
            while !data.is_char_boundary(cut) {
                cut -= 1;
            }
            data.truncate(cut);
            data.push('…');
        }
        let hop = TrackedHop {
            node: event.node.to_owned(),
            port: event.port.to_owned(),
            from: event.from.map(str::to_owned),
            time: Time(Timestamp::try_from(event.started).unwrap_or_else(|_| Timestamp::now())),
            duration_us: u64::try_from(event.duration.as_micros()).unwrap_or(u64::MAX),
            error: event.error.map(ToString::to_string),
            data,
            expression_errors: event.expression_errors.iter().map(ToString::to_string).collect(),
        };
        if let Ok(mut t) = track.lock() {
            t.total += 1;
            t.hops.push_back(hop);
            while t.hops.len() > t.cap {
                t.hops.pop_front();
            }
            t.dirty = true;
        }
    }
}

/// Follows TinyTrackers and, while leading, flushes recorded hops every `every`.
pub async fn run(
    shared: Arc<Shared>,
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

//! The hops of tracked flows, recorded as the engine makes them: what the tracker
//! controller writes to each TinyTracker's status.

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex, RwLock,
        atomic::{AtomicBool, Ordering},
    },
};

use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use tiny_sdk::engine::{HopEvent, HopKind, Observer};

use crate::crd::TrackedHop;

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

    pub(super) fn start(&self, flow: &str, tracker: &str, cap: u32) {
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

    pub(super) fn stop(&self, flow: &str) {
        if let Ok(mut t) = self.tracks.write() {
            t.remove(flow);
            self.any.store(!t.is_empty(), Ordering::Relaxed);
        }
    }

    /// Takes the tracks with new hops: (flow, tracker name, total, hops).
    pub(super) fn drain_dirty(&self) -> Vec<(String, String, u64, Vec<TrackedHop>)> {
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
    pub(super) fn redirty(&self, flow: &str) {
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

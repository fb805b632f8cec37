//! Counters the runtime exposes on its metrics address (Prometheus text format).

use std::sync::atomic::{AtomicU64, Ordering};

/// The runtime's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    /// TinyNode status writes.
    pub status_writes: AtomicU64,
    /// Signals this replica delivered.
    pub signals_delivered: AtomicU64,
    /// Node reconciles.
    pub reconciles: AtomicU64,
    /// 1 while this replica leads.
    pub leader: AtomicU64,
    /// Messages handled by this replica's nodes.
    pub hops: AtomicU64,
    /// Messages whose handler failed.
    pub hop_errors: AtomicU64,
}

impl Metrics {
    /// Adds one.
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let rows = [
            ("tiny_status_writes_total", "counter", &self.status_writes),
            ("tiny_signals_delivered_total", "counter", &self.signals_delivered),
            ("tiny_node_reconciles_total", "counter", &self.reconciles),
            ("tiny_leader", "gauge", &self.leader),
            ("tiny_hops_total", "counter", &self.hops),
            ("tiny_hop_errors_total", "counter", &self.hop_errors),
        ];
        let mut out = String::new();
        for (name, kind, v) in rows {
            out.push_str(&format!("# TYPE {name} {kind}\n{name} {}\n", v.load(Ordering::Relaxed)));
        }
        out
    }
}

/// Counts hops for the metrics and passes them on to the tracker.
#[derive(Debug)]
pub struct HopCounter {
    /// Where the counts go.
    pub metrics: std::sync::Arc<Metrics>,
    /// The next observer.
    pub next: std::sync::Arc<crate::controller::tracker::Tracking>,
}

impl tiny_sdk::engine::Observer for HopCounter {
    fn on_hop(&self, event: &tiny_sdk::engine::HopEvent<'_>) {
        if event.kind == tiny_sdk::engine::HopKind::Delivered {
            Metrics::inc(&self.metrics.hops);
            if event.error.is_some() {
                Metrics::inc(&self.metrics.hop_errors);
            }
        }
        self.next.on_hop(event);
    }
}

//! What the runtime exposes on its metrics address, in the Prometheus text format.
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `tiny_node_messages_total` | counter | `node`, `port`: messages a node's port handled |
//! | `tiny_node_errors_total` | counter | `node`, `port`, `code`: handler failures by error code (`none` without one) |
//! | `tiny_node_retries_total` | counter | `node`, `port`: deliveries that were a retry along an edge |
//! | `tiny_edge_expression_errors_total` | counter | `node`, `port`, `edge`: edge expressions that failed making a port's input (the hop went on with `null`, as in the Go SDK) |
//! | `tiny_node_handle_duration_seconds` | histogram | `node`, `port`: handler time, downstream included |
//! | `tiny_nodes` | gauge | `state`: `running`, `failed` |
//! | `tiny_grpc_client_calls_total` | counter | `module`, `outcome`: calls to other modules, by gRPC outcome |
//! | `tiny_grpc_server_calls_total` | counter | `outcome`: calls from other modules |
//! | `tiny_nats_client_calls_total` | counter | `module`, `outcome` (`OK`, `Error`, `Timeout`, `Unreachable`, `Abandoned`: given up by the edge before a reply): requests to other modules over NATS |
//! | `tiny_nats_server_calls_total` | counter | `outcome` (`OK`, `Error`): NATS messages handled |
//! | `tiny_signals_delivered_total` | counter | TinySignals this replica delivered |
//! | `tiny_leader` | gauge | 1 while this replica leads |
//! | `tiny_hops_total`, `tiny_hop_errors_total` | counter | all messages handled, and failed |
//! | `tiny_status_writes_total`, `tiny_node_reconciles_total` | counter | TinyNode status writes, node reconciles |
//! | `tiny_tasks_alive` | gauge | tasks alive in the module's tokio runtime (tokio's `num_alive_tasks`): Go's goroutine count |
//! | `tiny_nats_slow_consumer_drops_total` | counter | core NATS messages the client dropped because the module took them too slowly (a lower bound) |
//! | `tiny_messages_expired_total` | counter | messages dropped because their sender's deadline (`x-reply-deadline`) had passed |
//! | `tiny_system_port_refused_total` | counter | system-port messages refused by `--system-ports-from` |
//!
//! Labels never carry message data, and every labelled family is capped
//! (10,000 node/port pairs, 16 codes and 16 edges per port, 256 peer modules): past a cap, counts go to a series labelled `_other`, so a flow
//! that makes up error codes cannot grow the exposition without bound.

use std::{
    collections::HashMap,
    fmt::Write as _,
    sync::{
        Arc, Mutex, OnceLock, RwLock,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use tiny_sdk::engine::{HopEvent, HopKind, Observer};

/// The most node/port pairs with their own series.
pub(crate) const MAX_SERIES: usize = 10_000;
/// The most error codes with their own series, per port.
pub(crate) const MAX_CODES: usize = 16;
/// The most peer modules with their own series.
pub(crate) const MAX_MODULES: usize = 256;
/// The label value counts go to past a cap.
pub(crate) const OTHER: &str = "_other";

/// Upper bounds of the latency histogram's buckets, in seconds.
pub(crate) const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
];

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
    /// Per node and port.
    ports: PortTable,
    /// The module's nodes by state (running, failed), while the module runs.
    nodes: OnceLock<NodeCounts>,
}

/// Counts a module's nodes by state: `(running, failed)`, `None` once it is gone.
struct NodeCounts(Box<dyn Fn() -> Option<(usize, usize)> + Send + Sync>);

impl std::fmt::Debug for NodeCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NodeCounts")
    }
}

impl Metrics {
    /// Adds one.
    pub(crate) fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts the module's nodes by state with `counts` in [`render`](Self::render)
    /// (it must not hold the module: the module holds these metrics).
    pub(crate) fn count_nodes_with(&self, counts: impl Fn() -> Option<(usize, usize)> + Send + Sync + 'static) {
        let _ = self.nodes.set(NodeCounts(Box::new(counts)));
    }

    /// Records one delivery to `node`'s `port`.
    pub(crate) fn record_hop(&self, node: &str, port: &str, took: Duration, attempt: u32, error: Option<Option<&str>>) {
        Metrics::inc(&self.hops);
        if error.is_some() {
            Metrics::inc(&self.hop_errors);
        }
        self.ports.get(node, port).record(took, attempt, error);
    }

    /// Counts `n` edge expressions that failed along `edge` into `node`'s `port`.
    pub(crate) fn record_expression_errors(&self, node: &str, port: &str, edge: &str, n: usize) {
        let stats = self.ports.get(node, port);
        let mut edges = stats
            .expression_errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        bump(&mut edges, edge, n as u64);
    }

    /// The exposition text.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let rows = [
            (
                "tiny_status_writes_total",
                "counter",
                "TinyNode status writes.",
                &self.status_writes,
            ),
            (
                "tiny_signals_delivered_total",
                "counter",
                "TinySignals this replica delivered.",
                &self.signals_delivered,
            ),
            (
                "tiny_node_reconciles_total",
                "counter",
                "Node reconciles.",
                &self.reconciles,
            ),
            (
                "tiny_leader",
                "gauge",
                "1 while this replica leads its module.",
                &self.leader,
            ),
            (
                "tiny_hops_total",
                "counter",
                "Messages handled by this replica's nodes.",
                &self.hops,
            ),
            (
                "tiny_hop_errors_total",
                "counter",
                "Messages whose handler failed.",
                &self.hop_errors,
            ),
        ];
        let process = [
            (
                "tiny_nats_slow_consumer_drops_total",
                "Messages the NATS client or broker dropped because this module took them too slowly.",
                &SLOW_CONSUMER_DROPS,
            ),
            (
                "tiny_messages_expired_total",
                "Messages from other modules dropped unrun past their sender's deadline.",
                &EXPIRED,
            ),
            (
                "tiny_system_port_refused_total",
                "Messages to a system port refused: their sender is not one --system-ports-from allows.",
                &SYSTEM_PORT_REFUSED,
            ),
        ];
        for (name, kind, help, v) in rows.into_iter().chain(process.map(|(n, h, v)| (n, "counter", h, v))) {
            header(&mut out, name, kind, help);
            let _ = writeln!(out, "{name} {}", v.load(Ordering::Relaxed));
        }
        if let Some((running, failed)) = self.nodes.get().and_then(|counts| (counts.0)()) {
            header(&mut out, "tiny_nodes", "gauge", "Nodes of this module by state.");
            let _ = writeln!(out, "tiny_nodes{{state=\"running\"}} {running}");
            let _ = writeln!(out, "tiny_nodes{{state=\"failed\"}} {failed}");
        }
        // Read from the runtime that serves `/metrics`, the module's own: a task leak
        // shows here long before it shows in memory.
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            header(
                &mut out,
                "tiny_tasks_alive",
                "gauge",
                "Tasks alive in this module's tokio runtime (Go's goroutine count).",
            );
            let _ = writeln!(out, "tiny_tasks_alive {}", handle.metrics().num_alive_tasks());
        }
        self.ports.render(&mut out);
        grpc().render(&mut out);
        nats().render(&mut out);
        out
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// A label value, escaped as the text format wants.
struct Label<'a>(&'a str);

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '"' => f.write_str("\\\"")?,
                '\n' => f.write_str("\\n")?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}

/// The counters of one node's port.
#[derive(Debug, Default)]
struct PortStats {
    messages: AtomicU64,
    retries: AtomicU64,
    /// Per bucket (not cumulative; summed when rendered), then the `+Inf` one.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    sum_micros: AtomicU64,
    /// Failures by code: few, and only on the failure path.
    errors: Mutex<Vec<(String, u64)>>,
    /// Failed edge expressions by edge id: only on the failure path.
    expression_errors: Mutex<Vec<(String, u64)>>,
}

/// Adds `n` to `key`'s count, or to [`OTHER`]'s once [`MAX_CODES`] keys have one.
fn bump(counts: &mut Vec<(String, u64)>, key: &str, n: u64) {
    let key = if counts.len() >= MAX_CODES && !counts.iter().any(|(c, _)| c == key) {
        OTHER
    } else {
        key
    };
    match counts.iter_mut().find(|(c, _)| c == key) {
        Some((_, count)) => *count += n,
        None => counts.push((key.to_owned(), n)),
    }
}

impl PortStats {
    fn record(&self, took: Duration, attempt: u32, error: Option<Option<&str>>) {
        Metrics::inc(&self.messages);
        if attempt > 1 {
            Metrics::inc(&self.retries);
        }
        let secs = took.as_secs_f64();
        let bucket = BUCKETS.iter().position(|b| secs <= *b).unwrap_or(BUCKETS.len());
        Metrics::inc(&self.buckets[bucket]);
        self.sum_micros
            .fetch_add(u64::try_from(took.as_micros()).unwrap_or(u64::MAX), Ordering::Relaxed);
        if let Some(code) = error {
            let mut errors = self.errors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            bump(&mut errors, code.unwrap_or("none"), 1);
        }
    }
}

/// A node's ports and their counters: a handful, so a scan beats hashing.
type NodePorts = Vec<(Box<str>, Arc<PortStats>)>;

/// Node -> port -> counters. Read-locked on the hot path; written once per new pair.
#[derive(Debug, Default)]
struct PortTable {
    nodes: RwLock<HashMap<Box<str>, NodePorts>>,
    series: AtomicU64,
}

impl PortTable {
    fn get(&self, node: &str, port: &str) -> Arc<PortStats> {
        {
            let nodes = self.nodes.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(stats) = nodes
                .get(node)
                .and_then(|ports| ports.iter().find(|(p, _)| &**p == port))
            {
                return stats.1.clone();
            }
        }
        let full = self.series.load(Ordering::Relaxed) as usize >= MAX_SERIES;
        let (node, port) = if full { (OTHER, OTHER) } else { (node, port) };
        let mut nodes = self.nodes.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ports = nodes.entry(node.into()).or_default();
        if let Some((_, stats)) = ports.iter().find(|(p, _)| &**p == port) {
            return stats.clone();
        }
        let stats = Arc::new(PortStats::default());
        ports.push((port.into(), stats.clone()));
        self.series.fetch_add(1, Ordering::Relaxed);
        stats
    }

    fn render(&self, out: &mut String) {
        let nodes = self.nodes.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut rows: Vec<(&str, &str, &PortStats)> = nodes
            .iter()
            .flat_map(|(n, ports)| ports.iter().map(move |(p, s)| (&**n, &**p, &**s)))
            .collect();
        rows.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        header(
            out,
            "tiny_node_messages_total",
            "counter",
            "Messages a node's port handled.",
        );
        for (n, p, s) in &rows {
            let _ = writeln!(
                out,
                "tiny_node_messages_total{{node=\"{}\",port=\"{}\"}} {}",
                Label(n),
                Label(p),
                s.messages.load(Ordering::Relaxed)
            );
        }
        header(
            out,
            "tiny_node_errors_total",
            "counter",
            "Handler failures of a node's port, by error code.",
        );
        for (n, p, s) in &rows {
            let errors = s.errors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            for (code, count) in errors.iter() {
                let _ = writeln!(
                    out,
                    "tiny_node_errors_total{{node=\"{}\",port=\"{}\",code=\"{}\"}} {count}",
                    Label(n),
                    Label(p),
                    Label(code)
                );
            }
        }
        header(
            out,
            "tiny_edge_expression_errors_total",
            "counter",
            "Edge expressions that failed making a node's input (the hop went on with null).",
        );
        for (n, p, s) in &rows {
            let edges = s
                .expression_errors
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for (edge, count) in edges.iter() {
                let _ = writeln!(
                    out,
                    "tiny_edge_expression_errors_total{{node=\"{}\",port=\"{}\",edge=\"{}\"}} {count}",
                    Label(n),
                    Label(p),
                    Label(edge)
                );
            }
        }
        header(
            out,
            "tiny_node_retries_total",
            "counter",
            "Deliveries to a node's port that retried an edge.",
        );
        for (n, p, s) in &rows {
            let _ = writeln!(
                out,
                "tiny_node_retries_total{{node=\"{}\",port=\"{}\"}} {}",
                Label(n),
                Label(p),
                s.retries.load(Ordering::Relaxed)
            );
        }
        let name = "tiny_node_handle_duration_seconds";
        header(
            out,
            name,
            "histogram",
            "Time a node's port took to handle a message, downstream included.",
        );
        for (n, p, s) in &rows {
            let labels = format!("node=\"{}\",port=\"{}\"", Label(n), Label(p));
            let mut cumulative = 0;
            for (i, bound) in BUCKETS.iter().enumerate() {
                cumulative += s.buckets[i].load(Ordering::Relaxed);
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
            }
            cumulative += s.buckets[BUCKETS.len()].load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {cumulative}");
            let sum = s.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
            let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
            let _ = writeln!(out, "{name}_count{{{labels}}} {cumulative}");
        }
    }
}

/// Calls between modules over one transport, by outcome. One per process and
/// transport: a process runs one module.
#[derive(Debug)]
pub(crate) struct WireMetrics {
    /// `grpc` or `nats`: the metric names' middle part.
    transport: &'static str,
    /// (peer module, outcome) -> calls made.
    client: Mutex<Vec<(String, &'static str, u64)>>,
    /// outcome -> calls served.
    server: Mutex<Vec<(&'static str, u64)>>,
}

impl WireMetrics {
    const fn new(transport: &'static str) -> Self {
        Self {
            transport,
            client: Mutex::new(Vec::new()),
            server: Mutex::new(Vec::new()),
        }
    }
}

/// The process's gRPC counters.
pub(crate) fn grpc() -> &'static WireMetrics {
    static GRPC: WireMetrics = WireMetrics::new("grpc");
    &GRPC
}

/// Messages the NATS client dropped because the module did not take them fast
/// enough (its subscription buffer was full: the in-flight cap held them back), and
/// slow-consumer errors the broker reported (it dropped messages for this client).
static SLOW_CONSUMER_DROPS: AtomicU64 = AtomicU64::new(0);

/// Messages from other modules dropped unrun because their sender's deadline had
/// passed.
static EXPIRED: AtomicU64 = AtomicU64::new(0);
static SYSTEM_PORT_REFUSED: AtomicU64 = AtomicU64::new(0);

/// Counts one system port message refused by `--system-ports-from`.
pub(crate) fn system_port_refused() {
    SYSTEM_PORT_REFUSED.fetch_add(1, Ordering::Relaxed);
}

/// Messages to a system port this process refused because `--system-ports-from` does
/// not allow their sender (`tiny_system_port_refused_total`).
pub fn system_port_refusals() -> u64 {
    SYSTEM_PORT_REFUSED.load(Ordering::Relaxed)
}

/// Counts one message the NATS client or the broker dropped for a slow consumer.
pub(crate) fn slow_consumer_drop() {
    SLOW_CONSUMER_DROPS.fetch_add(1, Ordering::Relaxed);
}

/// Counts one message dropped past its deadline.
pub(crate) fn expired() {
    EXPIRED.fetch_add(1, Ordering::Relaxed);
}

/// Messages this process's NATS client (or the broker, for it) dropped because the
/// module took them too slowly (`tiny_nats_slow_consumer_drops_total`).
pub fn slow_consumer_drops() -> u64 {
    SLOW_CONSUMER_DROPS.load(Ordering::Relaxed)
}

/// Messages from other modules this process dropped unrun because their sender's
/// deadline had passed (`tiny_messages_expired_total`).
pub fn expired_messages() -> u64 {
    EXPIRED.load(Ordering::Relaxed)
}

/// The process's NATS counters.
pub(crate) fn nats() -> &'static WireMetrics {
    static NATS: WireMetrics = WireMetrics::new("nats");
    &NATS
}

/// The outcome label of a gRPC call: `OK`, or the status code's name.
pub(crate) fn outcome(code: Option<tonic::Code>) -> &'static str {
    use tonic::Code;
    match code {
        None | Some(Code::Ok) => "OK",
        Some(Code::Cancelled) => "Cancelled",
        Some(Code::Unknown) => "Unknown",
        Some(Code::InvalidArgument) => "InvalidArgument",
        Some(Code::DeadlineExceeded) => "DeadlineExceeded",
        Some(Code::NotFound) => "NotFound",
        Some(Code::AlreadyExists) => "AlreadyExists",
        Some(Code::PermissionDenied) => "PermissionDenied",
        Some(Code::ResourceExhausted) => "ResourceExhausted",
        Some(Code::FailedPrecondition) => "FailedPrecondition",
        Some(Code::Aborted) => "Aborted",
        Some(Code::OutOfRange) => "OutOfRange",
        Some(Code::Unimplemented) => "Unimplemented",
        Some(Code::Internal) => "Internal",
        Some(Code::Unavailable) => "Unavailable",
        Some(Code::DataLoss) => "DataLoss",
        Some(Code::Unauthenticated) => "Unauthenticated",
    }
}

impl WireMetrics {
    /// One call to `module` ended with `outcome`.
    pub(crate) fn client_call(&self, module: &str, outcome: &'static str) {
        let mut calls = self.client.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(row) = calls.iter_mut().find(|(m, o, _)| m == module && *o == outcome) {
            row.2 += 1;
            return;
        }
        let known = calls.iter().any(|(m, _, _)| m == module);
        // Distinct modules: a module seen with two outcomes has two rows.
        let modules = calls
            .iter()
            .map(|(m, _, _)| m.as_str())
            .collect::<std::collections::HashSet<_>>()
            .len();
        let module = if !known && modules >= MAX_MODULES {
            OTHER
        } else {
            module
        };
        match calls.iter_mut().find(|(m, o, _)| m == module && *o == outcome) {
            Some(row) => row.2 += 1,
            None => calls.push((module.to_owned(), outcome, 1)),
        }
    }

    /// One call served ended with `outcome`.
    pub(crate) fn server_call(&self, outcome: &'static str) {
        let mut calls = self.server.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match calls.iter_mut().find(|(o, _)| *o == outcome) {
            Some(row) => row.1 += 1,
            None => calls.push((outcome, 1)),
        }
    }

    fn render(&self, out: &mut String) {
        let (transport, name) = (self.transport, self.transport.to_uppercase());
        let client_metric = format!("tiny_{transport}_client_calls_total");
        header(
            out,
            &client_metric,
            "counter",
            &format!("{name} calls to other modules, by outcome."),
        );
        let mut client = self
            .client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        client.sort();
        for (module, outcome, n) in client {
            let _ = writeln!(
                out,
                "{client_metric}{{module=\"{}\",outcome=\"{outcome}\"}} {n}",
                Label(&module)
            );
        }
        let server_metric = format!("tiny_{transport}_server_calls_total");
        header(
            out,
            &server_metric,
            "counter",
            &format!("{name} calls from other modules, by outcome."),
        );
        let mut server = self
            .server
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        server.sort();
        for (outcome, n) in server {
            let _ = writeln!(out, "{server_metric}{{outcome=\"{outcome}\"}} {n}");
        }
    }
}

/// The engine's observer for the metrics: every delivery is counted per node and port.
#[derive(Debug)]
pub(crate) struct HopMetrics(pub(crate) Arc<Metrics>);

impl Observer for HopMetrics {
    fn on_hop(&self, event: &HopEvent<'_>) {
        if event.kind == HopKind::Delivered {
            let error = event.error.map(|e| e.code());
            self.0
                .record_hop(event.node, event.port, event.duration, event.attempt, error);
            if !event.expression_errors.is_empty() {
                self.0.record_expression_errors(
                    event.node,
                    event.port,
                    event.edge_id.unwrap_or_default(),
                    event.expression_errors.len(),
                );
            }
        }
    }

    /// Counts only: the handler may take the value itself.
    fn wants_data(&self, _: &str) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hops_are_counted_per_port_with_a_cumulative_histogram() {
        let m = Metrics::default();
        m.record_hop("n", "in", Duration::from_micros(300), 1, None);
        m.record_hop("n", "in", Duration::from_millis(3), 2, Some(Some("BAD")));
        m.record_hop("n", "in", Duration::from_secs(100), 1, Some(None));
        let text = m.render();
        for line in [
            "tiny_hops_total 3",
            "tiny_hop_errors_total 2",
            "tiny_node_messages_total{node=\"n\",port=\"in\"} 3",
            "tiny_node_retries_total{node=\"n\",port=\"in\"} 1",
            "tiny_node_errors_total{node=\"n\",port=\"in\",code=\"BAD\"} 1",
            "tiny_node_errors_total{node=\"n\",port=\"in\",code=\"none\"} 1",
            "tiny_node_handle_duration_seconds_bucket{node=\"n\",port=\"in\",le=\"0.0005\"} 1",
            "tiny_node_handle_duration_seconds_bucket{node=\"n\",port=\"in\",le=\"0.005\"} 2",
            "tiny_node_handle_duration_seconds_bucket{node=\"n\",port=\"in\",le=\"60\"} 2",
            "tiny_node_handle_duration_seconds_bucket{node=\"n\",port=\"in\",le=\"+Inf\"} 3",
            "tiny_node_handle_duration_seconds_count{node=\"n\",port=\"in\"} 3",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_live_task_count_follows_the_runtime() {
        let tasks = |text: &str| -> Option<u64> {
            text.lines()
                .find_map(|l| l.strip_prefix("tiny_tasks_alive "))
                .and_then(|v| v.parse().ok())
        };
        let m = Metrics::default();
        let before = tasks(&m.render()).expect("the gauge inside a runtime");
        let parked: Vec<_> = (0..3).map(|_| tokio::spawn(std::future::pending::<()>())).collect();
        assert_eq!(tasks(&m.render()), Some(before + 3), "{}", m.render());
        for task in &parked {
            task.abort();
        }
        for task in parked {
            let _ = task.await;
        }
        assert_eq!(tasks(&m.render()), Some(before));
    }

    #[test]
    fn expression_errors_are_counted_per_edge_and_capped() {
        let m = Metrics::default();
        m.record_expression_errors("n", "in", "e1", 2);
        m.record_expression_errors("n", "in", "e1", 1);
        for i in 0..40 {
            m.record_expression_errors("n", "in", &format!("made-up-{i}"), 1);
        }
        let text = m.render();
        assert!(
            text.lines()
                .any(|l| l == "tiny_edge_expression_errors_total{node=\"n\",port=\"in\",edge=\"e1\"} 3"),
            "{text}"
        );
        let series = text
            .lines()
            .filter(|l| l.starts_with("tiny_edge_expression_errors_total{"))
            .count();
        assert_eq!(series, MAX_CODES + 1, "capped, then `_other`: {text}");
    }

    #[test]
    fn made_up_error_codes_do_not_grow_the_exposition() {
        let m = Metrics::default();
        for i in 0..100 {
            let code = format!("C{i}");
            m.record_hop("n", "in", Duration::ZERO, 1, Some(Some(&code)));
        }
        let text = m.render();
        let codes = text
            .lines()
            .filter(|l| l.starts_with("tiny_node_errors_total{"))
            .count();
        assert_eq!(codes, MAX_CODES + 1);
        assert!(text.contains("code=\"_other\"} 84"), "{text}");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(Label("a\"b\\c\nd").to_string(), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn the_peer_cap_counts_distinct_modules_not_rows() {
        let m = WireMetrics::new("grpc");
        // 100 modules seen with two outcomes each, their rows interleaved.
        for outcome in ["OK", "Unavailable"] {
            for i in 0..100 {
                m.client_call(&format!("m{i}"), outcome);
            }
        }
        // 156 more: 256 distinct modules, each with a label of its own.
        for i in 100..256 {
            m.client_call(&format!("m{i}"), "OK");
        }
        // The 257th goes to `_other`.
        m.client_call("m256", "OK");
        let mut out = String::new();
        m.render(&mut out);
        for i in [0, 99, 100, 255] {
            assert!(
                out.contains(&format!("module=\"m{i}\",outcome=\"OK\"}} 1")),
                "m{i}: {out}"
            );
        }
        assert!(out.contains("module=\"m0\",outcome=\"Unavailable\"} 1"), "{out}");
        assert!(out.contains(&format!("module=\"{OTHER}\",outcome=\"OK\"}} 1")), "{out}");
        assert!(!out.contains("m256"), "{out}");
    }
}

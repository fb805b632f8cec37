//! `flow_telemetry`: a flow reads the platform's own execution traces, as Go's does:
//! the runs of a project (or one flow) in a window, or the hops of one run, from the
//! TinySystems otel-collector's statistics service (gRPC, port 2345).

use std::{collections::HashSet, time::Duration};

use serde_json::Value;
use tiny_sdk::{ErrorMessage, prelude::*};

/// The collector's statistics service, generated from `proto/statistics.proto`.
pub mod api {
    #![allow(missing_docs, clippy::all, clippy::pedantic)]
    tonic::include_proto!("api");
}

/// The window a list covers when the request says none, in minutes (Go's).
pub const DEFAULT_LOOKBACK_MINUTES: i64 = 60;
/// The most runs one answer lists (Go's `maxTraces`).
pub const MAX_TRACES: usize = 200;
/// The most runs one request examines (Go's `maxScan`): `errorsOnly` reads past its
/// results, and a busy project must not hold the hop.
pub const MAX_SCAN: usize = 5000;
/// The most pages read (Go's `maxPages`): a collector that ignores the offset ends.
pub const MAX_PAGES: usize = 100;
/// The collector's Service when the settings name none (the operator chart's).
pub const DEFAULT_SERVICE: &str = "tinysystems-otel-collector";
/// The collector's statistics port.
pub const DEFAULT_PORT: i64 = 2345;

/// Settings, as Go's flow_telemetry.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct TelemetrySettings {
    /// Kubernetes service name of the otel-collector holding the traces. A name with a
    /// dot (a full DNS name or an address) is used as it is (tiny's; Go always appends
    /// `.<namespace>.svc.cluster.local`).
    #[tiny(title = "Collector Service")]
    pub otel_service: String,
    /// Port of the collector's statistics service.
    #[tiny(title = "Collector Port")]
    pub otel_port: i64,
    /// Namespace the collector runs in. Defaults to this module's own namespace.
    #[tiny(title = "Namespace")]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Emit failures on the error port instead of failing the flow.
    #[tiny(title = "Enable Error Port")]
    #[serde(default)]
    pub enable_error_port: bool,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        Self {
            otel_service: DEFAULT_SERVICE.into(),
            otel_port: DEFAULT_PORT,
            namespace: String::new(),
            enable_error_port: false,
        }
    }
}

/// What `request` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct TelemetryRequest {
    /// Passed through to the result unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Project whose traces to read: its resource name.
    #[tiny(title = "Project")]
    pub project: String,
    /// Limit to one flow. Empty reads every flow in the project.
    #[tiny(title = "Flow")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub flow: String,
    /// Fetch this single trace's spans instead of a list (an id from a list result).
    #[tiny(title = "Trace ID")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub trace_id: String,
    /// How far back to look when listing. Defaults to 60.
    #[tiny(title = "Lookback (minutes)")]
    #[serde(skip_serializing_if = "is_zero")]
    pub lookback_minutes: i64,
    /// List only traces that recorded at least one error.
    #[tiny(title = "Errors Only")]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub errors_only: bool,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One run, summarised.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    #[tiny(title = "Trace ID")]
    pub id: String,
    /// Hops the run made.
    #[tiny(title = "Spans")]
    pub spans: i64,
    #[tiny(title = "Errors")]
    pub errors: i64,
    #[tiny(title = "Duration (ms)")]
    pub duration_ms: i64,
    /// RFC 3339.
    #[tiny(title = "Started At")]
    pub started_at: String,
}

/// One hop of a run: which port sent it, which received it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct Span {
    #[tiny(title = "Span ID")]
    pub id: String,
    #[tiny(title = "Name")]
    pub name: String,
    /// Source node and port.
    #[tiny(title = "From")]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub from: String,
    /// Target node and port.
    #[tiny(title = "To")]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub to: String,
    #[tiny(title = "Duration (ms)")]
    pub duration_ms: i64,
}

/// What `result` sends.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct TelemetryResult {
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Matching runs, newest first as the collector gives them. Empty when a single
    /// trace was requested.
    #[tiny(title = "Traces")]
    pub traces: Vec<Trace>,
    /// Hops of the requested trace. Empty when listing.
    #[tiny(title = "Spans")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spans: Vec<Span>,
    /// Traces the collector holds for the window, before any filtering.
    #[tiny(title = "Total")]
    pub total: i64,
    /// Traces with at least one error among those scanned.
    #[tiny(title = "Error Traces")]
    pub error_traces: i64,
    /// Traces examined. Below total when the scan stopped early.
    #[tiny(title = "Scanned")]
    pub scanned: i64,
    /// True when the scan stopped before the end of the window: an empty result is
    /// then inconclusive.
    #[tiny(title = "Truncated")]
    pub truncated: bool,
}

impl Default for TelemetryResult {
    /// Go's example, so that an edge reading `$.traces[0].id` or `$.spans[0].from`
    /// can be checked when the flow is built.
    fn default() -> Self {
        Self {
            context: Value::Null,
            traces: vec![Trace {
                id: "abc123".into(),
                spans: 4,
                errors: 1,
                duration_ms: 120,
                started_at: "2026-07-30T00:00:00Z".into(),
            }],
            spans: vec![Span {
                id: "s1".into(),
                name: "hop".into(),
                from: "node-a:out".into(),
                to: "node-b:in".into(),
                duration_ms: 12,
            }],
            total: 0,
            error_traces: 0,
            scanned: 0,
            truncated: false,
        }
    }
}

/// Reads the platform's own execution traces: runs in a window (set `errorsOnly` to
/// find failures), or with a `traceId` that run's hops, each naming its source and
/// target port.
#[derive(Component, Default, Debug)]
#[component(
    name = "flow_telemetry",
    description = "Flow Telemetry",
    info = "Reads the platform's own execution traces, so a flow can inspect how flows are running. Without a traceId it lists runs in the window (id, span count, error count, duration); set errorsOnly to find failures. With a traceId it returns that run's hops, each naming the source and target port, which is how you find where a run broke. Needs the project's resource name. The traces come from the otel-collector the operator deploys.",
    tags("SDK", "Observability", "Agent"),
    settings = TelemetrySettings,
    hooks
)]
pub struct FlowTelemetry {
    #[port(label = "Request", position = Left)]
    request: Input<TelemetryRequest>,
    #[port(label = "Result", position = Right)]
    result: Output<TelemetryResult>,
    #[port(label = "Error", position = Bottom, enabled_by = enable_error_port)]
    error: Output<ErrorMessage>,
}

impl Hooks for FlowTelemetry {
    async fn on_settings(&self, _: &Ctx<Self>, s: &TelemetrySettings) -> Result<()> {
        if s.otel_service.trim().is_empty() {
            return Err(Error::permanent(
                "settings: otelService (the collector's service) is required",
            ));
        }
        if s.otel_port <= 0 || s.otel_port > i64::from(u16::MAX) {
            return Err(Error::permanent(format!(
                "settings: otelPort must be a port number, got {}",
                s.otel_port
            )));
        }
        Ok(())
    }
}

#[handlers]
impl FlowTelemetry {
    async fn on_request(&self, ctx: &Ctx<Self>, req: TelemetryRequest) -> Result<Reply> {
        let context = req.context.clone();
        match read(ctx, req).await {
            Ok(mut result) => {
                result.context = context;
                self.result.emit(ctx, result).await
            }
            Err(e) if ctx.settings().enable_error_port => {
                let msg = ErrorMessage::new(&serde_json::json!({ "context": context }), &e);
                self.error.emit(ctx, msg).await
            }
            Err(e) => Err(e),
        }
    }
}

/// Where the collector is: the settings' namespace, else the module's, else
/// `POD_NAMESPACE`, else `tinysystems` (Go's order).
fn address(ctx: &Ctx<FlowTelemetry>) -> String {
    let s = ctx.settings();
    let port = s.otel_port;
    if s.otel_service.contains('.') || s.otel_service.contains(':') {
        return format!("{}:{port}", s.otel_service);
    }
    let namespace = Some(s.namespace.clone())
        .filter(|n| !n.is_empty())
        .or_else(|| ctx.client().map(|c| c.namespace().to_owned()).filter(|n| !n.is_empty()))
        .or_else(|| std::env::var("POD_NAMESPACE").ok().filter(|n| !n.is_empty()))
        .unwrap_or_else(|| "tinysystems".into());
    format!("{}.{namespace}.svc.cluster.local:{port}", s.otel_service)
}

/// How long connecting to the collector may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

async fn read(ctx: &Ctx<FlowTelemetry>, req: TelemetryRequest) -> Result<TelemetryResult> {
    if req.project.trim().is_empty() {
        return Err(Error::permanent("project is required"));
    }
    let addr = address(ctx);
    // The collector's answer is kept as an outside call: a replay, or a step
    // delivered again, gets it without asking the collector again.
    ctx.outside("otel-collector", ask(&addr, &req)).await
}

/// Asks the collector at `addr` for what `req` wants.
async fn ask(addr: &str, req: &TelemetryRequest) -> Result<TelemetryResult> {
    // The collector unreachable or busy is transient, as in Go: a retry may succeed.
    let unreachable = |e: &dyn std::fmt::Display| Error::transient(format!("otel-collector at {addr}: {e}"));
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .map_err(|e| Error::permanent(format!("collector address `{addr}`: {e}")))?
        .connect_timeout(CONNECT_TIMEOUT);
    let channel = endpoint.connect().await.map_err(|e| unreachable(&e))?;
    let mut client = api::statistics_service_client::StatisticsServiceClient::new(channel);
    if !req.trace_id.is_empty() {
        let found = client
            .get_trace_by_id(api::GetTraceByIdRequest {
                trace_id: req.trace_id.clone(),
                project_id: req.project.clone(),
            })
            .await
            .map_err(|e| Error::transient(format!("get trace {}: {}", req.trace_id, e.message())))?
            .into_inner();
        return Ok(detail(found));
    }
    list(&mut client, req).await
}

/// One run's hops: from and to are span attributes.
fn detail(found: api::GetTraceByIdResponse) -> TelemetryResult {
    let spans = found
        .spans
        .into_iter()
        .map(|s| {
            let text = |key: &str| {
                s.attributes
                    .iter()
                    .find(|a| a.key == key)
                    .and_then(|a| a.value.as_ref())
                    .and_then(|v| v.value.as_ref())
                    .map(|v| match v {
                        api::any_value::Value::StringValue(s) => s.clone(),
                        api::any_value::Value::BoolValue(b) => b.to_string(),
                        api::any_value::Value::IntValue(i) => i.to_string(),
                        api::any_value::Value::DoubleValue(d) => d.to_string(),
                    })
                    .unwrap_or_default()
            };
            let nanos = s.end_time_unix_nano.saturating_sub(s.start_time_unix_nano);
            Span {
                id: hex(&s.span_id),
                name: s.name.clone(),
                from: text("from"),
                to: text("to"),
                duration_ms: i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX),
            }
        })
        .collect();
    TelemetryResult {
        traces: Vec::new(),
        spans,
        ..empty()
    }
}

fn empty() -> TelemetryResult {
    TelemetryResult {
        context: Value::Null,
        traces: Vec::new(),
        spans: Vec::new(),
        total: 0,
        error_traces: 0,
        scanned: 0,
        truncated: false,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The runs of the window, page by page: a failure sits wherever it happened, so
/// filtering one page could report "no errors" for a project whose failure is on the
/// second. Bounded by [`MAX_TRACES`], [`MAX_SCAN`] and [`MAX_PAGES`]; `truncated` says
/// when the window was not read to its end.
async fn list(
    client: &mut api::statistics_service_client::StatisticsServiceClient<tonic::transport::Channel>,
    req: &TelemetryRequest,
) -> Result<TelemetryResult> {
    let lookback = if req.lookback_minutes > 0 {
        req.lookback_minutes
    } else {
        DEFAULT_LOOKBACK_MINUTES
    };
    let end = std::time::SystemTime::now();
    let start = end
        .checked_sub(Duration::from_secs(
            u64::try_from(lookback).unwrap_or(0).saturating_mul(60),
        ))
        .unwrap_or(std::time::UNIX_EPOCH);
    let mut out = empty();
    let mut seen = HashSet::new();
    let mut offset = 0i64;
    for _ in 0..MAX_PAGES {
        let page = client
            .get_traces(api::StatisticsGetTracesRequest {
                flow_id: req.flow.clone(),
                start: Some(start.into()),
                end: Some(end.into()),
                offset,
                project_id: req.project.clone(),
            })
            .await
            .map_err(|e| Error::transient(format!("list traces: {}", e.message())))?
            .into_inner();
        out.total = page.total;
        if page.traces.is_empty() {
            break;
        }
        offset += i64::try_from(page.traces.len()).unwrap_or(i64::MAX);
        for t in page.traces {
            // A collector that ignored the offset would be counted again.
            if !seen.insert(t.id.clone()) {
                continue;
            }
            out.scanned += 1;
            if req.errors_only && t.errors == 0 {
                continue;
            }
            if t.errors > 0 {
                out.error_traces += 1;
            }
            if out.traces.len() < MAX_TRACES {
                out.traces.push(Trace {
                    id: t.id,
                    spans: t.spans,
                    errors: t.errors,
                    duration_ms: t.duration / 1_000_000,
                    started_at: started_at(t.start),
                });
            }
        }
        if out.traces.len() >= MAX_TRACES {
            // Enough to answer; complete only if nothing is left.
            out.truncated = out.total > 0 && offset < out.total;
            break;
        }
        if usize::try_from(out.scanned).unwrap_or(usize::MAX) >= MAX_SCAN {
            out.truncated = true;
            break;
        }
        if out.total > 0 && offset >= out.total {
            break;
        }
    }
    Ok(out)
}

/// Microseconds since the epoch as RFC 3339 in UTC, to the second (Go's).
fn started_at(micros: i64) -> String {
    jiff::Timestamp::from_second(micros.div_euclid(1_000_000))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

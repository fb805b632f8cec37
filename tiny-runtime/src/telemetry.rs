//! Logs and traces of a module.
//!
//! **Traces.** The engine makes a span per hop, which [`hop::HopExport`] turns into
//! OpenTelemetry span data without `tracing` (the cost of a recorded hop); the
//! TinySignal controller makes a `tracing` span per signal, the gRPC and NATS routers
//! one per call to another module (target [`tiny_sdk::engine::TRACE_TARGET`],
//! `tiny::flow`), a call under the hop that sends it ([`under_hop`]). Both go to one
//! batch exporter. When the standard
//! OpenTelemetry variables say where to send them ([`otlp_configured`]:
//! `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), they are
//! exported by OTLP/gRPC, batched (`OTEL_BSP_*`), with `OTEL_SERVICE_NAME` or the
//! module's name as `service.name`. Without them, the Go SDK's `OTLP_DSN`
//! (`http://<token>@tinysystems-otel-collector:2345`, as the TinySystems charts set it;
//! see [`GoDsn`]) does the same towards the TinySystems collector, so the platform's
//! trace views see a tiny module's hops. The DSN's token goes only over TLS (`https://`)
//! unless `OTLP_DSN_PLAINTEXT=allow` says plain `http://` is trusted (in-cluster traffic
//! a NetworkPolicy confines); refused, tracing stays off with one warning. Otherwise the `tiny::flow` target is switched off
//! and a hop pays one cached check. W3C trace context (`traceparent`, `tracestate`,
//! `baggage`, as the Go SDK's otelgrpc) travels in gRPC metadata and NATS headers, so
//! a flow run that crosses modules is one trace; what a hop sends keeps the baggage
//! and vendor state of the context around the hop ([`hop::hop_context`]). Only OTLP over gRPC is built in (`OTEL_EXPORTER_OTLP_PROTOCOL`
//! other than `grpc` is reported and ignored).
//!
//! **Logs.** On stderr, filtered by `RUST_LOG`, as text or as one JSON object a line
//! (`--log-format json` or `TINY_LOG_FORMAT=json`). While a trace is recorded each line
//! carries its `trace_id` and `span_id`.

pub mod hop;

use std::{
    fmt,
    sync::{
        Arc, OnceLock,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use opentelemetry::{
    Context,
    propagation::{Extractor, Injector, TextMapCompositePropagator, TextMapPropagator},
    trace::{TraceContextExt as _, TracerProvider as _},
};
use opentelemetry_sdk::{
    Resource,
    error::OTelSdkResult,
    propagation::{BaggagePropagator, TraceContextPropagator},
    trace::{BatchSpanProcessor, SdkTracerProvider, ShouldSample, SpanData, SpanProcessor},
};
use tonic::metadata::{KeyRef, MetadataKey, MetadataMap, MetadataValue};
use tracing::{Event, Subscriber, field::Field};
use tracing_subscriber::{
    EnvFilter, Layer as _,
    filter::{Directive, FilterExt as _, filter_fn},
    fmt::{FmtContext, FormatEvent, FormatFields, format::Writer, time::FormatTime as _},
    layer::SubscriberExt as _,
    registry::LookupSpan,
    util::SubscriberInitExt as _,
};

/// The log filter when `RUST_LOG` is not set.
pub const DEFAULT_FILTER: &str = "info,kube=warn,tower=warn,h2=warn,hyper=warn,async_nats=warn";

/// How log lines look.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `2026-11-23T12:00:00.000000Z  WARN target: message key=value trace_id=...`
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `message`, the event's
    /// fields, and `trace_id`/`span_id` while a trace is recorded.
    Json,
}

/// Who the traces are from.
#[derive(Debug, Clone)]
pub struct Service {
    /// `service.name` unless `OTEL_SERVICE_NAME` says otherwise (the module's name).
    pub name: String,
    /// `service.version`.
    pub version: String,
    /// `service.instance.id` (the replica's identity).
    pub instance: String,
}

/// Why telemetry could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built from the `OTEL_*` variables.
    #[error("OTLP exporter: {0}")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
    /// `OTLP_DSN` is set and is not `scheme://token@host[:port]`.
    #[error("OTLP_DSN: {0}")]
    Dsn(String),
    /// A subscriber was already installed.
    #[error("a tracing subscriber is already installed: {0}")]
    AlreadyInstalled(#[source] tracing_subscriber::util::TryInitError),
    /// The flow spans' log directive did not parse.
    #[error("log filter: {0}")]
    Filter(#[source] tracing_subscriber::filter::ParseError),
}

/// Set once traces are exported: the gRPC side then reads and writes trace context.
static TRACING: AtomicBool = AtomicBool::new(false);

/// `true` while spans are exported.
pub fn tracing_enabled() -> bool {
    TRACING.load(Ordering::Relaxed)
}

/// Whether the environment asks for OTLP trace export: an OTLP endpoint is set (or the
/// Go SDK's `OTLP_DSN`, without `OTLP_DISABLED=true`), and neither
/// `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` says no.
pub fn otlp_configured() -> bool {
    let is = |k: &str, v: &str| std::env::var(k).is_ok_and(|x| x.trim().eq_ignore_ascii_case(v));
    (otel_endpoint_set() || go_dsn_text().is_some())
        && !is("OTEL_SDK_DISABLED", "true")
        && !is("OTEL_TRACES_EXPORTER", "none")
}

fn otel_endpoint_set() -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.trim().is_empty());
    set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
}

/// What lets `OTLP_DSN`'s token go over plain `http://`: `allow`.
pub const DSN_PLAINTEXT_VAR: &str = "OTLP_DSN_PLAINTEXT";

/// Whether a DSN's token may be sent as it would go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DsnTransport {
    /// Over TLS.
    Tls,
    /// In plain text, as [`DSN_PLAINTEXT_VAR`] allows.
    PlaintextAllowed,
    /// In plain text, which nothing allows: not sent.
    PlaintextRefused,
}

impl DsnTransport {
    /// The decision for `dsn`, given the value of [`DSN_PLAINTEXT_VAR`] (if set).
    pub(crate) fn of(dsn: &GoDsn, plaintext: Option<&str>) -> Self {
        if dsn.tls {
            Self::Tls
        } else if plaintext.is_some_and(|v| v.trim().eq_ignore_ascii_case("allow")) {
            Self::PlaintextAllowed
        } else {
            Self::PlaintextRefused
        }
    }
}

/// `OTLP_DSN`, unless empty or `OTLP_DISABLED=true` turns it off (as in Go).
fn go_dsn_text() -> Option<String> {
    let disabled = std::env::var("OTLP_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
    std::env::var("OTLP_DSN")
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty() && !disabled)
}

/// The Go SDK's `OTLP_DSN`: `scheme://<token>@host[:port]`, the TinySystems
/// collector's OTLP/gRPC address (port 413 unless given) and the whole DSN sent with
/// each export as `origin-dsn`, as Go's exporter does. `https` is TLS; anything else
/// is plain, which [`DsnTransport`] allows only when told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GoDsn {
    /// `http://host:port` or `https://host:port`.
    pub endpoint: String,
    /// The DSN as given.
    pub original: String,
    /// Whether the scheme is `https`.
    pub tls: bool,
}

impl GoDsn {
    /// Reads a DSN, with Go's checks: a scheme, a host and a token, and not the
    /// placeholder token `<token>`.
    pub(crate) fn parse(dsn: &str) -> Result<GoDsn, String> {
        let Some((scheme, rest)) = dsn.split_once("://").filter(|(s, _)| !s.is_empty()) else {
            // Not echoed: it may hold the token.
            return Err("it has no scheme (`http://<token>@host:port`)".to_owned());
        };
        let rest = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let Some((token, host)) = rest.rsplit_once('@') else {
            return Err(format!(
                "`{scheme}://{rest}` has no token (`{scheme}://<token>@host:port`)"
            ));
        };
        let token = token.split(':').next().unwrap_or_default();
        if token.is_empty() || token == "<token>" {
            return Err("the token is empty or the placeholder `<token>`".to_owned());
        }
        if host.is_empty() || host.starts_with(':') {
            return Err(format!("`{scheme}://***@{host}` has no host"));
        }
        let has_port = match host.rsplit_once(':') {
            // `[v6]` without a port ends in `]`.
            Some((h, p)) => !h.is_empty() && !p.contains(']'),
            None => false,
        };
        let host = if has_port {
            host.to_owned()
        } else {
            format!("{host}:413")
        };
        let tls = scheme.eq_ignore_ascii_case("https");
        let scheme = if tls { "https" } else { "http" };
        Ok(GoDsn {
            endpoint: format!("{scheme}://{host}"),
            original: dsn.to_owned(),
            tls,
        })
    }
}

/// The installed logging and tracing; [`shutdown`](Self::shutdown) flushes the spans
/// not exported yet.
#[derive(Debug, Default)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Exports what is left and stops the exporter.
    pub fn shutdown(self) {
        if self.provider.is_some() {
            tiny_sdk::engine::set_hop_spans(None);
        }
        if let Some(p) = self.provider
            && let Err(e) = p.shutdown()
        {
            eprintln!("tracing: shutting the exporter down: {e}");
        }
    }
}

/// Installs the log subscriber, and the OTLP exporter when `service` is given and the
/// environment asks for it ([`otlp_configured`]). Must run inside a Tokio runtime when
/// exporting (the gRPC exporter's connection lives there).
pub fn init(format: LogFormat, service: Option<&Service>) -> Result<Telemetry, TelemetryError> {
    let (provider, hops, refused) = match service {
        Some(service) if otlp_configured() => match provider(service)? {
            Some((p, batch, sampler)) => {
                // Hop spans go straight to the batch exporter (see [`hop`]), sampled
                // as the provider samples; installed once the subscriber is.
                let scope = opentelemetry::InstrumentationScope::builder(TRACER).build();
                let export = hop::HopExport::new(batch, scope).with_sampler(sampler);
                (Some(p), Some(export), false)
            }
            None => (None, None, true),
        },
        _ => (None, None, false),
    };
    let mut filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // The flow's spans are made only when they go somewhere: whatever RUST_LOG says,
    // on with an exporter, off (one cached check per hop) without.
    let level = if provider.is_some() { "info" } else { "off" };
    let flow: Directive = format!("{}={level}", tiny_sdk::engine::TRACE_TARGET)
        .parse()
        .map_err(TelemetryError::Filter)?;
    filter = filter.add_directive(flow);
    let ansi = format == LogFormat::Text && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .event_format(Lines { format, ansi })
        // The flow's span events (`data`, `exception`) belong to the trace, not the log;
        // its spans too: `Lines` never prints a span's fields, which this layer would
        // otherwise format into a string on every hop. `RUST_LOG` filters this layer
        // alone: as a filter of the whole subscriber it would also look up every hop
        // span (behind a lock) on each entry, exit, record and close.
        .with_filter(filter_fn(|m| !m.target().starts_with(tiny_sdk::engine::TRACE_TARGET)).and(filter));
    let otel = provider.as_ref().map(|p| {
        tracing_opentelemetry::layer()
            .with_tracer(p.tracer(TRACER))
            // Not on Go's spans, and each costs a recorded hop: the source location
            // (three attributes on every span and event), the thread's id and name (a
            // string per span), busy and idle time (two clock reads per poll).
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            // Entering a span does not make its OpenTelemetry context current (a
            // context clone and two thread-local stack operations on every poll of
            // every hop): a span's parent is the `tracing` span around it, and a log
            // line asks for its span's context ([`current_ids`]).
            .with_context_activation(false)
            // Only the flow's spans, at `info` and above (the level the flow's directive
            // gives the target while exporting): log events do not become span events
            // (they are logged, with the trace id), and other crates' spans stay out.
            .with_filter(filter_fn(|m| {
                m.target().starts_with(tiny_sdk::engine::TRACE_TARGET) && *m.level() <= tracing::Level::INFO
            }))
    });
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(otel).with(logs));
    let weak = dispatch.downgrade();
    dispatch.try_init().map_err(TelemetryError::AlreadyInstalled)?;
    // Only now: a module whose telemetry failed to start exports nothing, and its hops
    // build no span for an exporter that is gone.
    if let Some(export) = hops {
        let export: &'static hop::HopExport<BatchSpanProcessor> = Box::leak(Box::new(export));
        tiny_sdk::engine::set_hop_spans(Some(export));
    }
    // Only the first install counts, as only it succeeds.
    let _ = DISPATCH.set(weak);
    TRACING.store(provider.is_some(), Ordering::Relaxed);
    if refused {
        // Named by its setting, never by its value: the DSN holds the token.
        tracing::warn!(
            setting = DSN_PLAINTEXT_VAR,
            "OTLP_DSN sends its token over plain http: not sent, tracing is off; use an https:// DSN, \
             or set {DSN_PLAINTEXT_VAR}=allow where the path is trusted (in-cluster, confined by a NetworkPolicy)"
        );
    }
    if provider.is_some() {
        for key in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let Ok(protocol) = std::env::var(key)
                && !protocol.trim().is_empty()
                && protocol.trim() != "grpc"
            {
                tracing::warn!(key, protocol = %protocol, "only OTLP over gRPC is built in: exporting with gRPC");
            }
        }
    }
    Ok(Telemetry { provider })
}

/// The instrumentation scope of the module's spans.
const TRACER: &str = "tiny";

/// The batch exporter, shared by the tracer provider (the runtime's `tracing` spans)
/// and the hop spans ([`hop::HopExport`]). Its resource is set before it is shared.
#[derive(Debug)]
struct SharedBatch(Arc<BatchSpanProcessor>);

impl SpanProcessor for SharedBatch {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &Context) {
        self.0.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        self.0.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
}

/// The exporter the environment asks for, and its batch processor; `None` when the
/// DSN's token may not be sent ([`DsnTransport::PlaintextRefused`]).
#[allow(clippy::type_complexity, reason = "a private triple")]
fn provider(
    service: &Service,
) -> Result<Option<(SdkTracerProvider, Arc<BatchSpanProcessor>, Box<dyn ShouldSample>)>, TelemetryError> {
    use opentelemetry_otlp::{WithExportConfig as _, WithTonicConfig as _};
    let mut builder = opentelemetry_otlp::SpanExporter::builder().with_tonic();
    // The standard variables win; the Go SDK's DSN is the TinySystems way.
    if !otel_endpoint_set()
        && let Some(text) = go_dsn_text()
    {
        let dsn = GoDsn::parse(&text).map_err(TelemetryError::Dsn)?;
        let plaintext = std::env::var(DSN_PLAINTEXT_VAR).ok();
        if DsnTransport::of(&dsn, plaintext.as_deref()) == DsnTransport::PlaintextRefused {
            return Ok(None);
        }
        let mut metadata = MetadataMap::new();
        let value = MetadataValue::try_from(dsn.original.as_str())
            .map_err(|_| TelemetryError::Dsn("not a header value".to_owned()))?;
        metadata.insert("origin-dsn", value);
        builder = builder.with_endpoint(dsn.endpoint).with_metadata(metadata);
    }
    let exporter = builder.build().map_err(TelemetryError::Exporter)?;
    let mut resource = Resource::builder().with_attributes([
        opentelemetry::KeyValue::new("service.version", service.version.clone()),
        opentelemetry::KeyValue::new("service.instance.id", service.instance.clone()),
    ]);
    if std::env::var("OTEL_SERVICE_NAME").map_or(true, |v| v.trim().is_empty()) {
        resource = resource.with_service_name(service.name.clone());
    }
    let resource = resource.build();
    // Batched as `OTEL_BSP_*` says, as `with_batch_exporter` would.
    let mut batch = BatchSpanProcessor::builder(exporter).build();
    batch.set_resource(&resource);
    let batch = Arc::new(batch);
    // `OTEL_TRACES_SAMPLER` and its argument, read once: the provider's spans and the
    // traces hops begin are sampled alike.
    let sampler = opentelemetry_sdk::trace::Config::default().sampler;
    let provider = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_sampler(sampler.clone())
        .with_span_processor(SharedBatch(batch.clone()))
        .build();
    Ok(Some((provider, batch, sampler)))
}

/// W3C trace context and baggage, as the Go SDK propagates them.
pub(crate) fn propagator() -> TextMapCompositePropagator {
    TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ])
}

struct MetadataWriter<'a>(&'a mut MetadataMap);

impl Injector for MetadataWriter<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}

struct MetadataReader<'a>(&'a MetadataMap);

impl Extractor for MetadataReader<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0
            .keys()
            .filter_map(|k| match k {
                KeyRef::Ascii(k) => Some(k.as_str()),
                KeyRef::Binary(_) => None,
            })
            .collect()
    }
}

/// Writes the trace context of `span` into request metadata (`traceparent`...).
pub fn inject(span: &tracing::Span, metadata: &mut MetadataMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    if span.is_disabled() {
        return;
    }
    propagator().inject_context(&span.context(), &mut MetadataWriter(metadata));
}

/// Makes `span`, the runtime's span for what a hop's handler sends (a call to another
/// module), a child of that hop's span ([`tiny_sdk::engine::current_hop`]): the
/// `tracing` span around it is the run's outer one (a signal's, a receiver's).
pub(crate) fn under_hop(span: &tracing::Span) {
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    if let Some(ids) = tiny_sdk::engine::current_hop()
        && !span.is_disabled()
    {
        // Fails only once the span started, which nothing did yet.
        let _ = span.set_parent(hop::hop_context(ids, &hop::outer_context()));
    }
}

/// The trace context a request carries (empty without one).
pub fn extract(metadata: &MetadataMap) -> Context {
    propagator().extract(&MetadataReader(metadata))
}

/// The installed subscriber, for a log line to find its span's OpenTelemetry context
/// (weak: the subscriber owns the layer that asks).
static DISPATCH: OnceLock<tracing::dispatcher::WeakDispatch> = OnceLock::new();

/// The trace and span ids of the hop whose handler runs, else of the innermost
/// recorded span around the span `current`, else of the OpenTelemetry context made current (a request's extracted parent), when
/// one is recorded.
fn current_ids(current: Option<&tracing::span::Id>) -> Option<(String, String)> {
    // A hop's handler (or its end) logs in the hop's span: with its ids when its trace
    // is exported, with none when it is not (no line names a trace nobody receives).
    if let Some(hop) = tiny_sdk::engine::current_hop() {
        return hop
            .sampled
            .then(|| (format!("{:032x}", hop.trace_id), format!("{:016x}", hop.span_id)));
    }
    let cx = current.and_then(recorded_context).unwrap_or_else(Context::current);
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid()
        .then(|| (sc.trace_id().to_string(), sc.span_id().to_string()))
}

/// The OpenTelemetry context of the innermost span from `id` up that the OpenTelemetry
/// layer records. The registry is read directly: the log layer's own view leaves the
/// flow's spans out.
fn recorded_context(id: &tracing::span::Id) -> Option<Context> {
    use tracing_subscriber::registry::LookupSpan as _;
    let dispatch = DISPATCH.get()?.upgrade()?;
    let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
    let span = registry.span(id)?;
    span.scope().find_map(|s| {
        tracing_opentelemetry::get_otel_context(&s.id(), &dispatch).filter(|cx| cx.span().span_context().is_valid())
    })
}

/// The line format: text or JSON, with the trace id.
struct Lines {
    format: LogFormat,
    ansi: bool,
}

impl<S, N> FormatEvent<S, N> for Lines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        let ids = current_ids(ctx.current_span().id());
        match self.format {
            LogFormat::Text => {
                tracing_subscriber::fmt::time::SystemTime.format_time(&mut writer)?;
                let level = meta.level();
                if self.ansi {
                    write!(writer, " \x1b[1m{level:>5}\x1b[0m {}: ", meta.target())?;
                } else {
                    write!(writer, " {level:>5} {}: ", meta.target())?;
                }
                ctx.field_format().format_fields(writer.by_ref(), event)?;
                if let Some((trace, span)) = ids {
                    write!(writer, " trace_id={trace} span_id={span}")?;
                }
                writeln!(writer)
            }
            LogFormat::Json => {
                let mut time = String::new();
                tracing_subscriber::fmt::time::SystemTime.format_time(&mut Writer::new(&mut time))?;
                let mut fields = JsonFields(serde_json::Map::new());
                fields.0.insert("timestamp".into(), time.into());
                fields.0.insert("level".into(), meta.level().as_str().into());
                fields.0.insert("target".into(), meta.target().into());
                event.record(&mut fields);
                if let Some((trace, span)) = ids {
                    fields.0.insert("trace_id".into(), trace.into());
                    fields.0.insert("span_id".into(), span.into());
                }
                let line = serde_json::to_string(&fields.0).map_err(|_| fmt::Error)?;
                writeln!(writer, "{line}")
            }
        }
    }
}

/// An event's fields as JSON values.
struct JsonFields(serde_json::Map<String, serde_json::Value>);

impl tracing::field::Visit for JsonFields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}").into());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.insert(field.name().into(), value.to_string().into());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A log destination the test reads back.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Buffer {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The lines logged by `log` in `format`, inside the trace `trace_id` when given.
    fn logged(format: LogFormat, trace: Option<&str>) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || writer.clone())
                .with_ansi(false)
                .event_format(Lines { format, ansi: false }),
        );
        tracing::subscriber::with_default(subscriber, || {
            let mut md = MetadataMap::new();
            if let Some(t) = trace {
                md.insert("traceparent", format!("00-{t}-b7ad6b7169203331-01").parse().unwrap());
            }
            let _attached = extract(&md).attach();
            tracing::warn!(node = "n1", count = 3, "message failed");
        });
        String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn go_dsns_read_as_go_reads_them() {
        let d = GoDsn::parse("http://tok@tinysystems-otel-collector:2345").unwrap();
        assert_eq!(d.endpoint, "http://tinysystems-otel-collector:2345");
        assert_eq!(d.original, "http://tok@tinysystems-otel-collector:2345");
        assert_eq!(
            GoDsn::parse("https://tok@c.example/").unwrap().endpoint,
            "https://c.example:413"
        );
        assert_eq!(GoDsn::parse("http://tok@[::1]").unwrap().endpoint, "http://[::1]:413");
        assert_eq!(GoDsn::parse("http://tok@[::1]:9").unwrap().endpoint, "http://[::1]:9");
        for bad in [
            "collector:2345",
            "http://collector:2345",
            "http://<token>@c:1",
            "http://tok@",
        ] {
            assert!(GoDsn::parse(bad).is_err(), "{bad}");
        }
        // The token is not in what the error says.
        assert!(!GoDsn::parse("http://s3cr3t@:1").unwrap_err().contains("s3cr3t"));
        assert!(!GoDsn::parse("s3cr3t@collector:2345").unwrap_err().contains("s3cr3t"));
    }

    #[test]
    fn a_dsn_token_goes_in_plain_text_only_when_allowed() {
        let plain = GoDsn::parse("http://tok@tinysystems-otel-collector:2345").unwrap();
        let tls = GoDsn::parse("https://tok@c.example:4317").unwrap();
        assert_eq!(DsnTransport::of(&tls, None), DsnTransport::Tls);
        assert_eq!(DsnTransport::of(&tls, Some("deny")), DsnTransport::Tls);
        assert_eq!(DsnTransport::of(&plain, None), DsnTransport::PlaintextRefused);
        for not_allow in ["", "true", "yes", "allowed", "deny"] {
            assert_eq!(
                DsnTransport::of(&plain, Some(not_allow)),
                DsnTransport::PlaintextRefused,
                "{not_allow}"
            );
        }
        for allow in ["allow", " Allow ", "ALLOW"] {
            assert_eq!(DsnTransport::of(&plain, Some(allow)), DsnTransport::PlaintextAllowed);
        }
        // Any scheme but https is plain.
        let other = GoDsn::parse("grpc://tok@c:1").unwrap();
        assert_eq!(DsnTransport::of(&other, None), DsnTransport::PlaintextRefused);
    }

    #[test]
    fn json_lines_carry_fields_and_the_trace_id() {
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let line = logged(LogFormat::Json, Some(trace));
        let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
        assert_eq!(v["level"], "WARN");
        assert_eq!(v["message"], "message failed");
        assert_eq!(v["node"], "n1");
        assert_eq!(v["count"], 3);
        assert_eq!(v["trace_id"], trace);
        assert_eq!(v["span_id"], "b7ad6b7169203331");
        assert!(v["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{v}");
        let outside = logged(LogFormat::Json, None);
        let v: serde_json::Value = serde_json::from_str(outside.trim()).unwrap();
        assert!(v.get("trace_id").is_none(), "{v}");
    }

    #[test]
    fn text_lines_end_with_the_trace_id() {
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let line = logged(LogFormat::Text, Some(trace));
        assert!(line.contains(" WARN "), "{line}");
        assert!(
            line.trim_end().ends_with(&format!(
                "message failed node=\"n1\" count=3 trace_id={trace} span_id=b7ad6b7169203331"
            )),
            "{line}"
        );
    }

    #[test]
    fn trace_context_round_trips_through_metadata() {
        let mut md = MetadataMap::new();
        let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        md.insert("traceparent", parent.parse().unwrap());
        let cx = extract(&md);
        let sc = cx.span().span_context().clone();
        assert_eq!(sc.trace_id().to_string(), "0af7651916cd43dd8448eb211c80319c");
        assert!(sc.is_remote());
        let mut out = MetadataMap::new();
        propagator().inject_context(&cx, &mut MetadataWriter(&mut out));
        assert_eq!(out.get("traceparent").unwrap().to_str().unwrap(), parent);
    }
}

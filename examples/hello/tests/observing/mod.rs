//! What the observability tests share: an OTLP/gRPC receiver inside the test and the
//! spans it got, the `alpha` module observed (its spans, JSON log and a tracker, and
//! everything tiny wrote about the namespace), two modules with a warmed-up path
//! between them, and `/metrics` read by a Prometheus parser.

#![allow(dead_code, reason = "each test file uses some of these")]

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use kube::{Api, api::PostParams};
use opentelemetry_proto::tonic::{
    collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
        trace_service_server::{TraceService, TraceServiceServer},
    },
    common::v1::{KeyValue, any_value::Value as AnyValue},
    trace::v1::Span,
};
use serde_json::json;
use tiny_runtime::crd::{SignalPhase, TinyModule, TinyNode, TinySignal, TinyTracker, TinyTrackerSpec};
use tiny_testenv::TestEnv;

use crate::common::{Replica, env, eventually, hello, round_trip, signal};

/// A span as the receiver got it, with the `service.name` of its resource.
#[derive(Debug, Clone)]
pub struct Received {
    pub service: String,
    pub span: Span,
}

impl Received {
    pub fn attr(&self, key: &str) -> Option<String> {
        attr(&self.span.attributes, key)
    }

    pub fn id(&self) -> &[u8] {
        &self.span.span_id
    }

    pub fn parent(&self) -> &[u8] {
        &self.span.parent_span_id
    }

    pub fn is_hop(&self) -> bool {
        self.attr("tiny.node").is_some()
    }
}

/// The attribute `key` of the span's event `name`.
pub fn event_attr(span: &Received, name: &str, key: &str) -> Option<String> {
    let event = span.span.events.iter().find(|e| e.name == name)?;
    attr(&event.attributes, key)
}

pub fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_ref()?
        .value
        .as_ref()?;
    Some(match value {
        AnyValue::StringValue(s) => s.clone(),
        AnyValue::IntValue(i) => i.to_string(),
        AnyValue::BoolValue(b) => b.to_string(),
        AnyValue::DoubleValue(d) => d.to_string(),
        other => format!("{other:?}"),
    })
}

/// An OTLP/gRPC trace receiver: keeps every span it is sent, and the `origin-dsn`
/// each export carried.
#[derive(Debug, Clone, Default)]
pub struct Receiver {
    pub spans: Arc<Mutex<Vec<Received>>>,
    pub dsns: Arc<Mutex<Vec<String>>>,
}

#[tonic::async_trait]
impl TraceService for Receiver {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        if let Some(dsn) = request.metadata().get("origin-dsn").and_then(|v| v.to_str().ok()) {
            self.dsns.lock().expect("dsns").push(dsn.to_owned());
        }
        let mut spans = self.spans.lock().expect("spans");
        for resource_spans in request.into_inner().resource_spans {
            let service = resource_spans
                .resource
                .as_ref()
                .and_then(|r| attr(&r.attributes, "service.name"))
                .unwrap_or_default();
            for scope in resource_spans.scope_spans {
                for span in scope.spans {
                    spans.push(Received {
                        service: service.clone(),
                        span,
                    });
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

impl Receiver {
    /// Serves on a free local port; returns the endpoint URL for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub async fn start(&self) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr: SocketAddr = listener.local_addr().expect("addr");
        let service = TraceServiceServer::new(self.clone());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        format!("http://{addr}")
    }

    pub fn all(&self) -> Vec<Received> {
        self.spans.lock().expect("spans").clone()
    }

    /// The spans of the trace whose root is the span of signal `name`.
    pub fn trace_of_signal(&self, name: &str) -> Option<(Received, Vec<Received>)> {
        let all = self.all();
        let root = all
            .iter()
            .find(|s| s.span.name == "signal" && s.attr("tiny.signal").as_deref() == Some(name))?
            .clone();
        let trace = all
            .into_iter()
            .filter(|s| s.span.trace_id == root.span.trace_id)
            .collect();
        Some((root, trace))
    }
}

/// The environment that turns trace export on, with a short batch delay so spans
/// arrive while the test waits.
pub fn otel_vars(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
    ]
}

pub fn as_refs<'a>(vars: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    vars.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The `alpha` module as one process in namespace `ns`, its spans sent to `receiver`
/// and its logs written as JSON to `logs`, and a TinyTracker `<ns>-tracker` following
/// flow `ns`.
pub struct Observed {
    pub env: tiny_testkit::cluster::Cluster,
    pub receiver: Receiver,
    pub logs: std::path::PathBuf,
    pub alpha: Replica,
    pub trackers: Api<TinyTracker>,
    pub ns: &'static str,
}

/// Starts [`Observed`], with `extra` environment for the module.
pub async fn observed(ns: &'static str, extra: &[(&'static str, &str)]) -> Observed {
    let receiver = Receiver::default();
    let endpoint = receiver.start().await;
    let env = env().await;
    env.create_namespace(ns).await.expect("namespace");
    let logs = env.dir().join(format!("alpha-{ns}-logs.json"));
    let mut vars = otel_vars(&endpoint);
    vars.push(("TINY_LOG_FORMAT", "json".to_owned()));
    vars.push(("RUST_LOG", "info".to_owned()));
    vars.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    let alpha = hello(&env, ns, "alpha-0", "alpha-v0")
        .envs(as_refs(&vars))
        .logs(&logs)
        .start();
    let trackers: Api<TinyTracker> = Api::namespaced(env.client(), ns);
    let spec = TinyTrackerSpec {
        flow_id: ns.into(),
        max_hops: Some(50),
    };
    trackers
        .create(
            &PostParams::default(),
            &TinyTracker::new(&format!("{ns}-tracker"), spec),
        )
        .await
        .expect("tracker created");
    Observed {
        env,
        receiver,
        logs,
        alpha,
        trackers,
        ns,
    }
}

impl Observed {
    /// The module's log so far, as written to unbuffered stderr. A line about a hop
    /// may follow the span or status write the test saw: wait for the line itself.
    pub async fn log(&self) -> String {
        std::fs::read_to_string(&self.logs).expect("logs")
    }

    /// Everything tiny wrote or printed about the namespace: node statuses (port
    /// configurations and schemas decoded from their base64), signal statuses, the
    /// tracker, the spans and the log.
    pub async fn records(&self) -> Vec<(&'static str, String)> {
        let client = self.env.client();
        let nodes: Api<TinyNode> = Api::namespaced(client.clone(), self.ns);
        let signals: Api<TinySignal> = Api::namespaced(client, self.ns);
        let mut written = Vec::new();
        for n in nodes.list(&Default::default()).await.expect("nodes") {
            written.push(("TinyNode status", serde_json::to_string(&n.status).unwrap_or_default()));
            for p in n.status.iter().flat_map(|s| &s.ports) {
                for encoded in [&p.configuration, &p.schema].into_iter().flatten() {
                    let decoded = encoded.decode().map(|v| v.to_string()).unwrap_or_default();
                    written.push(("TinyNode status port", decoded));
                }
            }
        }
        for s in signals.list(&Default::default()).await.expect("signals") {
            written.push((
                "TinySignal status",
                serde_json::to_string(&s.status).unwrap_or_default(),
            ));
        }
        let tracker = format!("{}-tracker", self.ns);
        let t = self.trackers.get(&tracker).await.expect("tracker");
        written.push(("TinyTracker", serde_json::to_string(&t).unwrap_or_default()));
        written.push(("spans", format!("{:?}", self.receiver.all())));
        written.push(("logs", self.log().await));
        written
    }
}

pub async fn announced(client: &kube::Client, ns: &str, module: &str) {
    let modules: Api<TinyModule> = Api::namespaced(client.clone(), ns);
    eventually(
        &format!("{module} to announce its address"),
        Duration::from_secs(30),
        || {
            let modules = modules.clone();
            async move { modules.get(module).await.ok()?.status.filter(|s| !s.addr.is_empty()) }
        },
    )
    .await;
}

/// Two modules, `alpha` and `beta`, each exporting to `vars`' receiver.
pub fn two_modules(env: &TestEnv, ns: &str, vars: &[(&'static str, &str)]) -> (Replica, Replica) {
    let alpha = hello(env, ns, "alpha-0", "alpha-v0").envs(vars.iter().copied()).start();
    let beta = hello(env, ns, "beta-0", "beta-v0").envs(vars.iter().copied()).start();
    (alpha, beta)
}

/// `hello` in alpha, `shout` in beta, `respond` in alpha; and a warm-up path the same
/// way, so that the measured run finds the connections made.
pub fn cross_flow() -> String {
    round_trip("t", None) + WARM_UP
}

pub const WARM_UP: &str = r#"
---
kind: TinyNode
metadata: { name: t.alpha-v0.shout-9 }
spec:
  module: alpha
  component: shout
  edges:
    - id: warm-up
      port: out
      to: "t.beta-v0.shout-8:input"
      retryPolicy: { maxAttempts: 60, initialDelayMs: 250, backoffCoefficient: "1.0" }
---
kind: TinyNode
metadata: { name: t.beta-v0.shout-8 }
spec:
  module: beta
  component: shout
  ports:
    - { from: "t.alpha-v0.shout-9:out", port: input, configuration: { text: "{{$.text}}" } }
  edges:
    - id: warm-up-back
      port: out
      to: "t.alpha-v0.respond-9:response"
      retryPolicy: { maxAttempts: 60, initialDelayMs: 250, backoffCoefficient: "1.0" }
---
kind: TinyNode
metadata: { name: t.alpha-v0.respond-9 }
spec:
  module: alpha
  component: respond
  ports:
    - { from: "t.beta-v0.shout-8:out", port: response, configuration: { text: "{{$.text}}" } }
"#;

pub async fn warm_up(client: &kube::Client, ns: &str) {
    let s = signal(
        client,
        ns,
        "warm-up",
        "t.alpha-v0.shout-9",
        "input",
        json!({"text": "w"}),
    )
    .await;
    let st = s.status.expect("status");
    assert_eq!(
        st.signal_phase(),
        Some(SignalPhase::Delivered),
        "warm-up: {:?}",
        st.error
    );
}

/// `/metrics` parsed by a Prometheus text parser, after checking that every sample
/// line is well formed (the parser skips lines it cannot read).
pub async fn scrape(replica: &Replica) -> prometheus_parse::Scrape {
    let (code, body) = replica.probe("/metrics").await.expect("/metrics answers");
    assert_eq!(code, 200);
    for line in body.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("no value: {line}"));
        assert!(value.parse::<f64>().is_ok(), "not a number: {line}");
        let name_ok = |n: &str| {
            !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                && !n.starts_with(|c: char| c.is_ascii_digit())
        };
        match series.split_once('{') {
            Some((name, labels)) => {
                assert!(name_ok(name), "bad name: {line}");
                assert!(labels.ends_with('}'), "unclosed labels: {line}");
            }
            None => assert!(name_ok(series), "bad name: {line}"),
        }
    }
    prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("Prometheus text")
}

/// The value of the sample `name` with exactly `labels`.
pub fn sample(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let want: HashMap<&str, &str> = labels.iter().copied().collect();
    scrape
        .samples
        .iter()
        .find(|s| {
            s.metric == name && s.labels.len() == want.len() && want.iter().all(|(k, v)| s.labels.get(k) == Some(*v))
        })
        .and_then(|s| match &s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => Some(*v),
            _ => None,
        })
}

/// The buckets of histogram `name` with `labels`, as (upper bound, cumulative count).
pub fn buckets(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
    scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .and_then(|s| match &s.value {
            prometheus_parse::Value::Histogram(b) => Some(b.iter().map(|b| (b.less_than, b.count)).collect()),
            _ => None,
        })
        .unwrap_or_default()
}

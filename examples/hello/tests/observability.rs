//! Observability on a real control plane, with module processes as they run in a
//! cluster: one OpenTelemetry trace per flow run across two modules (received by an
//! OTLP/gRPC receiver inside the test), exact `/metrics` counts after a known run, and
//! secrets that appear in none of status, tracker, spans and logs.

mod common;

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};
use tiny_runtime::crd::SignalPhase;

use common::{Replica, create_flow, env, eventually, hello, nodes_ready, round_trip, signal};
use kube::{Api, api::PostParams};
use opentelemetry_proto::tonic::{
    collector::trace::v1::{
        ExportTraceServiceRequest, ExportTraceServiceResponse,
        trace_service_server::{TraceService, TraceServiceServer},
    },
    common::v1::{KeyValue, any_value::Value as AnyValue},
    trace::v1::Span,
};
use serde_json::{Value, json};
use tiny_runtime::crd::{TinyModule, TinyNode, TinySignal, TinyTracker, TinyTrackerSpec};
use tiny_testenv::TestEnv;

/// A span as the receiver got it, with the `service.name` of its resource.
#[derive(Debug, Clone)]
struct Received {
    service: String,
    span: Span,
}

impl Received {
    fn attr(&self, key: &str) -> Option<String> {
        attr(&self.span.attributes, key)
    }

    fn id(&self) -> &[u8] {
        &self.span.span_id
    }

    fn parent(&self) -> &[u8] {
        &self.span.parent_span_id
    }

    fn is_hop(&self) -> bool {
        self.attr("tiny.node").is_some()
    }
}

/// The attribute `key` of the span's event `name`.
fn event_attr(span: &Received, name: &str, key: &str) -> Option<String> {
    let event = span.span.events.iter().find(|e| e.name == name)?;
    attr(&event.attributes, key)
}

fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
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
struct Receiver {
    spans: Arc<Mutex<Vec<Received>>>,
    dsns: Arc<Mutex<Vec<String>>>,
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
    async fn start(&self) -> String {
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

    fn all(&self) -> Vec<Received> {
        self.spans.lock().expect("spans").clone()
    }

    /// The spans of the trace whose root is the span of signal `name`.
    fn trace_of_signal(&self, name: &str) -> Option<(Received, Vec<Received>)> {
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
fn otel_vars(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100".to_owned()),
    ]
}

fn as_refs<'a>(vars: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    vars.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The `alpha` module as one process in namespace `ns`, its spans sent to `receiver`
/// and its logs written as JSON to `logs`, and a TinyTracker `<ns>-tracker` following
/// flow `ns`.
struct Observed {
    env: tiny_testkit::cluster::Cluster,
    receiver: Receiver,
    logs: std::path::PathBuf,
    alpha: Replica,
    trackers: Api<TinyTracker>,
    ns: &'static str,
}

/// Starts [`Observed`], with `extra` environment for the module.
async fn observed(ns: &'static str, extra: &[(&'static str, &str)]) -> Observed {
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
    /// The module's log so far, once its last lines are out.
    async fn log(&self) -> String {
        tokio::time::sleep(Duration::from_millis(500)).await;
        std::fs::read_to_string(&self.logs).expect("logs")
    }

    /// Everything tiny wrote or printed about the namespace: node statuses (port
    /// configurations and schemas decoded from their base64), signal statuses, the
    /// tracker, the spans and the log.
    async fn records(&self) -> Vec<(&'static str, String)> {
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

/// A module given only the Go SDK's `OTLP_DSN`, as the TinySystems charts give one,
/// sends its spans to the collector it names, with the DSN as `origin-dsn`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_go_sdks_otlp_dsn_sends_spans_to_the_tinysystems_collector() {
    let receiver = Receiver::default();
    let endpoint = receiver.start().await;
    let dsn = endpoint.replacen("http://", "http://s3cr3t@", 1);
    let env = env().await;
    let client = env.client();
    let ns = "dsn";
    env.create_namespace(ns).await.expect("namespace");
    let _alpha = hello(&env, ns, "alpha-0", "alpha-v0")
        .env("OTLP_DSN", &dsn)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .start();
    let node = "dsn.alpha-v0.hello-1";
    create_flow(
        &client,
        ns,
        &format!("kind: TinyNode\nmetadata: {{ name: {node}, labels: {{ tinysystems.io/flow-name: dsn }} }}\nspec: {{ module: alpha-v0, component: hello }}\n"),
    )
    .await;
    nodes_ready(&client, ns, &[node]).await;
    let s = signal(&client, ns, "via-dsn", node, "input", json!({"name": "Ada"})).await;
    assert_eq!(s.status.and_then(|st| st.signal_phase()), Some(SignalPhase::Delivered));
    eventually("the signal's span at the collector", Duration::from_secs(30), || {
        let found = receiver.trace_of_signal("via-dsn");
        async move { found }
    })
    .await;
    let dsns = receiver.dsns.lock().expect("dsns").clone();
    assert!(!dsns.is_empty() && dsns.iter().all(|d| *d == dsn), "{dsns:?}");
}

async fn announced(client: &kube::Client, ns: &str, module: &str) {
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
fn two_modules(env: &TestEnv, ns: &str, vars: &[(&'static str, &str)]) -> (Replica, Replica) {
    let alpha = hello(env, ns, "alpha-0", "alpha-v0").envs(vars.iter().copied()).start();
    let beta = hello(env, ns, "beta-0", "beta-v0").envs(vars.iter().copied()).start();
    (alpha, beta)
}

/// `hello` in alpha, `shout` in beta, `respond` in alpha; and a warm-up path the same
/// way, so that the measured run finds the connections made.
fn cross_flow() -> String {
    round_trip("t", None) + WARM_UP
}

const WARM_UP: &str = r#"
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

async fn warm_up(client: &kube::Client, ns: &str) {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_run_across_two_modules_is_one_trace() {
    let receiver = Receiver::default();
    let endpoint = receiver.start().await;
    let env = env().await;
    let client = env.client();
    env.create_namespace("t").await.expect("namespace");
    let vars = otel_vars(&endpoint);
    let (_alpha, _beta) = two_modules(&env, "t", &as_refs(&vars));
    let flow = create_flow(&client, "t", &cross_flow()).await;
    let names: Vec<&str> = flow.nodes.iter().map(|n| n.name.as_str()).collect();
    nodes_ready(&client, "t", &names).await;
    announced(&client, "t", "alpha-v0").await;
    announced(&client, "t", "beta-v0").await;
    warm_up(&client, "t").await;

    let s = signal(
        &client,
        "t",
        "traced",
        "t.alpha-v0.hello-1",
        "input",
        json!({"name": "Ada"}),
    )
    .await;
    let st = s.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Delivered), "{:?}", st.error);
    assert_eq!(st.reply.map(|r| r.0), Some(json!({"answer": "HELLO, ADA!"})));

    // Three hops and two calls between modules, under the signal's span.
    let (root, trace) = eventually("the run's spans to be exported", Duration::from_secs(30), || {
        let found = receiver.trace_of_signal("traced").filter(|(_, trace)| trace.len() >= 6);
        async move { found }
    })
    .await;
    // Anything late would show before a later run's spans: each module exports its
    // spans in the order they end. So a second run, and the first read again after it.
    let after = signal(
        &client,
        "t",
        "traced-after",
        "t.alpha-v0.hello-1",
        "input",
        json!({"name": "Bo"}),
    )
    .await;
    assert_eq!(
        after.status.and_then(|s| s.signal_phase()),
        Some(SignalPhase::Delivered)
    );
    eventually("the later run's spans to be exported", Duration::from_secs(30), || {
        let found = receiver
            .trace_of_signal("traced-after")
            .filter(|(_, trace)| trace.len() >= 6);
        async move { found }
    })
    .await;
    let (root, trace) = receiver.trace_of_signal("traced").unwrap_or((root, trace));
    let describe = || {
        trace
            .iter()
            .map(|s| format!("{} {} {:?}", s.service, s.span.name, s.attr("to")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(trace.len(), 6, "one signal, three hops, two calls:\n{}", describe());
    assert!(root.parent().is_empty(), "the signal's span is the root");
    assert_eq!(root.service, "alpha-v0");
    let by_id = |id: &[u8]| trace.iter().find(|s| s.id() == id);
    let hop = |to: &str| {
        trace
            .iter()
            .find(|s| s.is_hop() && s.attr("to").as_deref() == Some(to))
            .unwrap_or_else(|| panic!("no hop span for {to}:\n{}", describe()))
    };
    let hello = hop("t.alpha-v0.hello-1:input");
    let shout = hop("t.beta-v0.shout-1:input");
    let respond = hop("t.alpha-v0.respond-1:response");
    assert_eq!(trace.iter().filter(|s| s.is_hop()).count(), 3);

    // The first hop is the signal's child, in alpha.
    assert_eq!(hello.parent(), root.id());
    assert_eq!(hello.service, "alpha-v0");
    // The hop in beta: its parent is alpha's call span, whose parent is the hello hop.
    assert_eq!(shout.service, "beta-v0");
    let call = by_id(shout.parent()).expect("the remote hop's parent was exported");
    assert_eq!(
        call.service, "alpha-v0",
        "the remote hop's parent is the sending module's span"
    );
    assert_eq!(call.span.name, "module.ModuleService/Message");
    assert_eq!(call.attr("rpc.system").as_deref(), Some("grpc"));
    assert_eq!(call.attr("tiny.module").as_deref(), Some("beta-v0"));
    assert_eq!(call.parent(), hello.id(), "the call is made by the hello hop");
    // And back: respond (alpha) under beta's call span, under the shout hop.
    assert_eq!(respond.service, "alpha-v0");
    let back = by_id(respond.parent()).expect("the parent of respond was exported");
    assert_eq!(back.service, "beta-v0");
    assert_eq!(back.span.name, "module.ModuleService/Message");
    assert_eq!(back.parent(), shout.id());

    // What each hop says, with the Go SDK's attribute names where it has them.
    for (span, from, edge, depth) in [
        (hello, "signal", "", 0),
        (shout, "t.alpha-v0.hello-1:greeting", "to-beta", 1),
        (respond, "t.beta-v0.shout-1:out", "back", 2),
    ] {
        let to = span.attr("to").unwrap_or_default();
        assert_eq!(span.span.name, to, "a hop span is named after its port");
        assert_eq!(span.attr("from").as_deref(), Some(from), "{to}");
        assert_eq!(span.attr("edgeID").as_deref(), Some(edge), "{to}");
        assert_eq!(span.attr("flowID").as_deref(), Some("t"), "{to}");
        assert_eq!(span.attr("tiny.depth"), Some(depth.to_string()), "{to}");
        assert_eq!(span.attr("tiny.attempt").as_deref(), Some("1"), "{to}");
        assert_eq!(span.attr("tiny.outcome").as_deref(), Some("ok"), "{to}");
        assert_eq!(span.attr("tiny.module"), Some(span.service.clone()), "{to}");
    }
    // Each hop records its input, as the Go SDK's `data` event.
    let payload = |s: &Received| event_attr(s, "data", "payload").and_then(|p| serde_json::from_str::<Value>(&p).ok());
    assert_eq!(payload(hello), Some(json!({"name": "Ada"})));
    assert_eq!(payload(shout), Some(json!({"context": null, "text": "Hello, Ada!"})));
    // Blocking: each span ends after what it waited for (the reply came back through it).
    let contains = |outer: &Received, inner: &Received| {
        outer.span.start_time_unix_nano <= inner.span.start_time_unix_nano
            && inner.span.end_time_unix_nano <= outer.span.end_time_unix_nano
    };
    for (outer, inner) in [
        (&root, hello),
        (hello, call),
        (call, shout),
        (shout, back),
        (back, respond),
    ] {
        assert!(
            contains(outer, inner),
            "{} ends after {}",
            outer.span.name,
            inner.span.name
        );
    }

    // Another run is another trace.
    let warm = receiver.trace_of_signal("warm-up").expect("the warm-up's trace");
    assert_ne!(warm.0.span.trace_id, root.span.trace_id);
}

const METRICS_FLOW: &str = r#"
kind: TinyNode
metadata: { name: t.alpha-v0.hello-2, labels: { tinysystems.io/flow-name: t } }
spec:
  module: alpha
  component: hello
  edges:
    - id: to-flaky
      port: greeting
      to: "t.alpha-v0.flaky-1:input"
      retryPolicy: { maxAttempts: 3, initialDelayMs: 50, backoffCoefficient: "1.0" }
---
kind: TinyNode
metadata: { name: t.alpha-v0.flaky-1, labels: { tinysystems.io/flow-name: t } }
spec:
  module: alpha
  component: flaky
  ports:
    - { port: _settings, configuration: { failures: 2 } }
---
kind: TinyNode
metadata: { name: t.alpha-v0.hello-3 }
spec:
  module: alpha
  component: hello
  edges:
    - id: to-remote-flaky
      port: greeting
      to: "t.beta-v0.flaky-2:input"
      retryPolicy: { maxAttempts: 3, initialDelayMs: 50, backoffCoefficient: "1.0" }
---
kind: TinyNode
metadata: { name: t.beta-v0.flaky-2 }
spec:
  module: beta
  component: flaky
  ports:
    - { port: _settings, configuration: { failures: 1 } }
---
kind: TinyNode
metadata: { name: t.alpha-v0.nosuch-1 }
spec:
  module: alpha
  component: nosuch
"#;

/// `/metrics` parsed by a Prometheus text parser, after checking that every sample
/// line is well formed (the parser skips lines it cannot read).
async fn scrape(replica: &Replica) -> prometheus_parse::Scrape {
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
fn sample(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
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
fn buckets(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Vec<(f64, f64)> {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_a_known_flow_run_exactly() {
    let env = env().await;
    let client = env.client();
    env.create_namespace("t").await.expect("namespace");
    let (alpha, beta) = two_modules(&env, "t", &[]);
    let flow = create_flow(&client, "t", &cross_flow()).await;
    let extra = create_flow(&client, "t", METRICS_FLOW).await;
    let names: Vec<&str> = flow
        .nodes
        .iter()
        .chain(&extra.nodes)
        .map(|n| n.name.as_str())
        .filter(|n| !n.contains("nosuch"))
        .collect();
    nodes_ready(&client, "t", &names).await;
    announced(&client, "t", "alpha-v0").await;
    announced(&client, "t", "beta-v0").await;
    warm_up(&client, "t").await;
    let (a0, b0) = (scrape(&alpha).await, scrape(&beta).await);
    let total =
        |s: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]| sample(s, name, labels).unwrap_or(0.0);

    // The known run: two greetings across both modules, an empty name (fails at
    // once), and one message through an edge that retries a flaky node twice.
    for (name, data, phase) in [
        ("m1", json!({"name": "Ada"}), SignalPhase::Delivered),
        ("m2", json!({"name": "Bo"}), SignalPhase::Delivered),
        ("m3", json!({"name": " "}), SignalPhase::Failed),
    ] {
        let s = signal(&client, "t", name, "t.alpha-v0.hello-1", "input", data).await;
        assert_eq!(s.status.and_then(|s| s.signal_phase()), Some(phase), "{name}");
    }
    let s = signal(
        &client,
        "t",
        "m4",
        "t.alpha-v0.hello-2",
        "input",
        json!({"name": "Flo"}),
    )
    .await;
    let st = s.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Delivered), "{:?}", st.error);
    // A retry across modules: beta's flaky node fails once, alpha's edge tries again.
    let s = signal(
        &client,
        "t",
        "m5",
        "t.alpha-v0.hello-3",
        "input",
        json!({"name": "Remy"}),
    )
    .await;
    let st = s.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Delivered), "{:?}", st.error);
    let (a, b) = (scrape(&alpha).await, scrape(&beta).await);

    let port = |node: &'static str, port: &'static str| [("node", node), ("port", port)];
    let hello = port("t.alpha-v0.hello-1", "input");
    let respond = port("t.alpha-v0.respond-1", "response");
    let hello2 = port("t.alpha-v0.hello-2", "input");
    let flaky = port("t.alpha-v0.flaky-1", "input");
    let shout = port("t.beta-v0.shout-1", "input");
    let messages = "tiny_node_messages_total";
    assert_eq!(sample(&a, messages, &hello), Some(3.0));
    assert_eq!(sample(&a, messages, &respond), Some(2.0));
    assert_eq!(sample(&a, messages, &hello2), Some(1.0));
    assert_eq!(
        sample(&a, messages, &flaky),
        Some(3.0),
        "one message, tried three times"
    );
    assert_eq!(sample(&b, messages, &shout), Some(2.0));
    let errors = "tiny_node_errors_total";
    let with = |p: [(&'static str, &'static str); 2], code: &'static str| [p[0], p[1], ("code", code)];
    assert_eq!(sample(&a, errors, &with(hello, "EMPTY_NAME")), Some(1.0));
    assert_eq!(sample(&a, errors, &with(flaky, "FLAKY")), Some(2.0));
    let error_series = |s: &prometheus_parse::Scrape| s.samples.iter().filter(|x| x.metric == errors).count();
    assert_eq!(error_series(&a), 2, "no other failures in alpha");
    // The retry across modules is counted where the node runs, with its attempt.
    let remote = port("t.beta-v0.flaky-2", "input");
    assert_eq!(sample(&a, messages, &port("t.alpha-v0.hello-3", "input")), Some(1.0));
    assert_eq!(sample(&b, messages, &remote), Some(2.0));
    assert_eq!(sample(&b, errors, &with(remote, "FLAKY")), Some(1.0));
    assert_eq!(sample(&b, "tiny_node_retries_total", &remote), Some(1.0));
    assert_eq!(error_series(&b), 1, "no other failures in beta");
    let retries = "tiny_node_retries_total";
    assert_eq!(sample(&a, retries, &flaky), Some(2.0));
    for p in [hello, respond, hello2] {
        assert_eq!(sample(&a, retries, &p), Some(0.0), "{p:?}");
    }
    assert_eq!(sample(&b, retries, &shout), Some(0.0));
    // The latency histogram: one observation per message, cumulative buckets.
    let histogram = "tiny_node_handle_duration_seconds";
    for (scrape, p, n) in [(&a, hello, 3.0), (&a, flaky, 3.0), (&a, respond, 2.0), (&b, shout, 2.0)] {
        let b = buckets(scrape, histogram, &p);
        assert_eq!(b.len(), 15, "{p:?}: 14 bounds and +Inf");
        assert!(
            b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{p:?}: {b:?}"
        );
        assert_eq!(b.last().map(|l| (l.0.is_infinite(), l.1)), Some((true, n)), "{p:?}");
        let count = scrape
            .samples
            .iter()
            .find(|s| s.metric == format!("{histogram}_count") && s.labels.get("node") == Some(p[0].1))
            .map(|s| format!("{:?}", s.value));
        assert!(count.is_some_and(|c| c.contains(&format!("{n}"))), "{p:?} count");
    }
    // Per module: deltas over the run (the warm-up made some too).
    let delta = |before: &prometheus_parse::Scrape,
                 after: &prometheus_parse::Scrape,
                 name: &str,
                 labels: &[(&str, &str)]| { total(after, name, labels) - total(before, name, labels) };
    assert_eq!(delta(&a0, &a, "tiny_signals_delivered_total", &[]), 5.0);
    assert_eq!(delta(&b0, &b, "tiny_signals_delivered_total", &[]), 0.0);
    assert_eq!(delta(&a0, &a, "tiny_hops_total", &[]), 10.0);
    assert_eq!(delta(&a0, &a, "tiny_hop_errors_total", &[]), 3.0);
    assert_eq!(delta(&b0, &b, "tiny_hops_total", &[]), 4.0);
    assert_eq!(delta(&b0, &b, "tiny_hop_errors_total", &[]), 1.0);
    let calls = "tiny_grpc_client_calls_total";
    assert_eq!(delta(&a0, &a, calls, &[("module", "beta-v0"), ("outcome", "OK")]), 3.0);
    // The failed attempt, a transient error, travels as `Unavailable`.
    let unavailable = [("module", "beta-v0"), ("outcome", "Unavailable")];
    assert_eq!(delta(&a0, &a, calls, &unavailable), 1.0);
    assert_eq!(delta(&b0, &b, calls, &[("module", "alpha-v0"), ("outcome", "OK")]), 2.0);
    let served = "tiny_grpc_server_calls_total";
    assert_eq!(delta(&a0, &a, served, &[("outcome", "OK")]), 2.0);
    assert_eq!(delta(&b0, &b, served, &[("outcome", "OK")]), 3.0);
    assert_eq!(delta(&b0, &b, served, &[("outcome", "Unavailable")]), 1.0);
    // Nodes by state: alpha runs seven and refuses the one of an unknown component.
    assert_eq!(sample(&a, "tiny_nodes", &[("state", "running")]), Some(7.0));
    assert_eq!(sample(&a, "tiny_nodes", &[("state", "failed")]), Some(1.0));
    assert_eq!(sample(&b, "tiny_nodes", &[("state", "running")]), Some(3.0));
    assert_eq!(sample(&b, "tiny_nodes", &[("state", "failed")]), Some(0.0));
    assert_eq!(sample(&a, "tiny_leader", &[]), Some(1.0));
    assert_eq!(sample(&b, "tiny_leader", &[]), Some(1.0));
}

const SETTINGS_SECRET: &str = "s3ttings-Secret-7781";
const INPUT_SECRET: &str = "input-Secret-4432";

fn secret_flow() -> String {
    format!(
        r#"
kind: TinyNode
metadata: {{ name: s.alpha-v0.login-1, labels: {{ tinysystems.io/flow-name: s }} }}
spec:
  module: alpha
  component: login
  ports:
    - {{ port: _settings, configuration: {{ user: ada, password: "{SETTINGS_SECRET}" }} }}
  edges:
    - {{ id: ok, port: ok, to: "s.alpha-v0.respond-1:response", flowID: s }}
---
kind: TinyNode
metadata: {{ name: s.alpha-v0.respond-1, labels: {{ tinysystems.io/flow-name: s }} }}
spec:
  module: alpha
  component: respond
  ports:
    - {{ from: "s.alpha-v0.login-1:ok", port: response, configuration: {{ user: "{{{{$.user}}}}" }} }}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_is_in_no_status_tracker_span_or_log() {
    let o = observed("s", &[]).await;
    let (client, trackers, receiver) = (o.env.client(), o.trackers.clone(), &o.receiver);
    create_flow(&client, "s", &secret_flow()).await;
    nodes_ready(&client, "s", &["s.alpha-v0.login-1", "s.alpha-v0.respond-1"]).await;

    // The status shows the settings, the password masked.
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), "s");
    let node = nodes.get("s.alpha-v0.login-1").await.expect("node");
    let status = node.status.clone().expect("status");
    let settings = status
        .ports
        .iter()
        .find(|p| p.name == "_settings")
        .and_then(|p| p.configuration.as_ref())
        .map(|c| c.decode().expect("JSON in base64"))
        .expect("the settings port has a configuration");
    assert_eq!(settings, json!({"user": "ada", "password": "<redacted>"}));

    // A tracker records the hops made once the module follows it: probe until it does
    // (a module under load may list trackers a moment after its nodes are Ready).
    let mut probes = 0;
    eventually("the module to follow the tracker", Duration::from_secs(60), || {
        probes += 1;
        let (client, trackers) = (client.clone(), trackers.clone());
        let name = format!("probe-{probes}");
        async move {
            let data = json!({"password": SETTINGS_SECRET});
            signal(&client, "s", &name, "s.alpha-v0.login-1", "input", data).await;
            tokio::time::sleep(Duration::from_secs(1)).await; // past a flush
            let t = trackers.get("s-tracker").await.ok()?;
            (t.status?.total > 0).then_some(())
        }
    })
    .await;

    // The component gets the real values: the right password passes...
    let s = signal(
        &client,
        "s",
        "right",
        "s.alpha-v0.login-1",
        "input",
        json!({"password": SETTINGS_SECRET}),
    )
    .await;
    let st = s.status.clone().expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Delivered), "{:?}", st.error);
    assert_eq!(st.reply.map(|r| r.0), Some(json!({"user": "ada"})));
    // ...and a wrong one fails with an error that quoted both, masked.
    let s = signal(
        &client,
        "s",
        "wrong",
        "s.alpha-v0.login-1",
        "input",
        json!({"password": INPUT_SECRET}),
    )
    .await;
    let wrong = s.status.clone().expect("status");
    assert_eq!(wrong.signal_phase(), Some(SignalPhase::Failed));
    let error = wrong.error.clone().unwrap_or_default();
    assert!(
        error.contains("password `<redacted>` is wrong: `<redacted>` expected") && error.contains("WRONG_PASSWORD"),
        "{error}"
    );

    // The tracker recorded the hops, inputs masked.
    let tracker = eventually("the tracker to record the failure", Duration::from_secs(30), || {
        let trackers = trackers.clone();
        async move {
            let t = trackers.get("s-tracker").await.ok()?;
            t.status.as_ref()?.hops.iter().any(|h| h.error.is_some()).then_some(t)
        }
    })
    .await;
    let hops = &tracker.status.as_ref().expect("status").hops;
    let login_inputs: Vec<&str> = hops
        .iter()
        .filter(|h| h.node == "s.alpha-v0.login-1")
        .map(|h| h.data.as_str())
        .collect();
    assert!(
        login_inputs.len() >= 3,
        "a probe, the right and the wrong password: {hops:?}"
    );
    let failure = hops.iter().find(|h| h.error.is_some()).and_then(|h| h.error.clone());
    assert!(failure.is_some_and(|e| e.contains("`<redacted>` expected")));
    for data in login_inputs {
        let data: Value = serde_json::from_str(data).expect("a whole preview");
        assert_eq!(data["password"], "<redacted>");
    }

    // The spans: the failed hop says why, masked.
    let (_, trace) = eventually("the failed run's spans", Duration::from_secs(30), || {
        let found = receiver.trace_of_signal("wrong").filter(|(_, t)| t.len() >= 2);
        async move { found }
    })
    .await;
    let failed = trace
        .iter()
        .find(|s| s.attr("tiny.node").as_deref() == Some("s.alpha-v0.login-1"))
        .expect("the login hop's span");
    assert_eq!(failed.attr("tiny.outcome").as_deref(), Some("error"));
    assert_eq!(failed.attr("tiny.error.code").as_deref(), Some("WRONG_PASSWORD"));
    let message = failed
        .span
        .status
        .as_ref()
        .map(|s| s.message.clone())
        .unwrap_or_default();
    assert!(message.contains("<redacted>"), "{message}");
    let exception = event_attr(failed, "exception", "exception.message").unwrap_or_default();
    assert!(exception.contains("password `<redacted>` is wrong"), "{exception}");
    let payload = event_attr(failed, "data", "payload").expect("the input is recorded");
    assert_eq!(
        serde_json::from_str::<Value>(&payload).ok(),
        Some(json!({"password": "<redacted>"}))
    );
    let trace_id: String = failed.span.trace_id.iter().map(|b| format!("{b:02x}")).collect();

    // The logs: JSON lines; the failure's line carries the trace id.
    let log = o.log().await;
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let failure = lines
        .iter()
        .find(|l| l["message"] == "message failed" && l["node"] == "s.alpha-v0.login-1")
        .unwrap_or_else(|| panic!("no failure logged:\n{log}"));
    assert_eq!(failure["trace_id"], trace_id.as_str(), "{failure}");
    assert!(
        failure["error"].as_str().is_some_and(|e| e.contains("<redacted>")),
        "{failure}"
    );

    // Grep everything tiny wrote or printed: the secrets are nowhere.
    for (what, text) in &o.records().await {
        for secret in [SETTINGS_SECRET, INPUT_SECRET] {
            assert!(!text.contains(secret), "{what} holds a secret:\n{text}");
        }
    }
}

/// `shout` answers through `respond`, whose edge reads a field `shout` never sends, as
/// an editor flow built for Go does with an optional field.
const OPTIONAL_FIELD_FLOW: &str = r#"
kind: TinyNode
metadata: { name: x.alpha-v0.shout-1, labels: { tinysystems.io/flow-name: x } }
spec:
  module: alpha
  component: shout
  edges:
    - { id: to-respond, port: out, to: "x.alpha-v0.respond-1:response", flowID: x }
---
kind: TinyNode
metadata: { name: x.alpha-v0.respond-1, labels: { tinysystems.io/flow-name: x } }
spec:
  module: alpha
  component: respond
  ports:
    - from: "x.alpha-v0.shout-1:out"
      port: response
      configuration: { text: "{{$.text}}", note: "{{$.note}}", line: "said {{$.note}}" }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_edge_expression_goes_on_and_shows_in_log_metrics_span_tracker_and_status() {
    let o = observed("x", &[]).await;
    let (client, trackers, receiver) = (o.env.client(), o.trackers.clone(), &o.receiver);
    create_flow(&client, "x", OPTIONAL_FIELD_FLOW).await;
    let (shout, respond) = ("x.alpha-v0.shout-1", "x.alpha-v0.respond-1");
    nodes_ready(&client, "x", &[shout, respond]).await;

    // The flow goes on, as on a Go module: null for the whole-value field, nothing
    // for the interpolated one. Sent until the tracker follows the flow.
    let mut runs = 0;
    eventually("the module to follow the tracker", Duration::from_secs(60), || {
        runs += 1;
        let (client, trackers) = (client.clone(), trackers.clone());
        let name = format!("run-{runs}");
        async move {
            let s = signal(&client, "x", &name, shout, "input", json!({"text": "hi"})).await;
            let st = s.status.expect("status");
            assert_eq!(st.signal_phase(), Some(SignalPhase::Delivered), "{:?}", st.error);
            assert_eq!(
                st.reply.map(|r| r.0),
                Some(json!({"text": "HI", "note": null, "line": "said "}))
            );
            tokio::time::sleep(Duration::from_secs(1)).await; // past a flush
            let t = trackers.get("x-tracker").await.ok()?;
            (t.status?.total > 0).then_some(())
        }
    })
    .await;

    // Counted by node and edge: two expressions failed on each run.
    let metrics = scrape(&o.alpha).await;
    let counted = sample(
        &metrics,
        "tiny_edge_expression_errors_total",
        &[("node", respond), ("port", "response"), ("edge", "to-respond")],
    );
    assert_eq!(counted, Some(2.0 * f64::from(runs)), "{runs} runs");

    // The tracker's preview of the respond hop names them.
    let tracker = trackers.get("x-tracker").await.expect("tracker");
    let hop = tracker
        .status
        .as_ref()
        .and_then(|s| s.hops.iter().find(|h| h.node == respond))
        .cloned()
        .expect("the respond hop is tracked");
    assert_eq!(hop.error, None, "the hop itself succeeded");
    assert_eq!(hop.expression_errors.len(), 2, "{hop:?}");
    assert!(hop.expression_errors[0].contains("{{$.note}}"), "{hop:?}");

    // The node's status says so while it keeps happening.
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), "x");
    let condition = eventually("the failing edge on the node's status", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let node = nodes.get(respond).await.ok()?;
            node.status?
                .conditions
                .into_iter()
                .find(|c| c.type_ == "ExpressionsEvaluated")
        }
    })
    .await;
    assert_eq!(condition.status, "False");
    assert_eq!(condition.reason, "ExpressionFailing");
    assert!(
        condition.message.contains("edge `to-respond`") && condition.message.contains("/note"),
        "{}",
        condition.message
    );
    let ready = nodes
        .get(respond)
        .await
        .ok()
        .and_then(|n| n.status)
        .and_then(|s| s.conditions.into_iter().find(|c| c.type_ == "Ready"));
    assert_eq!(ready.map(|c| c.status).as_deref(), Some("True"), "the node runs");

    // The hop's span carries Go's `expression_error` events.
    let (_, trace) = eventually("the run's spans", Duration::from_secs(30), || {
        let found = receiver.trace_of_signal("run-1").filter(|(_, t)| t.len() >= 2);
        async move { found }
    })
    .await;
    let span = trace
        .iter()
        .find(|s| s.attr("tiny.node").as_deref() == Some(respond))
        .expect("the respond hop's span");
    assert_eq!(span.attr("tiny.outcome").as_deref(), Some("ok"));
    let events: Vec<_> = span
        .span
        .events
        .iter()
        .filter(|e| e.name == "expression_error")
        .collect();
    assert_eq!(events.len(), 2, "{:?}", span.span.events);
    assert_eq!(attr(&events[0].attributes, "expression").as_deref(), Some("{{$.note}}"));
    assert!(attr(&events[0].attributes, "error").is_some_and(|e| e.contains("note")));

    // The log says it once for the edge, however many runs failed.
    let log = o.log().await;
    let said: Vec<&str> = log.lines().filter(|l| l.contains("edge expression failed")).collect();
    assert_eq!(said.len(), 1, "{runs} runs, logged once:\n{log}");
    assert!(
        said[0].contains("to-respond") && said[0].contains(respond),
        "{}",
        said[0]
    );
}

const TOKEN: &str = "tok3n-Value-5521";
const ROTATED: &str = "r0tated-Value-8830";

/// `hello-1`'s greeting word is `[[secret:creds/token]]`; `respond-1` answers with the
/// greeting; `hello-2` names a Secret that does not exist yet, `hello-3` one the module
/// does not declare.
fn placeholder_flow() -> &'static str {
    r#"
kind: TinyNode
metadata: { name: c.alpha-v0.hello-1, labels: { tinysystems.io/flow-name: c } }
spec:
  module: alpha
  component: hello
  ports:
    - { port: _settings, configuration: { greetingWord: "[[secret:creds/token]]" } }
  edges:
    - { id: answer, port: greeting, to: "c.alpha-v0.respond-1:response", flowID: c }
---
kind: TinyNode
metadata: { name: c.alpha-v0.respond-1, labels: { tinysystems.io/flow-name: c } }
spec:
  module: alpha
  component: respond
  ports:
    - { from: "c.alpha-v0.hello-1:greeting", port: response, configuration: { answer: "{{$.greeting}}" } }
---
kind: TinyNode
metadata: { name: c.alpha-v0.hello-2, labels: { tinysystems.io/flow-name: c } }
spec:
  module: alpha
  component: hello
  ports:
    - { port: _settings, configuration: { greetingWord: "[[secret:late/token]]" } }
---
kind: TinyNode
metadata: { name: c.alpha-v0.hello-3, labels: { tinysystems.io/flow-name: c } }
spec:
  module: alpha
  component: hello
  ports:
    - { port: _settings, configuration: { greetingWord: "[[secret:other/token]]" } }
"#
}

/// A Secret of `data`, as `kubectl create secret generic` makes it.
fn secret(name: &str, key: &str, value: &str) -> k8s_openapi::api::core::v1::Secret {
    k8s_openapi::api::core::v1::Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        string_data: Some([(key.to_owned(), value.to_owned())].into()),
        ..Default::default()
    }
}

/// What `hello-1` greets Ada with now, through a TinySignal's reply.
async fn greeting(client: &kube::Client, name: &str) -> Option<String> {
    let s = signal(client, "c", name, "c.alpha-v0.hello-1", "input", json!({"name": "Ada"})).await;
    let reply = s.status?.reply?.0;
    reply["answer"].as_str().map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_placeholder_reaches_the_component_rotates_and_is_in_no_record() {
    // The Secrets the module may read, as the chart passes `rbac.secrets`; a short TTL.
    let o = observed("c", &[("TINY_SECRETS", "creds,late"), ("TINY_SECRET_TTL", "2")]).await;
    let (client, trackers, receiver) = (o.env.client(), o.trackers.clone(), &o.receiver);
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), "c");
    secrets
        .create(&PostParams::default(), &secret("creds", "token", TOKEN))
        .await
        .expect("Secret created");
    secrets
        .create(&PostParams::default(), &secret("other", "token", "other-Value-0077"))
        .await
        .expect("Secret created");
    create_flow(&client, "c", placeholder_flow()).await;
    nodes_ready(&client, "c", &["c.alpha-v0.hello-1", "c.alpha-v0.respond-1"]).await;

    // The Secret that does not exist: an error on its node, naming the placeholder, the
    // field and the Secret; the other nodes run.
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), "c");
    let broken = eventually("hello-2 to say its Secret is missing", Duration::from_secs(60), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get("c.alpha-v0.hello-2").await.ok()?;
            let status = n.status?;
            status.error.then_some(status)
        }
    })
    .await;
    let said = format!("{broken:?}");
    assert!(
        said.contains("port `_settings` field `greetingWord`: [[secret:late/token]]: Secret `late` does not exist in namespace `c`"),
        "{said}"
    );
    assert!(said.contains("SECRET"), "{said}");
    // A Secret the module does not declare is not read, though it exists.
    let undeclared = eventually(
        "hello-3 to say its Secret is not declared",
        Duration::from_secs(60),
        || {
            let nodes = nodes.clone();
            async move {
                let status = nodes.get("c.alpha-v0.hello-3").await.ok()?.status?;
                status.error.then_some(status)
            }
        },
    )
    .await;
    let said = format!("{undeclared:?}");
    assert!(
        said.contains("Secret `other` is not among the Secrets the module declares (creds, late)"),
        "{said}"
    );

    // The component greets with the Secret's value; the tracker follows the flow.
    let mut probes = 0;
    eventually("the module to follow the tracker", Duration::from_secs(60), || {
        probes += 1;
        let (client, trackers) = (client.clone(), trackers.clone());
        let name = format!("probe-{probes}");
        async move {
            assert_eq!(
                greeting(&client, &name).await.as_deref(),
                Some(format!("{TOKEN}, Ada!").as_str())
            );
            tokio::time::sleep(Duration::from_secs(1)).await; // past a flush
            let t = trackers.get("c-tracker").await.ok()?;
            (t.status?.total > 0).then_some(())
        }
    })
    .await;

    // Rotated: the component gets the new value within the TTL (2 s here; a re-apply
    // every TTL, a read trusted for a TTL, so at most about two).
    let patch = json!({"stringData": {"token": ROTATED}});
    let rotated_at = std::time::Instant::now();
    secrets
        .patch(
            "creds",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .expect("Secret rotated");
    let mut tries = 0;
    eventually(
        "the rotated value to reach the component",
        Duration::from_secs(30),
        || {
            tries += 1;
            let client = client.clone();
            let name = format!("rotated-{tries}");
            async move { (greeting(&client, &name).await? == format!("{ROTATED}, Ada!")).then_some(()) }
        },
    )
    .await;
    let took = rotated_at.elapsed();
    eprintln!("the rotated value reached the component after {took:?} (TTL 2 s, {tries} signals)");
    assert!(took < Duration::from_secs(10), "{took:?}");

    // The missing Secret appears: the node heals on its next resolution.
    secrets
        .create(&PostParams::default(), &secret("late", "token", "late-Value-1234"))
        .await
        .expect("Secret created");
    nodes_ready(&client, "c", &["c.alpha-v0.hello-2"]).await;

    // The status shows the settings with the value masked.
    let node = nodes.get("c.alpha-v0.hello-1").await.expect("node");
    let settings = node
        .status
        .as_ref()
        .and_then(|s| s.ports.iter().find(|p| p.name == "_settings"))
        .and_then(|p| p.configuration.as_ref())
        .map(|c| c.decode().expect("JSON in base64"))
        .expect("the settings port has a configuration");
    assert_eq!(settings["greetingWord"], "<redacted>", "{settings}");

    // The tracker recorded hops; the greeting made of the token shows it masked.
    eventually("the tracker to record the greetings", Duration::from_secs(30), || {
        let trackers = trackers.clone();
        async move {
            let t = trackers.get("c-tracker").await.ok()?;
            let seen = t
                .status
                .as_ref()?
                .hops
                .iter()
                .any(|h| h.data.contains("<redacted>, Ada!"));
            seen.then_some(t)
        }
    })
    .await;

    // Spans arrived for the greetings.
    eventually("the greetings' spans", Duration::from_secs(30), || {
        let found = receiver.trace_of_signal("rotated-1").filter(|(_, t)| t.len() >= 2);
        async move { found }
    })
    .await;

    // Grep everything tiny wrote or printed: neither value is anywhere. (A signal's
    // reply is the sender's own answer, greeting and all: not a record of tiny's.)
    let records = o.records().await;
    for (what, text) in records.iter().filter(|(what, _)| *what != "TinySignal status") {
        for value in [TOKEN, ROTATED, "late-Value-1234", "other-Value-0077"] {
            assert!(!text.contains(value), "{what} holds a secret:\n{text}");
        }
    }
}

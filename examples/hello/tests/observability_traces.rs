//! Observability on a real control plane, traces: one OpenTelemetry trace per flow
//! run across two module processes, received by an OTLP/gRPC receiver inside the test,
//! and the Go SDK's `OTLP_DSN` honoured. The other themes: `observability_metrics.rs`,
//! `observability_secrets.rs`.

mod common;
mod observing;

use std::time::Duration;

use common::{create_flow, env, eventually, hello, nodes_ready, signal};
use observing::*;
use serde_json::{Value, json};
use tiny_runtime::crd::SignalPhase;

/// A module given only the Go SDK's `OTLP_DSN`, as the TinySystems charts give one,
/// sends its spans to the collector it names, with the DSN as `origin-dsn`: over plain
/// `http://`, as in-cluster, only with `OTLP_DSN_PLAINTEXT=allow`.
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
        .env("OTLP_DSN_PLAINTEXT", "allow")
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

/// Without `OTLP_DSN_PLAINTEXT=allow`, a DSN's token does not go over plain `http://`:
/// the module runs with tracing off, says so once naming the setting (not the token),
/// and the collector hears nothing, even from a clean stop that flushes what is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dsn_token_is_not_sent_over_plain_http_unless_allowed() {
    let receiver = Receiver::default();
    let endpoint = receiver.start().await;
    let dsn = endpoint.replacen("http://", "http://s3cr3t@", 1);
    let env = env().await;
    let client = env.client();
    let ns = "dsn-plain";
    env.create_namespace(ns).await.expect("namespace");
    let logs = env.dir().join("alpha-dsn-plain-logs.txt");
    let mut alpha = hello(&env, ns, "alpha-0", "alpha-v0")
        .env("OTLP_DSN", &dsn)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .logs(&logs)
        .start();
    let node = "dsn-plain.alpha-v0.hello-1";
    create_flow(
        &client,
        ns,
        &format!("kind: TinyNode\nmetadata: {{ name: {node}, labels: {{ tinysystems.io/flow-name: dsn }} }}\nspec: {{ module: alpha-v0, component: hello }}\n"),
    )
    .await;
    nodes_ready(&client, ns, &[node]).await;
    let s = signal(&client, ns, "via-plain", node, "input", json!({"name": "Ada"})).await;
    assert_eq!(s.status.and_then(|st| st.signal_phase()), Some(SignalPhase::Delivered));
    // A clean stop flushes the exporter, were there one: after it, nothing is on its way.
    let pid = alpha.pid().to_string();
    let stopped = std::process::Command::new("kill").args(["-TERM", &pid]).status();
    assert!(stopped.is_ok_and(|s| s.success()), "SIGTERM to {pid}");
    eventually("the module to stop", Duration::from_secs(30), || {
        let running = alpha.running();
        async move { (!running).then_some(()) }
    })
    .await;
    assert!(receiver.all().is_empty(), "spans arrived");
    assert!(receiver.dsns.lock().expect("dsns").is_empty());
    let log = std::fs::read_to_string(&logs).expect("logs");
    let warnings: Vec<&str> = log.lines().filter(|l| l.contains("OTLP_DSN_PLAINTEXT")).collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(
        warnings[0].contains("WARN") && warnings[0].contains("tracing is off"),
        "{log}"
    );
    assert!(!log.contains("s3cr3t"), "{log}");
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

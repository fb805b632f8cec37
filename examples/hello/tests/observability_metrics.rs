//! Observability on a real control plane, metrics and failures: exact `/metrics`
//! counts after a known run across two module processes, and a failing edge expression
//! seen in the log, metrics, span, tracker and status.

mod common;
mod observing;

use std::time::Duration;

use common::{create_flow, env, eventually, nodes_ready, signal};
use kube::Api;
use observing::*;
use serde_json::json;
use tiny_runtime::crd::{SignalPhase, TinyNode};

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
    // One run more, so that "logged once" below is said of two runs at least (with
    // one, a log line per run would pass it too).
    runs += 1;
    let s = signal(
        &client,
        "x",
        &format!("run-{runs}"),
        shout,
        "input",
        json!({"text": "hi"}),
    )
    .await;
    assert_eq!(s.status.and_then(|st| st.signal_phase()), Some(SignalPhase::Delivered));

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

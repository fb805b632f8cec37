//! Two modules in separate processes on a real control plane: they find each other
//! through their TinyModules and carry a flow across over gRPC.

mod common;

use std::time::Duration;
use tiny_runtime::crd::SignalPhase;

use common::{create_flow, env, eventually, hello, ready, round_trip, signal};
use kube::Api;
use serde_json::json;
use tiny_runtime::crd::{TinyModule, TinyNode};

/// alpha.hello -> beta.shout -> alpha.respond, and edges to failure cases.
fn cross_flow() -> String {
    round_trip(
        "x",
        Some(r#"{ maxAttempts: 40, initialDelayMs: 250, backoffCoefficient: "1.0" }"#),
    ) + FAILURES
}

const FAILURES: &str = r#"
---
kind: TinyNode
metadata: { name: x.alpha-v0.shout-2 }
spec:
  module: alpha
  component: shout
  edges:
    - id: to-beta-strict
      port: out
      to: "x.beta-v0.shout-3:input"
      flowID: x
      retryPolicy: { maxAttempts: 5, initialDelayMs: 100 }
---
kind: TinyNode
metadata: { name: x.beta-v0.shout-3 }
spec:
  module: beta
  component: shout
  ports:
    - from: "x.alpha-v0.shout-2:out"
      port: input
      configuration: { text: "{{$.context.shape ?? $.text}}" }
---
kind: TinyNode
metadata: { name: x.alpha-v0.shout-4 }
spec:
  module: alpha
  component: shout
  edges:
    - id: to-nowhere
      port: out
      to: "x.gamma.shout-1:input"
      flowID: x
      retryPolicy: { maxAttempts: 2, initialDelayMs: 10 }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_crosses_modules_with_retries_and_clear_errors() {
    let env = env().await;
    let client = env.client();
    env.create_namespace("x").await.expect("namespace");
    let alpha = hello(&env, "x", "alpha-0", "alpha-v0").start();
    // beta binds port 0 itself and announces the port it got: no port is reserved by
    // binding and releasing it, which another process could take in between.
    let mut beta = Some(hello(&env, "x", "beta-0", "beta-v0").start());
    let flow = create_flow(&client, "x", &cross_flow()).await;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), "x");
    for n in &flow.nodes {
        eventually(&format!("{} to be Ready", n.name), Duration::from_secs(60), || {
            let nodes = nodes.clone();
            async move { nodes.get(&n.name).await.ok().filter(|n| ready(n) == Some(true)) }
        })
        .await;
    }
    let modules: Api<TinyModule> = Api::namespaced(client.clone(), "x");
    let announced = eventually("beta to announce its address", Duration::from_secs(30), || {
        let modules = modules.clone();
        async move { modules.get("beta-v0").await.ok()?.status.filter(|s| !s.addr.is_empty()) }
    })
    .await;
    let beta_addr = announced.addr.clone();
    let beta_port: Option<u16> = beta_addr.strip_prefix("127.0.0.1:").and_then(|p| p.parse().ok());
    assert!(beta_port.is_some_and(|p| p != 0), "the port beta bound: {beta_addr}");
    assert!(
        announced
            .components
            .iter()
            .any(|c| c.name == "shout" && !c.ports.is_empty())
    );

    // A -> B -> A, request/response: the reply of alpha's respond node comes back
    // through beta to the signal.
    let s = signal(
        &client,
        "x",
        "round-trip",
        "x.alpha-v0.hello-1",
        "input",
        json!({"name": "Ada"}),
    )
    .await;
    let st = s.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Delivered), "{:?}", st.error);
    assert_eq!(st.reply.map(|r| r.0), Some(json!({"answer": "HELLO, ADA!"})));

    // A permanent error at B (the input does not decode) is not retried by A, though
    // the edge allows 5 attempts.
    let b = beta.as_ref().expect("beta runs");
    let errors_before = b.metric("tiny_hop_errors_total").await.unwrap_or(0);
    let s = signal(
        &client,
        "x",
        "permanent",
        "x.alpha-v0.shout-2",
        "input",
        json!({"text": "Bo", "context": {"shape": [1]}}),
    )
    .await;
    let st = s.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Failed));
    let err = st.error.unwrap_or_default();
    assert!(err.contains("field `text` does not decode"), "{err}");
    assert!(
        err.contains("x.beta-v0.shout-3"),
        "the error names the node that raised it: {err}"
    );
    // The signal failed once A gave up: any retry of A's would have reached B before.
    assert_eq!(
        b.metric("tiny_hop_errors_total").await,
        Some(errors_before + 1),
        "one attempt, no retry"
    );

    // B stops: A's sends fail as unreachable and are retried per the edge policy; B
    // comes back on the same address and the retry succeeds.
    drop(beta.take());
    let unreachable = r#"tiny_grpc_client_calls_total{module="beta-v0",outcome="Unavailable"}"#;
    let unreachable_before = alpha.metric(unreachable).await.unwrap_or(0);
    let signals = tokio::spawn({
        let client = client.clone();
        async move {
            signal(
                &client,
                "x",
                "while-down",
                "x.alpha-v0.hello-1",
                "input",
                json!({"name": "Cy"}),
            )
            .await
        }
    });
    // B comes back once A has found it down (a failed call), not after a guessed time.
    eventually("alpha's call to find beta down", Duration::from_secs(30), || async {
        (alpha.metric(unreachable).await.unwrap_or(0) > unreachable_before).then_some(())
    })
    .await;
    let back = hello(&env, "x", "beta-1", "beta-v0").grpc(&beta_addr).start();
    let s = signals.await.expect("signal task");
    let st = s.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Delivered), "{:?}", st.error);
    assert_eq!(st.reply.map(|r| r.0), Some(json!({"answer": "HELLO, CY!"})));
    // Delivered is the proof, with no clock read: the edge's attempts would have run
    // out, and the signal failed, had the retry not reached the new B.
    assert!(
        back.metric("tiny_hops_total").await.unwrap_or(0) >= 1,
        "the restarted beta handled it"
    );

    // A message for a module that no TinyModule announces.
    let s = signal(
        &client,
        "x",
        "nowhere",
        "x.alpha-v0.shout-4",
        "input",
        json!({"text": "Di"}),
    )
    .await;
    let st = s.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Failed));
    let err = st.error.unwrap_or_default();
    assert!(err.contains("no TinyModule announces module `gamma`"), "{err}");
}

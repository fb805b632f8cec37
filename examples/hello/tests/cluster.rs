//! The hello module on a real control plane (etcd + kube-apiserver +
//! kube-controller-manager from tiny-testenv), through the public surface: custom
//! resources in, status, Events and signal replies out.

mod common;

use std::time::{Duration, Instant};
use tiny_runtime::crd::SignalPhase;

use common::{create_flow, delivered, env, eventually, ready, replica, signal, start_module};

use k8s_openapi::api::events::v1::Event;
use kube::{
    Api, ResourceExt as _,
    api::{ListParams, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tiny_example_hello::GREET_FLOW;
use tiny_runtime::crd::{TinyNode, TinyNodeSpec, TinyTracker, TinyTrackerSpec};
use tiny_sdk::flow::{PortConfig, RawJson};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_module_runs_flows_reports_errors_and_does_not_rewrite_status() {
    let env = env().await;
    let client = env.client();
    for ns in ["flow", "bad"] {
        env.create_namespace(ns).await.expect("namespace");
    }

    // A three-node flow from YAML, started by a TinySignal.
    let module = start_module(&client, "flow").await;
    let flow = create_flow(&client, "flow", GREET_FLOW).await;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), "flow");
    for n in &flow.nodes {
        let node = eventually(&format!("{} to be Ready", n.name), Duration::from_secs(60), || {
            let nodes = nodes.clone();
            async move { nodes.get(&n.name).await.ok().filter(|n| ready(n) == Some(true)) }
        })
        .await;
        let status = node.status.expect("status");
        assert_eq!(status.status, "OK");
        assert_eq!(status.module.name, "examples-v0");
        assert_eq!(status.observed_generation, node.metadata.generation.unwrap_or(0));
        assert!(status.last_update_time.is_some(), "heartbeat");
        assert!(!status.ports.is_empty(), "{}: ports", n.name);
        for p in &status.ports {
            let schema = p.schema.as_ref().map(|s| s.decode().expect("JSON")).unwrap_or_default();
            assert!(
                schema["$ref"].as_str().is_some_and(|r| r.starts_with("#/$defs/")),
                "{}:{} schema {schema}",
                n.name,
                p.name
            );
        }
    }
    // A TinyTracker records the flow's hops, keeping only the latest two.
    let trackers: Api<TinyTracker> = Api::namespaced(client.clone(), "flow");
    let spec = TinyTrackerSpec {
        flow_id: "greet".into(),
        max_hops: Some(2),
    };
    trackers
        .create(&PostParams::default(), &TinyTracker::new("greet", spec))
        .await
        .expect("tracker");
    // The module follows the tracker once it has listed it: probe with greetings until
    // one is recorded, then count from there.
    let mut probes = 0;
    let base = eventually("the module to follow the tracker", Duration::from_secs(60), || {
        probes += 1;
        let (client, trackers) = (client.clone(), trackers.clone());
        let name = format!("greet-probe-{probes}");
        async move {
            let data = json!({"name": "Probe", "context": {"user": "probe"}});
            signal(&client, "flow", &name, "greet.examples-v0.hello-1", "input", data).await;
            let total = trackers.get("greet").await.ok()?.status?.total;
            (total > 0).then_some(total)
        }
    })
    .await;
    let s = signal(
        &client,
        "flow",
        "greet-ada",
        "greet.examples-v0.hello-1",
        "input",
        json!({"name": "Ada", "context": {"user": "ada"}}),
    )
    .await;
    assert_eq!(delivered(&s), Some(json!({"greeting": "HELLO, ADA!", "for": "ada"})));
    // Ada's three hops come after every probe's (each probe finished before she was
    // sent), so the two the tracker keeps are hers.
    let tracked = eventually("the tracker to record Ada's hops", Duration::from_secs(30), || {
        let trackers = trackers.clone();
        async move {
            let status = trackers.get("greet").await.ok()?.status?;
            let hers = status
                .hops
                .iter()
                .all(|h| h.data.contains("Ada") || h.data.contains("ADA"));
            (status.total >= base + 3 && hers).then_some(status)
        }
    })
    .await;
    let hops: Vec<_> = tracked
        .hops
        .iter()
        .map(|h| (h.node.as_str(), h.port.as_str()))
        .collect();
    // Hops are recorded when they finish: the innermost first.
    assert_eq!(
        hops,
        [
            ("greet.examples-v0.shout-1", "input"),
            ("greet.examples-v0.hello-1", "input")
        ],
        "capped at 2"
    );
    assert!(tracked.hops.iter().all(|h| h.error.is_none() && !h.data.is_empty()));
    assert_eq!(
        tracked.hops[0].from.as_deref(),
        Some("greet.examples-v0.hello-1:greeting")
    );

    // Status is written only when it changes: metadata-only updates reconcile the
    // node again, and nothing is written. To know the module has seen them all, a spec
    // change follows them: the watch delivers in order, so once the module has written
    // the status of the new generation it has reconciled every annotation before it,
    // and that one write is the only one.
    let writes = || {
        module
            .metrics()
            .status_writes
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let before = writes();
    for i in 0..3 {
        let patch = json!({"metadata": {"annotations": {"touched": i.to_string()}}});
        nodes
            .patch(
                "greet.examples-v0.hello-1",
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
            .expect("annotated");
    }
    let mut settings = nodes.get("greet.examples-v0.hello-1").await.expect("hello-1");
    let generation = settings.metadata.generation.unwrap_or(0);
    for p in &mut settings.spec.0.ports {
        if p.port == "_settings" {
            p.configuration = Some(RawJson(json!({"greetingWord": "Hi"})));
        }
    }
    settings.metadata.managed_fields = None;
    nodes
        .replace("greet.examples-v0.hello-1", &PostParams::default(), &settings)
        .await
        .expect("settings changed");
    eventually("the new generation's status", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let node = nodes.get("greet.examples-v0.hello-1").await.ok()?;
            (node.status?.observed_generation > generation).then_some(())
        }
    })
    .await;
    assert_eq!(writes(), before + 1, "the annotations rewrote the status");

    // Bad specs: each node gets a clear error in its status and an Event, and the
    // good node beside them keeps working.
    let bad_module = start_module(&client, "bad").await;
    let bad: Api<TinyNode> = Api::namespaced(client.clone(), "bad");
    let mk = |name: &str, component: &str, ports: Vec<PortConfig>| {
        TinyNode::new(
            name,
            TinyNodeSpec(tiny_sdk::flow::NodeSpec {
                module: "examples".into(),
                component: component.into(),
                ports,
                edges: vec![],
            }),
        )
    };
    let cases = [
        (
            mk("b.examples-v0.nosuch-1", "nosuch", vec![]),
            "unknown component `nosuch`",
        ),
        (
            mk(
                "b.examples-v0.shout-1",
                "shout",
                vec![PortConfig {
                    from: "x:out".into(),
                    port: "input".into(),
                    configuration: Some(RawJson(json!({"text": "{{$.a +}}"}))),
                    ..Default::default()
                }],
            ),
            "port `input` (edge from `x:out`)",
        ),
        (
            mk(
                "b.examples-v0.hello-2",
                "hello",
                vec![PortConfig {
                    port: "_settings".into(),
                    configuration: Some(RawJson(json!({"greetingWord": 5}))),
                    ..Default::default()
                }],
            ),
            "field `greetingWord` does not decode",
        ),
    ];
    for (node, _) in &cases {
        bad.create(&PostParams::default(), node).await.expect("created");
    }
    bad.create(&PostParams::default(), &mk("b.examples-v0.hello-1", "hello", vec![]))
        .await
        .expect("created");
    for (node, expected) in &cases {
        let name = node.name_any();
        let got = eventually(&format!("{name} to report its error"), Duration::from_secs(60), || {
            let bad = bad.clone();
            let name = name.clone();
            async move {
                bad.get(&name)
                    .await
                    .ok()
                    .filter(|n| n.status.as_ref().is_some_and(|s| s.error))
            }
        })
        .await;
        assert_eq!(ready(&got), Some(false));
        let status = got.status.expect("status");
        assert!(status.status.contains(expected), "{name}: {}", status.status);
        assert!(
            status.status.contains(&format!("node `{name}`")),
            "{name}: {}",
            status.status
        );
    }
    let events: Api<Event> = Api::namespaced(client.clone(), "bad");
    for (node, _) in &cases {
        let name = node.name_any();
        eventually(&format!("an Event for {name}"), Duration::from_secs(30), || {
            let events = events.clone();
            let name = name.clone();
            async move {
                let list = events.list(&ListParams::default()).await.ok()?;
                list.items.into_iter().find(|e| {
                    e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name.as_str())
                        && e.reason.as_deref() == Some("NodeError")
                })
            }
        })
        .await;
    }
    let ok = signal(
        &client,
        "bad",
        "still-works",
        "b.examples-v0.hello-1",
        "input",
        json!({"name": "Bo"}),
    )
    .await;
    assert_eq!(ok.status.and_then(|s| s.signal_phase()), Some(SignalPhase::Delivered));
    // A signal sent the moment its node is created waits for the node to load.
    bad.create(&PostParams::default(), &mk("b.examples-v0.hello-3", "hello", vec![]))
        .await
        .expect("created");
    let early = signal(
        &client,
        "bad",
        "early",
        "b.examples-v0.hello-3",
        "input",
        json!({"name": "Di"}),
    )
    .await;
    let early = early.status.expect("status");
    assert_eq!(early.signal_phase(), Some(SignalPhase::Delivered), "{:?}", early.error);
    let unknown_port = signal(&client, "bad", "no-port", "b.examples-v0.hello-1", "nope", json!({})).await;
    let st = unknown_port.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Failed));
    let err = st.error.unwrap_or_default();
    assert!(err.contains("has no input port `nope`"), "{err}");
    let unknown_node = signal(&client, "bad", "no-node", "b.examples-v0.ghost-1", "input", json!({})).await;
    assert!(
        unknown_node
            .status
            .and_then(|s| s.error)
            .unwrap_or_default()
            .contains("has no node `b.examples-v0.ghost-1`")
    );

    // Deleting a node (hello needs no finalizer: it has no hooks) removes it from the module.
    nodes
        .delete("greet.examples-v0.respond-1", &Default::default())
        .await
        .expect("deleted");
    eventually("the deleted node to be gone", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            nodes
                .get_opt("greet.examples-v0.respond-1")
                .await
                .ok()
                .and_then(|n| n.is_none().then_some(()))
        }
    })
    .await;
    // The watch's Delete event removes it from the engine, soon after.
    eventually("the module to forget the node", Duration::from_secs(10), || async {
        (!module.engine().has_node("greet.examples-v0.respond-1")).then_some(())
    })
    .await;

    module.stop().await;
    bad_module.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_replica_takes_over_and_a_signal_in_the_handover_is_delivered_once() {
    let env = env().await;
    let client = env.client();
    env.create_namespace("ha").await.expect("namespace");
    let mut replicas = vec![replica(&env, "ha", "replica-a"), replica(&env, "ha", "replica-b")];
    create_flow(
        &client,
        "ha",
        "kind: TinyNode\nmetadata: { name: ha.examples-v0.hello-1 }\nspec: { module: examples, component: hello }\n",
    )
    .await;
    let leader = eventually("exactly one leader", Duration::from_secs(60), || async {
        let mut leaders = Vec::new();
        for (i, r) in replicas.iter().enumerate() {
            if r.metric("tiny_leader").await == Some(1) {
                leaders.push(i);
            }
        }
        (leaders.len() == 1).then(|| leaders[0])
    })
    .await;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), "ha");
    eventually("the node to be Ready", Duration::from_secs(60), || {
        let nodes = nodes.clone();
        async move {
            nodes
                .get("ha.examples-v0.hello-1")
                .await
                .ok()
                .filter(|n| ready(n) == Some(true))
        }
    })
    .await;

    // Kill the leader without letting it release the lease, and send a signal at once.
    let dead = replicas.remove(leader);
    drop(dead);
    let killed_at = Instant::now();
    let survivor = &replicas[0];
    let s = signal(
        &client,
        "ha",
        "handover",
        "ha.examples-v0.hello-1",
        "input",
        json!({"name": "Cy"}),
    )
    .await;
    let status = s.status.expect("status");
    assert_eq!(
        status.signal_phase(),
        Some(SignalPhase::Delivered),
        "{:?}",
        status.error
    );
    assert_eq!(status.claimed_by.as_deref(), Some(survivor.identity.as_str()));
    let took = killed_at.elapsed();
    assert_eq!(survivor.metric("tiny_leader").await, Some(1), "the survivor leads");
    assert!(
        took <= Duration::from_secs(4 + 6),
        "took over in {took:?}, lease is 4 s"
    );
    assert_eq!(
        survivor.metric("tiny_signals_delivered_total").await,
        Some(1),
        "delivered once"
    );
    // And it stays delivered once: a signal created after it is delivered, and the
    // watch brings events in order, so the survivor has seen everything that could
    // have sent the first again (its own status write, a resync) by then.
    let s = signal(
        &client,
        "ha",
        "after",
        "ha.examples-v0.hello-1",
        "input",
        json!({"name": "Di"}),
    )
    .await;
    let status = s.status.expect("status");
    assert_eq!(
        status.signal_phase(),
        Some(SignalPhase::Delivered),
        "{:?}",
        status.error
    );
    assert_eq!(
        survivor.metric("tiny_signals_delivered_total").await,
        Some(2),
        "the first signal once, and the one after it"
    );
}

/// An edge to a node that does not exist: said on the sending node as soon as it loads,
/// a message along it fails at once (not after three waits for a node that will never
/// load), and both mend themselves when the node is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edge_to_a_missing_node_is_said_on_the_sender_and_fails_at_once() {
    let env = env().await;
    let client = env.client();
    let ns = "edges";
    env.create_namespace(ns).await.expect("namespace");
    let _module = start_module(&client, ns).await;
    let flow = r#"
kind: TinyNode
metadata: { name: e.examples-v0.hello-1 }
spec:
  module: examples
  component: hello
  edges:
    - { id: to-missing, port: greeting, to: "e.examples-v0.shout-7:input", flowID: e }
"#;
    create_flow(&client, ns, flow).await;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let edges = |n: &TinyNode| {
        n.status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == "EdgesResolved")
            .cloned()
    };
    let said = eventually(
        "the sender to say its edge leads nowhere",
        Duration::from_secs(30),
        || {
            let nodes = nodes.clone();
            async move { edges(&nodes.get("e.examples-v0.hello-1").await.ok()?) }
        },
    )
    .await;
    assert_eq!((said.status.as_str(), said.reason.as_str()), ("False", "TargetMissing"));
    assert!(
        said.message
            .contains("edge `to-missing` leads to `e.examples-v0.shout-7:input`"),
        "{}",
        said.message
    );
    // The node runs (the edge is what is wrong), and a message along the edge fails at once.
    let node = nodes.get("e.examples-v0.hello-1").await.expect("node");
    assert_eq!(ready(&node), Some(true));
    let started = Instant::now();
    let s = signal(
        &client,
        ns,
        "nowhere",
        "e.examples-v0.hello-1",
        "input",
        json!({"name": "Ada"}),
    )
    .await;
    let took = started.elapsed();
    let st = s.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Failed));
    let err = st.error.unwrap_or_default();
    assert!(
        err.contains("no node `e.examples-v0.shout-7`") && err.contains("NODE_NOT_FOUND"),
        "{err}"
    );
    assert!(took < Duration::from_secs(5), "failed after {took:?}");

    // The node appears: the condition goes, and the edge carries messages.
    create_flow(
        &client,
        ns,
        "kind: TinyNode\nmetadata: { name: e.examples-v0.shout-7 }\nspec: { module: examples, component: shout }\n",
    )
    .await;
    eventually("the condition to go", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get("e.examples-v0.hello-1").await.ok()?;
            edges(&n).is_none().then_some(())
        }
    })
    .await;
    let s = signal(
        &client,
        ns,
        "somewhere",
        "e.examples-v0.hello-1",
        "input",
        json!({"name": "Bo"}),
    )
    .await;
    let st = s.status.expect("status");
    assert_eq!(st.signal_phase(), Some(SignalPhase::Delivered), "{:?}", st.error);
}

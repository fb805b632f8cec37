//! The common module on a real control plane: living components (a ticker moved
//! between replicas, a router whose ports follow its settings, a kv store that
//! outlives the module) and a flow written the way the Go module's editor writes it.

mod support;

use std::time::{Duration, Instant};

use kube::{
    Api,
    api::{Patch, PatchParams},
};
use serde_json::{Value, json};
use support::cluster::{MODULE, b64, start_module, state};
use tiny_runtime::crd::TinyNode;
use tiny_testkit::{
    Replica, ReplicaBuilder, TestEnv,
    cluster::{apply_yaml, delivered, env, port_config, signal},
    eventually, the_leader,
};

fn port_schema(node: &TinyNode, port: &str) -> Option<Value> {
    let p = node.status.as_ref()?.ports.iter().find(|p| p.name == port)?;
    p.schema.as_ref()?.decode().ok()
}

fn port_names(node: &TinyNode) -> Vec<String> {
    node.status
        .as_ref()
        .map(|s| s.ports.iter().map(|p| p.name.clone()).collect())
        .unwrap_or_default()
}

/// The tick number a debug node shows as its last message.
async fn last_tick(nodes: &Api<TinyNode>, debug: &str) -> Option<u64> {
    let node = nodes.get(debug).await.ok()?;
    port_config(&node, "_control")?["context"]["tick"].as_u64()
}

/// A raw `status.metadata` value, where Go's components keep theirs.
fn meta(node: &TinyNode, key: &str) -> Option<String> {
    node.status.as_ref()?.metadata.get(key).cloned()
}

/// Waits until `ticker`'s dashboard offers Start (the node loaded and showed its view).
async fn shows_start(nodes: &Api<TinyNode>, ticker: &str) -> Value {
    eventually("the ticker to show Start", Duration::from_secs(60), || {
        let nodes = nodes.clone();
        async move { port_config(&nodes.get(ticker).await.ok()?, "_control").filter(|c| c["start"] == true) }
    })
    .await
}

/// A ticker feeding a debug node.
fn ticker_flow(flow: &str, delay_ms: u64) -> String {
    let settings = b64(&json!({"context": {"flow": flow}, "delay": delay_ms, "countTicks": true}));
    let mapping = b64(&json!("{{$}}"));
    format!(
        "apiVersion: operator.tinysystems.io/v1alpha1\nkind: TinyNode\n\
         metadata: {{ name: {flow}.common-module-v0.ticker-1, labels: {{ tinysystems.io/flow-name: {flow} }} }}\n\
         spec:\n  module: common-module-v0\n  component: ticker\n\
         \x20 ports: [ {{ port: _settings, configuration: {settings} }} ]\n\
         \x20 edges: [ {{ id: t-d, port: out, to: '{flow}.common-module-v0.debug-1:in' }} ]\n\
         ---\n\
         apiVersion: operator.tinysystems.io/v1alpha1\nkind: TinyNode\n\
         metadata: {{ name: {flow}.common-module-v0.debug-1, labels: {{ tinysystems.io/flow-name: {flow} }} }}\n\
         spec:\n  module: common-module-v0\n  component: debug\n\
         \x20 ports: [ {{ port: in, from: '{flow}.common-module-v0.ticker-1:out', configuration: {mapping} }} ]\n"
    )
}

/// The clock a stopped ticker is read against, instead of wall time: a second ticker of
/// the same module (`clock`, 200 ms, its ticks shown by `clock.common-module-v0.debug-1`),
/// started once Stop took effect. Its ticks are counted, stored and sent the way the
/// stopped ticker's were, so a loaded machine slows both alike.
const CLOCK: (&str, &str) = ("clock.common-module-v0.ticker-1", "clock.common-module-v0.debug-1");

/// Waits until the clock's debug node shows tick `at_least` or a later one; that tick.
async fn clock_at(nodes: &Api<TinyNode>, at_least: u64) -> u64 {
    eventually(&format!("the clock's tick {at_least}"), Duration::from_secs(60), || {
        let nodes = nodes.clone();
        async move { last_tick(&nodes, CLOCK.1).await.filter(|t| *t >= at_least) }
    })
    .await
}

/// What `debug` shows once a tick that was on its way at Stop has landed (two clock
/// ticks went the same way after Stop), and again five clock ticks later: a ticker that
/// went on after Stop would have ticked about as often as the clock in between.
async fn shown_across_clock_ticks(nodes: &Api<TinyNode>, debug: &str) -> (Option<u64>, Option<u64>) {
    let now = clock_at(nodes, 2).await;
    let first = last_tick(nodes, debug).await;
    clock_at(nodes, now + 5).await;
    (first, last_tick(nodes, debug).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn living_components_on_one_replica() {
    let env = env().await;
    let client = env.client();
    let ns = "common";
    env.create_namespace(ns).await.expect("namespace");
    let module = start_module(&client, ns).await;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);

    // --- A signal presses Start on a ticker and is finished at once ----------------------
    apply_yaml(&client, ns, &ticker_flow("tick", 200)).await;
    apply_yaml(&client, ns, &ticker_flow("clock", 200)).await;
    let (ticker, debug) = ("tick.common-module-v0.ticker-1", "tick.common-module-v0.debug-1");
    let view = shows_start(&nodes, ticker).await;
    assert_eq!(view["status"], "Not running", "{view}");
    // As the editor presses Start: with the context the view shows.
    let s = signal(
        &client,
        ns,
        "start",
        ticker,
        "_control",
        json!({"start": true, "context": view["context"]}),
    )
    .await;
    // Delivered at all shows the Start signal was not held open, with no clock read:
    // the ticker runs until stopped, and a signal held for it would never end.
    delivered(&s);
    // The ticks reach the debug node, whose `_control` status shows the last message.
    eventually("ticks at the debug node", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move { last_tick(&nodes, debug).await.filter(|t| *t >= 3) }
    })
    .await;
    let shown = nodes.get(debug).await.expect("debug node");
    assert_eq!(
        port_config(&shown, "_control").expect("view")["context"]["context"],
        json!({"flow": "tick"})
    );
    // The ticker's view swapped Start for Stop, and the schema with it.
    let running = nodes.get(ticker).await.expect("ticker");
    let view = port_config(&running, "_control").expect("view");
    assert_eq!(
        (view["status"].as_str(), view.get("start"), &view["stop"]),
        (Some("Running"), None, &json!(true))
    );
    let schema = port_schema(&running, "_control").expect("schema");
    let props = &schema["$defs"]["TickerControl"]["properties"];
    assert!(props.get("stop").is_some() && props.get("start").is_none(), "{schema}");
    // Running, as Go's ticker marks it: plain strings in `status.metadata`.
    assert_eq!(meta(&running, "ticker-running").as_deref(), Some("true"));
    let config: Value = serde_json::from_str(&meta(&running, "ticker-config").expect("ticker-config")).expect("JSON");
    assert_eq!(config, json!({"context": {"flow": "tick"}, "delay": 200}));
    // Stop ends the ticks: read against the clock, started once Stop took effect.
    delivered(&signal(&client, ns, "stop", ticker, "_control", json!({"stop": true})).await);
    eventually("Stop to remove Go's keys", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get(ticker).await.ok()?;
            (meta(&n, "ticker-running").is_none() && meta(&n, "ticker-config").is_none()).then_some(n)
        }
    })
    .await;
    let clock = shows_start(&nodes, CLOCK.0).await;
    let start = json!({"start": true, "context": clock["context"]});
    delivered(&signal(&client, ns, "clock", CLOCK.0, "_control", start).await);
    let (after_stop, later) = shown_across_clock_ticks(&nodes, debug).await;
    let after_stop = after_stop.expect("a tick");
    assert_eq!(later, Some(after_stop), "ticks went on after Stop");
    // Counted before it is sent: a Stop between the two leaves one tick counted, unsent.
    let stopped = nodes.get(ticker).await.expect("ticker");
    let counted = state(&stopped, "ticks")
        .and_then(|v| v.as_u64())
        .expect("ticks in state");
    assert!(
        counted == after_stop || counted == after_stop + 1,
        "state {counted}, shown {after_stop}"
    );

    // --- A router's ports follow its settings -------------------------------------------
    let router = "route.common-module-v0.router-1";
    let settings = |routes: Value| b64(&json!({"routes": routes, "enableDefaultPort": false}));
    let router_yaml = format!(
        "apiVersion: operator.tinysystems.io/v1alpha1\nkind: TinyNode\n\
         metadata: {{ name: {router}, labels: {{ tinysystems.io/flow-name: route }} }}\n\
         spec:\n  module: common-module-v0\n  component: router\n\
         \x20 ports: [ {{ port: _settings, configuration: {} }} ]\n\
         \x20 edges:\n\
         \x20 - {{ id: to-a, port: out_a, to: 'route.common-module-v0.debug-a:in' }}\n\
         \x20 - {{ id: to-c, port: out_c, to: 'route.common-module-v0.debug-c:in' }}\n\
         ---\n\
         apiVersion: operator.tinysystems.io/v1alpha1\nkind: TinyNode\n\
         metadata: {{ name: route.common-module-v0.debug-a }}\n\
         spec: {{ module: common-module-v0, component: debug, ports: [ {{ port: in, from: '{router}:out_a', configuration: {} }} ] }}\n",
        settings(json!(["A", "B", "C"])),
        b64(&json!("{{$.context}}")),
    );
    apply_yaml(&client, ns, &router_yaml).await;
    let outs = |n: &TinyNode| -> Vec<String> { port_names(n).into_iter().filter(|p| p.starts_with("out_")).collect() };
    let three = eventually("three route ports", Duration::from_secs(60), || {
        let nodes = nodes.clone();
        async move { nodes.get(router).await.ok().filter(|n| outs(n).len() == 3) }
    })
    .await;
    assert_eq!(outs(&three), ["out_a", "out_b", "out_c"]);
    let labels: Vec<&str> = three
        .status
        .as_ref()
        .expect("status")
        .ports
        .iter()
        .map(|p| p.label.as_str())
        .collect();
    assert!(labels.contains(&"A") && labels.contains(&"C"), "{labels:?}");
    let input = port_schema(&three, "input").expect("input schema");
    assert!(
        input.to_string().contains(r#"["A","B","C"]"#),
        "the route enum follows the settings: {input}"
    );
    // A settings change to two routes removes `out_c`: its edge is reported on the node,
    // which goes on routing to the others.
    let patch = json!({"spec": {"ports": [{"port": "_settings", "configuration": settings(json!(["A", "B"]))}]}});
    nodes
        .patch(router, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("settings changed");
    let two = eventually("two route ports and an edge error", Duration::from_secs(60), || {
        let nodes = nodes.clone();
        async move {
            nodes
                .get(router)
                .await
                .ok()
                .filter(|n| outs(n).len() == 2 && n.status.as_ref().is_some_and(|s| s.error))
        }
    })
    .await;
    let status = two.status.as_ref().expect("status");
    assert!(
        status.status.contains("edge `to-c` from port `out_c`"),
        "{}",
        status.status
    );
    let ready = status.conditions.iter().find(|c| c.type_ == "Ready").expect("Ready");
    assert_eq!(ready.reason, "PortRemoved");
    let routed = signal(
        &client,
        ns,
        "route-a",
        router,
        "input",
        json!({"context": {"via": "a"}, "conditions": [{"route": "a", "condition": true}]}),
    )
    .await;
    delivered(&routed);
    eventually("the routed message at debug-a", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get("route.common-module-v0.debug-a").await.ok()?;
            (port_config(&n, "_control")?["context"] == json!({"via": "a"})).then_some(())
        }
    })
    .await;

    // --- kv keeps its records across a module restart ------------------------------------
    let kv = "store.common-module-v0.kv-1";
    apply_yaml(
        &client,
        ns,
        &format!(
            "apiVersion: operator.tinysystems.io/v1alpha1\nkind: TinyNode\n\
             metadata: {{ name: {kv} }}\nspec: {{ module: common-module-v0, component: kv }}\n"
        ),
    )
    .await;
    let store = |name: &str, id: &str, op: &str| {
        let (client, name) = (client.clone(), name.to_owned());
        let doc = json!({"operation": op, "document": {"id": id, "status": "DOWN"}});
        async move { signal(&client, ns, &name, kv, "store", doc).await }
    };
    delivered(&store("kv-1", "one", "store").await);
    delivered(&store("kv-2", "two", "store").await);
    delivered(&store("kv-3", "three", "store").await);
    delivered(&store("kv-4", "two", "delete").await);
    module.stop().await;
    let stored = nodes.get(kv).await.expect("kv node");
    let keys: Vec<&String> = stored.status.as_ref().expect("status").metadata.keys().collect();
    assert_eq!(keys, ["_state/one", "_state/three"], "as the Go SDK stores them");
    assert_eq!(state(&stored, "one"), Some(json!({"id": "one", "status": "DOWN"})));
    // A new module process reads them back.
    let module = start_module(&client, ns).await;
    let queried = signal(
        &client,
        ns,
        "kv-query",
        kv,
        "query",
        json!({"query": "$.status == 'DOWN'"}),
    )
    .await;
    delivered(&queried);
    let reply = queried
        .status
        .as_ref()
        .and_then(|s| s.reply.as_ref())
        .map(|r| r.0.clone());
    // No edge leaves `query_result`, so the answer is empty; the records count shows
    // in the view instead.
    let _ = reply;
    let view = eventually("kv to show two records", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move { port_config(&nodes.get(kv).await.ok()?, "_control").filter(|c| c["records"] == 2) }
    })
    .await;
    assert_eq!(view["records"], 2);

    // --- A flow written as the Go module's editor writes it loads and runs unchanged ----
    apply_yaml(&client, ns, GO_FLOW).await;
    delivered(
        &signal(
            &client,
            ns,
            "go-start",
            "gof.common-module-v0.ticker-1",
            "_control",
            json!({"start": true, "context": {"source": "go-editor"}}),
        )
        .await,
    );
    let shown = eventually(
        "the Go-shaped flow's debug node to show a routed tick",
        Duration::from_secs(60),
        || {
            let nodes = nodes.clone();
            async move {
                port_config(&nodes.get("gof.common-module-v0.debug-1").await.ok()?, "_control")
                    .filter(|c| !c["context"].is_null())
            }
        },
    )
    .await;
    assert_eq!(shown["context"], json!({"source": "go-editor"}), "{shown}");
    for name in [
        "gof.common-module-v0.ticker-1",
        "gof.common-module-v0.router-1",
        "gof.common-module-v0.debug-1",
    ] {
        let n = nodes.get(name).await.expect("node");
        let st = n.status.as_ref().expect("status");
        assert!(!st.error, "{name}: {}", st.status);
    }
    module.stop().await;
}

/// ticker → router → debug, as the Go editor stores it: Go's port names, settings and
/// edge configurations as base64 of JSON, Go's labels.
const GO_FLOW: &str = r#"apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: gof.common-module-v0.ticker-1
  labels:
    tinysystems.io/flow-name: gof
    tinysystems.io/project-name: demo
spec:
  module: common-module-v0
  component: ticker
  ports:
  - port: _settings
    configuration: eyJjb250ZXh0Ijp7InNvdXJjZSI6ImdvLWVkaXRvciJ9LCJkZWxheSI6NTAwfQ==
  edges:
  - id: e-ticker-router
    port: out
    to: gof.common-module-v0.router-1:input
---
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: gof.common-module-v0.router-1
  labels:
    tinysystems.io/flow-name: gof
    tinysystems.io/project-name: demo
spec:
  module: common-module-v0
  component: router
  ports:
  - port: _settings
    configuration: eyJyb3V0ZXMiOlsiQSIsIkIiXSwiZW5hYmxlRGVmYXVsdFBvcnQiOmZhbHNlfQ==
  - port: input
    from: gof.common-module-v0.ticker-1:out
    configuration: eyJjb250ZXh0Ijoie3skfX0iLCJjb25kaXRpb25zIjpbeyJyb3V0ZSI6IkEiLCJjb25kaXRpb24iOnRydWV9XX0=
  edges:
  - id: e-router-debug
    port: out_a
    to: gof.common-module-v0.debug-1:in
---
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: gof.common-module-v0.debug-1
  labels:
    tinysystems.io/flow-name: gof
    tinysystems.io/project-name: demo
spec:
  module: common-module-v0
  component: debug
  ports:
  - port: in
    from: gof.common-module-v0.router-1:out_a
    configuration: Int7JC5jb250ZXh0fX0i
"#;

/// `common-module run`, to be started.
fn common(env: &TestEnv, ns: &str, identity: &str) -> ReplicaBuilder {
    Replica::builder(env!("CARGO_BIN_EXE_common-module"), env, ns, identity, MODULE)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_ticker_moves_to_the_new_leader_with_its_count() {
    let env = env().await;
    let client = env.client();
    let ns = "ha";
    env.create_namespace(ns).await.expect("namespace");
    let mut replicas = vec![
        common(&env, ns, "replica-a").start(),
        common(&env, ns, "replica-b").start(),
    ];
    apply_yaml(&client, ns, &ticker_flow("ha", 300)).await;
    let (ticker, debug) = ("ha.common-module-v0.ticker-1", "ha.common-module-v0.debug-1");
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let leader = the_leader(&replicas).await;
    shows_start(&nodes, ticker).await;
    delivered(&signal(&client, ns, "start", ticker, "_control", json!({"start": true})).await);
    eventually("a few ticks", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move { last_tick(&nodes, debug).await.filter(|t| *t >= 4) }
    })
    .await;

    // Kill the leader without letting it release the lease.
    drop(replicas.remove(leader));
    let killed_at = Instant::now();
    let counted = state(&nodes.get(ticker).await.expect("ticker"), "ticks")
        .and_then(|v| v.as_u64())
        .expect("ticks in state");
    // Every tick shown from now on is a new one: none is sent twice.
    let mut seen: Vec<u64> = Vec::new();
    let resumed = loop {
        assert!(
            killed_at.elapsed() < Duration::from_secs(30),
            "no tick from a new leader: {seen:?}"
        );
        if let Some(t) = last_tick(&nodes, debug).await {
            if seen.last() != Some(&t) {
                seen.push(t);
            }
            // A tick past the state's count, seen once the survivor leads: a status
            // write the killed leader sent just before it died may land after the
            // kill, so a new tick alone does not say who sent it.
            if t > counted + 1 && replicas[0].leads().await {
                break killed_at.elapsed();
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        resumed <= Duration::from_secs(4 + 8),
        "resumed {resumed:?} after the kill; the lease is 4 s"
    );
    let after: Vec<u64> = seen.iter().copied().filter(|t| *t > counted).collect();
    assert!(
        after.windows(2).all(|w| w[0] < w[1]),
        "ticks out of order or doubled: {seen:?}"
    );
    assert!(
        seen.iter().all(|t| *t >= counted.saturating_sub(1)),
        "an old tick was sent again: {seen:?} (state said {counted})"
    );
    let moved = nodes.get(ticker).await.expect("ticker");
    assert_eq!(
        meta(&moved, "ticker-running").as_deref(),
        Some("true"),
        "still running, on the new leader"
    );
    let view = eventually(
        "the new leader to show the ticker running",
        Duration::from_secs(30),
        || {
            let nodes = nodes.clone();
            async move { port_config(&nodes.get(ticker).await.ok()?, "_control").filter(|c| c["status"] == "Running") }
        },
    )
    .await;
    assert_eq!(view["stop"], true);
    println!("ticker resumed on the new leader {resumed:?} after the kill (lease 4 s)");
}

/// Presses `button` on `ticker`'s dashboard as the platform does: `{"<button>":true}` on
/// the module's `.sysmsg` subject with `x-from: signal`, fire and forget.
async fn press(platform: &mut tiny_testkit::RawNats, ticker: &str, button: &str) {
    let to = format!("{ticker}:_control");
    let headers = [("x-to", to.as_str()), ("x-from", "signal")];
    let body = format!("{{\"{button}\":true}}");
    platform
        .publish(
            "tinymodule.common-module-v0.sysmsg",
            None,
            Some(&headers),
            body.as_bytes(),
        )
        .await
        .expect("published");
    platform.flush().await.expect("flushed");
}

/// The platform's way to press a dashboard button on a cluster on NATS: a message on the
/// module's `.sysmsg` subject with `x-from: signal`, which every replica hears and only
/// the leader acts on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticker_started_and_stopped_over_nats_runs_on_the_leader_only() {
    let env = env().await;
    let broker = tiny_testenv::NatsServer::start().await.expect("nats-server starts");
    let client = env.client();
    let ns = "sys";
    env.create_namespace(ns).await.expect("namespace");
    let url = broker.url();
    let replicas = [
        common(&env, ns, "replica-a").nats(&url).start(),
        common(&env, ns, "replica-b").nats(&url).start(),
    ];
    apply_yaml(&client, ns, &ticker_flow("sys", 200)).await;
    apply_yaml(&client, ns, &ticker_flow("clock", 200)).await;
    let (ticker, debug) = ("sys.common-module-v0.ticker-1", "sys.common-module-v0.debug-1");
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let leader = the_leader(&replicas).await;
    shows_start(&nodes, ticker).await;
    shows_start(&nodes, CLOCK.0).await;
    // The press is fire and forget: a replica not yet listening on NATS would never
    // hear it. `/readyz` is ready once the broker answers the replica.
    for r in &replicas {
        eventually(
            "the replica to be ready on NATS",
            Duration::from_secs(30),
            || async move { r.probe("/readyz").await.filter(|(status, _)| *status == 200) },
        )
        .await;
    }

    // Start, as the platform publishes it: fire and forget, on `.sysmsg`.
    let mut platform = tiny_testkit::RawNats::connect(broker.port(), broker.token())
        .await
        .expect("connects");
    press(&mut platform, ticker, "start").await;
    eventually("a few ticks", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move { last_tick(&nodes, debug).await.filter(|t| *t >= 3) }
    })
    .await;
    // Both replicas heard it; only the leader's ticker sent to the debug node.
    let debug_in = format!("tiny_node_messages_total{{node=\"{debug}\",port=\"in\"}}");
    for r in &replicas {
        let heard = r
            .metric(r#"tiny_nats_server_calls_total{outcome="OK"}"#)
            .await
            .unwrap_or(0);
        assert!(heard >= 1, "every replica handled the _control message");
    }
    assert!(replicas[leader].metric(&debug_in).await.unwrap_or(0) >= 3);
    assert_eq!(
        replicas[1 - leader].metric(&debug_in).await.unwrap_or(0),
        0,
        "the follower did not tick"
    );

    // Stop, the same way: the ticks end.
    press(&mut platform, ticker, "stop").await;
    eventually("the ticker to stop", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move { port_config(&nodes.get(ticker).await.ok()?, "_control").filter(|c| c["status"] == "Not running") }
    })
    .await;
    // Read against the clock, pressed the same way once Stop took effect.
    press(&mut platform, CLOCK.0, "start").await;
    let (stopped_at, later) = shown_across_clock_ticks(&nodes, debug).await;
    assert!(stopped_at.is_some_and(|t| t >= 3), "{stopped_at:?}");
    assert_eq!(later, stopped_at, "no tick after Stop");
}

/// Leaves `metadata` in `node`'s `status.metadata`, as a module that ran it would have.
async fn leave_metadata(nodes: &Api<TinyNode>, node: &str, metadata: Value) {
    nodes
        .patch_status(
            node,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"metadata": metadata}})),
        )
        .await
        .expect("status metadata patched");
}

/// The context a debug node shows as its last message.
async fn shown(nodes: &Api<TinyNode>, debug: &str) -> Option<Value> {
    port_config(&nodes.get(debug).await.ok()?, "_control").map(|c| c["context"].clone())
}

/// A ticker the Go module ran, and one this module ran before it used Go's keys, are
/// taken over by this module: both carry on with what their nodes say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tickers_that_ran_elsewhere_carry_on_when_this_module_takes_over() {
    let env = env().await;
    let client = env.client();
    let ns = "takeover";
    env.create_namespace(ns).await.expect("namespace");
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    // Two ticker → debug flows, settings context `{"flow": ...}`, no module running yet.
    let without_ticks = |flow: &str| {
        ticker_flow(flow, 200).replace(
            &b64(&json!({"context": {"flow": flow}, "delay": 200, "countTicks": true})),
            &b64(&json!({"context": {"flow": flow}, "delay": 200})),
        )
    };
    apply_yaml(&client, ns, &without_ticks("go")).await;
    apply_yaml(&client, ns, &without_ticks("old")).await;
    let (go, go_debug) = ("go.common-module-v0.ticker-1", "go.common-module-v0.debug-1");
    let (old, old_debug) = ("old.common-module-v0.ticker-1", "old.common-module-v0.debug-1");
    // What Go's ticker leaves on a running node: `ticker-running` and its settings as
    // JSON text, the context being the one Start gave.
    leave_metadata(
        &nodes,
        go,
        json!({"ticker-running": "true", "ticker-config": r#"{"context":{"started":"under go"},"delay":200}"#}),
    )
    .await;
    // What this module wrote before it used Go's keys: node state, base64 of JSON.
    leave_metadata(
        &nodes,
        old,
        json!({"_state/running": b64(&json!(true)), "_state/context": b64(&json!({"started": "before"}))}),
    )
    .await;

    let module = start_module(&client, ns).await;
    eventually(
        "the Go ticker's context at its debug node",
        Duration::from_secs(60),
        || {
            let nodes = nodes.clone();
            async move {
                shown(&nodes, go_debug)
                    .await
                    .filter(|c| *c == json!({"started": "under go"}))
            }
        },
    )
    .await;
    eventually(
        "the old ticker's context at its debug node",
        Duration::from_secs(60),
        || {
            let nodes = nodes.clone();
            async move {
                shown(&nodes, old_debug)
                    .await
                    .filter(|c| *c == json!({"started": "before"}))
            }
        },
    )
    .await;
    let view = port_config(&nodes.get(go).await.expect("go ticker"), "_control").expect("view");
    assert_eq!((&view["status"], &view["stop"]), (&json!("Running"), &json!(true)));
    // The old node now says it in Go's keys, and its old keys are gone.
    let migrated = eventually("the old ticker's keys to be Go's", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get(old).await.ok()?;
            (meta(&n, "ticker-running").as_deref() == Some("true") && state(&n, "running").is_none()).then_some(n)
        }
    })
    .await;
    let config: Value = serde_json::from_str(&meta(&migrated, "ticker-config").expect("ticker-config")).expect("JSON");
    assert_eq!(config, json!({"context": {"started": "before"}, "delay": 200}));
    assert_eq!(state(&migrated, "context"), None);

    // Stop, pressed on the taken-over node, ends it and removes Go's keys, as Go's does.
    delivered(&signal(&client, ns, "stop", go, "_control", json!({"stop": true})).await);
    eventually("Go's keys to go", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get(go).await.ok()?;
            (meta(&n, "ticker-running").is_none() && meta(&n, "ticker-config").is_none()).then_some(())
        }
    })
    .await;
    module.stop().await;
}

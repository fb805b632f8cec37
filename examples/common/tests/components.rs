//! The common module's components that act on messages (debug, delay, router, kv,
//! async, array split) through the SDK's public surface, in-process: messages in,
//! messages out, `_control` presses, settings changes, node reports. The ones that
//! keep time are in `timers.rs`.

mod support;

use support::*;

// ---------------------------------------------------------------------------------
// debug

#[tokio::test]
async fn debug_shows_the_last_message_in_its_control_view() {
    let h = harness(FlowBuilder::new().node("d", "debug").build()).await;
    let r = report(&h, "d");
    assert_eq!(names(&r), ["_control", "_settings", "in"]);
    let input = port(&r, "in");
    assert_eq!((input.position, input.source), (Position::Left, false));
    let view = port(&r, "_control");
    assert_eq!(at(&view.schema, "$.context")["readonly"], true);

    h.send("d:in", json!({"a": 1})).await.expect("handled");
    h.send("d:in", json!({"b": [2, 3]})).await.expect("handled");
    assert_eq!(control(&h, "d"), json!({"context": {"b": [2, 3]}, "received": 2}));
    // Anything goes in, not only objects.
    h.send("d:in", json!("text")).await.expect("handled");
    assert_eq!(control(&h, "d"), json!({"context": "text", "received": 3}));
}

#[tokio::test]
async fn debug_shows_its_settings_context_until_a_message_comes_as_go() {
    let flow = |context: Value| {
        FlowBuilder::new()
            .node("d", "debug")
            .settings(json!({"context": context}))
            .build()
    };
    let h = harness(flow(json!({"from": "settings"}))).await;
    assert_eq!(
        control(&h, "d"),
        json!({"context": {"from": "settings"}, "received": 0})
    );
    h.send("d:in", json!({"a": 1})).await.expect("handled");
    assert_eq!(control(&h, "d"), json!({"context": {"a": 1}, "received": 1}));
    // New settings replace the message shown, as in Go.
    let node = flow(json!("changed")).nodes.remove(0);
    h.engine().apply(node).await.expect("applies");
    assert_eq!(control(&h, "d"), json!({"context": "changed", "received": 1}));
}

/// As Go's debug: the view shows the data, not the credentials in it (by key name),
/// nor those in its settings; the flow still carries them.
#[tokio::test]
async fn debug_masks_credential_shaped_keys_in_what_it_shows() {
    let flow = FlowBuilder::new()
        .node("src", "relay")
        .node("d", "debug")
        .settings(json!({"context": {"client_secret": "cs-1", "region": "eu"}}))
        .node("ans", "answer")
        .edge("src:out", "d:in", json!("{{$}}"))
        .edge("src:out", "ans:input", json!("{{$}}"))
        .build();
    let h = harness(flow).await;
    let settings = port(&report(&h, "d"), "_settings").configuration;
    assert_eq!(
        settings,
        json!({"context": {"client_secret": "<redacted>", "region": "eu"}})
    );
    let msg = json!({"user": "ada", "auth": {"apiKey": "sk-1", "tokens": ["t1", ""]}, "note": "{{$.x}}"});
    let reply = h.send("src:input", msg.clone()).await.expect("handled");
    assert_eq!(
        control(&h, "d")["context"],
        json!({"user": "ada", "auth": {"apiKey": "<redacted>", "tokens": ["<redacted>", ""]}, "note": "{{$.x}}"})
    );
    // What the flow carries is untouched.
    assert_eq!(reply.into_value(), Some(json!({"answer": msg})));
}

// ---------------------------------------------------------------------------------
// delay

async fn delay() -> Harness {
    harness(
        FlowBuilder::new()
            .node("d", "delay")
            .node("ans", "answer")
            .edge("d:out", "ans:input", json!("{{$.context}}"))
            .build(),
    )
    .await
}

#[tokio::test]
async fn delay_waits_emits_and_answers_with_the_downstream_reply() {
    let h = delay().await;
    let r = report(&h, "d");
    assert_eq!(names(&r), ["in", "out"]);
    assert_eq!(port(&r, "in").configuration, json!({"context": null, "delay": 1000}));
    assert_eq!(port(&r, "out").position, Position::Right);

    let started = Instant::now();
    let answer = reply(h.send("d:in", json!({"context": {"id": 7}, "delay": 80})).await);
    assert!(
        started.elapsed() >= Duration::from_millis(80),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(answer, Some(json!({"answer": {"id": 7}})));
    assert_eq!(h.emitted("d:out"), vec![json!({"context": {"id": 7}})]);

    // A failure downstream is the caller's.
    let err = h
        .send("d:in", json!({"context": {"fail": true}, "delay": 1}))
        .await
        .expect_err("downstream failed");
    assert!(err.to_string().contains("told to fail"), "{err}");
}

#[tokio::test]
async fn delay_refuses_a_delay_of_zero_or_less() {
    let h = delay().await;
    for bad in [0, -5] {
        let err = h
            .send("d:in", json!({"context": 1, "delay": bad}))
            .await
            .expect_err("not a delay");
        assert!(err.to_string().contains("invalid delay"), "{err}");
    }
    assert!(h.emitted("d:out").is_empty());
}

/// Paused time: the cancel comes once the delay is under way (every task parked), and
/// the clock says whether the 5 s delay ran out before the caller's cancel ended it.
#[tokio::test(start_paused = true)]
async fn delay_stops_when_its_caller_gives_up() {
    let h = delay().await;
    let hop = Hop::default();
    let cancel = hop.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        cancel.cancel();
    });
    let started = tokio::time::Instant::now();
    let err = h
        .engine()
        .deliver(
            Delivery::to("d:in", Msg::from_json(json!({"context": 1, "delay": 5000})))
                .expect("an address")
                .hop(hop),
        )
        .await
        .expect_err("cancelled");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(err.to_string().contains("cancelled"), "{err}");
    assert!(h.emitted("d:out").is_empty());
}

// ---------------------------------------------------------------------------------
// router

fn router_flow(settings: Value) -> Flow {
    FlowBuilder::new()
        .node("r", "router")
        .settings(settings)
        .node("a", "answer")
        .node("c", "answer")
        .node("dflt", "answer")
        .edge("r:out_a", "a:input", json!({"route": "a", "got": "{{$.context}}"}))
        .edge("r:out_c", "c:input", json!({"route": "c", "got": "{{$.context}}"}))
        .build()
}

/// `flow` with an edge from the router's `default` port to `dflt`, without a mapping.
fn with_default_edge(mut flow: Flow) -> Flow {
    for n in flow.nodes.iter_mut().filter(|n| n.name == "r") {
        n.spec.edges.push(tiny_sdk::flow::Edge {
            id: "to-default".into(),
            port: "default".into(),
            to: "dflt:input".into(),
            ..Default::default()
        });
    }
    flow
}

fn route(conditions: Value) -> Value {
    json!({"context": {"id": 1}, "conditions": conditions})
}

#[tokio::test]
async fn router_routes_to_the_first_true_condition_case_insensitively() {
    let h = harness(router_flow(json!({"routes": ["A", "B", "C"]}))).await;
    let r = reply(
        h.send(
            "r:input",
            route(json!([{"route": "B", "condition": false}, {"route": "C", "condition": true}, {"route": "A", "condition": true}])),
        )
        .await,
    );
    assert_eq!(r, Some(json!({"answer": {"route": "c", "got": {"id": 1}}})));
    assert_eq!(h.emitted("r:out_c"), vec![json!({"context": {"id": 1}})]);
    assert!(h.emitted("r:out_a").is_empty());

    // Another case names the same route.
    let r = reply(
        h.send("r:input", route(json!([{"route": "a", "condition": true}])))
            .await,
    );
    assert_eq!(r, Some(json!({"answer": {"route": "a", "got": {"id": 1}}})));

    // A route without an edge: emitted, nobody answers.
    let r = reply(
        h.send("r:input", route(json!([{"route": "b", "condition": true}])))
            .await,
    );
    assert_eq!(r, None);
    assert_eq!(h.emitted("r:out_b").len(), 1);
}

#[tokio::test]
async fn router_without_a_match_fails_or_uses_the_default_port() {
    let h = harness(router_flow(json!({"routes": ["A", "B", "C"]}))).await;
    let none = route(json!([{"route": "A", "condition": false}]));
    let err = h.send("r:input", none.clone()).await.expect_err("no route");
    assert!(err.to_string().contains("no matching route"), "{err}");
    // As Go: the first true condition decides, even when its route is unknown.
    let unknown_first = route(json!([{"route": "X", "condition": true}, {"route": "A", "condition": true}]));
    let err = h.send("r:input", unknown_first.clone()).await.expect_err("no route");
    assert!(err.to_string().contains("no matching route"), "{err}");
    assert!(h.emitted("r:out_a").is_empty());
    assert!(!names(&report(&h, "r")).contains(&"default".into()));

    let flow = with_default_edge(router_flow(
        json!({"routes": ["A", "B", "C"], "enableDefaultPort": true}),
    ));
    let h = harness(flow).await;
    let d = port(&report(&h, "r"), "default");
    assert_eq!(
        (d.label.as_str(), d.position, d.source),
        ("Default", Position::Bottom, true)
    );
    // An edge without a mapping delivers the port's default configuration (as Go).
    assert!(reply(h.send("r:input", none).await).is_some());
    assert_eq!(h.emitted("r:default"), vec![json!({"context": {"id": 1}})]);
    h.send("r:input", unknown_first).await.expect("to default");
    assert_eq!(h.emitted("r:default").len(), 2);
}

/// A condition over a field the message lacks: its expression fails and gives `null`,
/// which a Go router decodes as `false` (encoding/json leaves the zero value), so the
/// message takes the default route rather than failing.
#[tokio::test]
async fn router_takes_a_failed_condition_as_false_as_go_does() {
    let flow = FlowBuilder::new()
        .node("in", "relay")
        .node("r", "router")
        // No `enableDefaultPort` key: as Go, its zero (`false`).
        .settings(json!({"routes": ["A", "B"]}))
        .node("a", "answer")
        .edge(
            "in:out",
            "r:input",
            json!({"context": "{{$}}", "conditions": [
                {"route": "A", "condition": "{{$.kind == 'a'}}"},
                {"route": "B", "condition": "{{$.nope.deeper}}"},
            ]}),
        )
        .edge("r:out_a", "a:input", json!({"got": "{{$.context}}"}))
        .build();
    let h = harness(flow.clone()).await;
    let r = reply(h.send("in:input", json!({"kind": "a"})).await);
    assert_eq!(r, Some(json!({"answer": {"got": {"kind": "a"}}})));
    // Both conditions false (the second one's expression failed): no route, no default.
    let err = h
        .send("in:input", json!({"kind": "b"}))
        .await
        .expect_err("no route matched");
    assert!(err.to_string().contains("no matching route"), "{err}");
    assert!(
        !h.expression_errors().is_empty(),
        "the failed expression is still reported"
    );

    let h = harness(with_default_edge(router_flow(
        json!({"routes": ["A"], "enableDefaultPort": true}),
    )))
    .await;
    h.send(
        "r:input",
        json!({"context": 7, "conditions": [{"route": "A", "condition": null}]}),
    )
    .await
    .expect("a null condition is false: the default route");
    assert_eq!(h.emitted("r:default"), vec![json!({"context": 7})]);
    assert!(h.emitted("r:out_a").is_empty());
}

#[tokio::test]
async fn router_ports_and_input_schema_follow_the_settings() {
    let h = harness(router_flow(json!({"routes": ["A", "B", "C"]}))).await;
    let r = report(&h, "r");
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(names(&r), ["_settings", "input", "out_a", "out_b", "out_c"]);
    for (name, label) in [("out_a", "A"), ("out_b", "B"), ("out_c", "C")] {
        let p = port(&r, name);
        assert_eq!((p.label.as_str(), p.position, p.source), (label, Position::Right, true));
        assert!(properties(&p.schema).contains(&"context".into()));
    }
    let input = port(&r, "input");
    assert_eq!((input.label.as_str(), input.position), ("IN", Position::Left));
    let route_schema = at(&input.schema, "$.conditions[0].route");
    assert_eq!(route_schema["enum"], json!(["A", "B", "C"]));
    assert_eq!(route_schema["default"], "A");
    assert_eq!(route_schema["shared"], true);
    assert_eq!(
        input.configuration,
        json!({"context": null, "conditions": [{"route": "A", "condition": true}]})
    );
    assert_eq!(
        port(&r, "_settings").configuration,
        json!({"routes": ["A", "B", "C"], "enableDefaultPort": false})
    );

    // Mixed case and other names.
    let h = harness(router_flow(
        json!({"routes": ["Fast", "slow"], "enableDefaultPort": true}),
    ))
    .await;
    let r = report(&h, "r");
    let _ = r
        .error
        .as_ref()
        .expect("edges from out_a and out_c, which these routes do not have");
    assert_eq!(names(&r), ["_settings", "default", "input", "out_fast", "out_slow"]);
    assert_eq!(port(&r, "out_fast").label, "FAST");
    assert_eq!(port(&r, "out_slow").label, "SLOW");
    assert_eq!(
        at(&port(&r, "input").schema, "$.conditions[0].route")["enum"],
        json!(["Fast", "slow"])
    );
}

#[tokio::test]
async fn a_settings_change_that_removes_a_wired_route_is_reported_and_the_rest_routes() {
    let h = harness(router_flow(json!({"routes": ["A", "B", "C"]}))).await;
    assert!(report(&h, "r").error.is_none());
    let mut node = router_flow(json!({"routes": ["A", "B"]}))
        .nodes
        .into_iter()
        .find(|n| n.name == "r")
        .expect("r");
    node.name = "r".into();
    h.engine()
        .apply(node)
        .await
        .expect("the node runs with the new settings");
    let r = report(&h, "r");
    assert_eq!(names(&r), ["_settings", "input", "out_a", "out_b"]);
    let err = r.error.expect("the edge from out_c is reported");
    assert_eq!(err.code(), Some(code::PORT_REMOVED));
    assert!(err.to_string().contains("out_c"), "{err}");

    let a = reply(
        h.send("r:input", route(json!([{"route": "A", "condition": true}])))
            .await,
    );
    assert_eq!(a, Some(json!({"answer": {"route": "a", "got": {"id": 1}}})));
    let err = h
        .send("r:input", route(json!([{"route": "C", "condition": true}])))
        .await
        .expect_err("C is no route any more");
    assert!(err.to_string().contains("no matching route"), "{err}");

    // Back to three routes: the report is clean again.
    let node = router_flow(json!({"routes": ["A", "B", "C"]}))
        .nodes
        .into_iter()
        .find(|n| n.name == "r")
        .expect("r");
    h.engine().apply(node).await.expect("applies");
    assert!(report(&h, "r").error.is_none());
    let c = reply(
        h.send("r:input", route(json!([{"route": "c", "condition": true}])))
            .await,
    );
    assert_eq!(c, Some(json!({"answer": {"route": "c", "got": {"id": 1}}})));
}

// ---------------------------------------------------------------------------------
// array_split

async fn split() -> Harness {
    harness(
        FlowBuilder::new()
            .node("s", "array_split")
            .node("ans", "answer")
            .edge("s:out", "ans:input", json!("{{$}}"))
            .build(),
    )
    .await
}

#[tokio::test]
async fn array_split_sends_each_item_with_index_and_total() {
    let h = split().await;
    let r = reply(
        h.send("s:in", json!({"context": {"batch": 1}, "array": ["a", {"b": 2}, 3]}))
            .await,
    );
    assert_eq!(r, None, "the downstream replies are not passed up (as Go)");
    assert_eq!(
        h.arrivals("ans:input"),
        vec![
            json!({"context": {"batch": 1}, "item": "a", "index": 0, "total": 3}),
            json!({"context": {"batch": 1}, "item": {"b": 2}, "index": 1, "total": 3}),
            json!({"context": {"batch": 1}, "item": 3, "index": 2, "total": 3}),
        ]
    );
    h.clear();
    h.send("s:in", json!({"context": 1, "array": []}))
        .await
        .expect("nothing to split");
    assert!(h.emitted("s:out").is_empty());
}

#[tokio::test]
async fn array_split_stops_at_the_first_failure() {
    let h = harness(
        FlowBuilder::new()
            .node("s", "array_split")
            .node("ans", "answer")
            .edge("s:out", "ans:input", json!("{{$.item}}"))
            .build(),
    )
    .await;
    let err = h
        .send("s:in", json!({"array": [{"n": 1}, {"n": 2, "fail": true}, {"n": 3}]}))
        .await
        .expect_err("the second item fails");
    assert!(err.to_string().contains("told to fail"), "{err}");
    assert_eq!(h.emitted("s:out").len(), 2, "the third item is not sent");
}

// ---------------------------------------------------------------------------------
// async

async fn asynchronous(max: i64) -> Harness {
    harness(
        FlowBuilder::new()
            .node("a", "async")
            .settings(json!({"maxConcurrency": max}))
            .node("d", "delay")
            .node("ans", "answer")
            .edge("a:out", "d:in", json!({"context": "{{$.context}}", "delay": 2000}))
            .edge("d:out", "ans:input", json!("{{$.context}}"))
            .build(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_answers_at_once_and_emits_in_the_background() {
    let h = asynchronous(0).await;
    let r = report(&h, "a");
    assert_eq!(names(&r), ["_settings", "in", "out"]);
    // Each answers before its flow is done: nothing has passed the 2 s delay yet.
    for i in 0..3 {
        let r = reply(h.send("a:in", json!({"context": {"i": i}})).await);
        assert_eq!(r, None);
    }
    assert!(h.arrivals("ans:input").is_empty(), "a send waited for its flow");
    assert!(eventually(Duration::from_secs(5), || h.arrivals("ans:input").len() == 3).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_at_max_concurrency_passes_on_in_the_callers_time() {
    let h = asynchronous(1).await;
    let started = Instant::now();
    assert_eq!(reply(h.send("a:in", json!({"context": 1})).await), None);
    assert!(h.arrivals("ans:input").is_empty(), "the first send waited for its flow");
    // The one slot is taken: the next message waits for the flow and gets its answer.
    let r = reply(h.send("a:in", json!({"context": 2})).await);
    assert!(
        started.elapsed() >= Duration::from_millis(2000),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r, Some(json!({"answer": 2})));
    // The slot comes back once the background emit is done (its work has ended).
    h.settled("a").await;
    assert_eq!(h.arrivals("ans:input").len(), 2);
    assert_eq!(reply(h.send("a:in", json!({"context": 3})).await), None);
    assert_eq!(h.arrivals("ans:input").len(), 2, "the third send waited for its flow");
}

// ---------------------------------------------------------------------------------
// kv

/// A kv node; with `ack`, an edge leaves its `store_ack` port.
async fn kv_with(settings: Value, ack: bool) -> Harness {
    let mut flow = FlowBuilder::new()
        .node("kv", "kv")
        .settings(settings)
        .node("res", "answer")
        .node("ack", "answer")
        .edge("kv:query_result", "res:input", json!("{{$}}"));
    if ack {
        flow = flow.edge("kv:store_ack", "ack:input", json!("{{$}}"));
    }
    harness(flow.build()).await
}

async fn kv(settings: Value) -> Harness {
    kv_with(settings, false).await
}

fn doc(id: &str, status: &str) -> Value {
    json!({"operation": "store", "document": {"id": id, "status": status}})
}

#[tokio::test]
async fn kv_stores_queries_deletes_and_resets() {
    let h = kv(json!({"document": {"id": "ID", "status": "UP"}, "primaryKey": "id"})).await;
    let r = report(&h, "kv");
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(names(&r), ["_control", "_settings", "query", "query_result", "store"]);
    assert_eq!(control(&h, "kv"), json!({"records": 0, "reset": false}));
    assert_eq!(
        port(&r, "store").configuration,
        json!({"operation": "store", "document": {"id": "ID", "status": "UP"}})
    );
    assert_eq!(port(&r, "store").position, Position::Left);
    assert_eq!(port(&r, "query_result").position, Position::Right);

    for (id, status) in [("b", "DOWN"), ("a", "UP"), ("c", "DOWN")] {
        assert_eq!(reply(h.send("kv:store", doc(id, status)).await), None);
    }
    assert_eq!(control(&h, "kv")["records"], 3);
    // Storing an existing key replaces it.
    h.send("kv:store", doc("a", "DOWN")).await.expect("stored");
    assert_eq!(control(&h, "kv")["records"], 3);

    let r = reply(
        h.send("kv:query", json!({"context": 5, "query": "$.status == 'DOWN'"}))
            .await,
    );
    let result = r.expect("the query result's answer")["answer"].clone();
    assert_eq!(result["count"], 3);
    assert_eq!(result["context"], 5);
    assert_eq!(result["query"], "$.status == 'DOWN'");
    let keys: Vec<&str> = result["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["key"].as_str().expect("key"))
        .collect();
    assert_eq!(keys, ["a", "b", "c"], "sorted by key");
    assert_eq!(result["results"][0]["document"], json!({"id": "a", "status": "DOWN"}));

    h.send("kv:store", json!({"operation": "delete", "document": {"id": "b"}}))
        .await
        .expect("deleted");
    h.send("kv:store", json!({"operation": "delete", "document": {"id": "b"}}))
        .await
        .expect("deleting twice is fine");
    assert_eq!(control(&h, "kv")["records"], 2);
    let all = reply(h.send("kv:query", json!({"query": ""})).await).expect("answer")["answer"].clone();
    assert_eq!(all["count"], 2);
    let none =
        reply(h.send("kv:query", json!({"query": "$.status == 'GONE'"})).await).expect("answer")["answer"].clone();
    assert_eq!(none["results"], json!([]), "never null");
    assert_eq!(none["count"], 0);

    h.send("kv:_control", json!({"reset": false})).await.expect("nothing");
    assert_eq!(control(&h, "kv")["records"], 2);
    h.send("kv:_control", json!({"reset": true})).await.expect("reset");
    assert_eq!(control(&h, "kv")["records"], 0);
    assert!(h.emitted("kv:store_ack").is_empty(), "no ack port without the setting");
}

#[tokio::test]
async fn kv_store_ack_port_only_with_its_setting() {
    let h = kv_with(
        json!({"document": {"id": "ID"}, "primaryKey": "id", "enableStoreAckPort": true}),
        true,
    )
    .await;
    let r = report(&h, "kv");
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(
        names(&r),
        ["_control", "_settings", "query", "query_result", "store", "store_ack"]
    );
    let ack = port(&r, "store_ack");
    assert_eq!((ack.position, ack.source), (Position::Right, true));
    assert_eq!(ack.configuration, json!({"request": {"document": {"id": "ID"}}}));

    let r = reply(
        h.send("kv:store", json!({"context": "c1", "document": {"id": "k"}}))
            .await,
    );
    assert_eq!(
        r,
        Some(
            json!({"answer": {"context": "c1", "request": {"context": "c1", "operation": "store", "document": {"id": "k"}}}})
        ),
        "the ack's answer is the store's reply"
    );

    // Off: the port is gone and its edge is reported.
    let h = kv_with(json!({"document": {"id": "ID"}, "primaryKey": "id"}), true).await;
    let err = report(&h, "kv").error.expect("an edge from the switched-off port");
    assert_eq!(err.code(), Some(code::PORT_REMOVED));
    assert!(err.to_string().contains("store_ack"), "{err}");
    assert_eq!(reply(h.send("kv:store", json!({"document": {"id": "k"}})).await), None);
}

#[tokio::test]
async fn kv_refuses_documents_without_a_usable_primary_key() {
    let h = kv(json!({"document": {"id": "ID"}, "primaryKey": "id"})).await;
    for (document, says) in [
        (json!({"name": "x"}), "not found in document"),
        (json!({"id": 7}), "must be a string"),
        (json!({"id": ""}), "is empty"),
        // Keys become metadata keys on the TinyNode.
        (json!({"id": "a b"}), "must be 1 to 200 of"),
    ] {
        let err = h
            .send("kv:store", json!({"document": document}))
            .await
            .expect_err("no usable key");
        assert!(err.to_string().contains(says), "{err}");
    }
    let err = h
        .send("kv:store", json!({"operation": "upsert", "document": {"id": "k"}}))
        .await
        .expect_err("an unknown operation");
    assert!(err.to_string().contains("operation"), "{err}");
    let big = "x".repeat(40 * 1024);
    let err = h
        .send("kv:store", json!({"document": {"id": "k", "blob": big}}))
        .await
        .expect_err("too large");
    assert!(err.to_string().contains("too large"), "{err}");
    assert_eq!(control(&h, "kv")["records"], 0);
}

#[tokio::test]
async fn kv_keeps_at_most_max_records() {
    let h = kv(json!({"document": {"id": "ID"}, "primaryKey": "id", "maxRecords": 2})).await;
    h.send("kv:store", doc("a", "UP")).await.expect("1");
    h.send("kv:store", doc("b", "UP")).await.expect("2");
    let err = h.send("kv:store", doc("c", "UP")).await.expect_err("full");
    assert!(err.to_string().contains("store full: 2 records (max 2)"), "{err}");
    h.send("kv:store", doc("a", "DOWN"))
        .await
        .expect("an update is always allowed");
    assert_eq!(control(&h, "kv")["records"], 2);
}

#[tokio::test]
async fn kv_settings_must_name_a_primary_key_of_the_document() {
    let flow = |settings: Value| FlowBuilder::new().node("kv", "kv").settings(settings).build();
    for (settings, says) in [
        (
            json!({"document": {"id": "ID"}, "primaryKey": "name"}),
            "is not a field of `document`",
        ),
        (
            json!({"document": {}, "primaryKey": "id"}),
            "`document` must not be empty",
        ),
        (
            json!({"document": {"id": "ID"}, "primaryKey": ""}),
            "`primaryKey` must not be empty",
        ),
    ] {
        let err = builder()
            .flow(flow(settings))
            .build()
            .await
            .expect_err("settings refused");
        assert!(err.to_string().contains(says), "{err}");
    }
}

#[tokio::test]
async fn router_routes_match_in_any_case_beyond_ascii() {
    let flow = FlowBuilder::new()
        .node("r", "router")
        .settings(json!({"routes": ["Über", "fast"]}))
        .build();
    let h = harness(flow).await;
    let r = report(&h, "r");
    assert_eq!(names(&r), ["_settings", "input", "out_fast", "out_über"]);
    assert_eq!(port(&r, "out_über").label, "ÜBER");
    h.send("r:input", route(json!([{"route": "üBER", "condition": true}])))
        .await
        .expect("routed");
    h.send("r:input", route(json!([{"route": "FAST", "condition": true}])))
        .await
        .expect("routed");
    assert_eq!(h.emitted("r:out_über"), vec![json!({"context": {"id": 1}})]);
    assert_eq!(h.emitted("r:out_fast").len(), 1);
}

// ---------------------------------------------------------------------------------
// restarts (issue 47): every setting holds after a restart as after a start

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_ticker_keeps_every_setting() {
    let h = ticker(json!({"delay": 30, "countTicks": true, "context": {"from": "settings"}})).await;
    h.send("t:_control", json!({"start": true, "context": {"from": "start"}}))
        .await
        .expect("Start");
    assert!(eventually(Duration::from_secs(1), || ticks(&h).len() >= 2).await);
    h.restart_node("t").await.expect("restarted");
    let before = ticks(&h).len();
    // delay: 30 ms, not the default second.
    assert!(
        eventually(Duration::from_millis(600), || ticks(&h).len() >= before + 3).await,
        "the restarted ticker ticks every 30 ms: {:?}",
        ticks(&h)
    );
    h.send("t:_control", json!({"stop": true})).await.expect("Stop");
    // countTicks: numbered ticks, on from the last; context: the running one.
    let all = ticks(&h);
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>());
    assert!(
        h.arrivals("sink:input")
            .iter()
            .all(|m| m["context"] == json!({"from": "start"}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_cron_keeps_every_setting() {
    let h = cron(json!({"schedule": "* * * * * *", "context": {"from": "settings"}})).await;
    // A start that names nothing runs the settings' schedule and context.
    h.send("c:_control", json!({"start": true, "context": {"from": "settings"}}))
        .await
        .expect("Start");
    h.restart_node("c").await.expect("restarted");
    assert!(
        eventually(Duration::from_millis(2500), || h.arrivals("sink:input").len() >= 2).await,
        "the restarted cron runs every second: {:?}",
        h.arrivals("sink:input")
    );
    let view = control(&h, "c");
    assert_eq!(
        (&view["status"], &view["schedule"]),
        (&json!("Running"), &json!("* * * * * *"))
    );
    h.send("c:_control", json!({"stop": true})).await.expect("Stop");
    assert!(
        h.arrivals("sink:input")
            .iter()
            .all(|m| *m == json!({"from": "settings"}))
    );
}

/// Paused time: the node is removed once the delay is under way (every task parked).
#[tokio::test(start_paused = true)]
async fn a_delay_whose_node_is_removed_says_the_node_was_removed() {
    // Issue 47: the failure read "the delay was cancelled by its caller".
    let h = delay().await;
    let sent = h.send("d:in", json!({"context": 1, "delay": 5000}));
    let remove = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        h.engine().remove("d", true).await.expect("removed");
    };
    let (failed, ()) = tokio::join!(sent, remove);
    let e = failed.expect_err("the node went");
    assert_eq!(e.code(), Some(tiny_sdk::error::code::NODE_REMOVED));
    let text = e.to_string();
    assert!(text.contains("the node was removed"), "{text}");
    assert!(!text.contains("cancelled by its caller"), "{text}");
}

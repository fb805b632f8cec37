//! The components of Go's catalog added to the common module (array_filter,
//! array_get, group_by, transform, budget_guard, retry, collect, inject, display,
//! form, chat), in-process: messages in, messages out, errors, settings, node state and
//! `_control` views.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{eventually, names, port};
use tiny_example_common::{
    array_filter::ArrayFilter,
    array_get::ArrayGet,
    budget_guard::BudgetGuard,
    chat::{Chat, PendingQuestion, ThreadEntry},
    collect::{Collect, GroupState},
    display::Display,
    form::Form,
    group_by::GroupBy,
    inject::Inject,
    retry::{Backoff, Retry, RetrySettings, delay_ms},
    transform::Transform,
};
use tiny_sdk::{
    Position,
    engine::NodeReport,
    flow::{Flow, FlowBuilder},
    harness::{Harness, HarnessBuilder, Relay},
};

// ---------------------------------------------------------------------------------
// Helpers

fn builder() -> HarnessBuilder {
    Harness::builder()
        .register::<ArrayFilter>()
        .register::<ArrayGet>()
        .register::<GroupBy>()
        .register::<Transform>()
        .register::<BudgetGuard>()
        .register::<Retry>()
        .register::<Collect>()
        .register::<Inject>()
        .register::<Display>()
        .register::<Form>()
        .register::<Chat>()
        .register::<Relay>()
}

/// One node `n` of `component` under `settings` (none when null), each output port in `outs` wired to
/// a relay `sink-<port>`.
fn one(component: &str, settings: Value, outs: &[&str]) -> Flow {
    let mut f = FlowBuilder::new().node("n", component);
    if !settings.is_null() {
        f = f.settings(settings);
    }
    for out in outs {
        f = f.node(&sink(out), "relay");
    }
    for out in outs {
        f = f.edge(&format!("n:{out}"), &format!("{}:input", sink(out)), json!("{{$}}"));
    }
    f.build()
}

/// The relay node behind output port `out`.
fn sink(out: &str) -> String {
    format!("sink-{}", out.replace('_', "-"))
}

async fn harness(flow: Flow) -> Harness {
    builder().flow(flow).build().await.expect("the flow loads")
}

/// Node `n`'s report.
fn report(h: &Harness) -> NodeReport {
    support::report(h, "n")
}

/// (label, position, source) of a port.
fn place(r: &NodeReport, name: &str) -> (String, Position, bool) {
    let p = port(r, name);
    (p.label, p.position, p.source)
}

/// What node `n`'s `_control` port shows.
fn control(h: &Harness) -> Value {
    support::control(h, "n")
}

// ---------------------------------------------------------------------------------
// array_filter

#[tokio::test]
async fn array_filter_keeps_the_items_the_predicate_holds_for() {
    let h = harness(one("array_filter", json!({}), &["result"])).await;
    let pods = json!([
        {"name": "a", "phase": "Running", "restarts": 0},
        {"name": "b", "phase": "Failed", "restarts": 5},
        {"name": "c", "phase": "Running", "restarts": 4},
    ]);
    h.send(
        "n:request",
        json!({"context": {"run": 1}, "array": pods, "query": "$.restarts > 3"}),
    )
    .await
    .expect("filtered");
    let out = h.emitted("n:result");
    assert_eq!(
        out,
        vec![json!({"context": {"run": 1}, "items": [pods[1], pods[2]], "count": 2, "total": 3})]
    );
    h.send("n:request", json!({"array": pods, "query": "$.phase == 'Running'"}))
        .await
        .expect("filtered");
    let last = h.emitted("n:result").pop().expect("a result");
    assert_eq!(last["count"], 2);
    assert_eq!(last["items"][1]["name"], "c");
    // No context: none on the result (Go's omitempty).
    assert!(last.get("context").is_none(), "{last}");
    // Nothing matches: an empty list, not null.
    h.send("n:request", json!({"array": pods, "query": "$.restarts > 100"}))
        .await
        .expect("filtered");
    let last = h.emitted("n:result").pop().expect("a result");
    assert_eq!((last["items"].clone(), last["count"].clone()), (json!([]), json!(0)));
}

#[tokio::test]
async fn array_filter_refuses_what_it_cannot_answer() {
    let h = harness(one("array_filter", json!({}), &["result"])).await;
    let err = h
        .send("n:request", json!({"array": [1], "query": ""}))
        .await
        .expect_err("an empty query");
    assert!(err.to_string().contains("query is required"), "{err}");
    // A predicate that answers a number is not a truthy value.
    let err = h
        .send("n:request", json!({"array": [{"n": 1}], "query": "$.n"}))
        .await
        .expect_err("not a boolean");
    assert!(err.to_string().contains("not true or false"), "{err}");
    assert!(err.to_string().contains("item 0"), "{err}");
    let err = h
        .send("n:request", json!({"array": [{"n": 1}], "query": "$.n >"}))
        .await
        .expect_err("a broken query");
    assert!(err.to_string().contains("$.n >"), "{err}");
    assert!(h.emitted("n:result").is_empty());

    // skipUnevaluable: the ragged item is left out instead.
    let h = harness(one("array_filter", json!({"skipUnevaluable": true}), &["result"])).await;
    h.send(
        "n:request",
        json!({"array": [{"n": 1}, {"n": true}, "text"], "query": "$.n"}),
    )
    .await
    .expect("ragged items skipped");
    assert_eq!(h.emitted("n:result")[0]["items"], json!([{"n": true}]));
    assert_eq!(h.emitted("n:result")[0]["total"], 3);
}

#[tokio::test]
async fn array_filter_error_port_follows_the_settings() {
    let h = harness(one("array_filter", json!({}), &["result"])).await;
    let r = report(&h);
    assert_eq!(names(&r), ["_settings", "request", "result"]);
    assert_eq!(place(&r, "request"), ("Request".into(), Position::Left, false));
    assert_eq!(place(&r, "result"), ("Result".into(), Position::Right, true));

    let h = harness(one(
        "array_filter",
        json!({"enableErrorPort": true}),
        &["result", "error"],
    ))
    .await;
    let r = report(&h);
    assert_eq!(place(&r, "error"), ("Error".into(), Position::Bottom, true));
    h.send("n:request", json!({"context": "c", "array": [{}], "query": ""}))
        .await
        .expect("to the error port");
    let err = h.emitted("n:error");
    assert_eq!(err.len(), 1);
    assert_eq!(err[0]["context"], "c");
    assert!(
        err[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("query is required"))
    );
}

// ---------------------------------------------------------------------------------
// array_get

#[tokio::test]
async fn array_get_takes_an_item_by_its_1_based_number() {
    let h = harness(one("array_get", json!({}), &["result"])).await;
    h.send(
        "n:request",
        json!({"context": {"k": 1}, "array": ["x", {"y": 2}, "z"], "index": 2}),
    )
    .await
    .expect("got");
    assert_eq!(
        h.emitted("n:result"),
        vec![json!({"context": {"k": 1}, "item": {"y": 2}, "index": 2})]
    );
    let r = report(&h);
    assert_eq!(
        port(&r, "request").configuration,
        json!({"array": ["first", "second", "third"], "index": 1})
    );
    assert_eq!(port(&r, "result").configuration, json!({"item": "first", "index": 1}));
}

#[tokio::test]
async fn array_get_out_of_range_fails_or_goes_to_the_error_port() {
    let h = harness(one("array_get", json!({}), &["result"])).await;
    for (body, says) in [
        (json!({"array": [], "index": 1}), "array is empty"),
        (json!({"array": ["a"], "index": 0}), "index must be >= 1, got 0"),
        (json!({"array": ["a"], "index": -3}), "got -3"),
        (
            json!({"array": ["a", "b"], "index": 3}),
            "item #3 not found: list has 2 item(s)",
        ),
    ] {
        let err = h.send("n:request", body).await.expect_err(says);
        assert!(err.to_string().contains(says), "{err}");
    }
    // A wrong type is a decoding failure, named.
    let err = h
        .send("n:request", json!({"array": ["a"], "index": "one"}))
        .await
        .expect_err("index is not a number");
    assert!(err.to_string().contains("index"), "{err}");
    assert!(h.emitted("n:result").is_empty());

    let h = harness(one("array_get", json!({"enableErrorPort": true}), &["result", "error"])).await;
    h.send("n:request", json!({"context": "c", "array": ["a"], "index": 9}))
        .await
        .expect("to the error port");
    assert_eq!(
        h.emitted("n:error"),
        vec![json!({"context": "c", "error": "item #9 not found: list has 1 item(s)"})]
    );
}

// ---------------------------------------------------------------------------------
// group_by

#[tokio::test]
async fn group_by_buckets_by_a_dotted_path_sorted_by_key() {
    let h = harness(one("group_by", Value::Null, &["out"])).await;
    let items = json!([
        {"n": 1, "labels": {"app": "web"}},
        {"n": 2, "labels": {"app": "db"}},
        {"n": 3, "labels": {"app": "web"}},
        {"n": 4, "labels": {}},
        {"n": 5, "labels": {"app": 7}},
    ]);
    h.send(
        "n:in",
        json!({"context": "c", "items": items, "groupByPath": "labels.app"}),
    )
    .await
    .expect("grouped");
    let out = h.emitted("n:out").pop().expect("out");
    assert_eq!(out["total"], 5);
    assert_eq!(out["context"], "c");
    let keys: Vec<&str> = out["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["key"].as_str())
        .collect();
    // A missing value is the empty key; a number its text; sorted as strings.
    assert_eq!(keys, ["", "7", "db", "web"]);
    assert_eq!(out["groups"][3]["count"], 2);
    assert_eq!(out["groups"][3]["items"], json!([items[0], items[2]]));

    let err = h
        .send("n:in", json!({"items": [1], "groupByPath": ""}))
        .await
        .expect_err("no path");
    assert!(err.to_string().contains("groupByPath is required"), "{err}");
}

// ---------------------------------------------------------------------------------
// transform

#[tokio::test]
async fn transform_passes_the_context_under_context() {
    let h = harness(
        FlowBuilder::new()
            .node("n", "transform")
            .node("sink", "relay")
            .edge("n:out", "sink:input", json!({"id": "{{$.context.id}}"}))
            .build(),
    )
    .await;
    let r = report(&h);
    assert_eq!(place(&r, "in"), ("In".into(), Position::Left, false));
    assert_eq!(place(&r, "out"), ("Out".into(), Position::Right, true));
    h.send("n:in", json!({"context": {"id": 42, "x": [1]}}))
        .await
        .expect("passed");
    assert_eq!(h.emitted("n:out"), vec![json!({"context": {"id": 42, "x": [1]}})]);
    assert_eq!(h.arrivals("sink:input"), vec![json!({"id": 42})]);
}

// ---------------------------------------------------------------------------------
// budget_guard

#[tokio::test]
async fn budget_guard_counts_passes_and_stops_at_the_iteration_ceiling() {
    let h = harness(one(
        "budget_guard",
        json!({"maxIterations": 2}),
        &["proceed", "exceeded"],
    ))
    .await;
    let r = report(&h);
    assert_eq!(place(&r, "proceed"), ("Proceed".into(), Position::Right, true));
    assert_eq!(place(&r, "exceeded"), ("Exceeded".into(), Position::Bottom, true));
    h.send("n:request", json!({"context": "loop"})).await.expect("pass 1");
    let p = h.emitted("n:proceed").pop().expect("proceed");
    assert_eq!(
        p,
        json!({"context": "loop", "iteration": 1, "spentTokens": 0, "spentUSD": 0.0, "remainingIterations": 1})
    );
    // The counters from Proceed, mapped back in.
    h.send("n:request", json!({"context": "loop", "iteration": 1}))
        .await
        .expect("pass 2");
    assert_eq!(h.emitted("n:proceed").pop().expect("proceed")["remainingIterations"], 0);
    h.send("n:request", json!({"context": "loop", "iteration": 2}))
        .await
        .expect("pass 3");
    assert_eq!(
        h.emitted("n:exceeded"),
        vec![
            json!({"context": "loop", "reason": "iteration limit reached (2)", "iteration": 3, "spentTokens": 0, "spentUSD": 0.0})
        ]
    );
}

#[tokio::test]
async fn budget_guard_counts_this_pass_usage_before_the_test() {
    let settings = json!({"maxIterations": 10, "maxTokens": 1000, "maxCostUSD": 0.5});
    let h = harness(one("budget_guard", settings, &["proceed", "exceeded"])).await;
    h.send(
        "n:request",
        json!({"inputTokens": 300, "outputTokens": 200, "costUSD": 0.1}),
    )
    .await
    .expect("pass");
    let p = h.emitted("n:proceed").pop().expect("proceed");
    assert_eq!(
        (p["spentTokens"].clone(), p["spentUSD"].clone()),
        (json!(500), json!(0.1))
    );
    // One pass that spends past the ceiling is caught on that pass.
    h.send(
        "n:request",
        json!({"iteration": 1, "spentTokens": 500, "inputTokens": 600}),
    )
    .await
    .expect("pass");
    let e = h.emitted("n:exceeded").pop().expect("exceeded");
    assert_eq!(e["reason"], "token budget reached (1100 of 1000)");
    h.send("n:request", json!({"iteration": 1, "spentUSD": 0.45, "costUSD": 0.1}))
        .await
        .expect("pass");
    let e = h.emitted("n:exceeded").pop().expect("exceeded");
    assert_eq!(e["reason"], "cost budget reached (0.5500 of 0.5000 USD)");
    // Iterations are tested first.
    h.send("n:request", json!({"iteration": 10, "spentUSD": 9.0}))
        .await
        .expect("pass");
    let e = h.emitted("n:exceeded").pop().expect("exceeded");
    assert_eq!(e["reason"], "iteration limit reached (10)");
}

#[tokio::test]
async fn budget_guard_refuses_a_ceiling_that_lets_everything_through() {
    for (settings, says) in [
        (json!({"maxIterations": 0}), "maxIterations must be at least 1"),
        (
            json!({"maxIterations": 3, "maxTokens": -1}),
            "maxTokens cannot be negative",
        ),
        (json!({"maxIterations": 3, "maxCostUSD": -0.5}), "maxCostUSD"),
    ] {
        let (_h, errors) = builder()
            .flow(one("budget_guard", settings, &[]))
            .build_lenient()
            .await
            .expect("the harness builds");
        let found = errors
            .iter()
            .any(|(node, e)| node.ends_with('n') && e.to_string().contains(says));
        assert!(found, "{says}: {errors:?}");
    }
}

// ---------------------------------------------------------------------------------
// retry

#[test]
fn retry_delays_follow_the_backoff_kind_capped_and_jittered() {
    let s = |backoff, jitter| RetrySettings {
        max_attempts: 5,
        initial_delay_ms: 100,
        max_delay_ms: 1000,
        backoff,
        jitter,
    };
    let exp = s(Backoff::Exponential, false);
    assert_eq!(
        (0..6).map(|n| delay_ms(&exp, n, 0.0)).collect::<Vec<_>>(),
        [100, 200, 400, 800, 1000, 1000]
    );
    let lin = s(Backoff::Linear, false);
    assert_eq!(
        (0..3).map(|n| delay_ms(&lin, n, 0.0)).collect::<Vec<_>>(),
        [100, 200, 300]
    );
    let con = s(Backoff::Constant, false);
    assert_eq!(
        (0..3).map(|n| delay_ms(&con, n, 0.0)).collect::<Vec<_>>(),
        [100, 100, 100]
    );
    // ±25%, and never past the cap.
    let jit = s(Backoff::Exponential, true);
    assert_eq!(delay_ms(&jit, 1, 0.0), 150);
    assert_eq!(delay_ms(&jit, 1, 0.999_999), 249);
    assert_eq!(delay_ms(&jit, 4, 0.999_999), 1000);
}

#[tokio::test]
async fn retry_waits_then_emits_the_next_attempt() {
    let settings =
        json!({"maxAttempts": 3, "initialDelayMs": 60, "maxDelayMs": 1000, "backoff": "linear", "jitter": false});
    let h = harness(one("retry", settings, &["retry", "failed"])).await;
    let started = Instant::now();
    h.send(
        "n:request",
        json!({"context": {"req": 1}, "attempt": 1, "retryable": true, "error": "503"}),
    )
    .await
    .expect("retried");
    // Linear: 60 × (1+1).
    assert!(
        started.elapsed() >= Duration::from_millis(120),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        h.emitted("n:retry"),
        vec![json!({"context": {"req": 1}, "attempt": 2, "nextDelayMs": 120})]
    );
    // The attempt that reaches maxAttempts gives up at once.
    h.send(
        "n:request",
        json!({"context": {"req": 1}, "attempt": 2, "retryable": true, "error": "503"}),
    )
    .await
    .expect("failed");
    assert_eq!(
        h.emitted("n:failed"),
        vec![json!({"context": {"req": 1}, "attempt": 3, "error": "503", "reason": "max_attempts"})]
    );
}

/// Paused time: a wait of the 10 s delay would show on the test's clock, however
/// loaded the machine (a wall-clock ceiling would not tell it from load).
#[tokio::test(start_paused = true)]
async fn retry_sends_a_not_retryable_error_straight_to_failed() {
    let h = harness(one(
        "retry",
        json!({"maxAttempts": 5, "initialDelayMs": 10000, "maxDelayMs": 30000, "backoff": "exponential"}),
        &["retry", "failed"],
    ))
    .await;
    let started = tokio::time::Instant::now();
    h.send(
        "n:request",
        json!({"attempt": 0, "retryable": false, "error": "400 bad request"}),
    )
    .await
    .expect("failed");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited {:?} before Failed",
        started.elapsed()
    );
    assert_eq!(
        h.emitted("n:failed"),
        vec![json!({"attempt": 0, "error": "400 bad request", "reason": "not_retryable"})]
    );
    assert!(h.emitted("n:retry").is_empty());
    let r = report(&h);
    assert_eq!(place(&r, "failed"), ("Failed".into(), Position::Bottom, true));
    assert_eq!(
        port(&r, "_settings").configuration,
        json!({"maxAttempts": 5, "initialDelayMs": 10000, "maxDelayMs": 30000, "backoff": "exponential", "jitter": false})
    );
}

#[tokio::test]
async fn retry_defaults_and_an_unknown_backoff_are_gos() {
    let h = harness(one("retry", Value::Null, &[])).await;
    assert_eq!(
        port(&report(&h), "_settings").configuration,
        json!({"maxAttempts": 5, "initialDelayMs": 500, "maxDelayMs": 30000, "backoff": "exponential", "jitter": true})
    );
    // Settings of zeros (Go decodes `{}` so): attempts and the cap fall back to the
    // defaults, an initial delay of 0 stays 0.
    let zeros = RetrySettings {
        max_attempts: 0,
        initial_delay_ms: 0,
        max_delay_ms: 0,
        backoff: Backoff::Constant,
        jitter: false,
    };
    assert_eq!(delay_ms(&zeros, 3, 0.5), 0);
    let h = harness(one("retry", json!({}), &["retry", "failed"])).await;
    h.send("n:request", json!({"attempt": 3, "retryable": true}))
        .await
        .expect("retried");
    assert_eq!(h.emitted("n:retry"), vec![json!({"attempt": 4, "nextDelayMs": 0})]);
    h.send("n:request", json!({"attempt": 4, "retryable": true}))
        .await
        .expect("failed");
    assert_eq!(h.emitted("n:failed")[0]["reason"], "max_attempts");
    let s: RetrySettings = serde_json::from_value(
        json!({"maxAttempts": 2, "initialDelayMs": 1, "maxDelayMs": 9, "backoff": "fibonacci", "jitter": false}),
    )
    .expect("an unknown backoff reads as exponential");
    assert_eq!(s.backoff, Backoff::Exponential);
}

// ---------------------------------------------------------------------------------
// collect

fn item(group: &str, index: i64, total: i64, item: Value) -> Value {
    json!({"context": {"from": index}, "groupKey": group, "index": index, "total": total, "item": item})
}

#[tokio::test]
async fn collect_reassembles_a_group_in_index_order() {
    let h = harness(one("collect", json!({}), &["response"])).await;
    h.send("n:item", item("run-1", 2, 3, json!("c")))
        .await
        .expect("buffered");
    h.send("n:item", item("run-2", 0, 2, json!("other")))
        .await
        .expect("buffered");
    h.send("n:item", item("run-1", 0, 3, json!("a")))
        .await
        .expect("buffered");
    // A duplicate index overwrites.
    h.send("n:item", item("run-1", 0, 3, json!("A")))
        .await
        .expect("buffered");
    assert!(h.emitted("n:response").is_empty());
    let stored: GroupState = h.state("n", "run-1").expect("readable").expect("buffered in state");
    assert_eq!(stored.items.len(), 2);
    // Go's layout: items keyed by index as JSON object keys.
    let meta = h.metadata("n").expect("metadata");
    assert!(
        meta.contains_key("_state/run-1") && meta.contains_key("_state/run-2"),
        "{meta:?}"
    );

    h.send("n:item", item("run-1", 1, 3, json!("b")))
        .await
        .expect("complete");
    assert_eq!(
        h.emitted("n:response"),
        vec![json!({"context": {"from": 1}, "items": ["A", "b", "c"]})]
    );
    assert!(
        h.state::<Value>("n", "run-1").expect("readable").is_none(),
        "the buffer is dropped"
    );
    assert!(h.state::<Value>("n", "run-2").expect("readable").is_some());
}

#[tokio::test]
async fn collect_refuses_bad_items_naming_the_field() {
    let h = harness(one("collect", json!({}), &["response"])).await;
    for (body, says) in [
        (item("", 0, 1, json!(1)), "groupKey is required"),
        (item("g", 0, 0, json!(1)), "total must be >= 1, got 0"),
        (item("g", 3, 3, json!(1)), "index 3 out of range [0, 3)"),
        (item("g", -1, 3, json!(1)), "index -1 out of range"),
    ] {
        let err = h.send("n:item", body).await.expect_err(says);
        assert!(err.to_string().contains(says), "{err}");
    }
    h.send("n:item", item("g", 0, 3, json!(1))).await.expect("buffered");
    let err = h
        .send("n:item", item("g", 1, 4, json!(1)))
        .await
        .expect_err("total changed");
    assert!(
        err.to_string()
            .contains("total mismatch for group \"g\": got 4, group started with 3"),
        "{err}"
    );
}

#[tokio::test]
async fn collect_caps_the_groups_in_flight() {
    let h = harness(one("collect", json!({"maxGroups": 2}), &["response"])).await;
    h.send("n:item", item("a", 0, 2, json!(1))).await.expect("buffered");
    h.send("n:item", item("b", 0, 2, json!(1))).await.expect("buffered");
    let err = h
        .send("n:item", item("c", 0, 2, json!(1)))
        .await
        .expect_err("a third group");
    assert!(
        err.to_string().contains("too many in-flight groups: 2 (max 2)"),
        "{err}"
    );
    // A known group still completes, and frees its place.
    h.send("n:item", item("a", 1, 2, json!(2))).await.expect("complete");
    h.send("n:item", item("c", 0, 2, json!(1))).await.expect("room again");
}

#[tokio::test]
async fn collect_times_out_stale_groups_onto_the_error_port() {
    let old = GroupState {
        first_seen: "2020-01-01T00:00:00Z".into(),
        total: 3,
        context: json!({"stale": true}),
        items: [(0, json!("x"))].into_iter().collect(),
    };
    let flow = one(
        "collect",
        json!({"enableErrorPort": true, "timeoutSeconds": 60}),
        &["response", "error"],
    );
    let h = builder()
        .flow(flow)
        .state("n", "stale", &old)
        .state("n", "late", &old)
        .build()
        .await
        .expect("loads");
    // Another group's message sweeps the stale one onto Error (detached).
    h.send("n:item", item("fresh", 0, 2, json!(1))).await.expect("buffered");
    assert!(
        eventually(Duration::from_secs(2), || h.emitted("n:error").len() == 2).await,
        "{:?}",
        h.emitted("n:error")
    );
    let errors = h.emitted("n:error");
    assert!(errors.contains(&json!({"context": {"stale": true}, "groupKey": "stale", "received": 1, "total": 3, "error": "collect timeout: got 1 of 3"})), "{errors:?}");
    assert!(h.state::<Value>("n", "stale").expect("readable").is_none());
    assert!(h.state::<Value>("n", "fresh").expect("readable").is_some());

    // A straggler of an expired group that completes it is a success...
    let h = builder()
        .flow(one(
            "collect",
            json!({"enableErrorPort": true, "timeoutSeconds": 60}),
            &["response", "error"],
        ))
        .state(
            "n",
            "g",
            &GroupState {
                total: 2,
                ..old.clone()
            },
        )
        .build()
        .await
        .expect("loads");
    h.send("n:item", item("g", 1, 2, json!("y")))
        .await
        .expect("late success");
    assert_eq!(h.emitted("n:response")[0]["items"], json!(["x", "y"]));
    // ...one that does not is its group's failure, on this call.
    let h = builder()
        .flow(one("collect", json!({"timeoutSeconds": 60}), &["response"]))
        .state("n", "g", &old)
        .build()
        .await
        .expect("loads");
    let err = h
        .send("n:item", item("g", 1, 3, json!("y")))
        .await
        .expect_err("expired");
    assert!(err.to_string().contains("collect timeout: got 2 of 3"), "{err}");
    assert!(h.state::<Value>("n", "g").expect("readable").is_none());
}

#[tokio::test]
async fn collect_keeps_its_groups_across_a_restart() {
    let h = harness(one("collect", json!({}), &["response"])).await;
    h.send("n:item", item("g", 1, 2, json!("b"))).await.expect("buffered");
    h.restart_node("n").await.expect("restarts");
    h.send("n:item", item("g", 0, 2, json!("a"))).await.expect("complete");
    assert_eq!(
        h.emitted("n:response").pop().expect("response")["items"],
        json!(["a", "b"])
    );
}

// ---------------------------------------------------------------------------------
// inject

#[tokio::test]
async fn inject_attaches_the_stored_config_across_restarts() {
    let h = harness(one("inject", json!({}), &["output"])).await;
    let r = report(&h);
    assert_eq!(names(&r), ["_settings", "config", "message", "output"]);
    assert_eq!(place(&r, "config"), ("Config".into(), Position::Top, false));
    // No config yet: null, on Output.
    h.send("n:message", json!({"context": 1})).await.expect("passed");
    assert_eq!(h.emitted("n:output"), vec![json!({"context": 1, "config": null})]);
    h.send("n:config", json!({"data": {"apiUrl": "http://x"}}))
        .await
        .expect("stored");
    assert_eq!(
        h.metadata("n")
            .expect("metadata")
            .get("_state/config")
            .map(String::as_str),
        Some("eyJhcGlVcmwiOiJodHRwOi8veCJ9"),
        "Go's key and layout: base64 of the JSON"
    );
    h.restart_node("n").await.expect("restarts");
    h.send("n:message", json!({"context": 2})).await.expect("passed");
    assert_eq!(
        h.emitted("n:output").pop(),
        Some(json!({"context": 2, "config": {"apiUrl": "http://x"}}))
    );
}

#[tokio::test]
async fn inject_with_config_required_reports_a_missing_config() {
    let h = harness(one("inject", json!({"configRequired": true}), &["output", "error"])).await;
    assert_eq!(place(&report(&h), "error"), ("Error".into(), Position::Bottom, true));
    h.send("n:message", json!({"context": "c"})).await.expect("to error");
    assert_eq!(
        h.emitted("n:error"),
        vec![json!({"context": "c", "error": "config not set"})]
    );
    assert!(h.emitted("n:output").is_empty());
    // A value the Go module stored carries on.
    let h = builder()
        .flow(one("inject", json!({"configRequired": true}), &["output", "error"]))
        .state("n", "config", json!([1, 2]))
        .build()
        .await
        .expect("loads");
    h.send("n:message", json!({"context": "c"})).await.expect("passed");
    assert_eq!(h.emitted("n:output"), vec![json!({"context": "c", "config": [1, 2]})]);
}

// ---------------------------------------------------------------------------------
// display

#[tokio::test]
async fn display_shows_the_settings_text_until_a_message_and_keeps_it() {
    let h = harness(one("display", json!({"text": "# Readme"}), &[])).await;
    let r = report(&h);
    assert_eq!(names(&r), ["_control", "_settings", "in"]);
    assert_eq!(control(&h), json!({"text": "# Readme"}));
    h.send("n:in", json!({"text": "**42**"})).await.expect("shown");
    assert_eq!(control(&h), json!({"text": "**42**"}));
    // Go's layout: the text's own bytes, base64.
    assert_eq!(
        h.metadata("n")
            .expect("metadata")
            .get("_state/text")
            .map(String::as_str),
        Some("Kio0Mioq")
    );
    h.restart_node("n").await.expect("restarts");
    assert_eq!(control(&h), json!({"text": "**42**"}), "an answer survives a restart");
    let schema = port(&report(&h), "_control").schema;
    let text = serde_json::to_string(&schema).expect("json");
    assert!(
        text.contains("\"readonly\":true") && text.contains("markdown"),
        "{text}"
    );
}

// ---------------------------------------------------------------------------------
// form

/// Paused time: the last sleep returns once every task is parked, so a detached emit
/// of the press without Submit would have happened when the test counts.
#[tokio::test(start_paused = true)]
async fn form_submit_emits_the_values_and_the_result_shows_in_place() {
    let h = harness(one("form", json!({"context": {"account": ""}}), &["out"])).await;
    let r = report(&h);
    assert_eq!(names(&r), ["_control", "_settings", "out", "result"]);
    assert_eq!(place(&r, "result"), ("Result".into(), Position::Left, false));
    assert_eq!(control(&h), json!({"context": {"account": ""}, "submit": false}));

    h.send("n:_control", json!({"context": {"account": "ada"}, "submit": true}))
        .await
        .expect("submitted");
    assert!(eventually(Duration::from_secs(2), || h.emitted("n:out").len() == 1).await);
    assert_eq!(h.emitted("n:out"), vec![json!({"account": "ada"})]);

    h.send(
        "n:result",
        json!({"text": "saved ada ✓ ✓", "prefill": {"account": "ada ✓"}}),
    )
    .await
    .expect("shown");
    assert_eq!(
        control(&h),
        json!({"context": {"account": "ada ✓"}, "submit": false, "result": "saved ada ✓ ✓"})
    );
    h.restart_node("n").await.expect("restarts");
    assert_eq!(control(&h)["result"], "saved ada ✓ ✓");
    assert_eq!(control(&h)["context"], json!({"account": "ada ✓"}));

    // A new submission clears the last result while it runs.
    h.send("n:_control", json!({"context": {"account": "bob"}, "submit": true}))
        .await
        .expect("submitted");
    assert!(control(&h).get("result").is_none(), "{}", control(&h));
    // A press without Submit (a re-render) emits nothing.
    h.send("n:_control", json!({"context": {"account": "x"}}))
        .await
        .expect("ignored");
    assert!(eventually(Duration::from_secs(2), || h.emitted("n:out").len() == 2).await);
    tokio::time::sleep(Duration::from_millis(50)).await; // paused: once every task is parked
    assert_eq!(h.emitted("n:out").len(), 2);
}

// ---------------------------------------------------------------------------------
// chat

fn thread(h: &Harness) -> Vec<ThreadEntry> {
    h.state("n", "thread").expect("readable").unwrap_or_default()
}

/// Paused time, so that "no message emitted" is read once every task is parked.
#[tokio::test(start_paused = true)]
async fn chat_carries_a_message_out_and_the_reply_closes_it() {
    let h = harness(one(
        "chat",
        json!({"placeholder": "Ask the agent…"}),
        &["message", "answer"],
    ))
    .await;
    let r = report(&h);
    assert_eq!(
        names(&r),
        ["_control", "_settings", "answer", "ask", "clear", "message", "say"]
    );
    for (p, pos) in [
        ("say", Position::Left),
        ("ask", Position::Left),
        ("clear", Position::Left),
    ] {
        assert_eq!(place(&r, p), (p[..1].to_uppercase() + &p[1..], pos, false));
    }
    assert_eq!(place(&r, "answer"), ("Answer".into(), Position::Right, true));
    assert_eq!(port(&r, "_control").schema["$defs"]["ChatControl"]["format"], "chat");
    assert_eq!(
        port(&r, "answer").configuration,
        json!({"questionId": "", "values": {"approve": false, "deny": false}})
    );
    assert_eq!(control(&h), json!({"thread": [], "placeholder": "Ask the agent…"}));

    h.send("n:_control", json!({"_kind": "message", "text": "how is prod?"}))
        .await
        .expect("typed");
    assert!(eventually(Duration::from_secs(2), || h.emitted("n:message").len() == 1).await);
    let msg = h.emitted("n:message").remove(0);
    let rid = msg["requestId"].as_str().expect("a request id").to_owned();
    assert!(rid.starts_with("m-"), "{rid}");
    assert_eq!(msg["text"], "how is prod?");
    let t = thread(&h);
    assert_eq!((t.len(), t[0].kind.as_str(), t[0].pending), (1, "message", true));

    h.send("n:say", json!({"requestId": rid, "text": "**all green**"}))
        .await
        .expect("said");
    let t = thread(&h);
    assert!(!t[0].pending, "the reply closes the message");
    assert_eq!(
        (t[1].kind.as_str(), t[1].role.as_str(), t[1].text.as_str()),
        ("reply", "assistant", "**all green**")
    );
    assert_eq!(control(&h)["thread"].as_array().map(Vec::len), Some(2));
    // A push with no request id still lands; an empty composer message does nothing.
    h.send("n:say", json!({"role": "system", "text": "deploy started"}))
        .await
        .expect("said");
    h.send("n:_control", json!({"_kind": "message", "text": ""}))
        .await
        .expect("ignored");
    h.send("n:_control", json!({"text": "no kind: a re-render"}))
        .await
        .expect("ignored");
    assert_eq!(thread(&h).len(), 3);
    tokio::time::sleep(Duration::from_millis(50)).await; // paused: once every task is parked
    assert_eq!(h.emitted("n:message").len(), 1);
}

/// Paused time, so that "no answer emitted" is read once every task is parked.
#[tokio::test(start_paused = true)]
async fn chat_questions_queue_and_only_the_head_is_answered() {
    let h = harness(one("chat", json!({}), &["message", "answer"])).await;
    h.send("n:ask", json!({"context": {"deploy": 1}})).await.expect("asked");
    h.send("n:ask", json!({"context": {"deploy": 2}, "form": r#"{"type":"object","properties":{"ok":{"type":"boolean","format":"button"},"key":{"type":"string","format":"password"}}}"#}))
        .await
        .expect("asked");
    let queue: Vec<PendingQuestion> = h.state("n", "queue").expect("readable").expect("queued");
    assert_eq!(queue.len(), 2);
    let pending = control(&h)["pendingQuestion"].clone();
    assert_eq!(pending["qid"], json!(queue[0].id));
    assert_eq!(pending["waiting"], 1);
    assert_eq!(pending["form"]["properties"]["approve"]["format"], "button");

    // A card for another question, or no button pressed: nothing.
    h.send(
        "n:_control",
        json!({"_kind": "answer", "_qid": queue[1].id, "approve": true}),
    )
    .await
    .expect("ignored");
    h.send(
        "n:_control",
        json!({"_kind": "answer", "_qid": queue[0].id, "approve": false}),
    )
    .await
    .expect("ignored");
    tokio::time::sleep(Duration::from_millis(50)).await; // paused: once every task is parked
    assert!(h.emitted("n:answer").is_empty());

    h.send(
        "n:_control",
        json!({"_kind": "answer", "_qid": queue[0].id, "approve": true}),
    )
    .await
    .expect("answered");
    assert!(eventually(Duration::from_secs(2), || h.emitted("n:answer").len() == 1).await);
    assert_eq!(
        h.emitted("n:answer")[0],
        json!({"questionId": queue[0].id, "values": {"approve": true}, "context": {"deploy": 1}})
    );
    // The second question's password travels raw on Answer, masked in the thread.
    h.send(
        "n:_control",
        json!({"_kind": "answer", "_qid": queue[1].id, "ok": true, "key": "hunter2"}),
    )
    .await
    .expect("answered");
    assert!(eventually(Duration::from_secs(2), || h.emitted("n:answer").len() == 2).await);
    assert_eq!(
        h.emitted("n:answer")[1]["values"],
        json!({"ok": true, "key": "hunter2"})
    );
    let answers: Vec<ThreadEntry> = thread(&h).into_iter().filter(|t| t.kind == "answer").collect();
    assert_eq!(
        answers[1].values.as_ref().map(|v| v["key"].clone()),
        Some(json!("••••••"))
    );
    assert!(thread(&h).iter().filter(|t| t.kind == "question").all(|t| !t.pending));
    assert!(
        h.state::<Value>("n", "queue").expect("readable").is_none(),
        "an empty queue is removed"
    );
    assert!(control(&h).get("pendingQuestion").is_none());
}

#[tokio::test]
async fn chat_expires_old_questions_onto_the_error_port_with_a_note() {
    let old = vec![PendingQuestion {
        id: "q-1-00000000".into(),
        context: json!({"deploy": "old"}),
        form: json!({}),
        asked_at: "2020-01-01T00:00:00Z".into(),
    }];
    let h = builder()
        .flow(one(
            "chat",
            json!({"timeoutSeconds": 60, "enableErrorPort": true}),
            &["error"],
        ))
        .state("n", "queue", &old)
        .build()
        .await
        .expect("loads");
    assert_eq!(place(&report(&h), "error"), ("Error".into(), Position::Bottom, true));
    h.send("n:ask", json!({"context": {"deploy": "new"}}))
        .await
        .expect("asked");
    assert!(eventually(Duration::from_secs(2), || h.emitted("n:error").len() == 1).await);
    assert_eq!(
        h.emitted("n:error")[0],
        json!({"context": {"deploy": "old"}, "error": "question expired after 60s"})
    );
    let t = thread(&h);
    assert_eq!((t[0].kind.as_str(), t[0].role.as_str()), ("note", "error"));
    let queue: Vec<PendingQuestion> = h.state("n", "queue").expect("readable").expect("queued");
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0].context, json!({"deploy": "new"}));
}

#[tokio::test]
async fn chat_keeps_its_conversation_across_a_restart_trims_and_clears() {
    let h = harness(one("chat", json!({"historyLimit": 3}), &[])).await;
    for n in 0..5 {
        h.send("n:say", json!({"text": format!("line {n}")}))
            .await
            .expect("said");
    }
    h.send("n:ask", json!({"context": 1})).await.expect("asked");
    let texts: Vec<String> = thread(&h).into_iter().map(|t| t.text).collect();
    assert_eq!(texts, ["line 3", "line 4", ""]);
    h.restart_node("n").await.expect("restarts");
    assert_eq!(control(&h)["thread"].as_array().map(Vec::len), Some(3));
    assert!(control(&h)["pendingQuestion"].is_object());
    h.send("n:clear", json!({"context": "again"})).await.expect("cleared");
    assert!(h.state::<Value>("n", "thread").expect("readable").is_none());
    assert!(h.state::<Value>("n", "queue").expect("readable").is_none());
    assert_eq!(control(&h)["thread"], json!([]));
}

#[tokio::test]
async fn chat_refuses_a_form_that_is_not_json() {
    let h = harness(one("chat", json!({}), &[])).await;
    let err = h.send("n:ask", json!({"form": "{nope"})).await.expect_err("not JSON");
    assert!(err.to_string().contains("ask form is not valid JSON"), "{err}");
    let (_h, errors) = builder()
        .flow(one("chat", json!({"form": "{nope"}), &[]))
        .build_lenient()
        .await
        .expect("the harness builds");
    assert!(
        errors
            .iter()
            .any(|(_, e)| e.to_string().contains("form is not valid JSON")),
        "{errors:?}"
    );
}

// ---------------------------------------------------------------------------------
// the catalog

/// Go's common module v0.12.2 registers 23 components; all are here.
#[test]
fn the_module_registers_gos_names() {
    let mut go = vec![
        "array_filter",
        "array_get",
        "array_split",
        "async",
        "budget_guard",
        "chat",
        "collect",
        "cron",
        "debug",
        "delay",
        "display",
        "flow_telemetry",
        "form",
        "group_by",
        "inject",
        "kv",
        "retry",
        "router",
        "run_start",
        "run_status",
        "signal",
        "ticker",
        "transform",
    ];
    assert_eq!(go.len(), 23);
    go.sort_unstable();
    assert_eq!(tiny_example_common::registry().names(), go);
}

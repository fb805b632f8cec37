//! The flow engine through its public surface: the harness, flows built in code and
//! from YAML, and test components defined here.

use std::{
    sync::atomic::{AtomicU32, Ordering},
    time::Duration,
};
use tiny_testkit::components::{Answer, Flaky};

use serde_json::{Value, json};
use tiny_sdk::{
    Hop, Msg,
    engine::Delivery,
    error::code,
    flow::{FlowBuilder, RetryPolicy},
    harness::Harness,
    harness::Relay,
    prelude::*,
};
use tokio_util::sync::CancellationToken;

/// Panics on `boom`.
#[derive(Debug, Component, Default)]
#[component(name = "fragile")]
struct Fragile {
    input: Input<String>,
}

impl Fragile {
    async fn on_input(&self, _: &Ctx<Self>, msg: String) -> Result<Reply> {
        assert!(msg != "boom", "fragile got {msg}");
        Ok(Reply::value(json!(msg)))
    }
}

/// Waits forever unless cancelled.
#[derive(Debug, Component, Default)]
#[component(name = "slow")]
struct Slow {
    input: Input<Value>,
}

impl Slow {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        ctx.cancelled().await;
        Err(Error::permanent("cancelled"))
    }
}

static DESTROYED: AtomicU32 = AtomicU32::new(0);

/// Counts `on_destroy` calls.
#[derive(Debug, Component, Default)]
#[component(name = "tidy", hooks)]
struct Tidy {
    input: Input<Value>,
}

impl Tidy {
    async fn on_input(&self, _: &Ctx<Self>, _: Value) {}
}

impl Hooks for Tidy {
    async fn on_destroy(&self, _: &Ctx<Self>) -> Result<()> {
        DESTROYED.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Uses its node state as its input says, wrongly.
#[derive(Debug, Component, Default)]
#[component(name = "stash")]
struct Stash {
    input: Input<String>,
}

impl Stash {
    async fn on_input(&self, ctx: &Ctx<Self>, what: String) -> Result<Reply> {
        let state = ctx.state();
        match what.as_str() {
            "bad key" => state.set("no spaces, please", &1).await?,
            "too large" => state.set("big", &"x".repeat(1024 * 1024)).await?,
            _ => {
                state.set("n", &"seven").await?;
                let _: Option<u64> = state.get("n")?;
            }
        }
        Ok(Reply::empty())
    }
}

fn harness() -> tiny_sdk::harness::HarnessBuilder {
    Harness::builder()
        .register::<Stash>()
        .register::<Tidy>()
        .register::<Relay>()
        .register::<Answer>()
        .register::<Flaky>()
        .register::<Fragile>()
        .register::<Slow>()
}

fn fast_retry(max: u32) -> Option<RetryPolicy> {
    Some(RetryPolicy {
        max_attempts: Some(max),
        initial_delay_ms: Some(1),
        max_delay_ms: Some(5),
        ..Default::default()
    })
}

// ---- expressions on edges ----

#[tokio::test]
async fn edge_mappings_keep_types_and_interpolate_each_expression() {
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("b", "answer")
        .edge(
            "a:out",
            "b:input",
            json!({
                "n": "{{$.n}}",
                "double": "{{$.n * 2}}",
                "both": "{{$.first}} {{$.last}}",
                "flag": "{{$.n > 1 && $.first == 'Ada'}}",
                "user": "{{$}}",
                "upper": "{{upper($.first)}}",
                "fallback": "{{$.missing ?? 'none'}}",
                "literal": "plain text"
            }),
        )
        .build();
    let h = harness().flow(flow).build().await.expect("loads");
    let reply = h
        .send("a:input", json!({"n": 2, "first": "Ada", "last": "Lovelace"}))
        .await
        .expect("ok");
    assert_eq!(
        reply.into_value(),
        Some(json!({
            "n": 2, "double": 4, "both": "Ada Lovelace", "flag": true,
            "user": {"n": 2, "first": "Ada", "last": "Lovelace"},
            "upper": "ADA", "fallback": "none", "literal": "plain text"
        }))
    );
}

/// One edge configuration with a required and an optional field, whole and
/// interpolated, as an editor flow built for Go has it.
fn optional_field_flow() -> tiny_sdk::flow::Flow {
    FlowBuilder::new()
        .node("a", "relay")
        .node("b", "answer")
        .edge(
            "a:out",
            "b:input",
            json!({
                "id": "{{$.id}}",
                "note": "{{$.note}}",
                "big": "{{$.total > 100}}",
                "line": "Order {{$.id}}: {{$.note}}",
                "double": "x{{$.total * 2}}"
            }),
        )
        .build()
}

#[tokio::test]
async fn a_failing_expression_yields_null_or_keeps_its_text_as_in_go() {
    let h = harness().flow(optional_field_flow()).build().await.expect("loads");
    // With every field: as written.
    let full = h
        .send("a:input", json!({"id": 7, "note": "fragile", "total": 120}))
        .await
        .expect("runs");
    assert_eq!(
        full.into_value(),
        Some(json!({"id": 7, "note": "fragile", "big": true, "line": "Order 7: fragile", "double": "x240"}))
    );
    assert!(h.expression_errors().is_empty());
    // Without `note` and `total`, Go's values: a missing field is null whole and
    // nothing interpolated, a comparison with it is false, and an expression that
    // fails on it (arithmetic) leaves its text; the flow goes on.
    let partial = h.send("a:input", json!({"id": 8})).await.expect("goes on");
    assert_eq!(
        partial.into_value(),
        Some(json!({"id": 8, "note": null, "big": false, "line": "Order 8: ", "double": "x{{$.total * 2}}"}))
    );
    let failed = h.expression_errors();
    let fields: Vec<&str> = failed.iter().map(|(_, e)| e.pointer.as_str()).collect();
    assert_eq!(fields, ["/note", "/line", "/double"], "{failed:?}");
    assert!(failed.iter().all(|(at, _)| at == "b:input"));
    assert!(failed[2].1.message.contains("total"), "{failed:?}");
    // The node says so while it keeps happening, naming edge, field and expression.
    let report = h.report("b").expect("b runs");
    assert!(report.error.is_none(), "the node itself is fine");
    assert_eq!(report.failing_edges.len(), 1, "{:?}", report.failing_edges);
    let line = &report.failing_edges[0];
    for part in ["from `a:out`", "port `input`", "3 failed", "/note", "{{$.note}}"] {
        assert!(line.contains(part), "`{part}` in {line}");
    }
    assert!(h.report("a").expect("a runs").failing_edges.is_empty());
    // A re-apply of the same spec (a status write, the heartbeat) does not forget it.
    let b = optional_field_flow()
        .nodes
        .into_iter()
        .find(|n| n.name == "b")
        .expect("b");
    h.engine().apply(b).await.expect("re-applied");
    assert_eq!(h.report("b").expect("b").failing_edges.len(), 1);
}

#[tokio::test]
async fn strict_expressions_fail_the_hop_as_before() {
    let h = harness()
        .strict_expressions()
        .flow(optional_field_flow())
        .build()
        .await
        .expect("loads");
    let ok = h.send("a:input", json!({"id": 7, "note": "n", "total": 1})).await;
    assert!(ok.is_ok(), "{ok:?}");
    let err = h.send("a:input", json!({"id": 8})).await.expect_err("strict");
    assert_eq!(err.code(), Some(code::MAPPING));
    assert!(err.to_string().contains("/note"), "{err}");
    assert!(h.expression_errors().is_empty(), "a failed hop, not a lenient render");
}

#[tokio::test]
async fn settings_expressions_see_no_message_and_yield_null_as_in_go() {
    let flow = FlowBuilder::new()
        .node("f", "flaky")
        .settings(json!({"failures": 0, "code": "{{$.code}}"}))
        .build();
    let h = harness().flow(flow.clone()).build().await.expect("loads: code is null");
    let failing = h.report("f").expect("f runs").failing_edges;
    assert_eq!(failing.len(), 1, "{failing:?}");
    assert!(failing[0].starts_with("settings: at /code"), "{failing:?}");
    let err = harness()
        .strict_expressions()
        .flow(flow)
        .build()
        .await
        .expect_err("strict: the settings expression fails");
    assert!(err.to_string().contains("_settings"), "{err}");
}

#[tokio::test]
async fn a_path_that_matches_nothing_is_an_error_naming_node_edge_and_field() {
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("b", "answer")
        .edge("a:out", "b:input", json!({"user": {"name": "{{$.user.nmae}}"}}))
        .build();
    let h = harness().strict_expressions().flow(flow).build().await.expect("loads");
    let err = h
        .send("a:input", json!({"user": {"name": "Ada"}}))
        .await
        .expect_err("no such path");
    let text = err.to_string();
    assert!(text.contains("node `b` port `input`"), "{text}");
    assert!(text.contains("from `a:out`"), "{text}");
    assert!(text.contains("/user/name"), "{text}");
    assert!(!err.is_retryable());
    assert_eq!(err.code(), Some(code::MAPPING));
}

#[tokio::test]
async fn a_syntax_error_is_reported_at_load_and_other_nodes_keep_working() {
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("b", "answer")
        .edge("a:out", "b:input", json!({"x": "{{$.a +}}"}))
        .node("c", "answer")
        .build();
    let (h, errors) = harness().flow(flow).build_lenient().await.expect("built");
    assert_eq!(errors.len(), 1);
    let (node, err) = &errors[0];
    assert_eq!(node, "b");
    assert_eq!(err.code(), Some(code::INVALID_SPEC));
    let text = err.to_string();
    assert!(text.contains("node `b`"), "{text}");
    assert!(text.contains("port `input`"), "{text}");
    assert!(text.contains("edge from `a:out`"), "{text}");
    assert!(text.contains("/x"), "{text}");
    assert_eq!(
        h.report("b").and_then(|r| r.error).map(|e| e.to_string()),
        Some(text.clone())
    );
    // The broken node refuses messages with that error; the others work.
    let sent = h.send("a:input", json!({"a": 1})).await.expect_err("b is not running");
    assert!(sent.to_string().contains("is not running"), "{sent}");
    assert_eq!(
        h.send("c:input", json!(1)).await.expect("c works").into_value(),
        Some(json!(1))
    );
}

// ---- request/response and fan-out ----

#[tokio::test]
async fn the_reply_travels_back_through_a_chain() {
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("b", "relay")
        .node("c", "relay")
        .node("end", "answer")
        .edge("a:out", "b:input", json!("{{$}}"))
        .edge("b:out", "c:input", json!({"wrapped": "{{$}}"}))
        .edge("c:out", "end:input", json!({"final": "{{$.wrapped.v}}"}))
        .build();
    let h = harness().flow(flow).build().await.expect("loads");
    let reply = h.send("a:input", json!({"v": 42})).await.expect("ok");
    assert_eq!(reply.into_value(), Some(json!({"final": 42})));
}

#[tokio::test]
async fn fan_out_reaches_every_branch_and_returns_the_first_reply() {
    let mut flow = FlowBuilder::new().node("src", "relay");
    for i in 0..5 {
        flow = flow.node(&format!("t{i}"), "answer").edge(
            "src:out",
            &format!("t{i}:input"),
            json!({"i": i, "v": "{{$.v}}"}),
        );
    }
    let h = harness().flow(flow.build()).build().await.expect("loads");
    let reply = h.send("src:input", json!({"v": "x"})).await.expect("ok");
    assert_eq!(
        reply.into_value(),
        Some(json!({"i": 0, "v": "x"})),
        "edge order decides"
    );
    for i in 0..5 {
        assert_eq!(h.arrivals(&format!("t{i}:input")), vec![json!({"i": i, "v": "x"})]);
    }
}

#[tokio::test]
async fn an_edge_without_mapping_delivers_the_port_default_as_in_the_go_sdk() {
    let mut flow = FlowBuilder::new().node("a", "relay").node("b", "answer").build();
    flow.nodes[0].spec.edges.push(tiny_sdk::flow::Edge {
        id: "e".into(),
        port: "out".into(),
        to: "b:input".into(),
        ..Default::default()
    });
    let h = harness().flow(flow).build().await.expect("loads");
    let reply = h.send("a:input", json!({"v": 1})).await.expect("ok");
    assert_eq!(reply.into_value(), Some(Value::Null), "Value's default");
}

// ---- retries ----

async fn flaky_flow(settings: Value, retry: Option<RetryPolicy>) -> Harness {
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("f", "flaky")
        .settings(settings)
        .edge_with("a:out", "f:input", json!("{{$}}"), retry)
        .build();
    harness().flow(flow).build().await.expect("loads")
}

#[tokio::test]
async fn transient_errors_are_retried_per_the_edge_policy() {
    let h = flaky_flow(json!({"failures": 2}), fast_retry(3)).await;
    let reply = h.send("a:input", json!("x")).await.expect("third attempt succeeds");
    assert_eq!(reply.into_value(), Some(json!({"attempts": 3, "msg": "x"})));
    assert_eq!(failures_at(&h, "f:input"), 2);
}

fn failures_at(h: &Harness, at: &str) -> usize {
    h.failures().iter().filter(|(port, _)| port == at).count()
}

#[tokio::test]
async fn only_the_edge_into_the_failing_node_retries() {
    // a -> b -> f, both edges allowing 3 attempts: `f` fails for good after its edge's
    // three; the edge a -> b does not run b (and f's three) again for an error that
    // arose below b.
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("b", "relay")
        .node("f", "flaky")
        .settings(json!({"failures": 100}))
        .edge_with("a:out", "b:input", json!("{{$}}"), fast_retry(3))
        .edge_with("b:out", "f:input", json!("{{$}}"), fast_retry(3))
        .build();
    let h = harness().flow(flow).build().await.expect("loads");
    let err = h.send("a:input", json!("x")).await.expect_err("f always fails");
    assert_eq!(failures_at(&h, "f:input"), 3, "f's edge retried, b's did not: {err}");
    assert!(err.is_retryable(), "still transient for whoever sent it");
    assert!(err.to_string().contains("attempt 3 failed"), "{err}");
}

/// Emits on `out`; a failure from there comes back as an error of its own, which it
/// marks relayed (it arose further down).
#[derive(Debug, Component, Default)]
#[component(name = "wrap")]
struct Wrap {
    input: Input<Value>,
    out: Output<Value>,
}

impl Wrap {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        self.out
            .emit(ctx, msg)
            .await
            .map_err(|e| Error::transient(format!("below: {}", e.message())).relayed())
    }
}

#[tokio::test]
async fn a_handler_may_mark_its_own_error_relayed() {
    // a -> w -> f: `w` answers f's failure with a fresh error marked relayed; the edge
    // a -> w keeps the mark and does not run w (and f's three attempts) again.
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("w", "wrap")
        .node("f", "flaky")
        .settings(json!({"failures": 100}))
        .edge_with("a:out", "w:input", json!("{{$}}"), fast_retry(3))
        .edge_with("w:out", "f:input", json!("{{$}}"), fast_retry(3))
        .build();
    let h = harness().register::<Wrap>().flow(flow).build().await.expect("loads");
    let err = h.send("a:input", json!("x")).await.expect_err("f always fails");
    assert!(err.is_relayed() && err.is_retryable(), "{err}");
    assert_eq!(failures_at(&h, "f:input"), 3, "{err}");
}

/// Charges a card: fails with a plain `?`, which marks nothing, on an I/O error
/// (`io: true`) or a `String`; counts its runs on `runs`.
#[derive(Debug, Component, Default)]
#[component(name = "charge")]
struct Charge {
    input: Input<Value>,
    runs: Input<Value>,
    count: AtomicU32,
}

impl Charge {
    async fn on_input(&self, _: &Ctx<Self>, msg: Value) -> Result<Reply> {
        self.count.fetch_add(1, Ordering::SeqCst);
        if msg["io"] == json!(true) {
            std::fs::read("/nonexistent/tiny/card")?;
        }
        Err(format!("card declined after charging {}", msg["amount"]))?
    }

    async fn on_runs(&self, _: &Ctx<Self>, _: Value) -> Reply {
        Reply::value(json!(self.count.load(Ordering::SeqCst)))
    }
}

#[tokio::test]
async fn unmarked_errors_get_one_attempt_as_in_go() {
    // The edge has the default policy (3 attempts): a plain `?` on an I/O error or a
    // String is not marked retryable, so the side effect runs once.
    for input in [json!({"amount": 5}), json!({"amount": 5, "io": true})] {
        let flow = FlowBuilder::new()
            .node("a", "relay")
            .node("c", "charge")
            .edge("a:out", "c:input", json!("{{$}}"))
            .build();
        let h = harness().register::<Charge>().flow(flow).build().await.expect("loads");
        let err = h.send("a:input", input.clone()).await.expect_err("declined");
        assert!(!err.is_retryable(), "{err}");
        let runs = h.send("c:runs", json!(null)).await.expect("counts").into_value();
        assert_eq!(runs, Some(json!(1)), "ran once for {input}: {err}");
        assert_eq!(failures_at(&h, "c:input"), 1);
    }
}

#[tokio::test]
async fn marked_errors_are_retried_by_the_default_policy() {
    // No retryPolicy on the edge: 3 attempts for an error marked transient.
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("f", "flaky")
        .settings(json!({"failures": 2}))
        .edge("a:out", "f:input", json!("{{$}}"))
        .build();
    let h = harness().flow(flow).build().await.expect("loads");
    let reply = h.send("a:input", json!("x")).await.expect("third attempt succeeds");
    assert_eq!(reply.into_value(), Some(json!({"attempts": 3, "msg": "x"})));
}

#[tokio::test]
async fn retries_stop_at_max_attempts() {
    let h = flaky_flow(json!({"failures": 5}), fast_retry(2)).await;
    let err = h
        .send("a:input", json!("x"))
        .await
        .expect_err("two attempts are not enough");
    assert!(err.to_string().contains("attempt 2 failed"), "{err}");
    assert_eq!(failures_at(&h, "f:input"), 2);
}

#[tokio::test]
async fn permanent_errors_are_never_retried() {
    let h = flaky_flow(json!({"failures": 1, "permanent": true}), fast_retry(5)).await;
    let err = h.send("a:input", json!("x")).await.expect_err("permanent");
    assert!(!err.is_retryable());
    assert_eq!(failures_at(&h, "f:input"), 1);
}

#[tokio::test]
async fn non_retryable_codes_stop_retries() {
    let mut policy = fast_retry(5);
    if let Some(p) = policy.as_mut() {
        p.non_retryable_error_codes = vec!["QUOTA".into()];
    }
    let h = flaky_flow(json!({"failures": 3, "code": "QUOTA"}), policy).await;
    let err = h.send("a:input", json!("x")).await.expect_err("stopped");
    assert_eq!(err.code(), Some("QUOTA"));
    assert_eq!(failures_at(&h, "f:input"), 1);
}

/// Paused time: the sleep returns once every other task is parked, so the first
/// attempt has failed and the edge sits in its retry wait when the test cancels (a
/// sleep of wall time would only make that likely). The wait is drawn with full
/// jitter between `MIN_RETRY_DELAY` (10 ms) and the policy's ten minutes; the test
/// sleeps half that floor, so no draw can end the wait before it looks (a 50 ms sleep
/// lost to about one draw in 15,000).
#[tokio::test(start_paused = true)]
async fn cancellation_stops_a_retry_wait_at_once() {
    let policy = Some(RetryPolicy {
        max_attempts: Some(5),
        initial_delay_ms: Some(600_000),
        ..Default::default()
    });
    let h = flaky_flow(json!({"failures": 5}), policy).await;
    let cancel = CancellationToken::new();
    let hop = Hop {
        cancel: cancel.clone().into(),
        ..Hop::default()
    };
    let engine = h.engine().clone();
    let sent = tokio::spawn(async move {
        engine
            .deliver(
                Delivery::to("a:input", Msg::from_json(json!("x")))
                    .expect("an address")
                    .hop(hop),
            )
            .await
    });
    tokio::time::sleep(tiny_sdk::engine::MIN_RETRY_DELAY / 2).await;
    assert_eq!(failures_at(&h, "f:input"), 1, "the first attempt failed");
    assert!(!sent.is_finished(), "the edge waits to retry");
    cancel.cancel();
    // Paused time: a wait that ignores the cancel runs its drawn wait (10 ms to ten
    // minutes) and the next attempts' waits; this bound ends that instead of
    // hanging, and if the draws happen to fit under it, the attempts run out and
    // the error and attempt count below fail the test.
    let result = tokio::time::timeout(Duration::from_secs(30), sent)
        .await
        .expect("cancel ends the wait")
        .expect("no panic");
    let err = result.expect_err("cancelled");
    assert!(err.to_string().contains("cancelled while retrying"), "{err}");
    assert_eq!(failures_at(&h, "f:input"), 1);
}

#[tokio::test]
async fn timeout_ms_bounds_each_attempt() {
    let policy = Some(RetryPolicy {
        max_attempts: Some(2),
        initial_delay_ms: Some(1),
        timeout_ms: Some(30),
        ..Default::default()
    });
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("s", "slow")
        .edge_with("a:out", "s:input", json!("{{$}}"), policy)
        .build();
    let h = harness().flow(flow).build().await.expect("loads");
    let err = h.send("a:input", json!(1)).await.expect_err("times out");
    assert!(err.to_string().contains("attempt 2 timed out after 30 ms"), "{err}");
}

#[tokio::test]
async fn a_bad_retry_policy_is_a_load_error() {
    let policy = Some(RetryPolicy {
        backoff_coefficient: Some("fast".into()),
        ..Default::default()
    });
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("f", "flaky")
        .edge_with("a:out", "f:input", json!("{{$}}"), policy)
        .build();
    let err = harness().flow(flow).build().await.expect_err("rejected");
    assert!(err.to_string().contains("backoffCoefficient `fast`"), "{err}");
    assert!(err.to_string().contains("node `a`"), "{err}");
}

// ---- cycles, panics, bad input ----

#[tokio::test]
async fn the_cycle_guard_stops_a_loop_with_a_clear_error() {
    let flow = FlowBuilder::new()
        .node("loop", "relay")
        .edge("loop:out", "loop:input", json!("{{$}}"))
        .build();
    let h = harness().flow(flow).build().await.expect("loads");
    let err = h.send("loop:input", json!(1)).await.expect_err("guarded");
    assert!(
        err.to_string().contains("cycle guard: a message passed 256 hops"),
        "{err}"
    );
    assert_eq!(err.code(), Some(code::CYCLE));
    assert_eq!(h.arrivals("loop:input").len(), 257);
}

#[tokio::test]
async fn a_panic_fails_only_that_message() {
    let h = harness()
        .flow(FlowBuilder::new().node("f", "fragile").build())
        .build()
        .await
        .expect("loads");
    let err = h.send("f:input", json!("boom")).await.expect_err("panicked");
    assert!(err.to_string().contains("handler panicked: fragile got boom"), "{err}");
    assert_eq!(err.code(), Some(code::PANIC));
    let ok = h.send("f:input", json!("fine")).await.expect("still running");
    assert_eq!(ok.into_value(), Some(json!("fine")));
}

#[tokio::test]
async fn bad_input_gets_errors_attributed_to_its_node() {
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .edge("a:out", "ghost:input", json!("{{$}}"))
        .node("typo", "relya")
        .node("f", "fragile")
        .build();
    let (h, errors) = harness().flow(flow).build_lenient().await.expect("built");
    let names: Vec<_> = errors.iter().map(|(n, e)| (n.as_str(), e.to_string())).collect();
    assert_eq!(names.len(), 1);
    assert_eq!(names[0].0, "typo");
    assert!(names[0].1.contains("unknown component `relya`"), "{}", names[0].1);
    assert_eq!(errors[0].1.code(), Some(code::UNKNOWN_COMPONENT));
    let refused = h.send("typo:input", json!(1)).await.expect_err("not running");
    assert_eq!(refused.code(), Some(code::NODE_NOT_RUNNING), "{refused}");

    let missing = h.send("a:input", json!(1)).await.expect_err("no ghost");
    assert!(missing.to_string().contains("no node `ghost`"), "{missing}");
    assert_eq!(missing.code(), Some(code::NODE_NOT_FOUND));
    let port = h.send("f:nope", json!(1)).await.expect_err("no such port");
    assert!(
        port.to_string().contains("has no input port `nope` (inputs: input)"),
        "{port}"
    );
    assert_eq!(port.code(), Some(code::UNKNOWN_PORT));
    let decode = h
        .send("f:input", json!({"not": "a string"}))
        .await
        .expect_err("wrong type");
    assert!(
        decode
            .to_string()
            .contains("node `f` port `input`: port `input`: message does not decode"),
        "{decode}"
    );
    assert_eq!(decode.code(), Some(code::UNDECODABLE));
    let address = h.send("no-colon", json!(1)).await.expect_err("bad address");
    assert!(address.to_string().contains("not a port address"), "{address}");
}

#[tokio::test]
async fn a_spec_configuring_an_unknown_port_or_edge_is_rejected_with_the_names() {
    let yaml = r#"
kind: TinyNode
metadata: { name: a }
spec:
  module: m
  component: relay
  ports:
    - { port: inptu, configuration: { x: 1 } }
---
kind: TinyNode
metadata: { name: b }
spec:
  module: m
  component: relay
  edges:
    - { id: e1, port: input, to: "a:input" }
"#;
    let (_, errors) = harness().yaml(yaml).build_lenient().await.expect("built");
    let text: Vec<String> = errors.iter().map(|(_, e)| e.to_string()).collect();
    assert!(
        text[0].contains("port `inptu`, which component `relay` does not have (it has: input, out)"),
        "{}",
        text[0]
    );
    assert!(
        text[1].contains("edge `e1` leaves port `input`, which is not an output"),
        "{}",
        text[1]
    );
    assert!(errors.iter().all(|(_, e)| e.code() == Some(code::INVALID_SPEC)));
}

#[tokio::test]
async fn node_state_misuse_has_its_codes() {
    let h = harness()
        .flow(FlowBuilder::new().node("s", "stash").build())
        .build()
        .await
        .expect("loads");
    for (what, want) in [
        ("bad key", code::STATE_KEY),
        ("too large", code::STATE_TOO_LARGE),
        ("wrong type", code::STATE_UNDECODABLE),
    ] {
        let err = h.send("s:input", json!(what)).await.expect_err(what);
        assert_eq!(err.code(), Some(want), "{what}: {err}");
    }
}

// ---- settings and YAML ----

#[tokio::test]
async fn settings_with_several_wrong_fields_name_every_one() {
    let flow = FlowBuilder::new()
        .node("f", "flaky")
        .settings(json!({"failures": "many", "permanent": "yes", "code": 7}))
        .build();
    let err = harness().flow(flow).build().await.expect_err("bad settings");
    let text = err.to_string();
    for field in ["failures", "permanent", "code"] {
        assert!(
            text.contains(&format!("field `{field}` does not decode")),
            "{field}: {text}"
        );
    }
    assert_eq!(err.code(), Some(code::UNDECODABLE));
}

#[tokio::test]
async fn settings_that_do_not_decode_are_a_node_error_naming_the_field() {
    let flow = FlowBuilder::new()
        .node("f", "flaky")
        .settings(json!({"failures": "many"}))
        .build();
    let err = harness().flow(flow).build().await.expect_err("bad settings");
    assert!(
        err.to_string()
            .contains("port `_settings`: field `failures` does not decode"),
        "{err}"
    );
    assert_eq!(err.code(), Some(code::UNDECODABLE));
}

#[tokio::test]
async fn yaml_with_base64_configuration_loads_as_kubernetes_stores_it() {
    // {"text":"{{$.v}}"} in base64, as `kubectl get -o yaml` shows a []byte field.
    let yaml = r#"
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata: { name: a }
spec:
  module: m
  component: relay
  edges: [{ id: e, port: out, to: "b:input", flowID: f }]
---
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata: { name: b }
spec:
  module: m
  component: answer
  ports:
    - from: "a:out"
      port: input
      configuration: eyJ0ZXh0Ijoie3skLnZ9fSJ9
"#;
    let h = harness().yaml(yaml).build().await.expect("loads");
    let reply = h.send("a:input", json!({"v": "hi"})).await.expect("ok");
    assert_eq!(reply.into_value(), Some(json!({"text": "hi"})));
}

#[tokio::test]
async fn updating_a_node_keeps_its_instance_and_applies_new_settings() {
    let flow = FlowBuilder::new()
        .node("f", "flaky")
        .settings(json!({"failures": 1}))
        .build();
    let h = harness().flow(flow).build().await.expect("loads");
    assert!(h.send("f:input", json!(1)).await.is_err(), "first attempt fails");
    let updated = FlowBuilder::new()
        .node("f", "flaky")
        .settings(json!({"failures": 0}))
        .build();
    h.engine().apply(updated.nodes[0].clone()).await.expect("updated");
    let reply = h.send("f:input", json!(2)).await.expect("ok");
    assert_eq!(
        reply.into_value(),
        Some(json!({"attempts": 2, "msg": 2})),
        "the attempt counter survived the update"
    );
}

#[tokio::test]
async fn on_destroy_runs_when_a_node_is_deleted_not_when_it_is_stopped() {
    let flow = FlowBuilder::new().node("t1", "tidy").node("t2", "tidy").build();
    let h = harness().flow(flow).build().await.expect("loads");
    let before = DESTROYED.load(Ordering::SeqCst);
    h.engine().remove("t1", false).await.expect("stopped");
    assert_eq!(
        DESTROYED.load(Ordering::SeqCst),
        before,
        "stopping a replica's copy is not a deletion"
    );
    h.engine().remove("t2", true).await.expect("deleted");
    assert_eq!(DESTROYED.load(Ordering::SeqCst), before + 1);
    assert!(!h.engine().has_node("t2"));
    let err = h.send("t2:input", json!(1)).await.expect_err("gone");
    assert!(err.to_string().contains("no node `t2`"), "{err}");
}

// ---- a node removed mid-message, honest retry errors ----

/// Never answers and never looks at cancellation: only the engine can stop it.
#[derive(Debug, Component, Default)]
#[component(name = "stuck")]
struct Stuck {
    input: Input<Value>,
}

impl Stuck {
    async fn on_input(&self, _: &Ctx<Self>, _: Value) -> Result<Reply> {
        std::future::pending::<()>().await;
        Ok(Reply::empty())
    }
}

/// Paused time: the sleep returns once every other task is parked, so the handler
/// is under way (parked in its endless wait) when the node is removed.
#[tokio::test(start_paused = true)]
async fn a_node_removed_while_its_handler_runs_stops_the_handler() {
    for component in ["stuck", "slow"] {
        let h = harness()
            .register::<Stuck>()
            .flow(FlowBuilder::new().node("n", component).build())
            .build()
            .await
            .expect("loads");
        let engine = h.engine().clone();
        let running = tokio::spawn(async move { engine.send("n:input", json!(1)).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!running.is_finished(), "{component} runs until its node goes");
        h.engine().remove("n", true).await.expect("removed");
        let result = tokio::time::timeout(Duration::from_secs(5), running)
            .await
            .expect("the handler stopped with its node")
            .expect("task");
        let err = result.expect_err("no reply from a removed node");
        // Either way the code and the words say why: the handler's own error
        // (cooperative: `ctx.cancelled()` resolved and it said so) too, whose text
        // would read as if its caller had given up.
        assert_eq!(
            err.code(),
            Some(tiny_sdk::error::code::NODE_REMOVED),
            "{component}: {err}"
        );
        assert!(
            err.message().starts_with("the node was removed while its handler ran"),
            "{component}: {err}"
        );
    }
}

#[tokio::test]
async fn a_hop_that_gives_up_says_how_many_attempts_and_how_long() {
    // `b` is of this module but never loads: each attempt waits for it, then the edge
    // policy retries; the final error tells the whole story.
    let flow = FlowBuilder::new()
        .node("f.m.relay-1", "relay")
        .edge_with("f.m.relay-1:out", "f.m.relay-2:input", json!("{{$}}"), fast_retry(3))
        .build();
    let engine = tiny_sdk::engine::Engine::builder()
        .module("m")
        .register::<Relay>()
        .node_wait(Duration::from_millis(100))
        .build();
    for n in flow.nodes {
        engine.apply(n).await.expect("applies");
    }
    let err = engine
        .send("f.m.relay-1:input", json!(1))
        .await
        .expect_err("nobody to deliver to");
    let text = err.to_string();
    assert!(text.contains("gave up after 3 attempts in "), "{text}");
    assert!(text.contains("this attempt waited 0.1 s"), "{text}");
    assert_eq!(err.code(), Some(tiny_sdk::error::code::NODE_NOT_FOUND));
}

/// Log lines written while the returned guard lives (this thread only).
fn capture_logs() -> (
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    tracing::subscriber::DefaultGuard,
) {
    #[derive(Clone)]
    struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut b) = self.0.lock() {
                b.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = Sink(buf.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || sink.clone())
        .finish();
    (buf, tracing::subscriber::set_default(subscriber))
}

#[tokio::test]
async fn an_error_that_fails_a_chain_is_logged_once_where_it_arose() {
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("b", "relay")
        .node("f", "flaky")
        .settings(json!({"failures": 9, "permanent": true}))
        .edge("a:out", "b:input", json!("{{$}}"))
        .edge("b:out", "f:input", json!("{{$}}"))
        .build();
    let h = harness().flow(flow).build().await.expect("loads");
    let (logs, _guard) = capture_logs();
    let err = h.send("a:input", json!(1)).await.expect_err("f fails for good");
    assert_eq!(err.origin(), Some("node `f` port `input`"), "{err}");
    let text = String::from_utf8(logs.lock().map(|l| l.clone()).unwrap_or_default()).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("message failed")).collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].contains("node=\"f\"") || lines[0].contains("node=f"),
        "{}",
        lines[0]
    );
}

#[tokio::test]
async fn a_refused_spec_is_logged_once_however_often_it_is_applied() {
    let h = harness().build().await.expect("an empty flow");
    let bad = FlowBuilder::new().node("typo", "relya").build().nodes.remove(0);
    let (logs, _guard) = capture_logs();
    // Applied again and again, as a controller does after each status write and on
    // its heartbeat: one line.
    for _ in 0..3 {
        assert!(h.engine().apply(bad.clone()).await.is_err());
    }
    let count = || {
        let text = String::from_utf8(logs.lock().map(|l| l.clone()).unwrap_or_default()).unwrap_or_default();
        text.lines().filter(|l| l.contains("node spec rejected")).count()
    };
    assert_eq!(count(), 1);
    // A different mistake is news again.
    let mut other = bad.clone();
    other.spec.component = "relyy".into();
    assert!(h.engine().apply(other).await.is_err());
    assert_eq!(count(), 2);
}

/// Settings written without `rename_all = "camelCase"`: the error port switch is
/// `enable_error_port`, which the engine reads as it reads Go's `enableErrorPort`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct SnakeSettings {
    #[serde(default)]
    enable_error_port: bool,
}

/// Always fails; its catch port is switched by snake_case settings.
#[derive(Debug, Component, Default)]
#[component(name = "snake", settings = SnakeSettings)]
struct Snake {
    input: Input<Value>,
    #[port(catch)]
    error: Output<ErrorMessage>,
}

impl Snake {
    async fn on_input(&self, _: &Ctx<Self>, _: Value) -> Result<Reply> {
        Err(Error::permanent("always"))
    }
}

#[tokio::test]
async fn a_snake_case_error_port_switch_is_read_too() {
    for (on, caught) in [(false, false), (true, true)] {
        let flow = FlowBuilder::new()
            .node("s", "snake")
            .settings(json!({"enable_error_port": on}))
            .edge("s:error", "sink:input", json!("{{$}}"))
            .node("sink", "relay")
            .build();
        let h = Harness::builder()
            .register::<Snake>()
            .register::<Relay>()
            .flow(flow)
            .build()
            .await
            .expect("loads");
        let sent = h.send("s:input", json!(1)).await;
        assert_eq!(sent.is_ok(), caught, "enable_error_port: {on}: {sent:?}");
        assert_eq!(h.emitted("s:error").len(), usize::from(caught));
    }
}

/// Settings naming the keys of a family.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct KeysSettings {
    #[serde(default)]
    keys: Vec<String>,
}

/// A family `out` beside a fixed port `out_a`.
#[derive(Debug, Component, Default)]
#[component(name = "clash", settings = KeysSettings)]
struct Clash {
    input: Input<Value>,
    #[port(keys = keys)]
    out: tiny_sdk::Outputs<Value>,
    out_a: Output<Value>,
}

#[handlers]
impl Clash {
    fn keys(settings: &KeysSettings) -> Vec<String> {
        settings.keys.clone()
    }

    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<()> {
        self.out.emit(ctx, "b", msg.clone()).await?;
        self.out_a.emit(ctx, msg).await?;
        Ok(())
    }
}

#[tokio::test]
async fn a_family_key_that_names_another_port_is_said() {
    for (keys, clash) in [(json!(["b"]), false), (json!(["a", "b"]), true)] {
        let flow = FlowBuilder::new()
            .node("c", "clash")
            .settings(json!({"keys": keys}))
            .build();
        let h = Harness::builder()
            .register::<Clash>()
            .flow(flow)
            .build()
            .await
            .expect("it runs");
        let error = h.report("c").expect("report").error;
        assert_eq!(error.is_some(), clash, "{keys}: {error:?}");
        if let Some(e) = error {
            assert!(e.to_string().contains("port `out_a` is named twice"), "{e}");
        }
    }
}

/// A directory whose list lags behind the API server, as a watch's store does: it says
/// `f.m.relay-2` is not there while `on_server` says it is.
struct LaggingList {
    on_server: std::sync::atomic::AtomicBool,
    asked: AtomicU32,
}

impl tiny_sdk::engine::NodeDirectory for LaggingList {
    fn exists(&self, _: &str) -> Option<bool> {
        Some(false)
    }
    fn confirm_absent<'a>(&'a self, _: &'a str) -> futures::future::BoxFuture<'a, Option<bool>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(std::future::ready(Some(!self.on_server.load(Ordering::SeqCst))))
    }
}

/// A flow used the moment it is created: the node is on the API server but not yet in
/// the module's list. The message waits for it (here 5 s of the list's lag, far past the
/// one second after which the list used to be believed), and is delivered once it loads;
/// a node the API server does not have fails at once, for good.
#[tokio::test(start_paused = true)]
async fn a_message_for_a_node_the_list_has_not_seen_yet_waits_for_it() {
    let flow = FlowBuilder::new()
        .node("f.m.relay-1", "relay")
        .edge("f.m.relay-1:out", "f.m.relay-2:input", json!("{{$}}"))
        .node("f.m.relay-2", "relay")
        .build();
    let list = std::sync::Arc::new(LaggingList {
        on_server: true.into(),
        asked: AtomicU32::new(0),
    });
    let engine = tiny_sdk::engine::Engine::builder()
        .module("m")
        .register::<Relay>()
        .directory(list.clone())
        .build();
    let mut nodes = flow.nodes.into_iter();
    let (first, second) = (nodes.next().expect("relay-1"), nodes.next().expect("relay-2"));
    engine.apply(first).await.expect("applies");
    let sender = engine.clone();
    let sent = tokio::spawn(async move { sender.send("f.m.relay-1:input", json!("hi")).await });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!sent.is_finished(), "the message did not wait for the node");
    assert!(list.asked.load(Ordering::SeqCst) >= 2, "the directory was not asked");
    engine.apply(second).await.expect("applies");
    sent.await.expect("joined").expect("delivered once the node loaded");

    // Gone from the API server too: the next message fails at once, for good.
    list.on_server.store(false, Ordering::SeqCst);
    engine.remove("f.m.relay-2", true).await.expect("removed");
    let started = tokio::time::Instant::now();
    let err = engine
        .send("f.m.relay-1:input", json!("again"))
        .await
        .expect_err("no such node");
    assert_eq!(err.code(), Some(code::NODE_NOT_FOUND), "{err}");
    assert!(err.to_string().contains("no TinyNode of that name exists"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

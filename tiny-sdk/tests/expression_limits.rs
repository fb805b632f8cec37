//! One node's expressions cannot take the module down: a long chain runs, an expression
//! over the limits is refused with the node and port named while the others run, and a
//! message that asks a mapping to build too much fails that message alone.

use serde_json::json;
use tiny_sdk::flow::FlowBuilder;
use tiny_sdk::harness::{Harness, Relay};

fn chain(terms: usize) -> String {
    format!("{{{{{}}}}}", vec!["1"; terms].join("+"))
}

fn flow(mapping: serde_json::Value) -> tiny_sdk::flow::Flow {
    FlowBuilder::new()
        .node("a", "relay")
        .edge("a:out", "b:input", mapping)
        .node("b", "relay")
        .node("other", "relay")
        .build()
}

/// Ten thousand terms used to be ten thousand nested calls: a stack overflow that no
/// handler can catch, in every replica, for as long as the node exists.
#[tokio::test]
async fn a_ten_thousand_term_mapping_runs_on_a_worker() {
    let h = Harness::builder()
        .register::<Relay>()
        .flow(flow(json!({"n": chain(tiny_expr::limits::MAX_TERMS)})))
        .build()
        .await
        .expect("loads");
    h.send("a:input", json!({})).await.expect("delivered");
    assert_eq!(h.arrivals("b:input"), [json!({"n": tiny_expr::limits::MAX_TERMS})]);
}

#[tokio::test]
async fn an_expression_over_the_limits_is_refused_on_its_node_alone() {
    let (h, errors) = Harness::builder()
        .register::<Relay>()
        .flow(flow(json!({"n": chain(100_000)})))
        .build_lenient()
        .await
        .expect("built");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "b");
    let text = errors[0].1.to_string();
    assert!(text.contains("port `input` (edge from `a:out`)"), "{text}");
    assert!(text.contains("at /n"), "{text}");
    assert!(text.contains("more than the limit of 65536"), "{text}");
    assert!(
        text.len() < 600,
        "the error quotes the whole expression: {} bytes",
        text.len()
    );
    h.send("other:input", json!(7)).await.expect("the other node runs");
    assert_eq!(h.emitted("other:out"), [json!(7)]);
}

#[tokio::test]
async fn a_message_that_would_build_too_much_fails_alone() {
    let h = Harness::builder()
        .register::<Relay>()
        .flow(flow(json!({"s": "{{replace($.s, '', $.t)}}"})))
        .strict_expressions()
        .build()
        .await
        .expect("loads");
    // 100k × 1 KiB: 100 MB asked for by a 100 KB message.
    let big = json!({"s": "a".repeat(100_000), "t": "b".repeat(1024)});
    let err = h.send("a:input", big).await.expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("would build more than 67108864 bytes"), "{text}");
    h.clear();
    h.send("a:input", json!({"s": "ab", "t": "-"}))
        .await
        .expect("delivered");
    assert_eq!(h.arrivals("b:input"), [json!({"s": "-a-b-"})]);
}

//! The common module's agent tools (`array_get`, as Go's; `array_filter`, `group_by`)
//! called as a platform agent calls them (`Engine::call_tool`, what the NATS
//! receivers serve for `x-mode: rpc`): a fresh instance, default settings, the answer
//! on the tool's output port; and what is not a tool refused.

use serde_json::{Value, json};
use tiny_sdk::{engine::Engine, error::code};
use tokio_util::sync::CancellationToken;

fn engine() -> Engine {
    Engine::builder()
        .module("common-module-v0")
        .registry(tiny_example_common::registry())
        .build()
}

async fn call(engine: &Engine, component: &str, payload: Value) -> tiny_sdk::Result<Value> {
    let bytes = serde_json::to_vec(&payload).expect("JSON");
    let reply = engine.call_tool(component, &bytes, CancellationToken::new()).await?;
    Ok(reply.into_value().unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_common_tools_answer_from_the_call_alone() {
    let e = engine();
    let got = call(&e, "array_get", json!({"array": ["a", "b", "c"], "index": 2})).await;
    assert_eq!(got.expect("an item"), json!({"item": "b", "index": 2}));
    let filtered = call(
        &e,
        "array_filter",
        json!({"array": [{"n": 1}, {"n": 5}, {"n": 7}], "query": "$.n > 3"}),
    )
    .await
    .expect("filtered");
    assert_eq!(
        (filtered["count"].clone(), filtered["total"].clone()),
        (json!(2), json!(3)),
        "{filtered}"
    );
    let grouped = call(
        &e,
        "group_by",
        json!({"items": [{"k": "x"}, {"k": "y"}, {"k": "x"}], "groupByPath": "k"}),
    )
    .await
    .expect("grouped");
    assert_eq!(grouped["groups"].as_array().map(Vec::len), Some(2), "{grouped}");
    assert_eq!(grouped["groups"][0]["count"], json!(2), "{grouped}");
}

#[tokio::test]
async fn bad_calls_are_refused_naming_what_is_wrong() {
    let e = engine();
    // The component's own failure (its error port is off in a fresh instance).
    let out_of_range = call(&e, "array_get", json!({"array": ["a"], "index": 3}))
        .await
        .expect_err("out of range");
    assert!(out_of_range.message().contains("item #3 not found"), "{out_of_range}");
    // A payload of the wrong shape: the field named.
    let wrong = call(&e, "array_get", json!({"array": ["a"], "index": "one"}))
        .await
        .expect_err("not a number");
    assert_eq!(wrong.code(), Some(code::UNDECODABLE), "{wrong}");
    assert!(wrong.message().contains("index"), "{wrong}");
    // Stateful components are not tools.
    for component in ["ticker", "kv", "collect", "array_split"] {
        let e = call(&e, component, json!({})).await.expect_err("not a tool");
        assert_eq!(e.code(), Some(code::NOT_AGENT_TOOL), "{component}: {e}");
    }
    // Every tool is tagged as Go's build tags it; nothing else is.
    let registry = tiny_example_common::registry();
    let mut tools: Vec<&str> = registry
        .iter()
        .filter(|(_, entry)| (entry.agent_tool)().is_some())
        .map(|(name, entry)| {
            assert!((entry.info)().tags.iter().any(|t| t == "agent_tool"), "{name}");
            name
        })
        .collect();
    tools.sort_unstable();
    assert_eq!(tools, ["array_filter", "array_get", "group_by"]);
    for (name, entry) in registry.iter().filter(|(_, entry)| (entry.agent_tool)().is_none()) {
        assert!(!(entry.info)().tags.iter().any(|t| t == "agent_tool"), "{name}");
    }
}

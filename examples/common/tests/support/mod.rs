//! What the in-process component tests share: a harness with the common module's
//! components and a relay, and readers of node reports and port schemas.

#![allow(dead_code, unused_imports, reason = "each test file uses some of these")]

pub mod cluster;

pub use std::time::{Duration, Instant};

pub use serde_json::{Value, json};
pub use tiny_example_common::{
    array_split::ArraySplit, asynchronous::Async, cron::Cron, debug::Debug, delay::Delay, kv::Kv, router::Router,
    signal::Signal, ticker::Ticker,
};
pub use tiny_sdk::{
    Hop, Msg, Position,
    engine::{Delivery, NodeReport, PortReport},
    error::code,
    flow::{Flow, FlowBuilder},
    harness::{Harness, HarnessBuilder, Relay},
    prelude::*,
};

/// Answers with `{"answer": <input>}`, or fails when the input says `fail: true`.
#[derive(Component, Default, Debug)]
#[component(name = "answer")]
pub struct Answer {
    #[port(position = Left)]
    input: Input<Value>,
}

#[handlers]
impl Answer {
    async fn on_input(&self, _: &Ctx<Self>, msg: Value) -> Result<Reply> {
        if msg.get("fail") == Some(&json!(true)) {
            return Err(Error::permanent(format!("told to fail on {msg}")));
        }
        Ok(Reply::value(json!({ "answer": msg })))
    }
}

pub fn builder() -> HarnessBuilder {
    Harness::builder()
        .register::<Ticker>()
        .register::<Cron>()
        .register::<Signal>()
        .register::<Debug>()
        .register::<Delay>()
        .register::<Router>()
        .register::<ArraySplit>()
        .register::<Async>()
        .register::<Kv>()
        .register::<Relay>()
        .register::<Answer>()
}

pub async fn harness(flow: Flow) -> Harness {
    builder().flow(flow).build().await.expect("the flow loads")
}

pub fn report(h: &Harness, node: &str) -> NodeReport {
    h.report(node).unwrap_or_else(|| panic!("node `{node}` has a report"))
}

pub fn port(r: &NodeReport, name: &str) -> PortReport {
    r.ports
        .iter()
        .find(|p| p.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("port `{name}` in {:?}", names(r)))
}

pub fn names(r: &NodeReport) -> Vec<String> {
    r.ports.iter().map(|p| p.name.clone()).collect()
}

/// The configuration a node's `_control` port shows.
pub fn control(h: &Harness, node: &str) -> Value {
    port(&report(h, node), "_control").configuration
}

/// The root definition of a port schema.
pub fn root(schema: &Value) -> Value {
    let mut schema = schema.clone();
    tiny_sdk::schema::root_mut(&mut schema)
        .cloned()
        .unwrap_or_else(|| panic!("a root definition in {schema}"))
}

/// The property names of a port schema's root.
pub fn properties(schema: &Value) -> Vec<String> {
    root(schema)["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The schema of the property at `path` (`$.conditions[0].route`).
pub fn at(schema: &Value, path: &str) -> Value {
    let mut schema = schema.clone();
    tiny_sdk::schema::at_path_mut(&mut schema, path)
        .cloned()
        .unwrap_or_else(|| panic!("{path} in {schema}"))
}

/// Whether `done` holds within `within`, asked every 5 ms. Tokio's clock, so that
/// under paused time the bound is the test's own time, not a busy loop's.
pub async fn eventually(within: Duration, done: impl Fn() -> bool) -> bool {
    let end = tokio::time::Instant::now() + within;
    while tokio::time::Instant::now() < end {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    done()
}

pub fn reply(r: Result<Reply>) -> Option<Value> {
    r.expect("the message is handled").into_value()
}

pub async fn ticker(settings: Value) -> Harness {
    harness(
        FlowBuilder::new()
            .node("t", "ticker")
            .settings(settings)
            .node("sink", "relay")
            .edge("t:out", "sink:input", json!("{{$}}"))
            .build(),
    )
    .await
}

pub fn ticks(h: &Harness) -> Vec<u64> {
    h.arrivals("sink:input")
        .iter()
        .map(|m| m["tick"].as_u64().expect("a tick number"))
        .collect()
}

pub async fn cron(settings: Value) -> Harness {
    harness(
        FlowBuilder::new()
            .node("c", "cron")
            .settings(settings)
            .node("sink", "relay")
            .edge("c:out", "sink:input", json!("{{$}}"))
            .build(),
    )
    .await
}

//! The common module's nine components through the SDK's public surface, in-process:
//! messages in, messages out, `_control` presses, settings changes, node reports.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tiny_example_common::{
    array_split::ArraySplit, asynchronous::Async, cron::Cron, debug::Debug, delay::Delay, kv::Kv, router::Router,
    signal::Signal, ticker::Ticker,
};
use tiny_sdk::{
    Hop, Msg, Position,
    engine::{Delivery, NodeReport, PortReport},
    error::code,
    flow::{Flow, FlowBuilder},
    harness::{Harness, HarnessBuilder, Relay},
    prelude::*,
};

// ---------------------------------------------------------------------------------
// Helpers

/// Answers with `{"answer": <input>}`, or fails when the input says `fail: true`.
#[derive(Component, Default, Debug)]
#[component(name = "answer")]
struct Answer {
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

fn builder() -> HarnessBuilder {
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

async fn harness(flow: Flow) -> Harness {
    builder().flow(flow).build().await.expect("the flow loads")
}

fn report(h: &Harness, node: &str) -> NodeReport {
    h.report(node).unwrap_or_else(|| panic!("node `{node}` has a report"))
}

fn port(r: &NodeReport, name: &str) -> PortReport {
    r.ports
        .iter()
        .find(|p| p.name == name)
        .cloned()
        .unwrap_or_else(|| panic!("port `{name}` in {:?}", names(r)))
}

fn names(r: &NodeReport) -> Vec<String> {
    r.ports.iter().map(|p| p.name.clone()).collect()
}

/// The configuration a node's `_control` port shows.
fn control(h: &Harness, node: &str) -> Value {
    port(&report(h, node), "_control").configuration
}

/// The root definition of a port schema.
fn root(schema: &Value) -> Value {
    let mut schema = schema.clone();
    tiny_sdk::schema::root_mut(&mut schema)
        .cloned()
        .unwrap_or_else(|| panic!("a root definition in {schema}"))
}

/// The property names of a port schema's root.
fn properties(schema: &Value) -> Vec<String> {
    root(schema)["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The schema of the property at `path` (`$.conditions[0].route`).
fn at(schema: &Value, path: &str) -> Value {
    let mut schema = schema.clone();
    tiny_sdk::schema::at_path_mut(&mut schema, path)
        .cloned()
        .unwrap_or_else(|| panic!("{path} in {schema}"))
}

/// Waits (up to `within`) until `done` holds; `false` if it never did.
async fn eventually(within: Duration, done: impl Fn() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    done()
}

fn reply(r: Result<Reply>) -> Option<Value> {
    r.expect("the message is handled").into_value()
}

// ---------------------------------------------------------------------------------
// ticker

async fn ticker(settings: Value) -> Harness {
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

fn ticks(h: &Harness) -> Vec<u64> {
    h.arrivals("sink:input")
        .iter()
        .map(|m| m["tick"].as_u64().expect("a tick number"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticker_starts_from_control_counts_ticks_and_stops() {
    let h = ticker(json!({"delay": 30, "countTicks": true, "context": {"from": "settings"}})).await;

    // Stopped: a Start button, no Stop.
    let r = report(&h, "t");
    let view = port(&r, "_control");
    assert_eq!(view.configuration["status"], "Not running");
    assert_eq!(view.configuration["start"], true);
    assert_eq!(view.configuration.get("stop"), None, "{}", view.configuration);
    assert_eq!(view.configuration["context"], json!({"from": "settings"}));
    let props = properties(&view.schema);
    assert!(
        props.contains(&"start".into()) && !props.contains(&"stop".into()),
        "{props:?}"
    );
    assert_eq!(at(&view.schema, "$.context").get("readonly"), None);
    assert_eq!(port(&r, "out").position, Position::Right);
    // countTicks switches the out schema to {context, tick}.
    assert!(properties(&port(&r, "out").schema).contains(&"tick".into()));

    h.send("t:_control", json!({"start": true, "context": {"n": 1}}))
        .await
        .expect("Start is pressed");
    assert!(
        eventually(Duration::from_secs(1), || h.arrivals("sink:input").len() >= 3).await,
        "three ticks within a second"
    );
    let first = h.arrivals("sink:input")[0].clone();
    assert_eq!(
        first,
        json!({"context": {"n": 1}, "tick": 1}),
        "the first tick is at once"
    );

    // Running: a Stop button, the context is read-only, ticks counted in state.
    let view = port(&report(&h, "t"), "_control");
    assert_eq!(view.configuration["status"], "Running");
    assert_eq!(view.configuration["stop"], true);
    assert_eq!(view.configuration.get("start"), None, "{}", view.configuration);
    assert!(view.configuration["ticks"].as_u64().expect("ticks") >= 3);
    let props = properties(&view.schema);
    assert!(
        props.contains(&"stop".into()) && !props.contains(&"start".into()),
        "{props:?}"
    );
    assert_eq!(at(&view.schema, "$.context")["readonly"], true);

    // A second Start while running changes nothing.
    h.send("t:_control", json!({"start": true, "context": {"n": 2}}))
        .await
        .expect("pressed");

    h.send("t:_control", json!({"stop": true}))
        .await
        .expect("Stop is pressed");
    let seen = ticks(&h);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(ticks(&h), seen, "no tick after Stop");
    let expected: Vec<u64> = (1..=seen.len() as u64).collect();
    assert_eq!(seen, expected, "every tick once, in order");
    assert!(h.arrivals("sink:input").iter().all(|m| m["context"] == json!({"n": 1})));

    let view = control(&h, "t");
    assert_eq!(view["status"], "Not running");
    assert_eq!(view["start"], true);
    assert_eq!(view.get("stop"), None);
    assert_eq!(view["ticks"], json!(seen.len()), "the count stays in state");

    // Start again: the count goes on.
    h.send("t:_control", json!({"start": true})).await.expect("Start");
    assert!(eventually(Duration::from_secs(1), || ticks(&h).len() > seen.len()).await);
    h.send("t:_control", json!({"stop": true})).await.expect("Stop");
    let all = ticks(&h);
    assert_eq!(all[seen.len()], seen.len() as u64 + 1, "{all:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticker_without_count_ticks_sends_the_bare_context_as_go() {
    let h = ticker(json!({"delay": 1000, "context": {"hello": "world"}})).await;
    let r = report(&h, "t");
    assert!(!properties(&port(&r, "out").schema).contains(&"tick".into()));
    // The editor presses Start with the context its view shows.
    let shown = control(&h, "t")["context"].clone();
    h.send("t:_control", json!({"start": true, "context": shown}))
        .await
        .expect("Start");
    assert!(eventually(Duration::from_secs(1), || !h.arrivals("sink:input").is_empty()).await);
    assert_eq!(h.arrivals("sink:input"), vec![json!({"hello": "world"})]);
    h.send("t:_control", json!({"stop": true})).await.expect("Stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_without_a_context_ticks_with_none_as_go() {
    // Go decodes the press into a fresh control value: its context, here none,
    // replaces the one shown, and the ticks carry it.
    let h = ticker(json!({"delay": 1000, "context": {"from": "settings"}})).await;
    h.send("t:_control", json!({"start": true})).await.expect("Start");
    assert!(eventually(Duration::from_secs(1), || !h.arrivals("sink:input").is_empty()).await);
    assert_eq!(h.arrivals("sink:input"), vec![Value::Null]);
    let view = control(&h, "t");
    assert_eq!((&view["status"], &view["context"]), (&json!("Running"), &Value::Null));
    // Stopped, the view offers the settings' context again.
    h.send("t:_control", json!({"stop": true})).await.expect("Stop");
    assert_eq!(control(&h, "t")["context"], json!({"from": "settings"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticker_moves_with_leadership_and_counts_on() {
    let h = ticker(json!({"delay": 30, "countTicks": true})).await;
    h.send("t:_control", json!({"start": true, "context": "x"}))
        .await
        .expect("Start");
    assert!(eventually(Duration::from_secs(1), || ticks(&h).len() >= 2).await);

    h.engine().set_leader(false).await;
    let before = ticks(&h);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(ticks(&h), before, "a replica that does not lead does not tick");
    // Nor does a press start it there.
    h.send("t:_control", json!({"start": true})).await.expect("pressed");
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert_eq!(ticks(&h), before, "a press on a follower does nothing");

    h.engine().set_leader(true).await;
    assert!(
        eventually(Duration::from_secs(1), || ticks(&h).len() >= before.len() + 2).await,
        "the new leader restarts the ticker from its state"
    );
    h.send("t:_control", json!({"stop": true})).await.expect("Stop");
    let all = ticks(&h);
    let expected: Vec<u64> = (1..=all.len() as u64).collect();
    assert_eq!(all, expected, "the count goes on, no tick number twice or skipped");
    assert!(h.arrivals("sink:input").iter().all(|m| m["context"] == "x"));
}

/// A ticker feeding a relay, whose TinyNode holds `metadata` in `status.metadata`.
async fn ticker_with_metadata(settings: Value, metadata: &[(&str, String)]) -> Harness {
    let mut flow = FlowBuilder::new()
        .node("t", "ticker")
        .settings(settings)
        .node("sink", "relay")
        .edge("t:out", "sink:input", json!("{{$}}"))
        .build();
    flow.nodes[0].metadata = metadata.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect();
    harness(flow).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticker_that_ran_under_go_carries_on_with_its_config() {
    // What Go's ticker leaves on a running node: plain strings, the config as JSON text.
    let h = ticker_with_metadata(
        json!({"delay": 30, "context": {"from": "settings"}}),
        &[
            ("ticker-running", "true".to_owned()),
            ("ticker-config", r#"{"context":{"from":"go"},"delay":30}"#.to_owned()),
        ],
    )
    .await;
    assert!(
        eventually(Duration::from_secs(1), || h.arrivals("sink:input").len() >= 2).await,
        "it ticks on its own"
    );
    assert!(h.arrivals("sink:input").iter().all(|m| *m == json!({"from": "go"})));
    let view = control(&h, "t");
    assert_eq!(
        (&view["status"], &view["context"]),
        (&json!("Running"), &json!({"from": "go"}))
    );
    h.send("t:_control", json!({"stop": true})).await.expect("Stop");
    assert_eq!(control(&h, "t")["status"], "Not running");
    let seen = h.arrivals("sink:input").len();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(h.arrivals("sink:input").len(), seen, "no tick after Stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticker_whose_state_says_running_starts_when_it_loads() {
    use base64::Engine as _;
    let b64 = |v: Value| base64::engine::general_purpose::STANDARD.encode(v.to_string());
    let mut flow = FlowBuilder::new()
        .node("t", "ticker")
        .settings(json!({"delay": 30, "countTicks": true}))
        .node("sink", "relay")
        .edge("t:out", "sink:input", json!("{{$}}"))
        .build();
    // What this module wrote before it used Go's keys (`_state/<key>`, base64 JSON).
    flow.nodes[0].metadata = [
        ("_state/running".to_owned(), b64(json!(true))),
        ("_state/ticks".to_owned(), b64(json!(41))),
        ("_state/context".to_owned(), b64(json!({"restored": true}))),
    ]
    .into_iter()
    .collect();
    let h = harness(flow).await;
    assert!(eventually(Duration::from_secs(1), || ticks(&h).len() >= 2).await);
    h.send("t:_control", json!({"stop": true})).await.expect("Stop");
    let arrivals = h.arrivals("sink:input");
    assert_eq!(
        arrivals[0],
        json!({"context": {"restored": true}, "tick": 42}),
        "the first tick after a restart is the next number, and it arrives"
    );
    assert_eq!(arrivals[1]["tick"], 43);
}

// ---------------------------------------------------------------------------------
// cron

async fn cron(settings: Value) -> Harness {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cron_with_a_seconds_field_emits_every_second_and_stops() {
    let h = cron(json!({"schedule": "*/5 * * * *", "context": {"from": "settings"}})).await;
    let view = port(&report(&h, "c"), "_control");
    assert_eq!(view.configuration["status"], "Not running");
    assert_eq!(view.configuration["schedule"], "*/5 * * * *");
    assert_eq!(view.configuration["start"], true);
    assert_eq!(view.configuration.get("nextRun"), None);
    assert!(!properties(&view.schema).contains(&"nextRun".into()));

    h.send(
        "c:_control",
        json!({"start": true, "schedule": "* * * * * *", "context": {"c": 1}}),
    )
    .await
    .expect("Start");
    // Running: the next run shows (RFC 3339), and schedule and context are read-only.
    assert!(
        eventually(Duration::from_millis(500), || {
            control(&h, "c")["nextRun"].as_str().is_some_and(|s| !s.is_empty())
        })
        .await,
        "the next run shows: {}",
        control(&h, "c")
    );
    let view = port(&report(&h, "c"), "_control");
    assert_eq!(view.configuration["status"], "Running");
    assert_eq!(view.configuration["stop"], true);
    assert_eq!(view.configuration["schedule"], "* * * * * *");
    let next = view.configuration["nextRun"].as_str().expect("a time").to_owned();
    assert!(next.parse::<jiff::Timestamp>().is_ok(), "{next}");
    assert_eq!(at(&view.schema, "$.schedule")["readonly"], true);
    assert_eq!(at(&view.schema, "$.context")["readonly"], true);

    assert!(
        eventually(Duration::from_millis(1500), || !h.arrivals("sink:input").is_empty()).await,
        "an every-second schedule emits within a second"
    );
    h.send("c:_control", json!({"stop": true})).await.expect("Stop");
    assert_eq!(h.arrivals("sink:input")[0], json!({"c": 1}));
    let view = control(&h, "c");
    assert_eq!(view["status"], "Not running");
    assert_eq!(view.get("nextRun"), None);
    assert_eq!(view["start"], true);
}

#[tokio::test]
async fn an_invalid_schedule_shows_in_the_status_and_does_not_start() {
    let h = cron(json!({"schedule": "*/1 * * * *"})).await;
    h.send("c:_control", json!({"start": true, "schedule": "every tuesday"}))
        .await
        .expect("the press itself succeeds, as in Go");
    let view = control(&h, "c");
    let status = view["status"].as_str().expect("a status");
    assert!(status.starts_with("invalid schedule \"every tuesday\""), "{status}");
    assert_eq!(view["start"], true);
    assert_eq!(view.get("stop"), None);

    // A valid one clears the error.
    h.send("c:_control", json!({"start": true, "schedule": "0 0 1 1 *"}))
        .await
        .expect("Start");
    assert_eq!(control(&h, "c")["status"], "Running");
    h.send("c:_control", json!({"stop": true})).await.expect("Stop");
    assert_eq!(control(&h, "c")["status"], "Not running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_that_ran_under_go_carries_on_and_takes_a_new_context_while_running() {
    let mut flow = FlowBuilder::new()
        .node("c", "cron")
        .settings(json!({"schedule": "0 0 1 1 *", "context": {"from": "settings"}}))
        .node("sink", "relay")
        .edge("c:out", "sink:input", json!("{{$}}"))
        .build();
    // What Go's cron leaves on a running node: plain strings, the context as JSON text.
    flow.nodes[0].metadata = [
        ("cron-running", "true"),
        ("cron-schedule", "* * * * * *"),
        ("cron-context", r#"{"from":"go"}"#),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let h = harness(flow).await;
    let view = control(&h, "c");
    assert_eq!(
        (&view["status"], &view["schedule"], &view["context"]),
        (&json!("Running"), &json!("* * * * * *"), &json!({"from": "go"}))
    );
    assert!(
        eventually(Duration::from_millis(1500), || !h.arrivals("sink:input").is_empty()).await,
        "Go's every-second schedule runs"
    );
    assert_eq!(h.arrivals("sink:input")[0], json!({"from": "go"}));
    // As Go: a message without Stop while running brings a new context.
    h.send("c:_control", json!({"context": {"new": 1}}))
        .await
        .expect("handled");
    assert_eq!(control(&h, "c")["context"], json!({"new": 1}));
    let before = h.arrivals("sink:input").len();
    assert!(
        eventually(Duration::from_millis(1500), || h.arrivals("sink:input").len() > before).await,
        "runs on"
    );
    assert_eq!(h.arrivals("sink:input").last(), Some(&json!({"new": 1})));
    h.send("c:_control", json!({"stop": true})).await.expect("Stop");
    let view = control(&h, "c");
    assert_eq!(
        (&view["status"], &view["schedule"], &view["context"]),
        (&json!("Not running"), &json!("0 0 1 1 *"), &json!({"from": "settings"})),
        "stopped, Go's keys are gone and the settings show"
    );
}

/// As Go's: settings changed while the cron runs are the running ones: the next run
/// sends their context, and their schedule is kept for the next start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_settings_while_a_cron_runs_bring_their_context() {
    let settings = |from: &str| json!({"schedule": "* * * * * *", "context": {"from": from}});
    let flow = |from: &str| {
        FlowBuilder::new()
            .node("c", "cron")
            .settings(settings(from))
            .node("sink", "relay")
            .edge("c:out", "sink:input", json!("{{$}}"))
            .build()
    };
    let h = harness(flow("old")).await;
    h.send("c:_control", json!({"start": true, "context": {"from": "press"}}))
        .await
        .expect("Start");
    assert!(
        eventually(Duration::from_millis(1500), || !h.arrivals("sink:input").is_empty()).await,
        "runs"
    );
    let node = flow("new").nodes.remove(0);
    h.engine().apply(node).await.expect("new settings apply");
    assert_eq!(control(&h, "c")["context"], json!({"from": "new"}));
    let before = h.arrivals("sink:input").len();
    assert!(
        eventually(Duration::from_millis(1500), || h.arrivals("sink:input").len() > before).await,
        "runs on"
    );
    assert_eq!(h.arrivals("sink:input").last(), Some(&json!({"from": "new"})));
    let metadata = h.engine().node_metadata("c").expect("metadata");
    assert_eq!(
        metadata.get("cron-context").map(String::as_str),
        Some(r#"{"from":"new"}"#)
    );
    assert_eq!(metadata.get("cron-schedule").map(String::as_str), Some("* * * * * *"));
    h.send("c:_control", json!({"stop": true})).await.expect("Stop");
}

#[test]
fn cron_accepts_five_and_six_field_patterns_and_aliases() {
    use tiny_example_common::cron::parse;
    for ok in [
        "*/5 * * * *",
        "0 9 * * 1-5",
        "* * * * * *",
        "*/10 * * * * *",
        "0 0 0 1 1 * 2030",
        "@hourly",
    ] {
        assert!(parse(ok).is_ok(), "{ok}");
    }
    for bad in ["", "* * *", "61 * * * *", "nope"] {
        let err = parse(bad).expect_err(bad);
        assert!(err.to_string().contains("invalid schedule"), "{err}");
    }
}

// ---------------------------------------------------------------------------------
// signal

async fn signal() -> Harness {
    harness(
        FlowBuilder::new()
            .node("s", "signal")
            .settings(json!({"context": {"from": "settings"}}))
            .node("d", "delay")
            .node("sink", "relay")
            .edge("s:out", "d:in", json!({"context": "{{$}}", "delay": 2000}))
            .edge("d:out", "sink:input", json!("{{$.context}}"))
            .build(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signal_send_emits_without_waiting_for_the_flow() {
    let h = signal().await;
    let view = control(&h, "s");
    assert_eq!(view, json!({"context": {"from": "settings"}, "send": false}));

    // The press returns before the flow behind it is done: the sink has nothing yet
    // (the delay downstream is 2 s, longer than a loaded machine takes to look).
    let r = h.send("s:_control", json!({"send": true, "context": {"id": 1}})).await;
    assert_eq!(reply(r), None);
    assert!(h.arrivals("sink:input").is_empty(), "the press waited for the flow");
    assert!(eventually(Duration::from_secs(5), || !h.emitted("s:out").is_empty()).await);
    assert_eq!(h.emitted("s:out"), vec![json!({"id": 1})]);
    assert!(eventually(Duration::from_secs(5), || !h.arrivals("sink:input").is_empty()).await);
    assert_eq!(h.arrivals("sink:input"), vec![json!({"id": 1})]);

    // Without a context the settings' is sent.
    h.send("s:_control", json!({"send": true})).await.expect("Send");
    assert!(eventually(Duration::from_secs(5), || h.arrivals("sink:input").len() == 2).await);
    assert_eq!(h.arrivals("sink:input")[1], json!({"from": "settings"}));
}

/// Paused time: the sleep returns once every task is parked, so an emit that would
/// happen has happened when the test looks.
#[tokio::test(start_paused = true)]
async fn signal_without_send_does_nothing() {
    let h = signal().await;
    h.send("s:_control", json!({"send": false, "context": {"id": 2}}))
        .await
        .expect("handled");
    h.send("s:_control", json!({"context": {"id": 3}}))
        .await
        .expect("handled");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(h.emitted("s:out").is_empty());
}

#[tokio::test(start_paused = true)]
async fn signal_on_a_follower_does_nothing() {
    let h = signal().await;
    h.engine().set_leader(false).await;
    h.send("s:_control", json!({"send": true})).await.expect("handled");
    tokio::time::sleep(Duration::from_millis(30)).await;
    assert!(h.emitted("s:out").is_empty());
}

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

#[tokio::test]
async fn delay_stops_when_its_caller_gives_up() {
    let h = delay().await;
    let hop = Hop::default();
    let cancel = hop.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(30)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let err = h
        .engine()
        .deliver(
            Delivery::to("d:in", Msg::from_json(json!({"context": 1, "delay": 5000})))
                .expect("an address")
                .hop(hop),
        )
        .await
        .expect_err("cancelled");
    assert!(started.elapsed() < Duration::from_secs(1));
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
    // The slot comes back once the background emit is done.
    assert!(eventually(Duration::from_secs(5), || h.arrivals("ans:input").len() == 2).await);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
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

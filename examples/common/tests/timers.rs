//! The common module's components that keep time or start flows on their own
//! (ticker, cron, signal), through the SDK's public surface, in-process.

mod support;

use support::*;

// ---------------------------------------------------------------------------------
// ticker

// Paused time: a `sleep` here returns once every other task is parked, so "no tick
// after Stop" is read after the ticker's own timers had their turn, not after a guess.
#[tokio::test(start_paused = true)]
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
    tokio::time::sleep(Duration::from_millis(100)).await; // three delays of paused time
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

// Paused time: "a follower does not tick" is read over 100 ms of the ticker's own clock
// (three of its 30 ms ticks), which a loaded machine cannot shorten.
#[tokio::test(start_paused = true)]
async fn ticker_moves_with_leadership_and_counts_on() {
    let h = ticker(json!({"delay": 30, "countTicks": true})).await;
    h.send("t:_control", json!({"start": true, "context": "x"}))
        .await
        .expect("Start");
    assert!(eventually(Duration::from_secs(1), || ticks(&h).len() >= 2).await);

    h.engine().set_leader(false).await;
    // Returns once every task is parked: a tick already on its way has arrived.
    tokio::time::sleep(Duration::from_millis(1)).await;
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

//! The common module's ports as a node's status shows them (`status.ports`: name,
//! label, position, source, schema, configuration), shaped by the settings and the
//! `_control` view in force. Every schema must pass `ui_schema_tests::check` too:
//! shaping a port (an enum from the settings, a button removed from the view) keeps
//! the editor's rules.

use std::time::Duration;

use serde_json::{Value, json};
use tiny_example_common::{cron::Cron, kv::Kv, router::Router, ticker::Ticker};
use tiny_sdk::{engine::NodeReport, flow::FlowBuilder, harness::Harness};
use ui_schema_tests::check;

/// A harness with one node `n` of `component` under `settings`.
async fn node(component: &str, settings: Value) -> Harness {
    Harness::builder()
        .register::<Ticker>()
        .register::<Cron>()
        .register::<Router>()
        .register::<Kv>()
        .flow(FlowBuilder::new().node("n", component).settings(settings).build())
        .build()
        .await
        .expect("the node loads")
}

fn report(h: &Harness) -> NodeReport {
    let r = h.report("n").expect("a report");
    assert!(r.error.is_none(), "{:?}", r.error);
    r
}

/// The ports as `status.ports` holds them (decoded), sorted by name; only `only` when
/// given.
fn status(r: &NodeReport, only: Option<&str>) -> Value {
    let ports = r
        .ports
        .iter()
        .filter(|p| only.is_none_or(|name| p.name == name))
        .map(|p| {
            if let Err(problems) = check(&p.schema) {
                panic!(
                    "port `{}` breaks the editor's rules: {problems:#?}\n{:#}",
                    p.name, p.schema
                );
            }
            json!({
                "name": p.name,
                "label": p.label,
                "position": p.position.as_int(),
                "source": p.source,
                "schema": p.schema,
                "configuration": p.configuration,
            })
        })
        .collect();
    Value::Array(ports)
}

/// Waits (up to a second) until `done` holds.
async fn eventually(done: impl Fn() -> bool) {
    for _ in 0..200 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(done(), "not within a second");
}

#[tokio::test]
async fn router_ports() {
    let h = node("router", json!({"routes": ["A", "B", "C"]})).await;
    insta::assert_json_snapshot!(status(&report(&h), None));
}

#[tokio::test]
async fn router_ports_with_default() {
    let h = node("router", json!({"routes": ["Fast", "slow"], "enableDefaultPort": true})).await;
    insta::assert_json_snapshot!(status(&report(&h), None));
}

#[tokio::test]
async fn ticker_control_stopped() {
    let h = node("ticker", json!({"delay": 60000, "context": {"n": 1}})).await;
    insta::assert_json_snapshot!(status(&report(&h), Some("_control")));
}

#[tokio::test]
async fn ticker_control_running() {
    let h = node(
        "ticker",
        json!({"delay": 60000, "context": {"n": 1}, "countTicks": true}),
    )
    .await;
    // As the editor presses Start: with the context its view shows.
    h.send("n:_control", json!({"start": true, "context": {"n": 1}}))
        .await
        .expect("Start");
    eventually(|| {
        report(&h)
            .ports
            .iter()
            .any(|p| p.name == "_control" && p.configuration["ticks"] == 1)
    })
    .await;
    // With countTicks, `out` carries `{context, tick}`.
    insta::assert_json_snapshot!(status(&report(&h), None));
    h.send("n:_control", json!({"stop": true})).await.expect("Stop");
}

#[tokio::test]
async fn cron_control_stopped() {
    let h = node("cron", json!({"schedule": "0 9 * * 1-5", "context": {"n": 1}})).await;
    insta::assert_json_snapshot!(status(&report(&h), Some("_control")));
}

#[tokio::test]
async fn cron_control_running() {
    let h = node("cron", json!({"schedule": "0 9 * * 1-5", "context": {"n": 1}})).await;
    // As the editor presses Start: with the context its view shows.
    h.send("n:_control", json!({"start": true, "context": {"n": 1}}))
        .await
        .expect("Start");
    let next_run = |h: &Harness| {
        report(h)
            .ports
            .iter()
            .find(|p| p.name == "_control")
            .and_then(|p| p.configuration["nextRun"].as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    eventually(|| !next_run(&h).is_empty()).await;
    let mut ports = status(&report(&h), Some("_control"));
    // The time changes; its shape does not.
    let shown = ports[0]["configuration"]["nextRun"].take();
    assert!(
        shown.as_str().is_some_and(|t| t.parse::<jiff_stamp::Stamp>().is_ok()),
        "{shown}"
    );
    ports[0]["configuration"]["nextRun"] = json!("[next run, RFC 3339]");
    insta::assert_json_snapshot!(ports);
    h.send("n:_control", json!({"stop": true})).await.expect("Stop");
}

#[tokio::test]
async fn kv_ports() {
    let h = node(
        "kv",
        json!({"document": {"id": "ID", "status": "UP"}, "primaryKey": "id", "enableStoreAckPort": true}),
    )
    .await;
    insta::assert_json_snapshot!(status(&report(&h), None));
}

/// An RFC 3339 time, without a time library: `YYYY-MM-DDTHH:MM:SS...Z`.
mod jiff_stamp {
    pub struct Stamp;

    impl std::str::FromStr for Stamp {
        type Err = ();

        fn from_str(s: &str) -> Result<Self, ()> {
            let b = s.as_bytes();
            let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
            let ok = digits(0..4)
                && b.get(4) == Some(&b'-')
                && digits(5..7)
                && b.get(7) == Some(&b'-')
                && digits(8..10)
                && b.get(10) == Some(&b'T')
                && digits(11..13)
                && s.ends_with('Z');
            if ok { Ok(Stamp) } else { Err(()) }
        }
    }
}

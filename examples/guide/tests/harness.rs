//! The guide's component in the SDK's harness: no cluster, the flow the cluster runs.

use serde_json::json;
use tiny_example_guide::Convert;
use tiny_sdk::harness::{Harness, Relay};

/// The TinyNode and TinySignal documents a cluster gets, as they are.
const FLOW: &str = include_str!("../flows/convert.yaml");

#[tokio::test]
async fn converts_to_the_unit_the_settings_name() {
    let h = Harness::builder()
        .register::<Convert>()
        .yaml(FLOW)
        .build()
        .await
        .expect("the flow loads");

    h.send("weather.guide-v0.convert-1:input", json!({"celsius": 0.0}))
        .await
        .expect("handled");
    assert_eq!(
        h.emitted("weather.guide-v0.convert-1:output"),
        vec![json!({"context": null, "value": 273.15, "unit": "K"})]
    );
    // The edge took it on to convert-2, its mapping back to degrees Celsius.
    assert_eq!(
        h.emitted("weather.guide-v0.convert-2:output"),
        vec![json!({"context": null, "value": 32.0, "unit": "F"})]
    );

    // Below absolute zero: the error port is off, so the message fails.
    let err = h
        .send("weather.guide-v0.convert-1:input", json!({"celsius": -300.0}))
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("below absolute zero"), "{err}");
}

#[tokio::test]
async fn the_signal_in_the_flow_file_is_delivered() {
    let h = Harness::builder()
        .register::<Convert>()
        .yaml(FLOW)
        .build()
        .await
        .expect("the flow loads");
    for reply in h.run_signals().await {
        reply.expect("delivered");
    }
    let out = h.emitted("weather.guide-v0.convert-1:output");
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["context"], json!({"station": "north"}));
    let kelvin = out[0]["value"].as_f64().expect("a number");
    assert!((kelvin - 294.65).abs() < 1e-9, "{kelvin}");
    let out = h.emitted("weather.guide-v0.convert-2:output");
    let fahrenheit = out[0]["value"].as_f64().expect("a number");
    assert!((fahrenheit - 70.7).abs() < 1e-9, "{fahrenheit}");
    assert_eq!(out[0]["context"], json!({"station": "north"}));
}

/// The same two nodes, the edge without a mapping.
const NO_MAPPING: &str = r#"
kind: TinyNode
metadata: { name: w.guide-v0.convert-1 }
spec:
  module: guide
  component: convert
  edges: [{ id: e, port: output, to: "w.guide-v0.convert-2:input" }]
---
kind: TinyNode
metadata: { name: w.guide-v0.convert-2 }
spec: { module: guide, component: convert }
"#;

#[tokio::test]
async fn an_edge_without_a_mapping_delivers_the_ports_default() {
    let h = Harness::builder()
        .register::<Convert>()
        .yaml(NO_MAPPING)
        .build()
        .await
        .expect("the flow loads");
    h.send("w.guide-v0.convert-1:input", json!({"celsius": 100.0}))
        .await
        .expect("handled");
    // convert-2 got `Celsius::default()`, not convert-1's message: 0 °C is 32 °F.
    assert_eq!(
        h.arrivals("w.guide-v0.convert-2:input"),
        vec![json!({"context": null, "celsius": 0.0})]
    );
    assert_eq!(
        h.emitted("w.guide-v0.convert-2:output"),
        vec![json!({"context": null, "value": 32.0, "unit": "F"})]
    );
}

/// convert-1 with its error port on, the port wired to a `Relay` (the harness's
/// pass-through component) that takes what fails.
const ERROR_PORT: &str = r#"
kind: TinyNode
metadata: { name: e.guide-v0.convert-1 }
spec:
  module: guide
  component: convert
  ports: [{ port: _settings, configuration: { unit: K, enableErrorPort: true } }]
  edges: [{ id: failures, port: error, to: "e.guide-v0.relay-1:input" }]
---
kind: TinyNode
metadata: { name: e.guide-v0.relay-1 }
spec:
  module: guide
  component: relay
  ports: [{ from: "e.guide-v0.convert-1:error", port: input, configuration: "{{$}}" }]
"#;

#[tokio::test]
async fn a_failure_goes_to_the_error_port_when_it_is_on() {
    let h = Harness::builder()
        .register::<Convert>()
        .register::<Relay>()
        .yaml(ERROR_PORT)
        .build()
        .await
        .expect("the flow loads");
    let below_zero = json!({"celsius": -300.0, "context": "probe-7"});
    h.send("e.guide-v0.convert-1:input", below_zero)
        .await
        .expect("handled: the error port took the failure");
    assert!(h.emitted("e.guide-v0.convert-1:output").is_empty());
    let failures = h.arrivals("e.guide-v0.relay-1:input");
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0]["error"], "below absolute zero");
    assert_eq!(failures[0]["context"], "probe-7");
    assert_eq!(failures[0]["retryable"], false);
}

/// A NaN reading arrives as JSON `null`: it does not pass as 0 degrees, the message
/// fails naming the field (Go's other `null`s and missing fields take their zero).
#[tokio::test]
async fn a_null_reading_is_refused_not_taken_as_zero() {
    let h = Harness::builder()
        .register::<Convert>()
        .yaml(FLOW)
        .build()
        .await
        .expect("the flow loads");
    let err = h
        .send("weather.guide-v0.convert-1:input", json!({"celsius": null}))
        .await
        .expect_err("a null temperature is not 0");
    assert_eq!(err.code(), Some(tiny_sdk::error::code::UNDECODABLE), "{err}");
    assert!(err.to_string().contains("field `celsius` does not decode"), "{err}");
    assert!(h.emitted("weather.guide-v0.convert-1:output").is_empty());
    // A message without a reading (a missing field) is Go's zero.
    h.send("weather.guide-v0.convert-1:input", json!({"context": 1}))
        .await
        .expect("handled");
    assert_eq!(
        h.emitted("weather.guide-v0.convert-1:output")[0]["value"],
        json!(273.15)
    );
}

//! The guide's component in the SDK's harness: no cluster, the flow the cluster runs.

use serde_json::json;
use tiny_example_guide::Convert;
use tiny_sdk::harness::Harness;

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
}

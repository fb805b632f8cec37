//! The components in the SDK's harness: no cluster, the flow file the cluster runs.

use my_module::{Greet, ShowLast};
use serde_json::json;
use tiny_sdk::harness::Harness;

const FLOW: &str = include_str!("../flows/demo.yaml");

#[tokio::test]
async fn greets_with_the_word_the_settings_name() {
    let h = Harness::builder()
        .register::<Greet>()
        .register::<ShowLast>()
        .yaml(FLOW)
        .build()
        .await
        .expect("the flow loads");
    for reply in h.run_signals().await {
        reply.expect("delivered");
    }
    let greeting = json!({"context": {"user": "ada"}, "greeting": "Hi, Ada!"});
    assert_eq!(h.emitted("demo.my-module-v0.greet-1:greeting"), vec![greeting.clone()]);
    // The edge took it on to show-last-1, which answers with it.
    assert_eq!(h.arrivals("demo.my-module-v0.show-last-1:input"), vec![greeting]);
    let reply = h
        .send("demo.my-module-v0.greet-1:input", json!({"name": "Bob"}))
        .await
        .expect("handled");
    assert_eq!(
        reply.into_value(),
        Some(json!({"context": null, "greeting": "Hi, Bob!"}))
    );

    // The error port is off: an empty name fails the message.
    let err = h
        .send("demo.my-module-v0.greet-1:input", json!({"name": " "}))
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("name is empty"), "{err}");
}

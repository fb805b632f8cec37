//! The component in the SDK's harness: no cluster, the flow file the cluster runs.

use my_module::Greet;
use serde_json::json;
use tiny_sdk::harness::Harness;

const FLOW: &str = include_str!("../flows/demo.yaml");

#[tokio::test]
async fn greets_with_the_word_the_settings_name() {
    let h = Harness::builder()
        .register::<Greet>()
        .yaml(FLOW)
        .build()
        .await
        .expect("the flow loads");
    for reply in h.run_signals().await {
        reply.expect("delivered");
    }
    assert_eq!(
        h.emitted("demo.my-module-v0.greet-1:greeting"),
        vec![json!({"context": {"user": "ada"}, "greeting": "Hi, Ada!"})]
    );

    // The error port is off: an empty name fails the message.
    let err = h
        .send("demo.my-module-v0.greet-1:input", json!({"name": " "}))
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("name is empty"), "{err}");
}

//! The harness refuses what a cluster refuses, so a flow that runs here runs there.

use serde_json::json;
use tiny_sdk::{error::code, harness::Harness, harness::Relay};
use tiny_testkit::components::Answer;

fn yaml(name: &str, component: &str) -> String {
    format!("kind: TinyNode\nmetadata: {{ name: {name} }}\nspec: {{ module: alerts, component: {component} }}\n")
}

#[tokio::test]
async fn names_the_api_server_or_the_module_would_refuse_are_refused() {
    for (name, component, why) in [
        // Go slugs `rate_limit` as `rate-limit`; `_` is not allowed in a Kubernetes name.
        ("alerts.weather-alerts-v0.rate_limit-1", "answer", "Kubernetes name"),
        ("Alerts.weather-alerts-v0.answer-1", "answer", "Kubernetes name"),
        ("a.b.answer-", "answer", "Kubernetes name"),
        ("alerts.weather-alerts-v0.relay-1", "answer", "relay"),
        ("alerts.weather-alerts-v0.answer", "answer", "suffix"),
    ] {
        let (_, errors) = Harness::builder()
            .register::<Answer>()
            .yaml(&yaml(name, component))
            .build_lenient()
            .await
            .expect("built");
        assert_eq!(errors.len(), 1, "{name}: {errors:?}");
        let (node, err) = &errors[0];
        assert_eq!(node, name);
        assert_eq!(err.code(), Some(code::INVALID_NAME), "{name}: {err}");
        assert!(err.to_string().contains(why), "{name}: {err}");
    }
}

#[tokio::test]
async fn well_formed_names_and_the_shorthand_run() {
    let h = Harness::builder()
        .register::<Answer>()
        .register::<Relay>()
        .yaml(&(yaml("alerts.weather-alerts-v0.answer-1", "answer") + "---\n" + &yaml("sink", "relay")))
        .build()
        .await
        .expect("both load");
    let reply = h
        .send("alerts.weather-alerts-v0.answer-1:input", json!(1))
        .await
        .expect("answers");
    assert_eq!(reply.into_value(), Some(json!(1)));
}

//! `http_auth_parse` in-process: Basic credentials out of a header list.

use serde_json::json;
use tiny_example_http::auth_parse::{HttpAuthParse, basic_credentials};
use tiny_sdk::{
    Position,
    flow::FlowBuilder,
    harness::{Harness, Relay},
};

async fn harness() -> Harness {
    Harness::builder()
        .register::<HttpAuthParse>()
        .register::<Relay>()
        .flow(
            FlowBuilder::new()
                .node("n", "http_auth_parse")
                .node("sink", "relay")
                .edge("n:out", "sink:input", json!("{{$}}"))
                .build(),
        )
        .build()
        .await
        .expect("the flow loads")
}

#[tokio::test]
async fn finds_basic_credentials_in_any_case_of_the_header_name() {
    let h = harness().await;
    let r = h.report("n").expect("a report");
    let place: Vec<_> = r
        .ports
        .iter()
        .map(|p| (p.name.as_str(), p.position, p.source))
        .collect();
    assert_eq!(place, [("in", Position::Left, false), ("out", Position::Right, true)]);

    // "ada:lovelace"
    let headers = json!([
        {"key": "Accept", "value": "*/*"},
        {"key": "AUTHORIZATION", "value": "Bearer abc"},
        {"key": "authorization", "value": "Basic YWRhOmxvdmVsYWNl"},
    ]);
    h.send("n:in", json!({"context": {"req": 7}, "headers": headers}))
        .await
        .expect("parsed");
    assert_eq!(
        h.arrivals("sink:input"),
        vec![json!({"context": {"req": 7}, "found": true, "user": "ada", "password": "lovelace"})]
    );
}

#[tokio::test]
async fn anything_else_is_not_found_and_still_emitted() {
    let h = harness().await;
    for headers in [
        json!([]),
        json!([{"key": "Authorization", "value": "Bearer YWRhOmxvdmVsYWNl"}]),
        json!([{"key": "Authorization", "value": "Basic not base64!"}]),
        // No colon.
        json!([{"key": "Authorization", "value": "Basic YWRh"}]),
        // The scheme's case matters, as in Go.
        json!([{"key": "Authorization", "value": "basic YWRhOmxvdmVsYWNl"}]),
    ] {
        h.clear();
        h.send("n:in", json!({"context": "c", "headers": headers}))
            .await
            .expect("emitted");
        assert_eq!(
            h.arrivals("sink:input"),
            vec![json!({"context": "c", "found": false, "user": "", "password": ""})],
            "{headers}"
        );
    }
    let err = h
        .send("n:in", json!({"headers": "Authorization: Basic x"}))
        .await
        .expect_err("headers is a list");
    assert!(err.to_string().contains("headers"), "{err}");
}

#[test]
fn a_password_keeps_its_colons() {
    // "u:p:q" (RFC 7617: the user id ends at the first colon).
    assert_eq!(basic_credentials("Basic dTpwOnE="), Some(("u".into(), "p:q".into())));
    assert_eq!(basic_credentials("Basic Og=="), Some((String::new(), String::new())));
}

/// Go's http module v0.12.2 registers five components; so does this one.
#[test]
fn the_module_registers_gos_names() {
    assert_eq!(
        tiny_example_http::registry().names(),
        [
            "http_auth_parse",
            "http_request",
            "http_server",
            "logql_query",
            "promql_query"
        ]
    );
}

//! The hello module through the SDK's public surface: the harness, the flow YAML, the
//! port table and schemas.

use serde_json::json;
use tiny_example_hello::{GREET_FLOW, Hello, Respond, Shout};
use tiny_sdk::{Component, ErrorMessage, harness::Harness, harness::Relay};

/// A hello node `h` with `enableErrorPort` set as given, its error port wired to
/// `sink` when `wired`.
async fn hello_with(error_port: bool, wired: bool) -> Harness {
    // Unwired, the sink keeps no mapping for the edge either: the harness refuses a
    // mapping whose edge is gone, as `validate` does.
    let (edge, mapping) = if wired {
        (
            "edges: [{ id: e, port: error, to: 'sink:input' }]",
            r#"ports:
    - { from: "h:error", port: input, configuration: { error: "{{$.error}}", code: "{{$.code}}" } }"#,
        )
    } else {
        ("", "")
    };
    Harness::builder()
        .register::<Hello>()
        .register::<Relay>()
        .yaml(&format!(
            r#"
kind: TinyNode
metadata: {{ name: h }}
spec:
  module: examples
  component: hello
  ports:
    - {{ port: _settings, configuration: {{ greetingWord: Hi, enableErrorPort: {error_port} }} }}
  {edge}
---
kind: TinyNode
metadata: {{ name: sink }}
spec:
  module: examples
  component: relay
  {mapping}
"#
        ))
        .build()
        .await
        .expect("the nodes load")
}

async fn hello_alone() -> Harness {
    hello_with(true, true).await
}

#[tokio::test]
async fn greets_by_name_with_the_configured_word() {
    let h = hello_alone().await;
    h.send("h:input", json!({"name": "  Ada ", "context": {"id": 7}}))
        .await
        .expect("handled");
    assert_eq!(
        h.emitted("h:greeting"),
        vec![json!({"context": {"id": 7}, "greeting": "Hi, Ada!"})]
    );
    assert!(h.emitted("h:error").is_empty());
}

#[tokio::test]
async fn an_empty_name_goes_to_the_error_port_with_its_context() {
    let h = hello_alone().await;
    let reply = h.send("h:input", json!({"name": " ", "context": {"id": 8}})).await;
    assert!(reply.is_ok(), "a caught error does not fail the hop: {reply:?}");
    let errors = h.emitted("h:error");
    assert_eq!(errors.len(), 1);
    let err: ErrorMessage = serde_json::from_value(errors[0].clone()).expect("an ErrorMessage");
    assert_eq!(err.context, json!({"id": 8}));
    assert_eq!(err.error, "name is empty");
    assert_eq!(err.code.as_deref(), Some("EMPTY_NAME"));
    assert!(!err.retryable);
    assert!(h.emitted("h:greeting").is_empty());
    // `{{$.code}}` on the edge reads the code the message always carries.
    assert_eq!(
        h.arrivals("sink:input"),
        vec![json!({"error": "name is empty", "code": "EMPTY_NAME"})],
        "the error reached the node wired to the port"
    );
}

#[tokio::test]
async fn an_error_port_nobody_listens_on_does_not_swallow_the_error() {
    let h = hello_with(true, false).await;
    let err = h
        .send("h:input", json!({"name": "", "context": {"id": 9}}))
        .await
        .expect_err("an unwired error port fails the hop");
    assert_eq!(err.code(), Some("EMPTY_NAME"));
    assert!(err.to_string().contains("name is empty"), "{err}");
    assert!(h.emitted("h:error").is_empty());
}

#[tokio::test]
async fn with_the_error_port_off_errors_fail_the_hop_and_the_port_is_gone() {
    let h = hello_with(false, true).await;
    let err = h
        .send("h:input", json!({"name": "", "context": {"id": 10}}))
        .await
        .expect_err("with enableErrorPort off the error fails the hop, as in Go");
    assert_eq!(err.code(), Some("EMPTY_NAME"));
    assert!(h.emitted("h:error").is_empty());
    assert!(h.arrivals("sink:input").is_empty());
    let ports: Vec<String> = h.report("h").expect("h").ports.into_iter().map(|p| p.name).collect();
    assert!(!ports.contains(&"error".to_owned()), "{ports:?}");
    let on = hello_with(true, true).await;
    let ports: Vec<String> = on.report("h").expect("h").ports.into_iter().map(|p| p.name).collect();
    assert!(ports.contains(&"error".to_owned()), "{ports:?}");
}

#[tokio::test]
async fn an_error_message_always_carries_its_code_for_edge_expressions() {
    let h = hello_alone().await;
    h.send("h:input", json!({"name": ""})).await.expect("caught");
    let errors = h.emitted("h:error");
    assert_eq!(errors[0]["code"], json!("EMPTY_NAME"));
    let uncoded = serde_json::to_value(ErrorMessage::new(&json!({}), &tiny_sdk::Error::transient("x"))).expect("json");
    assert_eq!(uncoded.get("code"), Some(&serde_json::Value::Null), "{uncoded}");
}

#[tokio::test]
async fn a_message_that_does_not_decode_names_the_field() {
    // The error port off: the hop fails, naming node, port and field.
    let h = hello_with(false, true).await;
    let err = h
        .send("h:input", json!({"name": 42}))
        .await
        .expect_err("a number is not a name");
    let text = err.to_string();
    assert!(text.contains("node `h` port `input`"), "{text}");
    assert!(text.contains("field `name`"), "{text}");
}

#[tokio::test]
async fn a_message_that_does_not_decode_reaches_the_error_port_when_it_is_on() {
    // A number where the name belongs: the author's error handling sees it.
    let h = hello_alone().await;
    let reply = h.send("h:input", json!({"name": 42, "context": {"id": 9}})).await;
    assert!(reply.is_ok(), "caught: {reply:?}");
    let errors = h.emitted("h:error");
    assert_eq!(errors.len(), 1, "{errors:?}");
    let err: ErrorMessage = serde_json::from_value(errors[0].clone()).expect("an ErrorMessage");
    assert_eq!(err.context, json!({"id": 9}));
    assert_eq!(err.code.as_deref(), Some("UNDECODABLE"));
    assert!(err.error.contains("field `name`"), "{}", err.error);
    assert!(!err.retryable);
    // A null name (a reading of NaN, an expression that failed) decodes as Go decodes
    // it, to the empty name, which the component itself refuses.
    h.send("h:input", json!({"name": null, "context": {"id": 10}}))
        .await
        .expect("caught");
    let errors = h.emitted("h:error");
    assert_eq!(
        (errors[1]["code"].clone(), errors[1]["context"].clone()),
        (json!("EMPTY_NAME"), json!({"id": 10}))
    );
}

#[tokio::test]
async fn the_three_node_flow_answers_its_signal() {
    let h = Harness::builder()
        .register::<Hello>()
        .register::<Shout>()
        .register::<Respond>()
        .yaml(GREET_FLOW)
        .build()
        .await
        .expect("the flow loads");
    let replies = h.run_signals().await;
    assert_eq!(replies.len(), 1);
    let reply = replies
        .into_iter()
        .next()
        .and_then(Result::ok)
        .and_then(|r| r.into_value());
    assert_eq!(reply, Some(json!({"greeting": "HELLO, ADA!", "for": "ada"})));
    assert_eq!(
        h.arrivals("greet.examples-v0.shout-1:input"),
        vec![json!({"context": {"user": "ada"}, "text": "Hello, Ada!"})]
    );
}

#[test]
fn the_port_table_follows_the_declaration() {
    let ports: Vec<_> = Hello::ports().iter().map(|p| (p.name, p.is_source())).collect();
    assert_eq!(
        ports,
        [
            ("_settings", false),
            ("input", false),
            ("greeting", true),
            ("error", true)
        ]
    );
    let info = Hello::info();
    assert_eq!(info.name, "hello");
    assert_eq!(info.description, "Greets a person by name.");
    assert_eq!(info.tags, ["example", "greeting"]);
}

#[tokio::test]
async fn the_status_report_shows_schemas_and_settings() {
    let h = hello_alone().await;
    let report = h.report("h").expect("a report");
    assert!(report.error.is_none());
    let names: Vec<_> = report.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["_settings", "error", "greeting", "input"],
        "sorted by name, as the Go SDK does"
    );
    let settings = report
        .ports
        .iter()
        .find(|p| p.name == "_settings")
        .expect("settings port");
    assert_eq!(
        settings.configuration,
        json!({"greetingWord": "Hi", "enableErrorPort": true})
    );
    let input = report.ports.iter().find(|p| p.name == "input").expect("input port");
    assert_eq!(input.schema["$ref"], "#/$defs/HelloIn");
}

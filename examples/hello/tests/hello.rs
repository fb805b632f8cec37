//! The hello module through the SDK's public surface: the harness, the flow YAML, the
//! port table and schemas.

use serde_json::json;
use tiny_example_hello::{GREET_FLOW, Hello, Respond, Shout};
use tiny_sdk::{Component, ErrorMessage, harness::Harness};

async fn hello_alone() -> Harness {
    Harness::builder()
        .register::<Hello>()
        .yaml(
            r#"
kind: TinyNode
metadata: { name: h }
spec:
  module: examples
  component: hello
  ports:
    - { port: _settings, configuration: { greetingWord: Hi } }
"#,
        )
        .build()
        .await
        .expect("the node loads")
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
}

#[tokio::test]
async fn a_message_that_does_not_decode_names_the_field() {
    let h = hello_alone().await;
    let err = h
        .send("h:input", json!({"name": 42}))
        .await
        .expect_err("a number is not a name");
    let text = err.to_string();
    assert!(text.contains("node `h` port `input`"), "{text}");
    assert!(text.contains("field `name`"), "{text}");
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
        h.arrivals("greet.examples.shout-1:input"),
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
    assert_eq!(settings.configuration, json!({"greetingWord": "Hi"}));
    let input = report.ports.iter().find(|p| p.name == "input").expect("input port");
    assert_eq!(input.schema["$ref"], "#/$defs/HelloIn");
}

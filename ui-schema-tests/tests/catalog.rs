//! The ports of the components added from Go's catalog (issue 44), as a node's status
//! shows them, shaped by the settings in force; every schema passes
//! `ui_schema_tests::check`.

use serde_json::{Value, json};
use tiny_example_common::{
    array_filter::ArrayFilter, array_get::ArrayGet, budget_guard::BudgetGuard, chat::Chat, collect::Collect,
    display::Display, flow_telemetry::FlowTelemetry, form::Form, group_by::GroupBy, inject::Inject, retry::Retry,
    transform::Transform,
};
use tiny_example_http::{
    auth_parse::HttpAuthParse, client::HttpRequest, logql::LogqlQuery, promql::PromqlQuery, server::HttpServer,
};
use tiny_sdk::{engine::NodeReport, flow::FlowBuilder, harness::Harness};
use ui_schema_tests::check;

/// The ports of one node of `component` (under `settings` unless null), as
/// `status.ports` holds them, sorted by name.
async fn ports(component: &str, settings: Value) -> Value {
    let mut flow = FlowBuilder::new().node("n", component);
    if !settings.is_null() {
        flow = flow.settings(settings);
    }
    let h = Harness::builder()
        .register::<ArrayFilter>()
        .register::<ArrayGet>()
        .register::<GroupBy>()
        .register::<Transform>()
        .register::<BudgetGuard>()
        .register::<Retry>()
        .register::<Collect>()
        .register::<Inject>()
        .register::<Display>()
        .register::<Form>()
        .register::<Chat>()
        .register::<HttpAuthParse>()
        .register::<PromqlQuery>()
        .register::<LogqlQuery>()
        .register::<HttpServer>()
        .register::<HttpRequest>()
        .register::<FlowTelemetry>()
        .flow(flow.build())
        .build()
        .await
        .expect("the node loads");
    let r: NodeReport = h.report("n").expect("a report");
    assert!(r.error.is_none(), "{:?}", r.error);
    let ports = r
        .ports
        .iter()
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

#[tokio::test]
async fn array_filter_ports() {
    insta::assert_json_snapshot!(ports("array_filter", json!({"enableErrorPort": true})).await);
}

#[tokio::test]
async fn array_get_ports() {
    insta::assert_json_snapshot!(ports("array_get", json!({"enableErrorPort": true})).await);
}

#[tokio::test]
async fn group_by_ports() {
    insta::assert_json_snapshot!(ports("group_by", Value::Null).await);
}

#[tokio::test]
async fn transform_ports() {
    insta::assert_json_snapshot!(ports("transform", Value::Null).await);
}

#[tokio::test]
async fn budget_guard_ports() {
    insta::assert_json_snapshot!(ports("budget_guard", Value::Null).await);
}

#[tokio::test]
async fn retry_ports() {
    insta::assert_json_snapshot!(ports("retry", Value::Null).await);
}

#[tokio::test]
async fn collect_ports() {
    insta::assert_json_snapshot!(
        ports(
            "collect",
            json!({"enableErrorPort": true, "timeoutSeconds": 300, "maxGroups": 100})
        )
        .await
    );
}

#[tokio::test]
async fn inject_ports() {
    insta::assert_json_snapshot!(ports("inject", json!({"configRequired": true})).await);
}

#[tokio::test]
async fn display_ports() {
    insta::assert_json_snapshot!(ports("display", json!({"text": "# Readme"})).await);
}

#[tokio::test]
async fn form_ports() {
    insta::assert_json_snapshot!(ports("form", json!({"context": {"name": ""}})).await);
}

#[tokio::test]
async fn flow_telemetry_ports() {
    insta::assert_json_snapshot!(
        ports(
            "flow_telemetry",
            json!({"otelService": "tinysystems-otel-collector", "otelPort": 2345, "enableErrorPort": true})
        )
        .await
    );
}

/// With tiny's limits (issue 48): `maxConnections`, `idleTimeout`.
#[tokio::test]
async fn http_server_ports() {
    insta::assert_json_snapshot!(ports("http_server", Value::Null).await);
}

/// With tiny's address guard (issue 48): `allowInternalAddresses`.
#[tokio::test]
async fn http_request_ports() {
    insta::assert_json_snapshot!(ports("http_request", json!({"enableErrorPort": true})).await);
}

#[tokio::test]
async fn http_auth_parse_ports() {
    insta::assert_json_snapshot!(ports("http_auth_parse", Value::Null).await);
}

#[tokio::test]
async fn promql_query_ports() {
    let settings = json!({"baseURL": "http://prometheus:9090", "timeoutSeconds": 30, "enableErrorPort": true});
    insta::assert_json_snapshot!(ports("promql_query", settings).await);
}

#[tokio::test]
async fn logql_query_ports() {
    let settings = json!({"baseURL": "http://loki:3100", "timeoutSeconds": 30, "enableErrorPort": true});
    insta::assert_json_snapshot!(ports("logql_query", settings).await);
}

#[tokio::test]
async fn chat_ports() {
    let settings = json!({"enableErrorPort": true, "historyLimit": 50, "placeholder": "Ask the agent"});
    insta::assert_json_snapshot!(ports("chat", settings).await);
}

//! Components defined as data (TinyComponents) in the engine: installed with a
//! runtime, run by nodes with Go's `request`/`response`/`error` ports, refused when a
//! compiled component holds the name or the script does not compile, edited, and
//! uninstalled (their nodes stop).

use serde_json::{Value, json};
use tiny_sdk::{
    engine::{DEFINED_TAG, DefineError, Definition, Engine, ExprRuntime},
    error::code,
    flow::FlowBuilder,
};
use tiny_testkit::components::Answer;

fn reshape(script: &str) -> Definition {
    Definition {
        name: "who".into(),
        description: "Picks the user's name".into(),
        script: script.into(),
        input: json!({"type": "object", "properties": {"user": {"type": "object"}}}),
        output: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        ..Definition::default()
    }
}

/// `caller` forwards to a node of `who`, whose response goes to `sink` (which answers
/// with what it got).
async fn engine_with_flow() -> Engine {
    let engine = Engine::builder().register::<Answer>().runtime(ExprRuntime).build();
    let flow = FlowBuilder::new()
        .node("who1", "who")
        .node("sink", "answer")
        .edge("who1:response", "sink:input", json!("{{$}}"))
        .build();
    for node in flow.nodes {
        // `who1` is refused until `who` is installed; it loads then.
        let _ = engine.apply(node).await;
    }
    engine
}

async fn ask(engine: &Engine, user: Value) -> tiny_sdk::Result<Option<Value>> {
    let reply = engine
        .send(
            "who1:request",
            json!({"context": {"id": 7}, "inputData": {"user": user}}),
        )
        .await?;
    Ok(reply.into_value())
}

#[tokio::test]
async fn an_expr_definition_runs_with_gos_ports_and_its_schemas() {
    let engine = engine_with_flow().await;
    assert!(engine.serves("expr"));
    assert!(!engine.serves("js"));
    let before = engine
        .report("who1")
        .expect("reported")
        .error
        .expect("refused before install");
    assert_eq!(before.code(), Some(code::UNKNOWN_COMPONENT));

    engine
        .install(
            "expr",
            reshape(r#"{"name": "{{$.user.name}}", "shout": "{{upper($.user.name)}}"}"#),
        )
        .await
        .expect("installs");
    // The node applied before the definition loads with it, and answers.
    assert_eq!(
        ask(&engine, json!({"name": "Ada"})).await.expect("answers"),
        Some(json!({"context": {"id": 7}, "outputData": {"name": "Ada", "shout": "ADA"}}))
    );
    let report = engine.report("who1").expect("reported");
    assert!(report.error.is_none(), "{report:?}");
    let component = report.component.expect("its info");
    assert_eq!(component.tags, [DEFINED_TAG]);
    assert_eq!(component.description, "Picks the user's name");
    let ports: Vec<&str> = report.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(ports, ["request", "response"], "no error port unless enabled");
    let request = report.ports.iter().find(|p| p.name == "request").expect("request port");
    assert_eq!(
        request.schema["properties"]["inputData"]["properties"]["user"],
        json!({"type": "object"})
    );
    let response = report
        .ports
        .iter()
        .find(|p| p.name == "response")
        .expect("response port");
    assert_eq!(
        response.schema["properties"]["outputData"]["properties"]["name"],
        json!({"type": "string"})
    );

    // An edit reaches the running node.
    engine
        .install("expr", reshape(r#"{"who": "{{$.user.name}}"}"#))
        .await
        .expect("re-installs");
    assert_eq!(
        ask(&engine, json!({"name": "Bo"})).await.expect("answers"),
        Some(json!({"context": {"id": 7}, "outputData": {"who": "Bo"}}))
    );

    // Uninstalled, the node stops, says why, and loads again with a new install.
    assert!(engine.uninstall("who"));
    assert!(!engine.uninstall("who"));
    let err = ask(&engine, json!({"name": "Cy"})).await.expect_err("stopped");
    assert!(engine.registry().definition("who").is_none());
    let report = engine.report("who1").expect("reported").error.expect("stopped");
    assert_eq!(report.code(), Some(code::UNKNOWN_COMPONENT), "{report}");
    assert!(report.message().contains("no longer served"), "{report}");
    assert!(err.code().is_some(), "{err}");
}

#[tokio::test]
async fn a_failing_script_goes_to_the_error_port_when_enabled() {
    let engine = Engine::builder().register::<Answer>().runtime(ExprRuntime).build();
    let flow = FlowBuilder::new()
        .node("who1", "who")
        .node("sink", "answer")
        .node("errors", "answer")
        .edge("who1:response", "sink:input", json!("{{$}}"))
        .edge(
            "who1:error",
            "errors:input",
            json!({"caught": "{{$.error}}", "context": "{{$.context}}"}),
        )
        .build();
    let mut def = reshape(r#"{"n": "{{$.a / $.b}}"}"#);
    def.enable_error_port = true;
    engine.install("expr", def).await.expect("installs");
    for node in flow.nodes {
        engine.apply(node).await.expect("loads");
    }
    let reply = engine
        .send("who1:request", json!({"context": "c1", "inputData": {"a": 1, "b": 0}}))
        .await
        .expect("caught");
    let caught = reply.into_value().expect("a reply");
    assert_eq!(caught["context"], "c1");
    assert!(
        caught["caught"]
            .as_str()
            .is_some_and(|e| e.contains("the script failed")),
        "{caught}"
    );
}

#[tokio::test]
async fn a_definition_is_refused_with_a_reason() {
    let engine = Engine::builder().register::<Answer>().runtime(ExprRuntime).build();
    // A compiled component's name.
    let mut builtin = reshape("{}");
    builtin.name = "answer".into();
    assert_eq!(
        engine.install("expr", builtin).await,
        Err(DefineError::Builtin { name: "answer".into() })
    );
    // A runtime not served here.
    let unserved = engine.install("lua", reshape("{}")).await.expect_err("not served");
    assert_eq!(
        unserved.to_string(),
        "this module does not serve runtime `lua` (it serves: expr)"
    );
    // Not JSON: line and column.
    let err = engine
        .install("expr", reshape("{\n  \"name\": ,\n}"))
        .await
        .expect_err("not JSON");
    assert!(
        matches!(
            err,
            DefineError::Script {
                line: Some(2),
                column: Some(11),
                ..
            }
        ),
        "{err:?}"
    );
    // An expression that does not parse: line and column of the fault in the text.
    let err = engine
        .install("expr", reshape("{\n  \"a\": 1,\n  \"name\": \"{{1 + * 2}}\"\n}"))
        .await
        .expect_err("bad expression");
    assert!(
        matches!(
            err,
            DefineError::Script {
                line: Some(3),
                column: Some(18),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("the script does not compile at line 3, column 18: at /name"),
        "{err}"
    );
    // Nothing was installed by the refusals.
    assert!(engine.registry().definition("who").is_none());
    assert!(engine.registry().definition("answer").is_none());
    // A schema that is not an object.
    assert!(matches!(
        DefineError::parse_schema("input", "[1]"),
        Err(DefineError::Schema { field: "input", .. })
    ));
    assert!(DefineError::parse_schema("output", r#"{"type": "object"}"#).is_ok());
}

/// A runtime whose scripts answer with its name, whatever the script says.
struct Named(&'static str);

struct NamedScript(&'static str);

impl tiny_sdk::engine::ComponentRuntime for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn compile(&self, _: &Definition) -> Result<std::sync::Arc<dyn tiny_sdk::engine::CompiledScript>, DefineError> {
        Ok(std::sync::Arc::new(NamedScript(self.0)))
    }
}

impl tiny_sdk::engine::CompiledScript for NamedScript {
    fn start(&self) -> tiny_sdk::Result<Box<dyn tiny_sdk::engine::Script>> {
        Ok(Box::new(NamedScript(self.0)))
    }
}

impl tiny_sdk::engine::Script for NamedScript {
    fn call(&self, _: Value) -> futures::future::BoxFuture<'_, tiny_sdk::Result<Value>> {
        Box::pin(std::future::ready(Ok(json!({"runtime": self.0}))))
    }
}

#[tokio::test]
async fn the_same_script_in_another_runtime_is_installed_again() {
    let engine = Engine::builder()
        .register::<Answer>()
        .runtime(ExprRuntime)
        .runtime(Named("echo"))
        .build();
    let flow = FlowBuilder::new()
        .node("who1", "who")
        .node("sink", "answer")
        .edge("who1:response", "sink:input", json!("{{$.outputData}}"))
        .build();
    for node in flow.nodes {
        let _ = engine.apply(node).await;
    }
    let script = r#"{"runtime": "expr"}"#;
    engine.install("expr", reshape(script)).await.expect("installs");
    assert_eq!(
        ask(&engine, json!({})).await.expect("answers"),
        Some(json!({"runtime": "expr"}))
    );
    engine.install("echo", reshape(script)).await.expect("installs");
    assert_eq!(
        ask(&engine, json!({})).await.expect("answers"),
        Some(json!({"runtime": "echo"}))
    );
}

#[tokio::test]
async fn engines_built_from_clones_of_a_registry_install_apart() {
    let mut registry = tiny_sdk::engine::Registry::default();
    registry.register::<Answer>().runtime(ExprRuntime);
    let first = Engine::builder().registry(registry.clone()).build();
    let second = Engine::builder().registry(registry.clone()).build();
    let flow = FlowBuilder::new()
        .node("who1", "who")
        .node("sink", "answer")
        .edge("who1:response", "sink:input", json!("{{$}}"))
        .build();
    for node in flow.nodes {
        // `who1` waits for `who`.
        let _ = second.apply(node).await;
    }
    let who = reshape(r#"{"name": "{{$.user.name}}"}"#);
    first.install("expr", who.clone()).await.expect("installs");
    assert_eq!(
        second.registry().definition("who"),
        None,
        "installed into the other engine"
    );
    assert_eq!(
        registry.definition("who"),
        None,
        "installed into the registry the engines were built from"
    );
    second.install("expr", who).await.expect("installs");
    assert_eq!(
        ask(&second, json!({"name": "Ada"})).await.expect("answers"),
        Some(json!({"context": {"id": 7}, "outputData": {"name": "Ada"}}))
    );
}

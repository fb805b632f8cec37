//! The module's registry serves both runtimes: a `js` and an `expr` definition of the
//! same reshaping, installed in an engine built from it, answer the same outputs.

use serde_json::{Value, json};
use tiny_sdk::{
    engine::{Definition, Engine},
    flow::FlowBuilder,
};
use tiny_testkit::components::Answer;

const JS: &str = "export default (input) => ({name: input.user.name, shout: input.user.name.toUpperCase(), \
                  adult: input.user.age >= 18, n: input.tags.length})";
const EXPR: &str = r#"{"name": "{{$.user.name}}", "shout": "{{upper($.user.name)}}", "adult": "{{$.user.age >= 18}}", "n": "{{length($.tags)}}"}"#;

#[tokio::test]
async fn a_js_and_an_expr_definition_served_by_the_module_answer_the_same() {
    let engine = Engine::builder()
        .registry(tiny_example_js_module::registry())
        .register::<Answer>()
        .build();
    let mut flow = FlowBuilder::new().node("sink", "answer");
    for (runtime, name, script) in [("js", "js_shape", JS), ("expr", "expr_shape", EXPR)] {
        let def = Definition {
            name: name.into(),
            script: script.into(),
            input: json!({"type": "object"}),
            output: json!({"type": "object"}),
            ..Definition::default()
        };
        engine
            .install(runtime, def)
            .await
            .expect("the module serves the runtime");
        flow = flow.node(&format!("{name}-1"), name).edge(
            &format!("{name}-1:response"),
            "sink:input",
            json!("{{$.outputData}}"),
        );
    }
    for node in flow.build().nodes {
        engine.apply(node).await.expect("loads");
    }
    let ask = |node: &'static str, data: Value| {
        let engine = &engine;
        async move {
            engine
                .send(&format!("{node}:request"), json!({"context": null, "inputData": data}))
                .await
                .expect("answers")
                .into_value()
        }
    };
    for input in [
        json!({"user": {"name": "Ada", "age": 36}, "tags": ["math", "engines"]}),
        json!({"user": {"name": "bo", "age": 7}, "tags": []}),
    ] {
        let js = ask("js_shape-1", input.clone()).await;
        let expr = ask("expr_shape-1", input.clone()).await;
        assert_eq!(js, expr, "input {input}");
        assert!(
            js.as_ref().is_some_and(|v| v["name"] == input["user"]["name"]),
            "{js:?}"
        );
    }
}

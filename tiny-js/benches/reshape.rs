//! One reshaping (pick, uppercase, compare, join, count) per message, through the engine
//! in-process, three ways: a compiled tiny component, an `expr` definition and a `js`
//! definition (QuickJS). Prints the time per message of each:
//! `cargo bench -p tiny-js --bench reshape`.

use std::time::Instant;

use serde_json::{Value, json};
use tiny_js::JsRuntime;
use tiny_sdk::{
    engine::{Definition, Engine, ExprRuntime},
    flow::FlowBuilder,
    prelude::*,
};
use tiny_testkit::components::Answer;

/// The reshaping written as a component.
#[derive(Debug, Component, Default)]
#[component(name = "direct")]
struct Direct {
    request: Input<Value>,
    response: Output<Value>,
}

impl Direct {
    async fn on_request(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        let input = &msg["inputData"];
        let name = input["user"]["name"].as_str().unwrap_or_default();
        let tags: Vec<&str> = input["tags"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let out = json!({
            "name": name,
            "shout": name.to_uppercase(),
            "adult": input["user"]["age"].as_f64().is_some_and(|a| a >= 18.0),
            "tags": tags.join(","),
            "n": tags.len(),
        });
        self.response
            .emit(ctx, json!({"context": msg["context"].clone(), "outputData": out}))
            .await
    }
}

const JS: &str = "export default (input) => ({name: input.user.name, shout: input.user.name.toUpperCase(), \
                  adult: input.user.age >= 18, tags: input.tags.join(','), n: input.tags.length})";
const EXPR: &str = r#"{"name": "{{$.user.name}}", "shout": "{{upper($.user.name)}}", "adult": "{{$.user.age >= 18}}",
                       "tags": "{{join($.tags, ',')}}", "n": "{{length($.tags)}}"}"#;

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let engine = Engine::builder()
            .register::<Answer>()
            .register::<Direct>()
            .runtime(JsRuntime::default())
            .runtime(ExprRuntime)
            .build();
        for (runtime, name, script) in [("js", "js_shape", JS), ("expr", "expr_shape", EXPR)] {
            let def = Definition {
                name: name.into(),
                script: script.into(),
                input: json!({"type": "object"}),
                output: json!({"type": "object"}),
                ..Definition::default()
            };
            engine.install(runtime, def).await.expect("installs");
        }
        let mut flow = FlowBuilder::new().node("sink", "answer");
        for name in ["direct", "expr_shape", "js_shape"] {
            flow = flow.node(&format!("{name}-1"), name).edge(
                &format!("{name}-1:response"),
                "sink:input",
                json!("{{$.outputData}}"),
            );
        }
        for node in flow.build().nodes {
            engine.apply(node).await.expect("loads");
        }
        let msg = json!({"context": {"id": 1}, "inputData": {"user": {"name": "Ada", "age": 36}, "tags": ["math", "engines", "notes"]}});
        let n = 20_000u32;
        for name in ["direct", "expr_shape", "js_shape"] {
            let to = format!("{name}-1:request");
            for _ in 0..1_000 {
                engine.send(&to, msg.clone()).await.expect("answers");
            }
            let start = Instant::now();
            for _ in 0..n {
                engine.send(&to, msg.clone()).await.expect("answers");
            }
            let per = start.elapsed() / n;
            println!("{name:>10}: {:>7.2} µs a message (send, reshape, one hop to a sink, reply)", per.as_secs_f64() * 1e6);
        }
    });
}

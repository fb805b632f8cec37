//! An edge that renders its template from a typed message's fields makes the tree its
//! expressions read in the map the edge's previous message left (its values dropped),
//! written over in place when the keys come again in its order. Messages after the
//! first on an edge must render exactly what a fresh tree gives, whatever their keys:
//! fields skipped or not, keys a flattened map adds, removes or reorders.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use tiny_sdk::{engine::Engine, expr::Template, flow::FlowBuilder, prelude::*};
use tiny_testkit::{components::Record, seen};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
struct Inner {
    name: String,
    tags: Vec<String>,
}

/// A message whose `note` is written only when it is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
struct Plain {
    n: u64,
    v: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    user: Inner,
    text: String,
}

/// A message serialised as a map: its flattened entries come after its fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Schema)]
struct Flat {
    n: u64,
    v: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    #[serde(flatten)]
    extra: BTreeMap<String, Value>,
}

/// `plain`: emits what it is sent as a [`Plain`].
#[derive(Debug, Component, Default)]
#[component(name = "plain")]
struct EmitPlain {
    input: Input<Plain>,
    out: Output<Plain>,
}

impl EmitPlain {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Plain) -> Result<Reply> {
        self.out.emit(ctx, msg).await
    }
}

/// `flat`: emits what it is sent as a [`Flat`].
#[derive(Debug, Component, Default)]
#[component(name = "flat")]
struct EmitFlat {
    input: Input<Flat>,
    out: Output<Flat>,
}

impl EmitFlat {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Flat) -> Result<Reply> {
        self.out.emit(ctx, msg).await
    }
}

fn plain(n: u64, note: Option<&str>, name: &str) -> Value {
    json!(Plain {
        n,
        v: n as i64 - 3,
        note: note.map(str::to_owned),
        user: Inner {
            name: name.into(),
            tags: vec!["a".into(), name.into()],
        },
        text: format!("text {n}"),
    })
}

fn flat(n: u64, note: Option<&str>, extra: Value) -> Value {
    let mut v = json!({"n": n, "v": 1});
    if let Some(note) = note {
        v["note"] = json!(note);
    }
    if let (Value::Object(v), Value::Object(extra)) = (&mut v, extra) {
        v.extend(extra);
    }
    v
}

/// Messages whose trees have the same keys, fewer, more, others, in another order.
fn messages(source: &str) -> Vec<Value> {
    match source {
        "plain" => vec![
            plain(1, None, "ada"),
            plain(2, None, "bob"),
            plain(3, Some("first"), "cy"),
            plain(4, Some("second"), "di"),
            plain(5, None, "ed"),
            plain(6, Some("third"), "flo"),
        ],
        _ => vec![
            flat(1, None, json!({})),
            flat(2, None, json!({"x": 1})),
            flat(3, Some("n"), json!({"x": 2, "a": [1]})),
            flat(4, None, json!({"a": {"b": 1}})),
            flat(5, Some("m"), json!({"a": 3, "x": 4, "z": 5})),
            flat(6, None, json!({"z": 6})),
            flat(7, None, json!({"x": 7})),
            flat(8, None, json!({"x": 7})),
        ],
    }
}

/// Templates reading fields placed whole, read by expressions, interpolated, some that
/// a message may lack.
fn templates() -> Vec<Value> {
    vec![
        json!({"n": "{{$.n}}", "v": "{{$.v + 1}}", "user": "{{$.user}}", "text": "{{$.text}}"}),
        json!({"note": "{{$.note}}", "v": "{{$.v * 2}}", "text": "{{$.text}} / {{$.note}}", "user": "{{$.user}}"}),
        json!({"x": "{{$.x}}", "a": "{{$.a}}", "n": "{{$.n + 1}}", "z": "{{$.z}}", "note": "{{$.note}}"}),
        json!({"sum": "{{$.x + $.n}}", "note": "{{$.note}}", "names": "{{$.user.name}} {{$.a.b}}", "v": "{{$.v}}"}),
        json!({"user": "{{$.user}}", "name": "{{$.user.name}}", "n": "{{$.n}}"}),
    ]
}

#[tokio::test]
async fn each_message_on_an_edge_renders_as_a_fresh_tree_does() {
    let mut compared = 0;
    for source in ["plain", "flat"] {
        for template in templates() {
            let e = Engine::builder()
                .register::<EmitPlain>()
                .register::<EmitFlat>()
                .register::<Record>()
                .build();
            let flow = FlowBuilder::new()
                .node("src", source)
                .node("to", "record")
                .edge_with("src:out", "to:input", template.clone(), None)
                .build();
            for node in flow.nodes {
                e.apply(node).await.expect("the flow loads");
            }
            let compiled = Template::compile(&template).expect("the template compiles");
            for message in messages(source) {
                e.send("src:input", message.clone()).await.expect("delivered");
                let mut failures = Vec::new();
                let reference = compiled.render_lenient(&message, &mut failures);
                assert_eq!(
                    seen::take("to"),
                    [reference.to_string()],
                    "template {template}, {source} message {message}"
                );
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 5 * (6 + 8));
}

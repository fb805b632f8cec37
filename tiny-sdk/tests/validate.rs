//! `tiny_sdk::flow::validate` through its public surface, with derived components: the
//! catalogue of a registry knows their ports and schemas as the derive writes them.

use serde_json::{Value, json};
use tiny_sdk::{
    ErrorMessage,
    engine::Registry,
    flow::{Catalog, ComponentSchema, FlowBuilder, PortSchema, ProblemKind, validate},
    prelude::*,
};

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct Settings {
    /// How many.
    count: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct Text {
    text: String,
}

#[derive(Component, Default)]
#[component(name = "pipe", settings = Settings)]
struct Pipe {
    #[port]
    input: Input<Text>,
    #[port]
    out: Output<Text>,
    #[port(catch)]
    error: Output<ErrorMessage>,
}

impl Pipe {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Text) -> Result<Reply> {
        self.out.emit(ctx, msg).await
    }
}

fn registry() -> Registry {
    let mut registry = Registry::default();
    registry.register::<Pipe>();
    registry
}

#[test]
fn a_registrys_components_are_checked_with_their_derived_schemas() {
    let catalog = Catalog::from_registry(&registry());
    let good = FlowBuilder::new()
        .node("f.mine-v0.pipe-a", "pipe")
        .settings(json!({"count": 2}))
        .node("f.mine-v0.pipe-b", "pipe")
        .edge(
            "f.mine-v0.pipe-a:out",
            "f.mine-v0.pipe-b:input",
            json!({"text": "{{$.text}}"}),
        )
        .edge(
            "f.mine-v0.pipe-a:error",
            "f.mine-v0.pipe-b:input",
            json!({"text": "{{$.error}}"}),
        )
        .build();
    assert_eq!(validate(&good, &catalog), []);

    let bad = FlowBuilder::new()
        .node("f.mine-v0.pipe-a", "pipe")
        .settings(json!({"count": -1, "cuont": 2}))
        .node("f.mine-v0.pipe-b", "pipe")
        .edge("f.mine-v0.pipe-a:out", "f.mine-v0.pipe-b:input", json!({"text": ["x"]}))
        .build();
    let problems = validate(&bad, &catalog);
    let found: Vec<(ProblemKind, &str, Option<&str>)> = problems
        .iter()
        .map(|p| (p.kind, p.node.as_str(), p.field.as_deref()))
        .collect();
    assert_eq!(
        found,
        [
            (ProblemKind::Settings, "f.mine-v0.pipe-a", Some("/cuont")),
            (ProblemKind::Configuration, "f.mine-v0.pipe-b", Some("/text")),
        ],
        "{problems:#?}"
    );
}

#[test]
fn nodes_of_other_modules_are_checked_against_what_those_publish() {
    let mut catalog = Catalog::from_registry(&registry());
    catalog.add_module(
        "tinysystems/common-module-v0",
        vec![ComponentSchema {
            name: "debug".into(),
            ports: vec![PortSchema::new("in", false, Value::Bool(true))],
        }],
    );
    let flow = FlowBuilder::new()
        .node("f.mine-v0.pipe-a", "pipe")
        .node("f.common-module-v0.debug-1", "debug")
        .node("f.common-module-v0.pipe-1", "pipe")
        .edge("f.mine-v0.pipe-a:out", "f.common-module-v0.debug-1:in", json!("{{$}}"))
        .build();
    let problems = validate(&flow, &catalog);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!(problems[0].kind, ProblemKind::Component);
    assert_eq!(problems[0].node, "f.common-module-v0.pipe-1");
    assert_eq!(
        problems[0].message,
        "component `pipe` is not one module `tinysystems/common-module-v0` publishes (it publishes: debug)"
    );
}

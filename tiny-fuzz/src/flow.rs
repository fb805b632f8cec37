//! Target `flow`: TinyNode specs through the engine to runners, then messages.
//!
//! Input: `spec [NUL message]`. The spec part is a [`Node`] or a list of them, as
//! JSON or YAML (the shape of a TinyNode's `metadata.name` + `spec`); the message is
//! JSON (default `{"name": "x"}`). Each node is applied to an engine of module `fuzz`
//! with the [`components`] registered and a node `fuzz-answer` already running,
//! then the message is sent to the node's ports and its report read. Refused specs
//! are fine; panics and hangs are not.

use std::time::Duration;

use serde_json::{Value, json};
use tiny_sdk::{Reply, Result, engine::Engine, flow::Node, harness::Relay};

/// At most this many nodes, ports and sends per input, so one input stays quick.
const MAX_ITEMS: usize = 8;

/// Applies the nodes in `data` and sends them the message.
pub fn run(data: &[u8]) {
    let _ = sends(data);
}

/// [`run`], returning each send (`"<node>:<port>"`) with its outcome.
pub fn sends(data: &[u8]) -> Vec<(String, Result<Reply>)> {
    let (spec, message) = crate::split(data);
    let Some(nodes) = nodes(spec) else {
        return Vec::new();
    };
    let message = message
        .and_then(|m| serde_json::from_slice::<Value>(m).ok())
        .unwrap_or_else(|| json!({"name": "x"}));
    crate::runtime().block_on(drive(nodes, message))
}

fn nodes(spec: &[u8]) -> Option<Vec<Node>> {
    match crate::json_or_yaml(spec)? {
        list @ Value::Array(_) => serde_json::from_value::<Vec<Node>>(list).ok().map(|mut v| {
            v.truncate(MAX_ITEMS);
            v
        }),
        one => serde_json::from_value::<Node>(one).ok().map(|n| vec![n]),
    }
}

/// An engine of module `fuzz` with the test components and a running `fuzz-answer`.
pub async fn engine() -> Engine {
    let engine = Engine::builder()
        .module("fuzz")
        .register::<Relay>()
        .register::<components::Answer>()
        .register::<components::Knob>()
        .node_wait(Duration::from_millis(50))
        .build();
    let answer = Node {
        name: "fuzz-answer".into(),
        spec: tiny_sdk::flow::NodeSpec {
            module: "fuzz".into(),
            component: "answer".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    if let Err(e) = engine.apply(answer).await {
        panic!("the fixed answer node does not apply: {e}");
    }
    engine
}

async fn drive(nodes: Vec<Node>, message: Value) -> Vec<(String, Result<Reply>)> {
    let engine = engine().await;
    let mut out = Vec::new();
    for node in &nodes {
        let _ = engine.apply(node.clone()).await;
    }
    for node in &nodes {
        let ports = ["input", "in"]
            .into_iter()
            .chain(node.spec.ports.iter().map(|p| p.port.as_str()))
            .take(MAX_ITEMS);
        for port in ports {
            let to = format!("{}:{port}", node.name);
            let result = engine.send(&to, message.clone()).await;
            out.push((to, result));
        }
        if let Some(report) = engine.report(&node.name) {
            let _ = format!("{report:?}");
        }
    }
    for node in &nodes {
        let _ = engine.remove(&node.name, true).await;
    }
    out
}

/// The components a fuzzed node may name: `relay` (the harness's), `answer` and `knob`.
pub mod components {
    use serde_json::Value;
    use tiny_sdk::prelude::*;

    /// Answers with its input.
    pub use tiny_testkit::components::Answer;

    /// How `knob` writes its word.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, Schema)]
    pub enum Case {
        /// As it is.
        #[default]
        Plain,
        /// In capitals.
        Upper,
    }

    /// Settings of `knob`: a bit of every kind of field.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
    #[serde(default, rename_all = "camelCase")]
    pub struct KnobSettings {
        /// Put before the name.
        pub word: String,
        /// How many times (bounded by the type).
        pub times: u8,
        /// The case of the word.
        pub case: Case,
        /// Numbers, if any.
        pub extra: Option<Vec<i64>>,
        /// Send failures to the `error` port.
        pub enable_error_port: bool,
    }

    /// What arrives on `knob`'s input.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
    pub struct KnobIn {
        /// Passed through.
        #[tiny(configurable)]
        #[serde(default)]
        pub context: Value,
        /// Who.
        pub name: String,
    }

    /// Settings, a typed input, an output and an error port.
    #[derive(Debug, Default, Component)]
    #[component(name = "knob", settings = KnobSettings)]
    pub struct Knob {
        /// The name.
        input: Input<KnobIn>,
        /// The words.
        out: Output<Value>,
        /// Failures, while `enableErrorPort` is on.
        #[port(catch)]
        error: Output<ErrorMessage>,
    }

    impl Knob {
        async fn on_input(&self, ctx: &Ctx<Self>, msg: KnobIn) -> Result<Reply> {
            if msg.name.is_empty() {
                return Err(Error::permanent("name is empty").with_code("EMPTY_NAME"));
            }
            let s = ctx.settings();
            let word = match s.case {
                Case::Plain => s.word.clone(),
                Case::Upper => s.word.to_uppercase(),
            };
            let text = format!("{word} {}", msg.name).repeat(usize::from(s.times).max(1));
            self.out
                .emit(
                    ctx,
                    serde_json::json!({"text": text, "context": msg.context, "extra": s.extra}),
                )
                .await
        }
    }
}

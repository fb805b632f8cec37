//! What the engine tells observers, in-process: every observer sees every hop with its
//! attempt, and secrets are masked in reports, observed payloads and errors while the
//! component gets them.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU32, Ordering},
};
use tiny_testkit::components::Answer;

use serde_json::{Value, json};
use tiny_sdk::{
    engine::{Engine, HopEvent, HopKind, Observer},
    flow::{FlowBuilder, RetryPolicy},
    harness::Relay,
    prelude::*,
    redact::MASK,
};

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
struct VaultSettings {
    user: String,
    #[tiny(secret)]
    password: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
struct VaultIn {
    #[tiny(secret)]
    password: String,
}

/// Opens with the password of its settings; a wrong one fails quoting both.
#[derive(Debug, Component, Default)]
#[component(name = "vault", settings = VaultSettings)]
struct Vault {
    input: Input<VaultIn>,
}

impl Vault {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: VaultIn) -> Result<Reply> {
        let s = ctx.settings();
        if msg.password != s.password {
            return Err(Error::permanent(format!("`{}` is not `{}`", msg.password, s.password)));
        }
        Ok(Reply::value(json!({"opened_by": s.user})))
    }
}

/// A vault whose failures go to its catch port.
#[derive(Debug, Component, Default)]
#[component(name = "guarded", settings = VaultSettings)]
struct Guarded {
    input: Input<VaultIn>,
    #[port(catch)]
    error: Output<ErrorMessage>,
}

impl Guarded {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: VaultIn) -> Result<Reply> {
        let s = ctx.settings();
        Err(Error::permanent(format!("`{}` is not `{}`", msg.password, s.password)))
    }
}

/// Fails transiently twice, then answers.
#[derive(Debug, Component, Default)]
#[component(name = "flaky")]
struct Flaky {
    input: Input<Value>,
    calls: AtomicU32,
}

impl Flaky {
    async fn on_input(&self, _: &Ctx<Self>, msg: Value) -> Result<Reply> {
        if self.calls.fetch_add(1, Ordering::SeqCst) < 2 {
            return Err(Error::transient("not yet"));
        }
        Ok(Reply::value(msg))
    }
}

/// What an observer kept of one delivery: node, attempt, masked payload, error.
type Delivery = (String, u32, Value, Option<String>);

/// Keeps what it sees of each delivery.
#[derive(Debug, Default)]
struct Seen(Mutex<Vec<Delivery>>);

impl Observer for Seen {
    fn on_hop(&self, e: &HopEvent<'_>) {
        if e.kind != HopKind::Delivered {
            return;
        }
        let data = e.redacted_json().ok().flatten().map_or(Value::Null, |v| v.into_owned());
        let mut seen = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.push((e.node.to_owned(), e.attempt, data, e.error.map(ToString::to_string)));
    }
}

impl Seen {
    fn all(&self) -> Vec<Delivery> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

async fn load(engine: &Engine, flow: tiny_sdk::flow::Flow) {
    for node in flow.nodes {
        engine.apply(node).await.expect("node loads");
    }
}

#[tokio::test]
async fn secrets_reach_the_component_and_nothing_tiny_writes() {
    let (first, second) = (Arc::new(Seen::default()), Arc::new(Seen::default()));
    let engine = Engine::builder()
        .register::<Vault>()
        .observer(first.clone())
        .observer(second.clone())
        .build();
    let flow = FlowBuilder::new()
        .node("v", "vault")
        .settings(json!({"user": "ada", "password": "hunter22-s"}))
        .build();
    load(&engine, flow).await;

    let report = engine.report("v").expect("a report");
    let settings = report
        .ports
        .iter()
        .find(|p| p.name == "_settings")
        .expect("settings port");
    assert_eq!(settings.configuration, json!({"user": "ada", "password": MASK}));

    let reply = engine.send("v:input", json!({"password": "hunter22-s"})).await;
    assert_eq!(reply.expect("opens").into_value(), Some(json!({"opened_by": "ada"})));
    let err = engine
        .send("v:input", json!({"password": "swordfish9-i"}))
        .await
        .expect_err("a wrong password");
    assert_eq!(err.message(), format!("`{MASK}` is not `{MASK}`"));

    let seen = first.all();
    assert_eq!(seen, second.all(), "every observer sees every hop");
    assert_eq!(seen.len(), 2);
    for (_, _, data, _) in &seen {
        assert_eq!(data, &json!({"password": MASK}));
    }
    let text = format!("{seen:?} {err} {report:?}");
    assert!(!text.contains("hunter22") && !text.contains("swordfish9"), "{text}");
}

#[tokio::test]
async fn observers_see_each_attempt_of_a_retried_edge() {
    let seen = Arc::new(Seen::default());
    let engine = Engine::builder()
        .register::<Relay>()
        .register::<Flaky>()
        .observer(seen.clone())
        .build();
    let retry = RetryPolicy {
        max_attempts: Some(3),
        initial_delay_ms: Some(1),
        ..RetryPolicy::default()
    };
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .node("f", "flaky")
        .edge_with("a:out", "f:input", json!("{{$}}"), Some(retry))
        .build();
    load(&engine, flow).await;
    let reply = engine.send("a:input", json!({"n": 1})).await.expect("third time lucky");
    assert_eq!(reply.into_value(), Some(json!({"n": 1})));
    let attempts: Vec<(String, u32, bool)> = seen
        .all()
        .into_iter()
        .map(|(node, attempt, _, error)| (node, attempt, error.is_some()))
        .collect();
    assert_eq!(
        attempts,
        [
            ("f".to_owned(), 1, true),
            ("f".to_owned(), 2, true),
            ("f".to_owned(), 3, false),
            ("a".to_owned(), 1, false),
        ]
    );
}

#[tokio::test]
async fn a_failure_caught_on_an_error_port_carries_no_secret_on() {
    let seen = Arc::new(Seen::default());
    let engine = Engine::builder()
        .register::<Guarded>()
        .register::<Answer>()
        .observer(seen.clone())
        .build();
    let flow = FlowBuilder::new()
        .node("g", "guarded")
        .settings(json!({"user": "ada", "password": "hunter22-s"}))
        .node("sink", "answer")
        .edge("g:error", "sink:input", json!("{{$}}"))
        .build();
    load(&engine, flow).await;
    let reply = engine
        .send("g:input", json!({"password": "swordfish9-i"}))
        .await
        .expect("caught");
    let caught = reply.into_value().expect("the error message");
    assert_eq!(caught["context"], json!({"password": MASK}));
    assert_eq!(caught["error"], format!("`{MASK}` is not `{MASK}`"));
    let text = format!("{:?}", seen.all());
    assert!(!text.contains("hunter22") && !text.contains("swordfish9"), "{text}");
}

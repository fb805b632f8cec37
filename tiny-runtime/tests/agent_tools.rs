//! Agent-tool calls (Go's `x-mode: rpc`, `shared/reference/go-nats.md` §6) against a
//! real `nats-server`, from a plain async-nats client as the platform's agent sends
//! them (a core publish to `tinymodule.<m>.msg`, `x-to` the bare component, `x-mode:
//! rpc`, `x-reply-inbox`, no native reply), to a module on core NATS and to one on
//! JetStream: a value, an empty answer and an error come back in Go's reply forms.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use async_nats::{Client, HeaderMap, Message};
use futures::StreamExt as _;
use serde_json::{Value, json};
use tiny_runtime::nats::{Link, listen};
use tiny_sdk::{
    engine::{Engine, Registry},
    error::code,
    flow::FlowBuilder,
    prelude::*,
};
use tiny_testkit::{NatsServer, durable_module};

const WAIT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct Text {
    text: String,
}

/// Upper-cases a text. Emits twice: the first emit on `out` is the answer.
#[derive(Component, Default)]
#[component(name = "upper", agent_tool(description = "Upper-cases a text"))]
struct Upper {
    r#in: Input<Text>,
    out: Output<Text>,
}

impl Upper {
    async fn on_in(&self, ctx: &Ctx<Self>, msg: Text) -> Result<Reply> {
        self.out
            .emit(
                ctx,
                Text {
                    text: msg.text.to_uppercase(),
                },
            )
            .await?;
        self.out.emit(ctx, Text { text: "second".into() }).await
    }
}

/// Counts its calls in its instance: a fresh instance per call answers 1 each time.
#[derive(Component, Default)]
#[component(name = "count", agent_tool(input = "input", output = "total"))]
struct Count {
    input: Input<Value>,
    total: Output<u32>,
    calls: AtomicU32,
}

impl Count {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Result<Reply> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.total.emit(ctx, n).await
    }
}

/// Answers with its handler's value, emitting nothing.
#[derive(Component, Default)]
#[component(name = "direct", agent_tool())]
struct Direct {
    r#in: Input<Text>,
    // The tool's output, which this one never emits on.
    #[allow(dead_code)]
    out: Output<Text>,
}

impl Direct {
    async fn on_in(&self, _: &Ctx<Self>, msg: Text) -> Reply {
        Reply::value(json!({"len": msg.text.len()}))
    }
}

/// Emits nothing and answers nothing.
#[derive(Component, Default)]
#[component(name = "quiet", agent_tool())]
struct Quiet {
    r#in: Input<Value>,
    #[allow(dead_code)]
    out: Output<Value>,
}

impl Quiet {
    async fn on_in(&self, _: &Ctx<Self>, _: Value) -> Reply {
        Reply::empty()
    }
}

/// Fails with a code.
#[derive(Component, Default)]
#[component(name = "refuse", agent_tool())]
struct Refuse {
    r#in: Input<Text>,
    #[allow(dead_code)]
    out: Output<Text>,
}

impl Refuse {
    async fn on_in(&self, _: &Ctx<Self>, msg: Text) -> Result<Reply> {
        Err(Error::permanent(format!("no city called {}\nsorry", msg.text)).with_code("NOT_FOUND"))
    }
}

/// Not a tool.
#[derive(Component, Default)]
#[component(name = "plain")]
struct Plain {
    r#in: Input<Value>,
    out: Output<Value>,
}

impl Plain {
    async fn on_in(&self, ctx: &Ctx<Self>, v: Value) -> Result<Reply> {
        self.out.emit(ctx, v).await
    }
}

fn registry() -> Registry {
    let mut r = Registry::default();
    r.register::<Upper>()
        .register::<Count>()
        .register::<Direct>()
        .register::<Quiet>()
        .register::<Refuse>()
        .register::<Plain>();
    r
}

/// A plain client of the broker: no tiny code on the caller's side.
async fn agent(broker: &NatsServer) -> Client {
    async_nats::ConnectOptions::with_token(broker.token().to_owned())
        .connect(format!("127.0.0.1:{}", broker.port()))
        .await
        .expect("the agent connects")
}

/// Calls `component` of module `module` as Go's `wire.PublishRPC` does, and returns
/// the reply that reaches the inbox.
async fn call(agent: &Client, module: &str, component: &str, payload: &str) -> Message {
    let inbox = agent.new_inbox();
    let mut replies = agent.subscribe(inbox.clone()).await.expect("subscribes to the inbox");
    let mut headers = HeaderMap::new();
    headers.insert("x-to", component);
    headers.insert("x-mode", "rpc");
    headers.insert("x-reply-inbox", inbox.as_str());
    // A publish, not a request: no native reply subject, as Go's caller sends it.
    agent
        .publish_with_headers(format!("tinymodule.{module}.msg"), headers, payload.to_owned().into())
        .await
        .expect("publishes");
    agent.flush().await.expect("flushes");
    tokio::time::timeout(WAIT, replies.next())
        .await
        .unwrap_or_else(|_| panic!("`{component}` answered within {WAIT:?}"))
        .expect("the inbox stays open")
}

fn header<'a>(m: &'a Message, name: &str) -> Option<&'a str> {
    m.headers.as_ref().and_then(|h| h.get(name)).map(|v| v.as_str())
}

/// Go's reply forms, whichever receiver served the call.
async fn answers_as_go(agent: &Client, module: &str) {
    // A value: the first emit on the tool's output, as JSON, with no headers at all.
    let value = call(agent, module, "upper", r#"{"text":"hello"}"#).await;
    assert!(value.headers.is_none(), "a value has no headers: {value:?}");
    assert_eq!(
        serde_json::from_slice::<Value>(&value.payload).ok(),
        Some(json!({"text": "HELLO"}))
    );

    // A fresh instance each call.
    for _ in 0..2 {
        let n = call(agent, module, "count", "{}").await;
        assert_eq!(&n.payload[..], b"1", "a fresh instance per call");
    }

    // No emit: the handler's value.
    let direct = call(agent, module, "direct", r#"{"text":"four"}"#).await;
    assert_eq!(
        serde_json::from_slice::<Value>(&direct.payload).ok(),
        Some(json!({"len": 4}))
    );

    // Nothing: `x-empty: 1` and an empty body.
    let empty = call(agent, module, "quiet", "").await;
    assert_eq!(header(&empty, "x-empty"), Some("1"), "{empty:?}");
    assert!(empty.payload.is_empty());

    // An error: `x-error` (on one line) and `x-error-code`, no body.
    let error = call(agent, module, "refuse", r#"{"text":"Atlantis"}"#).await;
    assert_eq!(header(&error, "x-error-code"), Some("NOT_FOUND"), "{error:?}");
    let text = header(&error, "x-error").unwrap_or_default();
    assert!(text.contains("no city called Atlantis sorry"), "{text}");
    assert!(error.payload.is_empty());

    // What the engine refuses, each with its code and the name it is about.
    for (component, payload, want, names) in [
        ("plain", "{}", code::NOT_AGENT_TOOL, "`plain`"),
        ("nowhere", "{}", code::UNKNOWN_COMPONENT, "`nowhere`"),
        ("upper", r#"{"text":5}"#, code::UNDECODABLE, "in"),
        ("upper", "{not json", code::UNDECODABLE, "in"),
    ] {
        let refused = call(agent, module, component, payload).await;
        assert_eq!(
            header(&refused, "x-error-code"),
            Some(want),
            "{component} {payload}: {refused:?}"
        );
        let text = header(&refused, "x-error").unwrap_or_default();
        assert!(text.contains(names), "{component} {payload}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_calls_tools_of_a_module_on_core_nats() {
    let broker = NatsServer::start().await.expect("nats-server starts");
    let link = Link::connect(&broker.url()).await.expect("a NATS URL");
    assert!(link.wait_up(WAIT).await, "connects to {}", broker.url());
    let engine = Engine::builder().module("tools").registry(registry()).build();
    let receiver = listen(link.client().clone(), engine, Some(Arc::new(|| true)))
        .await
        .expect("subscribes");
    // The broker routes the subject to the receiver once a request from the
    // module's own connection is answered (one without `x-to` is refused).
    link.client()
        .request("tinymodule.tools.msg", Vec::new().into())
        .await
        .expect("the receiver answers");
    answers_as_go(&agent(&broker).await, "tools").await;
    receiver.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_calls_tools_of_a_module_on_jetstream() {
    let broker = NatsServer::start_with(&["--jetstream"])
        .await
        .expect("nats-server starts");
    // The module's streams are made before the call: the broker stores it until the
    // consumer takes it.
    let module = durable_module(&broker, "tools", registry(), &FlowBuilder::new().build()).await;
    answers_as_go(&agent(&broker).await, "tools").await;
    module.receiver.stop().await;
}

#[test]
fn a_tool_is_listed_with_the_agent_tool_tag_and_its_description_as_info() {
    let info = Upper::info();
    assert!(info.tags.iter().any(|t| t == "agent_tool"), "{info:?}");
    assert_eq!(info.info, "Upper-cases a text");
    let tool = Count::agent_tool().expect("a tool");
    assert_eq!((tool.input, tool.output), ("input", "total"));
    assert!(Plain::agent_tool().is_none());
    assert!(!Plain::info().tags.iter().any(|t| t == "agent_tool"));
}

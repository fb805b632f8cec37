//! `[[secret:<name>/<key>]]` placeholders, in-process: the component gets the value in
//! its settings and edge inputs, a rotation reaches it when nodes are re-applied, the
//! value is masked in reports, observed payloads and errors, and a missing Secret is an
//! error on its node alone.
// A failed step is the test failing: the panic names the line.
#![allow(clippy::unwrap_used)]

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU32, Ordering},
};

use serde_json::{Value, json};
use tiny_sdk::{
    engine::{Engine, HopEvent, Observer},
    error::code,
    flow::FlowBuilder,
    harness::{Harness, Relay},
    prelude::*,
    redact::MASK,
    secret::StaticSecrets,
};

const TOKEN: &str = "s3cr3t-token-value";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
#[serde(default)]
struct KeyedSettings {
    /// Not marked secret: only the placeholder makes it one.
    token: String,
    label: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
struct KeyedIn {
    name: String,
    header: String,
}

/// Says what it holds: the settings' token and the input's header, on its output and
/// in its reply; a name `fail` fails quoting the token.
#[derive(Debug, Component, Default)]
#[component(name = "keyed", settings = KeyedSettings, hooks)]
struct Keyed {
    input: Input<KeyedIn>,
    out: Output<Value>,
    deliveries: AtomicU32,
    seen: Mutex<Vec<String>>,
}

impl Hooks for Keyed {
    async fn on_settings(&self, _: &Ctx<Self>, settings: &KeyedSettings) -> Result<()> {
        self.deliveries.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut seen) = self.seen.lock() {
            seen.push(settings.token.clone());
        }
        Ok(())
    }
}

impl Keyed {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: KeyedIn) -> Result<Reply> {
        let s = ctx.settings();
        if msg.name == "fail" {
            return Err(Error::permanent(format!("refused with {}", s.token)));
        }
        let said = json!({
            "token": s.token,
            "header": msg.header,
            "said": format!("{} for {}", s.token, msg.name),
            "deliveries": self.deliveries.load(Ordering::SeqCst),
        });
        self.out.emit(ctx, said.clone()).await?;
        Ok(Reply::value(said))
    }
}

/// Fails quoting its token, to its catch port.
#[derive(Debug, Component, Default)]
#[component(name = "strict", settings = KeyedSettings)]
struct Strict {
    input: Input<KeyedIn>,
    #[port(catch)]
    error: Output<ErrorMessage>,
}

impl Strict {
    async fn on_input(&self, ctx: &Ctx<Self>, _: KeyedIn) -> Result<Reply> {
        Err(Error::permanent(format!("refused with {}", ctx.settings().token)))
    }
}

fn flow(settings: Value) -> tiny_sdk::flow::Flow {
    FlowBuilder::new()
        .node("k", "keyed")
        .settings(settings)
        .node("other", "relay")
        .build()
}

#[tokio::test]
async fn settings_get_the_secret_and_a_rotation_reaches_on_settings_once() {
    let h = Harness::builder()
        .register::<Keyed>()
        .register::<Relay>()
        .secret("creds", "token", TOKEN)
        .flow(flow(
            json!({"token": "[[secret:creds/token]]", "label": "[[secret: not one"}),
        ))
        .build()
        .await
        .unwrap();
    let reply = h.send("k:input", json!({"name": "Ada"})).await.unwrap();
    let reply = reply.into_value().unwrap();
    assert_eq!(reply["token"], TOKEN);
    assert_eq!(reply["deliveries"], 1);
    // A string that is not whole placeholder is passed as written.
    let report = h.report("k").unwrap();
    let settings = report.ports.iter().find(|p| p.name == "_settings").unwrap();
    assert_eq!(settings.configuration["token"], MASK, "{settings:?}");
    assert_eq!(settings.configuration["label"], "[[secret: not one");

    // Applied again with the same value: no new `_settings` delivery.
    assert!(h.refresh_secrets().await.is_empty());
    let again = h
        .send("k:input", json!({"name": "Ada"}))
        .await
        .unwrap()
        .into_value()
        .unwrap();
    assert_eq!(again["deliveries"], 1);

    // Rotated: delivered once more, with the new value.
    h.set_secret("creds", "token", "r0tated-token-value");
    assert!(h.refresh_secrets().await.is_empty());
    let rotated = h
        .send("k:input", json!({"name": "Ada"}))
        .await
        .unwrap()
        .into_value()
        .unwrap();
    assert_eq!(rotated["token"], "r0tated-token-value");
    assert_eq!(rotated["deliveries"], 2);
}

#[tokio::test]
async fn an_edge_configuration_gets_the_secret_where_it_is_written_only() {
    let flow = FlowBuilder::new()
        .node("src", "relay")
        .node("k", "keyed")
        .edge(
            "src:out",
            "k:input",
            json!({"name": "{{$.name}}", "header": "[[secret:creds/header]]"}),
        )
        .build();
    let h = Harness::builder()
        .register::<Keyed>()
        .register::<Relay>()
        .secret("creds", "header", "{{$.name}} Bearer xyz")
        .flow(flow)
        .build()
        .await
        .unwrap();
    // The value is taken as text, never as an expression; and a message that holds a
    // placeholder gets no secret for it.
    let reply = h
        .send("src:input", json!({"name": "[[secret:creds/header]]"}))
        .await
        .unwrap()
        .into_value()
        .unwrap();
    assert_eq!(reply["header"], "{{$.name}} Bearer xyz");
    assert_eq!(reply["said"], " for [[secret:creds/header]]");
}

#[tokio::test]
async fn a_missing_secret_is_an_error_on_its_node_that_heals_when_it_appears() {
    let (h, errors) = Harness::builder()
        .register::<Keyed>()
        .register::<Relay>()
        .flow(flow(json!({"token": "[[secret:creds/token]]"})))
        .build_lenient()
        .await
        .unwrap();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (node, err) = &errors[0];
    assert_eq!(node, "k");
    assert_eq!(err.code(), Some(code::SECRET));
    let text = err.to_string();
    assert!(
        text.contains("port `_settings` field `token`: [[secret:creds/token]]: Secret `creds` does not exist"),
        "{text}"
    );
    assert_eq!(h.report("k").unwrap().error.unwrap().code(), Some(code::SECRET));
    // The other node runs; the broken one refuses messages.
    assert!(h.send("other:input", json!({"x": 1})).await.is_ok());
    assert!(h.send("k:input", json!({"name": "Ada"})).await.is_err());

    // A key that is not there names the keys that are.
    h.set_secret("creds", "other", "x");
    let errors = h.refresh_secrets().await;
    assert!(
        errors[0]
            .1
            .to_string()
            .contains("Secret `creds` has no key `token` (keys: other)"),
        "{errors:?}"
    );

    // The Secret appears: the next refresh loads the node.
    h.set_secret("creds", "token", TOKEN);
    assert!(h.refresh_secrets().await.is_empty());
    assert!(h.report("k").unwrap().error.is_none());
    let reply = h
        .send("k:input", json!({"name": "Ada"}))
        .await
        .unwrap()
        .into_value()
        .unwrap();
    assert_eq!(reply["token"], TOKEN);
}

#[tokio::test]
async fn a_missing_secret_on_an_edge_fails_that_edge_and_the_node_runs_on() {
    let flow = FlowBuilder::new()
        .node("src", "relay")
        .node("k", "keyed")
        .settings(json!({"token": "plain"}))
        .edge("src:out", "k:input", json!({"header": "[[secret:gone/key]]"}))
        .build();
    let (h, errors) = Harness::builder()
        .register::<Keyed>()
        .register::<Relay>()
        .flow(flow)
        .build_lenient()
        .await
        .unwrap();
    assert!(errors.is_empty(), "{errors:?}");
    let problem = h.report("k").unwrap().error.unwrap();
    assert_eq!(problem.code(), Some(code::SECRET));
    assert!(
        problem
            .to_string()
            .contains("port `input` (edge from `src:out`) field `header`: [[secret:gone/key]]"),
        "{problem}"
    );
    let err = h.send("src:input", json!({"name": "Ada"})).await.unwrap_err();
    assert_eq!(err.code(), Some(code::SECRET), "{err}");
    // Straight to the node, its port works.
    let reply = h
        .send("k:input", json!({"name": "Ada"}))
        .await
        .unwrap()
        .into_value()
        .unwrap();
    assert_eq!(reply["token"], "plain");
}

#[tokio::test]
async fn a_malformed_placeholder_is_refused_with_its_field() {
    let (_, errors) = Harness::builder()
        .register::<Keyed>()
        .register::<Relay>()
        .flow(flow(json!({"token": "[[secret:creds]]"})))
        .build_lenient()
        .await
        .unwrap();
    let text = errors[0].1.to_string();
    assert!(
        text.contains("port `_settings` field `token`: `[[secret:creds]]` is not a secret placeholder"),
        "{text}"
    );
}

/// Every payload an observer may write, as it would write it.
#[derive(Default)]
struct Written(Mutex<Vec<String>>);

impl Observer for Written {
    fn on_hop(&self, event: &HopEvent<'_>) {
        let mut out = self.0.lock().unwrap();
        if let Ok(Some(data)) = event.redacted_json() {
            out.push(data.to_string());
        }
        if let Some(e) = event.error {
            out.push(e.to_string());
        }
    }
}

#[tokio::test]
async fn the_value_is_masked_in_observed_payloads_errors_and_the_report() {
    let source = Arc::new(StaticSecrets::default());
    source.set("creds", "token", TOKEN);
    source.set("creds", "header", "h3ader-secret");
    let written = Arc::new(Written::default());
    let engine = Engine::builder()
        .register::<Keyed>()
        .register::<Relay>()
        .secrets(source)
        .observer(written.clone())
        .build();
    let flow = FlowBuilder::new()
        .node("src", "relay")
        .node("k", "keyed")
        .settings(json!({"token": "[[secret:creds/token]]"}))
        .edge(
            "src:out",
            "k:input",
            json!({"name": "{{$.name}}", "header": "[[secret:creds/header]]"}),
        )
        .edge("k:out", "sink:input", json!("{{$}}"))
        .node("sink", "relay")
        .build();
    for node in flow.nodes {
        engine.apply(node).await.unwrap();
    }
    let reply = engine.send("src:input", json!({"name": "Ada"})).await.unwrap();
    let reply = reply.into_value().unwrap();
    assert_eq!(
        (reply["token"].as_str(), reply["header"].as_str()),
        (Some(TOKEN), Some("h3ader-secret"))
    );
    let err = engine.send("k:input", json!({"name": "fail"})).await.unwrap_err();
    assert!(err.to_string().contains("refused with <redacted>"), "{err}");

    let written = written.0.lock().unwrap().join("\n");
    assert!(written.contains("<redacted> for Ada"), "{written}");
    assert!(
        !written.contains(TOKEN) && !written.contains("h3ader-secret"),
        "{written}"
    );
    let report = format!("{:?}", engine.report("k").unwrap());
    assert!(!report.contains(TOKEN), "{report}");
}

#[tokio::test]
async fn an_error_that_goes_on_into_the_flow_carries_no_value() {
    let flow = FlowBuilder::new()
        .node("s", "strict")
        .settings(json!({"token": "[[secret:creds/token]]"}))
        .edge("s:error", "sink:input", json!("{{$}}"))
        .node("sink", "relay")
        .build();
    let h = Harness::builder()
        .register::<Strict>()
        .register::<Relay>()
        .secret("creds", "token", TOKEN)
        .flow(flow)
        .build()
        .await
        .unwrap();
    h.send("s:input", json!({"name": "Ada", "header": TOKEN}))
        .await
        .unwrap();
    // What goes on to the next node: the error and the input, the value masked in both.
    let got = h.emitted("s:error");
    assert_eq!(got.len(), 1);
    let text = got[0].to_string();
    assert!(text.contains("refused with <redacted>"), "{text}");
    assert!(!text.contains(TOKEN), "{text}");
}

/// What nobody declared secret is masked by its key's name, as the Go SDK does, in
/// what an observer writes (a tracker).
#[tokio::test]
async fn credential_shaped_keys_are_masked_in_what_is_published() {
    let written = Arc::new(Written::default());
    let engine = Engine::builder().register::<Relay>().observer(written.clone()).build();
    let flow = FlowBuilder::new()
        .node("a", "relay")
        .edge("a:out", "b:input", json!("{{$}}"))
        .node("b", "relay")
        .build();
    for node in flow.nodes {
        engine.apply(node).await.unwrap();
    }
    let msg = json!({"city": "Oslo", "headers": {"Authorization": "Bearer abc123"}, "refresh_token": "r-42"});
    engine.send("a:input", msg).await.unwrap();
    let written = written.0.lock().unwrap().join("\n");
    assert!(written.contains("Oslo"), "{written}");
    assert!(!written.contains("abc123") && !written.contains("r-42"), "{written}");
    assert!(written.contains(r#""Authorization":"<redacted>""#), "{written}");
}

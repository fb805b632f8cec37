//! The `js` runtime in a module on the real control plane: a TinyComponent in `js`
//! installed, a node of it answering in a flow, a script that loops stopped by the
//! watchdog (the message fails saying so, the node and the others go on), and a script
//! that does not compile refused with its line and column in `status.reason`.

use std::time::Duration;

use kube::{Api, Client, api::PostParams};
use serde_json::{Value, json};
use tiny_js::JsRuntime;
use tiny_runtime::{
    config::ModuleConfig,
    crd::{TinyComponent, TinyComponentSpec, TinyComponentStatus, TinySignal},
};
use tiny_sdk::engine::{ExprRuntime, Registry};
use tiny_testkit::{
    cluster::{create_flow, delivered, env, failed, nodes_ready, signal, start_module},
    components::Answer,
    eventually,
};

const NS: &str = "js";

/// TinyComponent `component` in `js`, running `script` on any object.
fn definition(component: &str, script: &str) -> TinyComponent {
    let spec = TinyComponentSpec {
        component: component.into(),
        runtime: "js".into(),
        script: script.into(),
        input: r#"{"type": "object"}"#.into(),
        output: r#"{"type": "object"}"#.into(),
        ..Default::default()
    };
    TinyComponent::new(component, spec)
}

/// Definition `name`'s status once `pred` holds.
async fn status_where(
    api: &Api<TinyComponent>,
    name: &str,
    what: &str,
    pred: impl Fn(&TinyComponentStatus) -> bool,
) -> TinyComponentStatus {
    eventually(what, Duration::from_secs(60), || async {
        api.get(name).await.ok()?.status.filter(|s| pred(s))
    })
    .await
}

/// Signal `name` to node `node`'s `request` port with `data` as its input, once it has
/// ended.
async fn ask(client: &Client, name: &str, node: &str, data: Value) -> TinySignal {
    let request = json!({"context": null, "inputData": data});
    signal(client, NS, name, node, "request", request).await
}

const FLOW: &str = r#"
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: f.js-module-v0.spin-1
  labels: { tinysystems.io/flow-name: f }
spec:
  module: js-module
  component: spin
  edges:
    - { id: e1, port: response, to: "f.js-module-v0.answer-1:input", flowID: f }
---
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: f.js-module-v0.who-1
  labels: { tinysystems.io/flow-name: f }
spec:
  module: js-module
  component: who
  edges:
    - { id: e2, port: response, to: "f.js-module-v0.answer-1:input", flowID: f }
---
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: f.js-module-v0.answer-1
  labels: { tinysystems.io/flow-name: f }
spec:
  module: js-module
  component: answer
  ports:
    - { from: "f.js-module-v0.spin-1:response", port: input, flowID: f, configuration: "{{$.outputData}}" }
    - { from: "f.js-module-v0.who-1:response", port: input, flowID: f, configuration: "{{$.outputData}}" }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_js_definition_runs_and_a_looping_one_is_stopped() {
    let env = env().await;
    let client = env.client();
    env.create_namespace(NS).await.expect("namespace");
    let mut registry = Registry::default();
    // A short watchdog: the loop below is stopped after it, not after Go's 30 s.
    registry
        .register::<Answer>()
        .runtime(JsRuntime::default().timeout(Duration::from_millis(500)))
        .runtime(ExprRuntime);
    let module = start_module(
        &client,
        ModuleConfig::new("js-module-v0", "0.1.0", NS, "js-0"),
        registry,
    )
    .await;
    let api: Api<TinyComponent> = Api::namespaced(client.clone(), NS);
    for (name, script) in [
        (
            "spin",
            "export default (input) => { while (input.spin) {} return {ok: true}; }",
        ),
        (
            "who",
            "export default (input) => ({name: input.user.name.toUpperCase()})",
        ),
        ("bad", "export default (input) => {\n  return input +;\n}"),
    ] {
        api.create(&PostParams::default(), &definition(name, script))
            .await
            .expect("definition created");
    }
    for name in ["spin", "who"] {
        status_where(&api, name, &format!("`{name}` to be installed"), |s| s.installed).await;
    }
    let bad = status_where(&api, "bad", "`bad` to be refused", |s| !s.reason.is_empty()).await;
    assert!(!bad.installed);
    assert!(
        bad.reason.starts_with("the script does not compile at line 2, column "),
        "{}",
        bad.reason
    );

    let flow = create_flow(&client, NS, FLOW).await;
    nodes_ready(
        &client,
        NS,
        &flow.nodes.iter().map(|n| n.name.clone()).collect::<Vec<_>>(),
    )
    .await;
    let s = ask(&client, "who", "f.js-module-v0.who-1", json!({"user": {"name": "ada"}})).await;
    assert_eq!(delivered(&s), Some(json!({"name": "ADA"})));

    // Loops for ever: stopped by the watchdog, the message fails saying so.
    let s = ask(&client, "spin", "f.js-module-v0.spin-1", json!({"spin": true})).await;
    let error = failed(&s);
    assert!(
        error.contains("ran longer than") && error.contains("was stopped"),
        "{error}"
    );
    // The node and the others go on.
    let s = ask(&client, "calm", "f.js-module-v0.spin-1", json!({"spin": false})).await;
    assert_eq!(delivered(&s), Some(json!({"ok": true})));
    let s = ask(
        &client,
        "who-2",
        "f.js-module-v0.who-1",
        json!({"user": {"name": "bo"}}),
    )
    .await;
    assert_eq!(delivered(&s), Some(json!({"name": "BO"})));
    module.stop().await;
}

//! The stateful components added from Go's catalog on a real control plane: collect,
//! inject, display and chat keep what they hold in the TinyNode's `status.metadata`,
//! under Go's `_state/` keys, and a new module process carries on from it.

mod support;

use kube::Api;
use serde_json::{Value, json};
use std::time::Duration;
use support::cluster::{MODULE, b64, start_module, state, state_bytes};
use tiny_runtime::crd::{TinyModule, TinyNode};
use tiny_testkit::{
    cluster::{apply_yaml, delivered, env, port_config, signal},
    eventually,
};

/// A TinyNode of this module, with settings and edges (`port -> node:port`).
fn node(name: &str, component: &str, settings: Option<Value>, edges: &[(&str, &str)]) -> String {
    node_from(name, component, settings, edges, None)
}

/// [`node`] whose `in` port takes the whole message (`{{$}}`) from `from`
/// (`node:port`): as in Go, an edge without a configuration brings the port's default.
fn node_from(
    name: &str,
    component: &str,
    settings: Option<Value>,
    edges: &[(&str, &str)],
    from: Option<&str>,
) -> String {
    let mut ports: Vec<String> = settings
        .map(|s| format!("{{ port: _settings, configuration: {} }}", b64(&s)))
        .into_iter()
        .collect();
    if let Some(from) = from {
        ports.push(format!(
            "{{ port: in, from: '{from}', configuration: {} }}",
            b64(&json!("{{$}}"))
        ));
    }
    let ports = if ports.is_empty() {
        String::new()
    } else {
        format!("  ports: [ {} ]\n", ports.join(", "))
    };
    let edges: String = edges
        .iter()
        .enumerate()
        .map(|(i, (port, to))| format!("  - {{ id: e{i}, port: {port}, to: '{to}' }}\n"))
        .collect();
    let edges = if edges.is_empty() {
        String::new()
    } else {
        format!("  edges:\n{edges}")
    };
    format!(
        "apiVersion: operator.tinysystems.io/v1alpha1\nkind: TinyNode\n\
         metadata: {{ name: {name}, labels: {{ tinysystems.io/flow-name: cat }} }}\n\
         spec:\n  module: {MODULE}\n  component: {component}\n{ports}{edges}---\n"
    )
}

/// Waits until `name`'s `_control` view satisfies `ok`, and returns it.
async fn view(nodes: &Api<TinyNode>, name: &str, what: &str, ok: impl Fn(&Value) -> bool + Clone) -> Value {
    eventually(what, Duration::from_secs(30), || {
        let (nodes, ok) = (nodes.clone(), ok.clone());
        let name = name.to_owned();
        async move { port_config(&nodes.get(&name).await.ok()?, "_control").filter(|v| ok(v)) }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateful_components_keep_gos_state_keys_across_a_module_restart() {
    let env = env().await;
    let client = env.client();
    let ns = "catalog";
    env.create_namespace(ns).await.expect("namespace");
    let mut module = start_module(&client, ns).await;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);

    let collect = "cat.common-module-v0.collect-1";
    let inject = "cat.common-module-v0.inject-1";
    let display = "cat.common-module-v0.display-1";
    let chat = "cat.common-module-v0.chat-1";
    let (seen_collect, seen_inject) = ("cat.common-module-v0.debug-1", "cat.common-module-v0.debug-2");
    let yaml = [
        node(
            collect,
            "collect",
            Some(json!({"timeoutSeconds": 600, "maxGroups": 10})),
            &[("response", &format!("{seen_collect}:in"))],
        ),
        node(inject, "inject", None, &[("output", &format!("{seen_inject}:in"))]),
        node(display, "display", Some(json!({"text": "# Readme"})), &[]),
        node(
            chat,
            "chat",
            Some(json!({"placeholder": "Ask", "historyLimit": 50})),
            &[],
        ),
        node_from(seen_collect, "debug", None, &[], Some(&format!("{collect}:response"))),
        node_from(seen_inject, "debug", None, &[], Some(&format!("{inject}:output"))),
    ]
    .concat();
    apply_yaml(&client, ns, &yaml).await;
    view(&nodes, display, "display to show its settings' text", |v| {
        v["text"] == "# Readme"
    })
    .await;
    view(&nodes, chat, "chat to show its widget", |v| v["placeholder"] == "Ask").await;

    let send = |name: &str, to: &str, port: &str, data: Value| {
        let (client, name, to, port) = (client.clone(), name.to_owned(), to.to_owned(), port.to_owned());
        async move { delivered(&signal(&client, ns, &name, &to, &port, data).await) }
    };
    send(
        "c1",
        collect,
        "item",
        json!({"context": "run-1", "groupKey": "run-1", "index": 1, "total": 2, "item": "b"}),
    )
    .await;
    send("i1", inject, "config", json!({"data": {"region": "eu"}})).await;
    send("d1", display, "in", json!({"text": "**42**"})).await;
    send("s1", chat, "say", json!({"text": "hello"})).await;
    send("a1", chat, "ask", json!({"context": {"deploy": 7}})).await;
    view(&nodes, display, "display to show the message", |v| {
        v["text"] == "**42**"
    })
    .await;
    let widget = view(&nodes, chat, "chat to show the question", |v| {
        v["pendingQuestion"].is_object()
    })
    .await;
    assert_eq!(widget["thread"][0]["text"], "hello");
    let chat_node = nodes.get(chat).await.expect("chat");
    let schema: Value = chat_node
        .status
        .as_ref()
        .and_then(|s| s.ports.iter().find(|p| p.name == "_control"))
        .and_then(|p| p.schema.as_ref()?.decode().ok())
        .expect("a control schema");
    assert_eq!(schema["$defs"]["ChatControl"]["format"], "chat", "{schema}");

    module.stop().await;
    // What the Go SDK would read: `_state/<key>`, base64; JSON but for display's text.
    let stored = eventually("the state to reach the API server", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let c = nodes.get(collect).await.ok()?;
            let i = nodes.get(inject).await.ok()?;
            let d = nodes.get(display).await.ok()?;
            let h = nodes.get(chat).await.ok()?;
            let all = state(&c, "run-1").is_some()
                && state(&i, "config").is_some()
                && state_bytes(&d, "text").is_some()
                && state(&h, "queue").is_some();
            all.then_some((c, i, d, h))
        }
    })
    .await;
    let (c, i, d, h) = stored;
    let group = state(&c, "run-1").expect("the group");
    assert_eq!(
        (group["total"].clone(), group["items"].clone()),
        (json!(2), json!({"1": "b"}))
    );
    assert!(group["firstSeen"].as_str().is_some_and(|t| t.ends_with('Z')), "{group}");
    assert_eq!(state(&i, "config"), Some(json!({"region": "eu"})));
    assert_eq!(state_bytes(&d, "text").as_deref(), Some(&b"**42**"[..]));
    let thread = state(&h, "thread").expect("the thread");
    assert_eq!(
        (thread[0]["kind"].clone(), thread[0]["text"].clone()),
        (json!("reply"), json!("hello"))
    );
    assert_eq!(state(&h, "queue").expect("queue")[0]["context"], json!({"deploy": 7}));

    // A new process: the dashboards show what was stored, and the work carries on.
    module = start_module(&client, ns).await;
    view(&nodes, display, "display to keep its answer", |v| v["text"] == "**42**").await;
    view(&nodes, chat, "chat to keep its conversation", |v| {
        v["pendingQuestion"]["context"] == json!({"deploy": 7}) && v["thread"].as_array().is_some_and(|t| t.len() == 2)
    })
    .await;
    send(
        "c2",
        collect,
        "item",
        json!({"context": "run-1", "groupKey": "run-1", "index": 0, "total": 2, "item": "a"}),
    )
    .await;
    let shown = view(&nodes, seen_collect, "the group to complete", |v| {
        !v["context"].is_null()
    })
    .await;
    assert_eq!(shown["context"], json!({"context": "run-1", "items": ["a", "b"]}));
    send("i2", inject, "message", json!({"context": 1})).await;
    let shown = view(&nodes, seen_inject, "the stored config to be attached", |v| {
        !v["context"].is_null()
    })
    .await;
    assert_eq!(shown["context"], json!({"context": 1, "config": {"region": "eu"}}));
    let done = eventually("collect to drop the finished group", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move { nodes.get(collect).await.ok().filter(|n| state(n, "run-1").is_none()) }
    })
    .await;
    assert!(state(&done, "run-1").is_none());
    module.stop().await;
}

/// The components an agent may call are published as Go's build publishes them: the
/// TinyModule's status tags them `agent_tool`, and only them.
#[tokio::test]
async fn the_tinymodule_tags_the_agent_tools() {
    let env = env().await;
    let client = env.client();
    let ns = "tools";
    env.create_namespace(ns).await.expect("namespace");
    let module = start_module(&client, ns).await;
    let modules: Api<TinyModule> = Api::namespaced(client.clone(), ns);
    let status = eventually("the module to publish its components", Duration::from_secs(30), || {
        let modules = modules.clone();
        async move {
            modules
                .get(MODULE)
                .await
                .ok()?
                .status
                .filter(|s| !s.components.is_empty())
        }
    })
    .await;
    let mut tagged: Vec<&str> = status
        .components
        .iter()
        .filter(|c| c.tags.iter().any(|t| t == "agent_tool"))
        .map(|c| c.name.as_str())
        .collect();
    tagged.sort_unstable();
    assert_eq!(
        tagged,
        ["array_filter", "array_get", "group_by"],
        "tagged agent_tool: {tagged:?}"
    );
    module.stop().await;
}

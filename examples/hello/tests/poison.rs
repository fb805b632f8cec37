//! One bad object must not stop a module: malformed TinyNodes and TinySignals, names out
//! of form, and Go's module naming, on a real control plane with the module binary.

mod common;

use std::time::Duration;
use tiny_runtime::crd::SignalPhase;

use common::{create_flow, delivered, env, eventually, hello, ready, replica, signal};

use k8s_openapi::{
    api::events::v1::Event, apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
};
use kube::{
    Api, Client,
    api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams},
    core::GroupVersionKind,
};
use serde_json::{Value, json};
use tiny_example_hello::GREET_FLOW;
use tiny_runtime::crd::{TinyModule, TinyNode};

/// Base64 of `not json`: valid base64, so the API server stores it.
const NOT_JSON: &str = "bm90IGpzb24=";

/// Creates an object of `kind` from raw JSON, bypassing tiny's typed encoding, as a
/// broken client or another SDK could.
async fn create_raw(client: &Client, ns: &str, kind: &str, name: &str, spec: Value) {
    let gvk = GroupVersionKind::gvk("operator.tinysystems.io", "v1alpha1", kind);
    let ar = ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let obj = DynamicObject::new(name, &ar).data(json!({ "spec": spec }));
    api.create(&PostParams::default(), &obj)
        .await
        .expect("the API server stores it");
}

/// The raw JSON of an object, whatever its shape.
async fn get_raw(client: &Client, ns: &str, kind: &str, name: &str) -> Option<Value> {
    let gvk = GroupVersionKind::gvk("operator.tinysystems.io", "v1alpha1", kind);
    let ar = ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let obj = api.get(name).await.ok()?;
    serde_json::to_value(obj).ok()
}

async fn event_for(client: &Client, ns: &str, name: &str, reason: &str) -> Event {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    eventually(&format!("a {reason} Event for {name}"), Duration::from_secs(30), || {
        let events = events.clone();
        async move {
            let list = events.list(&ListParams::default()).await.ok()?;
            list.items.into_iter().find(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                    && e.reason.as_deref() == Some(reason)
            })
        }
    })
    .await
}

/// Removes the status of an object, whatever its shape: what a replica wrote before a
/// restart must not answer for the replica after it.
async fn clear_status(client: &Client, ns: &str, kind: &str, name: &str) {
    let gvk = GroupVersionKind::gvk("operator.tinysystems.io", "v1alpha1", kind);
    let ar = ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let patch = Patch::Merge(json!({"status": null}));
    api.patch_status(name, &PatchParams::default(), &patch)
        .await
        .expect("status cleared");
    let raw = get_raw(client, ns, kind, name).await.expect("still there");
    assert!(raw.get("status").is_none_or(Value::is_null), "{raw}");
}

/// The node's status, once it reports an error.
async fn failed_status(client: &Client, ns: &str, name: &str) -> Value {
    eventually(
        &format!("{name} to report an error"),
        Duration::from_secs(60),
        || async move {
            let raw = get_raw(client, ns, "TinyNode", name).await?;
            (raw.pointer("/status/error") == Some(&json!(true))).then_some(raw["status"].clone())
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_objects_are_refused_alone_across_a_restart() {
    let env = env().await;
    let client = env.client();
    let ns = "poison";
    env.create_namespace(ns).await.expect("namespace");

    // Before the module starts, so its first LIST holds every kind of bad object.
    let flow = create_flow(&client, ns, GREET_FLOW).await;
    let poison = "p.examples-v0.hello-9";
    create_raw(
        &client,
        ns,
        "TinyNode",
        poison,
        json!({"module": "examples", "component": "hello",
               "ports": [{"port": "_settings", "configuration": NOT_JSON}]}),
    )
    .await;
    // Another module's malformed node: not ours to judge, and no reason to stop.
    let foreign = "p.other-v0.thing-1";
    create_raw(
        &client,
        ns,
        "TinyNode",
        foreign,
        json!({"module": "other", "component": "thing", "ports": [{"port": "in", "configuration": NOT_JSON}]}),
    )
    .await;
    create_raw(
        &client,
        ns,
        "TinySignal",
        "bad-data",
        json!({"node": "greet.examples-v0.hello-1", "port": "input", "data": NOT_JSON}),
    )
    .await;
    // Names out of form, for this module's component.
    let named = |name: &str, component: &str| {
        let mut node = TinyNode::new(
            name,
            tiny_runtime::crd::TinyNodeSpec(tiny_sdk::flow::NodeSpec {
                module: "examples-v0".into(),
                component: component.into(),
                ..tiny_sdk::flow::NodeSpec::default()
            }),
        );
        node.metadata.namespace = Some(ns.into());
        node
    };
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    for (name, component) in [("badname", "hello"), ("x.examples-v0.shout-1", "hello")] {
        nodes
            .create(&PostParams::default(), &named(name, component))
            .await
            .expect("created");
    }

    let mut module = Some(replica(&env, ns, "m-0"));
    for round in 0..2 {
        let replica = module.as_ref().expect("running");
        // The good flow runs and answers.
        for n in &flow.nodes {
            eventually(&format!("{} to be Ready", n.name), Duration::from_secs(60), || {
                let nodes = nodes.clone();
                async move { nodes.get(&n.name).await.ok().filter(|n| ready(n) == Some(true)) }
            })
            .await;
        }
        let good = signal(
            &client,
            ns,
            &format!("good-{round}"),
            "greet.examples-v0.hello-1",
            "input",
            json!({"name": "Ada", "context": {"user": "ada"}}),
        )
        .await;
        assert_eq!(delivered(&good), Some(json!({"greeting": "HELLO, ADA!", "for": "ada"})));

        // The malformed node is refused with the field that is wrong.
        let st = failed_status(&client, ns, poison).await;
        let text = st["status"].as_str().unwrap_or_default();
        assert!(text.contains("spec.ports[0].configuration"), "{text}");
        assert!(text.contains("not JSON"), "{text}");
        let cond = &st["conditions"][0];
        assert_eq!(
            (cond["type"].as_str(), cond["status"].as_str()),
            (Some("Ready"), Some("False"))
        );
        assert_eq!(cond["reason"], "Undecodable");
        // The malformed signal fails, naming its field, and is never delivered.
        let bad = eventually("the bad signal to fail", Duration::from_secs(60), || async {
            let raw = get_raw(&client, ns, "TinySignal", "bad-data").await?;
            (raw.pointer("/status/phase") == Some(&json!(SignalPhase::Failed.as_str()))).then_some(raw)
        })
        .await;
        let why = bad["status"]["error"].as_str().unwrap_or_default();
        assert!(why.contains("spec.data") && why.contains("not JSON"), "{why}");
        // Names out of form are refused, and a message for one fails at once.
        let st = failed_status(&client, ns, "badname").await;
        assert_eq!(st["conditions"][0]["reason"], "InvalidName");
        assert!(
            st["status"].as_str().unwrap_or_default().contains("exactly three"),
            "{st}"
        );
        let st = failed_status(&client, ns, "x.examples-v0.shout-1").await;
        let text = st["status"].as_str().unwrap_or_default();
        assert!(
            text.contains("is for component `shout`, but spec.component is `hello`"),
            "{text}"
        );
        let to_bad = signal(
            &client,
            ns,
            &format!("to-badname-{round}"),
            "badname",
            "input",
            json!({"name": "x"}),
        )
        .await;
        let err = to_bad.status.and_then(|s| s.error).unwrap_or_default();
        assert!(
            err.contains("is not running") && err.contains("three dot-separated"),
            "{err}"
        );
        // Another module's malformed node is left alone.
        let foreign_status = get_raw(&client, ns, "TinyNode", foreign).await.expect("exists");
        assert!(foreign_status.get("status").is_none(), "{foreign_status}");
        // Ready, honestly: the watches listed despite the bad objects.
        let (code, body) = replica.probe("/readyz").await.expect("probe answers");
        assert_eq!(code, 200, "{body}");
        if round == 0 {
            event_for(&client, ns, poison, "NodeError").await;
            event_for(&client, ns, "badname", "NodeError").await;
            event_for(&client, ns, "bad-data", "SignalUndecodable").await;
            // A restart lists everything again, bad objects included: with what the
            // first replica wrote removed, the second must write it all again.
            drop(module.take());
            for name in [poison, "badname", "x.examples-v0.shout-1"] {
                clear_status(&client, ns, "TinyNode", name).await;
            }
            for n in &flow.nodes {
                clear_status(&client, ns, "TinyNode", &n.name).await;
            }
            clear_status(&client, ns, "TinySignal", "bad-data").await;
            module = Some(common::replica(&env, ns, "m-1"));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_says_when_a_watch_cannot_list() {
    let env = env().await;
    let client = env.client();
    let ns = "unready";
    env.create_namespace(ns).await.expect("namespace");
    let replica = common::replica(&env, ns, "r-0");
    eventually("ready", Duration::from_secs(30), || async {
        replica.probe("/readyz").await.filter(|(code, _)| *code == 200)
    })
    .await;
    // Without the TinySignal CRD, the signal watch cannot list.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.get("tinysignals.operator.tinysystems.io").await.expect("the CRD");
    crds.delete("tinysignals.operator.tinysystems.io", &Default::default())
        .await
        .expect("deleted");
    let (code, body) = eventually("not ready", Duration::from_secs(60), || async {
        replica
            .probe("/readyz")
            .await
            .filter(|(code, body)| *code != 200 && body.contains("cannot list"))
    })
    .await;
    assert_eq!(code, 503);
    assert!(body.contains("TinySignals: cannot list"), "{body}");
    assert!(!body.contains("TinyNodes"), "only the failing watch is named: {body}");
    // Back when the list works again.
    let mut crd = crd;
    crd.metadata = kube::api::ObjectMeta {
        name: crd.metadata.name.clone(),
        ..Default::default()
    };
    crd.status = None;
    eventually("the CRD to be re-created", Duration::from_secs(60), || {
        let (crds, crd) = (crds.clone(), crd.clone());
        async move { crds.create(&PostParams::default(), &crd).await.ok() }
    })
    .await;
    eventually("ready again", Duration::from_secs(90), || async {
        replica.probe("/readyz").await.filter(|(code, _)| *code == 200)
    })
    .await;
}

/// A Go-shaped TinyNode, as the platform writes one for the Go hello module: the
/// module name the platform gives (major version included), base64 settings.
fn go_shaped(component: &str, ports: Value, edges: Value) -> Value {
    json!({ "module": "hello-module-v0", "component": component, "ports": ports, "edges": edges })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_flags_own_go_shaped_nodes_and_publish_the_go_module_name() {
    let env = env().await;
    let client = env.client();
    let ns = "gonames";
    env.create_namespace(ns).await.expect("namespace");
    // The platform's flags: the major version is part of `--name`, and Go's module goes
    // by that name, sanitised (`GetNameSanitised`), whatever `--version` says.
    let replica = hello(&env, ns, "g-0", "hello-module-v0").start();
    // Settings {"greetingWord":"Hej"}; the second node's name carries a publisher prefix.
    let hello = "a1b2c3d4.hello-module-v0.hello-x7k2p";
    let respond = "a1b2c3d4.tinysystems-hello-module-v0.respond-q9z8w";
    create_raw(
        &client,
        ns,
        "TinyNode",
        hello,
        go_shaped(
            "hello",
            json!([{ "port": "_settings", "configuration": "eyJncmVldGluZ1dvcmQiOiJIZWoifQ==" }]),
            json!([{ "id": "e1", "port": "greeting", "to": format!("{respond}:response"), "flowID": "f" }]),
        ),
    )
    .await;
    // The edge's mapping, {"greeting":"{{$.greeting}}"}, as base64 the way Go stores it.
    let mapping = json!([{ "from": format!("{hello}:greeting"), "port": "response", "flowID": "f",
                           "configuration": "eyJncmVldGluZyI6Int7JC5ncmVldGluZ319In0=" }]);
    create_raw(
        &client,
        ns,
        "TinyNode",
        respond,
        go_shaped("respond", mapping, json!([])),
    )
    .await;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    for name in [hello, respond] {
        let node = eventually(&format!("{name} to be Ready"), Duration::from_secs(60), || {
            let nodes = nodes.clone();
            async move { nodes.get(name).await.ok().filter(|n| ready(n) == Some(true)) }
        })
        .await;
        assert_eq!(node.status.expect("status").module.name, "hello-module-v0");
    }
    let modules: Api<TinyModule> = Api::namespaced(client.clone(), ns);
    let published = eventually("TinyModule hello-module-v0", Duration::from_secs(30), || {
        let modules = modules.clone();
        async move { modules.get("hello-module-v0").await.ok().filter(|m| m.status.is_some()) }
    })
    .await;
    assert_eq!(published.spec.image, "hello-module-v0:0.1.0");
    assert_eq!(published.status.expect("status").name, "hello-module-v0");
    let reply = signal(&client, ns, "go-greet", hello, "input", json!({"name": "Ada"})).await;
    let status = reply.status.expect("status");
    assert_eq!(
        status.signal_phase(),
        Some(SignalPhase::Delivered),
        "{:?}",
        status.error
    );
    assert_eq!(status.reply.map(|r| r.0["greeting"].clone()), Some(json!("Hej, Ada!")));
    // An uncaught error (the error port is off by default, as in Go) fails the signal
    // and is counted.
    let failed = signal(&client, ns, "go-empty", hello, "input", json!({"name": " "})).await;
    let status = failed.status.expect("status");
    assert_eq!(status.signal_phase(), Some(SignalPhase::Failed));
    assert!(status.error.unwrap_or_default().contains("name is empty [EMPTY_NAME]"));
    let errors = eventually("the error to be counted", Duration::from_secs(10), || async {
        replica.metric("tiny_hop_errors_total").await.filter(|n| *n >= 1)
    })
    .await;
    assert_eq!(errors, 1);
}

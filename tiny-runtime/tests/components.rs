//! TinyComponents (components defined as data) on a real control plane: a module
//! serving the `expr` runtime installs a definition, a node of it answers in a flow, a
//! script that does not compile is a status reason, a module that does not serve the
//! runtime leaves the definition alone, and deleting the definition stops its nodes.

use std::{sync::Arc, time::Duration};

use futures::future::BoxFuture;
use kube::{
    Api, Client,
    api::{DeleteParams, PostParams},
};
use serde_json::{Value, json};
use tiny_runtime::{
    config::ModuleConfig,
    crd::{COMPONENT_FINALIZER, TinyComponent, TinyComponentSpec, TinyComponentStatus, TinySignal},
};
use tiny_sdk::engine::{CompiledScript, ComponentRuntime, DefineError, Definition, ExprRuntime, Registry, Script};
use tiny_testkit::{
    cluster::{create_flow, delivered, env, failed, nodes_ready, signal, start_module},
    components::Answer,
    eventually,
};

const NS: &str = "defs";
const WAIT: Duration = Duration::from_secs(60);

/// A runtime named `other` whose scripts answer with their input: what the second
/// module serves, so that it follows TinyComponents without serving `expr`.
struct Other;

impl ComponentRuntime for Other {
    fn name(&self) -> &str {
        "other"
    }
    fn compile(&self, _: &Definition) -> Result<Arc<dyn CompiledScript>, DefineError> {
        Ok(Arc::new(Same))
    }
}

struct Same;

impl CompiledScript for Same {
    fn start(&self) -> tiny_sdk::Result<Box<dyn Script>> {
        Ok(Box::new(Same))
    }
}

impl Script for Same {
    fn call(&self, input: Value) -> BoxFuture<'_, tiny_sdk::Result<Value>> {
        Box::pin(std::future::ready(Ok(input)))
    }
}

fn definition(component: &str, runtime: &str, script: &str) -> TinyComponent {
    let spec = TinyComponentSpec {
        component: component.into(),
        description: "Picks the user's name".into(),
        runtime: runtime.into(),
        script: script.into(),
        input: r#"{"type": "object", "properties": {"user": {"type": "object"}}}"#.into(),
        output: r#"{"type": "object", "properties": {"name": {"type": "string"}}}"#.into(),
        ..Default::default()
    };
    TinyComponent::new(component, spec)
}

/// The definition once its status says `pred`.
async fn status_where(
    api: &Api<TinyComponent>,
    name: &str,
    what: &str,
    pred: impl Fn(&TinyComponentStatus) -> bool,
) -> TinyComponent {
    eventually(what, WAIT, || {
        let api = api.clone();
        let pred = &pred;
        async move { api.get(name).await.ok().filter(|d| d.status.as_ref().is_some_and(pred)) }
    })
    .await
}

/// Creates `def`.
async fn create(api: &Api<TinyComponent>, def: &TinyComponent) {
    api.create(&PostParams::default(), def)
        .await
        .unwrap_or_else(|e| panic!("{:?} created: {e}", def.metadata.name));
}

/// `who` in `expr`, answering with the user's name, once a module has installed it.
async fn install_who(api: &Api<TinyComponent>) {
    create(api, &definition("who", "expr", r#"{"name": "{{$.user.name}}"}"#)).await;
    status_where(api, "who", "`who` to be installed", |s| s.installed).await;
}

/// Waits until definition `name` is gone from the API server.
async fn gone(api: &Api<TinyComponent>, name: &str) {
    eventually(&format!("`{name}` to be gone"), WAIT, || {
        let api = api.clone();
        async move { api.get_opt(name).await.ok().and_then(|d| d.is_none().then_some(())) }
    })
    .await;
}

/// FLOW created, once each of its nodes is ready.
async fn flow_ready(client: &Client) {
    let flow = create_flow(client, NS, FLOW).await;
    let names: Vec<String> = flow.nodes.iter().map(|n| n.name.clone()).collect();
    nodes_ready(client, NS, &names).await;
}

/// Signal `name` to `who-1`'s `request` port with `request` (Go's `{context,
/// inputData}`), once it has ended.
async fn ask_who(client: &Client, name: &str, request: Value) -> TinySignal {
    signal(client, NS, name, "f.defs-v0.who-1", "request", request).await
}

const FLOW: &str = r#"
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: f.defs-v0.who-1
  labels: { tinysystems.io/flow-name: f }
spec:
  module: defs
  component: who
  edges:
    - { id: e1, port: response, to: "f.defs-v0.answer-1:input", flowID: f }
---
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: f.defs-v0.answer-1
  labels: { tinysystems.io/flow-name: f }
spec:
  module: defs
  component: answer
  ports:
    - from: "f.defs-v0.who-1:response"
      port: input
      flowID: f
      configuration: "{{$}}"
"#;

async fn start(client: &Client, name: &str, registry: Registry) -> tiny_runtime::runtime::Runtime {
    start_module(
        client,
        ModuleConfig::new(name, "0.1.0", NS, &format!("{name}-0")),
        registry,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_is_served_by_the_module_of_its_runtime_only() {
    let env = env().await;
    let client = env.client();
    env.create_namespace(NS).await.expect("namespace");
    let mut serving = Registry::default();
    serving.register::<Answer>().runtime(ExprRuntime);
    let mut other = Registry::default();
    other.runtime(Other);
    let defs_module = start(&client, "defs-v0", serving).await;
    let other_module = start(&client, "other-v0", other).await;
    let api: Api<TinyComponent> = Api::namespaced(client.clone(), NS);

    // Applied: installed by the module serving `expr`, which holds the finalizer.
    create(
        &api,
        &definition(
            "who",
            "expr",
            r#"{"name": "{{$.user.name}}", "shout": "{{upper($.user.name)}}"}"#,
        ),
    )
    .await;
    let who = status_where(&api, "who", "`who` to be installed", |s| s.installed).await;
    let status = who.status.clone().expect("status");
    assert_eq!(status.module, "defs-v0");
    assert_eq!(status.reason, "");
    assert_eq!(status.observed_generation, who.metadata.generation.expect("generation"));
    assert_eq!(
        who.metadata.finalizers.clone().unwrap_or_default(),
        [COMPONENT_FINALIZER]
    );
    // The module publishes it among its components (Go's tag `Defined`), with the
    // definition's schemas in its ports: what the platform's palette reads.
    let modules: Api<tiny_runtime::crd::TinyModule> = Api::namespaced(client.clone(), NS);
    let published = eventually("`who` in the TinyModule's components", WAIT, || {
        let modules = modules.clone();
        async move {
            let module = modules.get("defs-v0").await.ok()?;
            module.status?.components.into_iter().find(|c| c.name == "who")
        }
    })
    .await;
    assert_eq!(published.tags, [tiny_sdk::engine::DEFINED_TAG]);
    assert_eq!(published.description, "Picks the user's name");
    let request = published
        .ports
        .iter()
        .find(|p| p.name == "request")
        .and_then(|p| p.schema.clone())
        .expect("a request port with a schema");
    assert_eq!(
        request.0["properties"]["inputData"]["properties"]["user"]["type"],
        "object"
    );
    let ports: Vec<&str> = published.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(ports, ["request", "response"]);

    // A node of it in a flow answers, with Go's request/response shape.
    flow_ready(&client).await;
    let s = ask_who(
        &client,
        "ask-ada",
        json!({"context": {"id": 7}, "inputData": {"user": {"name": "Ada"}}}),
    )
    .await;
    assert_eq!(
        delivered(&s),
        Some(json!({"context": {"id": 7}, "outputData": {"name": "Ada", "shout": "ADA"}}))
    );

    // The module that serves `other` and not `expr` leaves `who` alone. It has seen
    // `who` once it installed `probe`, made after `who` (a watch delivers in order).
    create(&api, &definition("probe", "other", "anything")).await;
    let probe = status_where(&api, "probe", "`probe` to be installed by the other module", |s| {
        s.installed
    })
    .await;
    assert_eq!(probe.status.expect("status").module, "other-v0");
    let after = api.get("who").await.expect("who");
    assert_eq!(after.status, who.status, "the other module wrote `who`'s status");
    assert_eq!(
        after.metadata.resource_version, who.metadata.resource_version,
        "`who` was written"
    );

    // A script that does not compile: a status reason naming line and column.
    create(&api, &definition("bad", "expr", "{\n  \"name\": \"{{$.user +}}\"\n}")).await;
    let bad = status_where(&api, "bad", "`bad` to be refused", |s| !s.reason.is_empty()).await;
    let status = bad.status.expect("status");
    assert!(!status.installed);
    assert!(
        status
            .reason
            .starts_with("the script does not compile at line 2, column "),
        "{}",
        status.reason
    );
    // A name a compiled component holds is refused too.
    create(&api, &definition("answer", "expr", "{}")).await;
    let taken = status_where(&api, "answer", "`answer` to be refused", |s| !s.reason.is_empty()).await;
    assert_eq!(
        taken.status.expect("status").reason,
        "`answer` is a built-in component of this module; a definition may not replace it"
    );

    // Deleted: the finalizer goes, and the node stops.
    api.delete("who", &DeleteParams::default()).await.expect("deleted");
    gone(&api, "who").await;
    let s = ask_who(
        &client,
        "ask-bo",
        json!({"context": {}, "inputData": {"user": {"name": "Bo"}}}),
    )
    .await;
    let error = failed(&s);
    assert!(error.contains("no longer served"), "{error}");
    // And the module no longer publishes it.
    eventually("`who` out of the TinyModule's components", WAIT, || {
        let modules = modules.clone();
        async move {
            let module = modules.get("defs-v0").await.ok()?;
            (!module.status?.components.iter().any(|c| c.name == "who")).then_some(())
        }
    })
    .await;

    other_module.stop().await;
    defs_module.stop().await;
}

/// A TCP relay from the module to the API server that the test can cut: while it is
/// cut, the module sees nothing of what happens on the control plane.
struct Relay {
    url: String,
    cut: Arc<std::sync::atomic::AtomicBool>,
    conns: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Relay {
    async fn start(target: &str) -> Relay {
        let to = target.trim_start_matches("https://").to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("relay binds");
        let url = format!("https://{}", listener.local_addr().expect("relay address"));
        let cut = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let conns: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let (c, list) = (cut.clone(), conns.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if c.load(std::sync::atomic::Ordering::SeqCst) {
                    continue; // dropped: refused while cut
                }
                let to = to.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&to).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                list.lock().expect("relay list").push(task.abort_handle());
            }
        });
        Relay { url, cut, conns }
    }

    /// Drops every connection, and refuses new ones until `restore`.
    fn cut(&self) {
        self.cut.store(true, std::sync::atomic::Ordering::SeqCst);
        for conn in self.conns.lock().expect("relay list").drain(..) {
            conn.abort();
        }
    }

    fn restore(&self) {
        self.cut.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_definition_deleted_during_a_watch_gap_is_uninstalled_at_the_relist() {
    let mut env = env().await;
    let client = env.client();
    env.create_namespace(NS).await.expect("namespace");
    // The module reaches the API server through a relay the test cuts.
    let relay = Relay::start(env.server_url()).await;
    let mut config = env.config().clone();
    config.cluster_url = relay.url.parse().expect("relay URL");
    let module_client = Client::try_from(config).expect("module client");
    let mut serving = Registry::default();
    serving.register::<Answer>().runtime(ExprRuntime);
    let module = start(&module_client, "defs-v0", serving).await;
    let api: Api<TinyComponent> = Api::namespaced(client.clone(), NS);
    install_who(&api).await;
    flow_ready(&client).await;

    // Cut off, the module misses the deletion (its finalizer removed by hand). The API
    // server restarts, so that its watch cache no longer reaches back to the module's
    // last resource version: the module's watch must relist.
    relay.cut();
    api.delete("who", &DeleteParams::default()).await.expect("deleted");
    api.patch(
        "who",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("finalizer removed");
    assert!(api.get_opt("who").await.expect("read").is_none(), "`who` is gone");
    env.restart_apiserver().await.expect("API server restarts");
    relay.restore();

    // Once the module has relisted, `who` is no longer served: a message to its node
    // fails. Messages are sent until one does, as the module's other watches (signals)
    // may come back before this one.
    let client = env.client();
    let mut asked = 0;
    let error = eventually("a message to `who`'s node to fail, `who` unknown", WAIT, || {
        asked += 1;
        let (client, name) = (client.clone(), format!("ask-after-gap-{asked}"));
        async move {
            let s = ask_who(
                &client,
                &name,
                json!({"context": {}, "inputData": {"user": {"name": "Bo"}}}),
            )
            .await;
            // Another failure (the module still finding its feet) is asked again.
            // The node stopped by the uninstall, or re-applied since (the node watch
            // relists too) and refused: `who` is unknown now.
            s.status?
                .error
                .filter(|e| e.contains("no longer served") || e.contains("unknown component `who`"))
        }
    })
    .await;
    assert!(error.contains("UNKNOWN_COMPONENT"), "{error}");
    module.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_definition_of_a_component_is_refused_and_its_delete_leaves_the_first() {
    let env = env().await;
    let client = env.client();
    env.create_namespace(NS).await.expect("namespace");
    let mut serving = Registry::default();
    serving.register::<Answer>().runtime(ExprRuntime);
    let module = start(&client, "defs-v0", serving).await;
    let api: Api<TinyComponent> = Api::namespaced(client.clone(), NS);
    install_who(&api).await;
    // Another object defining `who`: younger (or as old, and after by name), refused.
    let mut copy = definition("who", "expr", r#"{"name": "copy"}"#);
    copy.metadata.name = Some("who-copy".into());
    create(&api, &copy).await;
    let refused = status_where(&api, "who-copy", "`who-copy` to be refused", |s| !s.reason.is_empty()).await;
    let status = refused.status.expect("status");
    assert!(!status.installed);
    assert!(status.reason.contains("TinyComponent `who`"), "{}", status.reason);

    flow_ready(&client).await;
    let ask = |name: &'static str| {
        let client = client.clone();
        async move {
            ask_who(
                &client,
                name,
                json!({"context": {}, "inputData": {"user": {"name": "Ada"}}}),
            )
            .await
        }
    };
    let first = ask("ask-first").await;
    assert_eq!(
        delivered(&first),
        Some(json!({"context": {}, "outputData": {"name": "Ada"}}))
    );

    // Deleting the refused copy leaves `who` served.
    api.delete("who-copy", &DeleteParams::default()).await.expect("deleted");
    gone(&api, "who-copy").await;
    let after = ask("ask-after").await;
    assert_eq!(
        delivered(&after),
        Some(json!({"context": {}, "outputData": {"name": "Ada"}}))
    );
    module.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_modules_serving_a_runtime_one_writes_the_status() {
    let env = env().await;
    let client = env.client();
    env.create_namespace(NS).await.expect("namespace");
    let mut first = Registry::default();
    first.runtime(ExprRuntime);
    // The second serves `other` too: a probe only it answers.
    let mut second = Registry::default();
    second.runtime(ExprRuntime).runtime(Other);
    let a = start(&client, "defs-v0", first).await;
    let b = start(&client, "defs2-v0", second).await;
    let api: Api<TinyComponent> = Api::namespaced(client.clone(), NS);
    install_who(&api).await;
    // Both serve it and say so.
    let modules: Api<tiny_runtime::crd::TinyModule> = Api::namespaced(client.clone(), NS);
    for name in ["defs-v0", "defs2-v0"] {
        eventually(&format!("`who` in {name}'s components"), WAIT, || {
            let modules = modules.clone();
            async move {
                let module = modules.get(name).await.ok()?;
                module.status?.components.iter().any(|c| c.name == "who").then_some(())
            }
        })
        .await;
    }
    // Both reconcile `who` again (a label): the one its status names keeps it.
    let touched = api
        .patch(
            "who",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await
        .expect("labelled");
    let writer = touched.status.clone().expect("status").module;
    // The second module has reconciled the label once it installed `probe`, made after
    // it (a watch delivers in order).
    create(&api, &definition("probe", "other", "anything")).await;
    status_where(&api, "probe", "`probe` to be installed", |s| s.installed).await;
    let after = api.get("who").await.expect("who");
    assert_eq!(after.status.expect("status").module, writer, "the status changed hands");
    assert_eq!(
        after.metadata.resource_version, touched.metadata.resource_version,
        "`who` was written again"
    );
    b.stop().await;
    a.stop().await;
}

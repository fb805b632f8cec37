//! `hello-module check-upgrade`, the binary as a user (or the chart's pre-upgrade hook)
//! runs it: this build is the new side; the old side is what the module published
//! before, in its TinyModule on a real API server (or a `components` snapshot file).
//! The old builds are this build's own `components` output with one change each: a
//! field the new build no longer has (breaking for the deployed edge that writes it), or
//! without a field the new build adds (compatible).

mod common;

use std::process::Command;

use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use tiny_runtime::crd::{ModuleComponent, TinyModule, TinyModuleSpec, TinyModuleStatus};

use common::HELLO;

/// `hello-module <args>`: exit status, stdout, stderr.
fn hello(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(HELLO).args(args).output().expect("hello-module runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// This build's components, as `hello-module components` prints them.
fn this_build() -> Vec<ModuleComponent> {
    let (code, stdout, stderr) = hello(&["components"]);
    assert_eq!(code, Some(0), "{stderr}");
    serde_json::from_str(&stdout).expect("the components JSON")
}

/// This build's components with `change` made to the `HelloIn` definition of
/// `hello`'s `input` schema: an older build.
fn older(change: impl Fn(&mut serde_json::Map<String, Value>)) -> Vec<ModuleComponent> {
    let mut components = this_build();
    let hello = components.iter_mut().find(|c| c.name == "hello").expect("hello");
    let input = hello
        .ports
        .iter_mut()
        .find(|p| p.name == "input")
        .expect("hello's input");
    let schema = input.schema.as_mut().expect("a schema");
    let defs = schema.0["$defs"]["HelloIn"]["properties"]
        .as_object_mut()
        .expect("HelloIn's properties");
    change(defs);
    components
}

/// The flow deployed: another module's `sender` sends to hello's `input` along edge
/// `to-hello`, whose mapping writes `mapping`; hello has settings.
fn flow(flow: &str, mapping: &str) -> String {
    format!(
        r#"
kind: TinyNode
metadata: {{ name: {flow}.sender-module-v0.sender-1, labels: {{ tinysystems.io/flow-name: {flow} }} }}
spec:
  module: sender-module-v0
  component: sender
  edges:
    - id: to-hello
      port: out
      to: "{flow}.examples-v0.hello-1:input"
      flowID: {flow}
---
kind: TinyNode
metadata: {{ name: {flow}.examples-v0.hello-1, labels: {{ tinysystems.io/flow-name: {flow} }} }}
spec:
  module: examples-v0
  component: hello
  ports:
    - port: _settings
      configuration: {{ greetingWord: Hi }}
    - from: "{flow}.sender-module-v0.sender-1:out"
      port: input
      flowID: {flow}
      configuration: {mapping}
"#
    )
}

/// Publishes `components` as the TinyModule `examples-v0` of `ns`, as the running
/// module's leader does.
async fn publish(modules: &Api<TinyModule>, components: Vec<ModuleComponent>) {
    let name = "examples-v0";
    let module = TinyModule::new(
        name,
        TinyModuleSpec {
            image: format!("{name}:0.1.0"),
        },
    );
    modules
        .create(&PostParams::default(), &module)
        .await
        .expect("TinyModule created");
    let status = TinyModuleStatus {
        name: name.into(),
        version: "0.1.0".into(),
        components,
        ..TinyModuleStatus::default()
    };
    modules
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({ "status": status })),
        )
        .await
        .expect("status written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_field_an_edge_writes_fails_the_check_and_an_added_one_passes() {
    let env = common::env().await;
    let kubeconfig = env.kubeconfig_path().to_str().expect("utf-8").to_owned();
    let check = |ns: &str, output: &str| {
        hello(&[
            "check-upgrade",
            "--name",
            "examples-v0",
            "--version",
            "0.2.0",
            "--kubeconfig",
            &kubeconfig,
            "--namespace",
            ns,
            "--output",
            output,
        ])
    };

    // Breaking: the deployed build took a `title`, which the deployed edge writes; this
    // build has no such field.
    let ns = "upgrade-breaking";
    env.create_namespace(ns).await.expect("namespace");
    publish(
        &Api::namespaced(env.client(), ns),
        older(|fields| {
            fields.insert("title".into(), json!({"type": "string"}));
        }),
    )
    .await;
    common::create_flow(&env.client(), ns, &flow("shop", r#"{ name: "{{$.who}}", title: Dr }"#)).await;
    let (code, stdout, stderr) = check(ns, "text");
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "breaking: flow `shop`, node `shop.examples-v0.hello-1`, edge `to-hello` from \
             `shop.sender-module-v0.sender-1:out`, port `input`, field `/title`: the edge's mapping writes the \
             field, which the new build does not have [field-removed]"
        ],
        "{stderr}"
    );
    assert!(stderr.contains("1 breaking, 0 compatible"), "{stderr}");
    let (code, stdout, _) = check(ns, "json");
    assert_eq!(code, Some(1));
    let report: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(report["verdict"], "breaking");
    let finding = &report["findings"][0];
    assert_eq!(
        (
            &finding["flow"],
            &finding["edge"],
            &finding["port"],
            &finding["field"],
            &finding["kind"]
        ),
        (
            &json!("shop"),
            &json!("to-hello"),
            &json!("input"),
            &json!("/title"),
            &json!("field-removed")
        )
    );

    // Compatible: the deployed build had no `context`, which this build adds.
    let ns = "upgrade-compatible";
    env.create_namespace(ns).await.expect("namespace");
    publish(
        &Api::namespaced(env.client(), ns),
        older(|fields| {
            fields.remove("context");
        }),
    )
    .await;
    common::create_flow(&env.client(), ns, &flow("shop", r#"{ name: "{{$.who}}" }"#)).await;
    let (code, stdout, stderr) = check(ns, "text");
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "compatible: flow `shop`, node `shop.examples-v0.hello-1`, edge `to-hello` from \
             `shop.sender-module-v0.sender-1:out`, port `input`, field `/context`: a new field, optional [field-added]"
        ],
        "{stderr}"
    );
    assert!(stderr.contains("0 breaking, 1 compatible"), "{stderr}");

    // A namespace the module never ran in: nothing deployed, nothing to refuse.
    env.create_namespace("upgrade-fresh").await.expect("namespace");
    let (code, _, stderr) = check("upgrade-fresh", "text");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("nothing deployed to check"), "{stderr}");

    // A cluster that cannot be read: exit status 2, saying why.
    let (code, _, stderr) = hello(&[
        "check-upgrade",
        "--name",
        "examples-v0",
        "--kubeconfig",
        "/nonexistent/kubeconfig",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
}

#[test]
fn offline_a_components_snapshot_and_a_flow_file_are_checked_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = dir.path().join("components.json");
    let old = older(|fields| {
        fields.insert("title".into(), json!({"type": "string"}));
    });
    std::fs::write(&snapshot, serde_json::to_string(&old).expect("JSON")).expect("write");
    let breaking = dir.path().join("breaking.yaml");
    std::fs::write(&breaking, flow("shop", r#"{ name: "{{$.who}}", title: Dr }"#)).expect("write");
    let fine = dir.path().join("fine.yaml");
    std::fs::write(&fine, flow("shop", r#"{ name: "{{$.who}}" }"#)).expect("write");
    let path = |p: &std::path::Path| p.to_str().expect("utf-8").to_owned();
    let (code, stdout, stderr) = hello(&[
        "check-upgrade",
        "--name",
        "examples-v0",
        "--from",
        &path(&snapshot),
        "--flow",
        &path(&breaking),
    ]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("breaking: flow `shop`"), "{stdout}");
    assert!(stdout.contains("field `/title`"), "{stdout}");
    let (code, stdout, stderr) = hello(&[
        "check-upgrade",
        "--name",
        "examples-v0",
        "--from",
        &path(&snapshot),
        "--flow",
        &path(&fine),
    ]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    // A snapshot that is not `components` output: exit status 2, naming the file.
    let (code, _, stderr) = hello(&[
        "check-upgrade",
        "--name",
        "examples-v0",
        "--from",
        &path(&breaking),
        "--flow",
        &path(&fine),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("breaking.yaml: not the JSON array `components` prints"),
        "{stderr}"
    );
}

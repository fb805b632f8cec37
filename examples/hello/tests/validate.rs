//! `hello-module validate`, the binary as a user runs it: a committed flow with one
//! mistake of each kind gets each reported once, on one line naming node, port and
//! field, with exit status 1; the example's own flow files pass; a file that cannot be
//! read is exit status 2; other modules' TinyModules are read from a real API server.

mod common;

use std::process::Command;

use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use tiny_runtime::crd::{TinyModule, TinyModuleSpec, TinyModuleStatus};

use common::{HELLO, flow_files};

/// `hello-module validate <args>`: exit status, stdout lines, stderr.
fn validate(args: &[&str]) -> (Option<i32>, Vec<String>, String) {
    let out = Command::new(HELLO)
        .arg("validate")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("hello-module runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    (
        out.status.code(),
        stdout.lines().map(str::to_owned).collect(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Each expected `(where, what it says, kind)` is one line of `lines`, and nothing else
/// is.
#[track_caller]
fn each_line_once(lines: &[String], expected: &[(&str, &str, &str)]) {
    for &(at, says, kind) in expected {
        let matching: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with(at) && l.contains(says) && l.ends_with(kind))
            .collect();
        assert_eq!(matching.len(), 1, "`{at} ... {says} ... {kind}` once in:\n{lines:#?}");
    }
    assert_eq!(lines.len(), expected.len(), "nothing else: {lines:#?}");
}

#[test]
fn each_mistake_of_the_invalid_flow_is_reported_once() {
    let (code, lines, stderr) = validate(&[
        "tests/flows/invalid.yaml",
        "--module-yaml",
        "tests/flows/acme-module.yaml",
    ]);
    // (where: node, port and field as printed; what the line says; its kind)
    let expected = [
        (
            "node `invalid.examples-v0.flaky`:",
            "the component part has no `-{suffix}`",
            "[name]",
        ),
        (
            "node `invalid.examples-v0.hello-1`, port `_settings`, field `/greetingWord`:",
            "expected a string, found the number 42 (in the settings)",
            "[settings]",
        ),
        (
            "node `invalid.examples-v0.hello-1`, port `greetings`:",
            "edge `e1` leaves a port that is not an output of `hello` (outputs: greeting, error)",
            "[port]",
        ),
        (
            "node `invalid.examples-v0.shout-1`, port `input`, field `/text`:",
            r#"the expression does not parse: in "{{$.greeting +‸}}""#,
            "[expression]",
        ),
        (
            "node `invalid.examples-v0.shout-1`, port `out`:",
            "has no input `reply` (inputs: response)",
            "[port]",
        ),
        (
            "node `invalid.examples-v0.delay-1`, port `input`, field `/delay`:",
            r#"expected an integer, found the string "soon" (in the mapping of the edge from `invalid.examples-v0.shout-1:out`)"#,
            "[configuration]",
        ),
        (
            "node `invalid.acme-module-v0.fetch-1`, port `error`, field `/retryable`:",
            "the error port of component `fetch` has no `retryable` in its schema",
            "[error-port]",
        ),
        (
            "node `invalid.examples-v0.delay-1`, port `out`:",
            "edges make a loop: invalid.examples-v0.delay-1:out -> invalid.examples-v0.delay-2:out -> \
             invalid.examples-v0.delay-1; a message going round it is refused after 256 hops",
            "[cycle]",
        ),
    ];
    assert_eq!(code, Some(1), "{lines:#?}\n{stderr}");
    each_line_once(&lines, &expected);
    assert!(
        stderr.contains("tests/flows/invalid.yaml: 8 problems (7 nodes, 1 signals)"),
        "{stderr}"
    );
}

#[test]
fn without_the_other_modules_yaml_its_node_is_named_as_unknown() {
    let (code, lines, _) = validate(&["tests/flows/invalid.yaml"]);
    assert_eq!(code, Some(1));
    let unknown: Vec<&String> = lines.iter().filter(|l| l.ends_with("[component]")).collect();
    assert_eq!(unknown.len(), 1, "{lines:#?}");
    assert!(
        unknown[0].starts_with("node `invalid.acme-module-v0.fetch-1`: component `fetch` is not one of this module's"),
        "{}",
        unknown[0]
    );
    assert!(!lines.iter().any(|l| l.ends_with("[error-port]")), "{lines:#?}");
}

#[test]
fn the_examples_flow_files_pass() {
    let files = flow_files();
    for file in &files {
        let (code, lines, stderr) = validate(&[file.to_str().expect("utf-8")]);
        assert_eq!(code, Some(0), "{}: {lines:#?}\n{stderr}", file.display());
        assert!(lines.is_empty(), "{lines:#?}");
        assert!(stderr.contains("no problems"), "{stderr}");
    }
    // Standard input, as `render` reads it.
    let out = Command::new(HELLO)
        .args(["validate", "-"])
        .stdin(std::fs::File::open(&files[0]).expect("open"))
        .output()
        .expect("hello-module runs");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_file_that_cannot_be_read_is_exit_status_2_with_the_reason() {
    let (code, _, stderr) = validate(&["tests/flows/no-such-flow.yaml"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("tests/flows/no-such-flow.yaml: "), "{stderr}");
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken.yaml");
    std::fs::write(
        &broken,
        "kind: TinyNode\nmetadata: { name: x }\nspec: { module: 3: 4 }\n",
    )
    .expect("write");
    let (code, _, stderr) = validate(&[broken.to_str().expect("utf-8")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("broken.yaml: YAML document 1"), "{stderr}");
    let (code, _, stderr) = validate(&["flows/greet.yaml", "--module-yaml", broken.to_str().expect("utf-8")]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("broken.yaml: "), "{stderr}");
}

/// Creates the TinyModule `name` with `status`, as its module's leader publishes it.
async fn publish(modules: &Api<TinyModule>, name: &str, status: TinyModuleStatus) {
    let module = TinyModule::new(
        name,
        TinyModuleSpec {
            image: format!("{name}:0.3.0"),
        },
    );
    modules
        .create(&PostParams::default(), &module)
        .await
        .expect("TinyModule created");
    let patch = serde_json::json!({ "status": status });
    modules
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("status written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_modules_are_read_from_the_clusters_tinymodules() {
    let env = common::env().await;
    let ns = "validate";
    env.create_namespace(ns).await.expect("namespace");
    let modules: Api<TinyModule> = Api::namespaced(env.client(), ns);
    // acme's components as the committed YAML gives them, published in the cluster.
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/flows/acme-module.yaml"))
        .expect("acme-module.yaml");
    let list: serde_yaml::Value = serde_yaml::from_str(&yaml).expect("YAML");
    let acme: TinyModule = serde_yaml::from_value(list["items"][0].clone()).expect("a TinyModule");
    publish(&modules, "acme-module-v0", acme.status.clone().expect("status")).await;
    // An old publication of this module itself, offering nothing.
    publish(
        &modules,
        "examples-v0",
        TinyModuleStatus {
            name: "examples-v0".into(),
            ..TinyModuleStatus::default()
        },
    )
    .await;
    let kubeconfig = env.kubeconfig_path().to_str().expect("utf-8");

    // This module named: its own TinyModule is left aside, acme's is used.
    let (code, lines, stderr) = validate(&[
        "tests/flows/invalid.yaml",
        "--kubeconfig",
        kubeconfig,
        "--namespace",
        ns,
        "--name",
        "examples-v0",
        "--version",
        "0.1.0",
    ]);
    assert_eq!(code, Some(1), "{lines:#?}\n{stderr}");
    assert_eq!(lines.len(), 8, "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with(
            "node `invalid.acme-module-v0.fetch-1`, port `error`, field `/retryable`: the error port of component `fetch`"
        )),
        "{lines:#?}"
    );

    // Not named: the cluster's `examples-v0` is taken for this module's nodes.
    let (code, lines, _) = validate(&["flows/greet.yaml", "--kubeconfig", kubeconfig, "--namespace", ns]);
    assert_eq!(code, Some(1));
    assert_eq!(lines.len(), 3, "{lines:#?}");
    assert!(
        lines[0].starts_with(
            "node `greet.examples-v0.hello-1`: component `hello` is not one module `examples-v0` publishes (it publishes: none)"
        ),
        "{lines:#?}"
    );

    // A cluster that cannot be reached is exit status 2, saying so.
    let (code, _, stderr) = validate(&[
        "flows/greet.yaml",
        "--kubeconfig",
        "tests/flows/no-such-kubeconfig",
        "--namespace",
        ns,
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("the TinyModules of namespace `validate`: "), "{stderr}");
}

/// The three mistakes that name something the flow or the component lacks: a signal
/// for a node the flow does not have, a mapping from a node it does not have, and a
/// `ports[]` entry configuring a port `hello` does not have.
#[test]
fn names_the_flow_or_component_does_not_have_are_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let flow = dir.path().join("missing.yaml");
    std::fs::write(
        &flow,
        r#"apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: m.examples-v0.hello-1
  labels: { tinysystems.io/flow-name: m }
spec:
  module: examples
  component: hello
  ports:
    - port: colour
      configuration: { shade: blue }
---
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinyNode
metadata:
  name: m.examples-v0.shout-1
  labels: { tinysystems.io/flow-name: m }
spec:
  module: examples
  component: shout
  ports:
    - from: "m.examples-v0.gone-1:greeting"
      port: input
      configuration: { context: "{{$.context}}", text: "{{$.greeting}}" }
---
apiVersion: operator.tinysystems.io/v1alpha1
kind: TinySignal
metadata:
  name: m-nobody
spec:
  node: m.examples-v0.nobody-1
  port: input
  data: { name: Ada }
"#,
    )
    .expect("write");
    let (code, lines, stderr) = validate(&[flow.to_str().expect("utf-8")]);
    let expected = [
        (
            "node `m.examples-v0.hello-1`, port `colour`:",
            "ports[] configures a port component `hello` does not have (it has: ",
            "[port]",
        ),
        (
            "node `m.examples-v0.shout-1`, port `input`:",
            "the mapping is for an edge from `m.examples-v0.gone-1:greeting`, but the flow has no node `m.examples-v0.gone-1`",
            "[node]",
        ),
        (
            "node `m.examples-v0.nobody-1`, port `input`:",
            "signal `m-nobody` is for a node the flow does not have",
            "[node]",
        ),
    ];
    assert_eq!(code, Some(1), "{lines:#?}\n{stderr}");
    each_line_once(&lines, &expected);
}

#[test]
fn a_tinycomponent_holding_a_builtin_components_name_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = dir.path().join("defined.yaml");
    let yaml = "kind: TinyComponent\nmetadata: { name: hello }\n\
                spec: { component: hello, runtime: expr, script: '{}', input: '{}', output: '{}' }\n";
    std::fs::write(&file, yaml).expect("written");
    let (code, lines, stderr) = validate(&[file.to_str().expect("a UTF-8 path")]);
    assert_eq!(code, Some(1), "{lines:?} {stderr}");
    assert_eq!(
        lines,
        [
            "TinyComponent `hello` (component `hello`, runtime `expr`): `hello` is a built-in component of this module; \
          a definition may not replace it [definition]"
        ],
        "{stderr}"
    );
}

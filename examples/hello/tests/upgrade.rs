//! `hello-module check-upgrade`, the binary as a user (or the chart's pre-upgrade hook)
//! runs it: this build is the new side; the old side is what the module published
//! before, in its TinyModule on a real API server (or a `components` snapshot file).
//! The old builds are this build's own `components` output with one change each: a
//! field the new build no longer has (breaking for the deployed edge that writes it), or
//! without a field the new build adds (compatible). The chart's hook runs the same
//! binary under real Helm: an install, then an upgrade its Job refuses or lets on.

mod common;

use std::process::Command;

use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use tiny_runtime::crd::{ModuleComponent, TinyModule, TinyModuleSpec, TinyModuleStatus};

use common::{
    HELLO,
    helm::{Exit, JobPod, REPO, RanJob, helm_output as helm, helm_running_jobs, kubeconfig_as},
};

/// `hello-module <args>`: exit status, stdout, stderr.
fn hello(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(HELLO).args(args).output().expect("hello-module runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `hello-module check-upgrade --name examples-v0 <args>`: exit status, stdout, stderr.
fn check_upgrade(args: &[&str]) -> (Option<i32>, String, String) {
    let mut all = vec!["check-upgrade", "--name", "examples-v0"];
    all.extend_from_slice(args);
    hello(&all)
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

/// The older build that took a `title` on `hello`'s input, which this build no
/// longer has: breaking for a deployed edge that writes it.
fn with_title() -> Vec<ModuleComponent> {
    older(|fields| {
        fields.insert("title".into(), json!({"type": "string"}));
    })
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
        check_upgrade(&[
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
    publish(&Api::namespaced(env.client(), ns), with_title()).await;
    common::create_flow(&env.client(), ns, &flow("shop", r#"{ name: "{{$.who}}", title: Dr }"#)).await;
    // A node whose settings are base64 of something that is not JSON: the API server
    // takes it; it runs under no build, so it is said and left out, not a failed check.
    let malformed: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "operator.tinysystems.io/v1alpha1",
        "kind": "TinyNode",
        "metadata": {"name": "shop.examples-v0.hello-2"},
        "spec": {"module": "examples-v0", "component": "hello",
                 "ports": [{"port": "_settings", "configuration": "bm90IGpzb24="}]}
    }))
    .expect("a TinyNode");
    let resource = kube::api::ApiResource::erase::<tiny_runtime::crd::TinyNode>(&());
    Api::<kube::api::DynamicObject>::namespaced_with(env.client(), ns, &resource)
        .create(&PostParams::default(), &malformed)
        .await
        .expect("the malformed node created");
    let (code, stdout, stderr) = check(ns, "text");
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("not checked: TinyNode `shop.examples-v0.hello-2` does not decode"),
        "{stderr}"
    );
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
    let (code, _, stderr) = check_upgrade(&["--kubeconfig", "/nonexistent/kubeconfig"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
}

#[test]
fn offline_a_components_snapshot_and_a_flow_file_are_checked_alike() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = dir.path().join("components.json");
    let old = with_title();
    std::fs::write(&snapshot, serde_json::to_string(&old).expect("JSON")).expect("write");
    let breaking = dir.path().join("breaking.yaml");
    std::fs::write(&breaking, flow("shop", r#"{ name: "{{$.who}}", title: Dr }"#)).expect("write");
    let fine = dir.path().join("fine.yaml");
    std::fs::write(&fine, flow("shop", r#"{ name: "{{$.who}}" }"#)).expect("write");
    let path = |p: &std::path::Path| p.to_str().expect("utf-8").to_owned();
    let (code, stdout, stderr) = check_upgrade(&["--from", &path(&snapshot), "--flow", &path(&breaking)]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("breaking: flow `shop`"), "{stdout}");
    assert!(stdout.contains("field `/title`"), "{stdout}");
    let (code, stdout, stderr) = check_upgrade(&["--from", &path(&snapshot), "--flow", &path(&fine)]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    // A snapshot that is not `components` output: exit status 2, naming the file.
    let (code, _, stderr) = check_upgrade(&["--from", &path(&breaking), "--flow", &path(&fine)]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("breaking.yaml: not the JSON array `components` prints"),
        "{stderr}"
    );
}

/// `helm template` of the tiny-module chart as release `hello` in `ns` with the values
/// file `values`: whether it succeeded, stdout, stderr.
fn template(ns: &str, values: &std::path::Path) -> (bool, String, String) {
    let chart = format!("{REPO}/charts/tiny-module");
    helm(&[
        "template",
        &chart,
        "--name",
        "hello",
        "--namespace",
        ns,
        "-f",
        values.to_str().expect("utf-8"),
    ])
}

/// The tiny-module chart rendered as release `hello` in `ns` with `values` (YAML).
fn render(ns: &str, values: &str) -> Vec<Value> {
    use serde::Deserialize as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("values.yaml");
    std::fs::write(&file, values).expect("write");
    let (ok, stdout, stderr) = template(ns, &file);
    assert!(ok, "{stderr}");
    serde_yaml::Deserializer::from_str(&stdout)
        .map(|d| Value::deserialize(d).expect("rendered YAML parses"))
        .filter(|v| !v.is_null())
        .collect()
}

/// The rendered documents of the upgrade check.
fn hook(docs: &[Value]) -> Vec<&Value> {
    docs.iter()
        .filter(|d| d["metadata"]["name"] == "hello-tiny-module-upgrade-check")
        .collect()
}

/// The first container of a rendered Job's pod.
fn container(job: &Value) -> &Value {
    &job["spec"]["template"]["spec"]["containers"][0]
}

fn of_kind<'a>(docs: &[&'a Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} rendered"))
}

const MODULE_VALUES: &str = "module: {name: examples-v0, version: 0.2.0}\n";

#[test]
fn the_chart_renders_the_upgrade_check_hook_only_when_asked_with_read_only_rights() {
    let chart = format!("{REPO}/charts/tiny-module");
    let dir = tempfile::tempdir().expect("tempdir");
    let on = dir.path().join("on.yaml");
    std::fs::write(&on, format!("{MODULE_VALUES}upgradeCheck: {{enabled: true}}\n")).expect("write");
    let (ok, report, stderr) = helm(&["lint", &chart, "-f", on.to_str().expect("utf-8")]);
    assert!(ok && report.contains("0 problem(s)"), "{report}\n{stderr}");

    // Off unless asked.
    assert!(hook(&render("tinysystems", MODULE_VALUES)).is_empty());

    let docs = render(
        "tinysystems",
        &format!("{MODULE_VALUES}upgradeCheck: {{enabled: true}}\n"),
    );
    let hook = hook(&docs);
    let kinds: Vec<&str> = hook.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert_eq!(kinds, ["ServiceAccount", "Role", "RoleBinding", "Job"]);
    for d in &hook {
        // Before an upgrade only: on a first install nothing is deployed.
        assert_eq!(d["metadata"]["annotations"]["helm.sh/hook"], "pre-upgrade", "{d}");
    }
    // It reads the module's TinyModule and the namespace's TinyNodes, and nothing else.
    assert_eq!(
        of_kind(&hook, "Role")["rules"],
        json!([
            {"apiGroups": ["operator.tinysystems.io"], "resources": ["tinymodules"], "verbs": ["get"]},
            {"apiGroups": ["operator.tinysystems.io"], "resources": ["tinynodes"], "verbs": ["list"]}
        ])
    );
    let job = of_kind(&hook, "Job");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "hello-tiny-module-upgrade-check");
    let first = container(job);
    assert_eq!(
        first["args"],
        json!(["check-upgrade", "--name=examples-v0", "--version=0.2.0"])
    );
    assert_eq!(
        first["env"],
        json!([{"name": "RELEASE_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}])
    );
    assert_eq!(job["spec"]["backoffLimit"], 0);

    // Breaking changes allowed: the check still runs and logs, and lets the upgrade on.
    let docs = render(
        "tinysystems",
        &format!("{MODULE_VALUES}upgradeCheck: {{enabled: true, allowBreaking: true}}\n"),
    );
    let job = of_kind(&self::hook(&docs), "Job").clone();
    assert_eq!(
        container(&job)["args"],
        json!([
            "check-upgrade",
            "--name=examples-v0",
            "--version=0.2.0",
            "--allow-breaking"
        ])
    );

    // values.schema.json holds the block to its two switches.
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "upgradeCheck: {enabled: true, allowBreaking: \"yes\"}\n").expect("write");
    let (ok, _, stderr) = template("tinysystems", &bad);
    assert!(!ok && stderr.contains("allowBreaking"), "{stderr}");
}

/// Creates the rendered `docs` of these kinds in the cluster.
async fn create_rendered(client: &kube::Client, ns: &str, docs: &[&Value]) {
    use k8s_openapi::api::{
        core::v1::ServiceAccount,
        rbac::v1::{Role, RoleBinding},
    };
    let pp = PostParams::default();
    let sa: ServiceAccount = serde_json::from_value(of_kind(docs, "ServiceAccount").clone()).expect("SA");
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .create(&pp, &sa)
        .await
        .expect("ServiceAccount created");
    let role: Role = serde_json::from_value(of_kind(docs, "Role").clone()).expect("Role");
    Api::<Role>::namespaced(client.clone(), ns)
        .create(&pp, &role)
        .await
        .expect("Role created");
    let binding: RoleBinding = serde_json::from_value(of_kind(docs, "RoleBinding").clone()).expect("RoleBinding");
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .create(&pp, &binding)
        .await
        .expect("RoleBinding created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rendered_hook_refuses_a_breaking_upgrade_with_only_its_own_rights() {
    let env = common::env().await;
    let ns = "upgrade-hook";
    env.create_namespace(ns).await.expect("namespace");
    publish(&Api::namespaced(env.client(), ns), with_title()).await;
    common::create_flow(&env.client(), ns, &flow("shop", r#"{ name: "{{$.who}}", title: Dr }"#)).await;

    let docs = render(ns, &format!("{MODULE_VALUES}upgradeCheck: {{enabled: true}}\n"));
    let hook = hook(&docs);
    create_rendered(&env.client(), ns, &hook).await;
    // The Job's pod, as a kubelet runs it: its ServiceAccount's token, its namespace
    // from the downward API, the image's binary with the rendered arguments.
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = kubeconfig_as(&env, ns, "hello-tiny-module-upgrade-check", dir.path()).await;
    let run = |job: &Value| {
        let args: Vec<String> = container(job)["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(|a| a.as_str().map(str::to_owned))
            .collect();
        let out = Command::new(HELLO)
            .args(&args)
            .env("KUBECONFIG", &kubeconfig)
            .env("RELEASE_NAMESPACE", ns)
            .output()
            .expect("hello-module runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = run(of_kind(&hook, "Job"));
    // Exit status 1 fails the Job (`backoffLimit: 0`), and Helm the upgrade.
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with(
            "breaking: flow `shop`, node `shop.examples-v0.hello-1`, edge `to-hello` from \
             `shop.sender-module-v0.sender-1:out`, port `input`, field `/title`"
        ),
        "{stdout}"
    );

    let docs = render(
        ns,
        &format!("{MODULE_VALUES}upgradeCheck: {{enabled: true, allowBreaking: true}}\n"),
    );
    let (code, stdout, stderr) = run(of_kind(&self::hook(&docs), "Job"));
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("field `/title`"), "{stdout}");
    assert!(stderr.contains("--allow-breaking: going on"), "{stderr}");
}

/// Runs `helm args` (an install or an upgrade into `ns`) and meanwhile plays the
/// kubelet's part for the pods of its hook Jobs (`common::helm::helm_running_jobs`): each
/// such pod's container command runs, the image's `/manager` being this very binary, with
/// the pod's args and env (the downward API's namespace filled in) and, standing in for the
/// ServiceAccount's in-cluster credentials, a kubeconfig for the test API server with that
/// account's token. What Helm said, and the pods run.
async fn helm_as_kubelet(
    env: &tiny_testenv::TestEnv,
    ns: &str,
    args: Vec<String>,
) -> ((bool, String, String), Vec<RanJob>) {
    helm_running_jobs(env, ns, args, |pod: JobPod| async move {
        let container = &pod.spec.containers[0];
        assert_eq!(
            container.command.as_deref(),
            Some(&["/manager".to_owned()][..]),
            "the image's binary"
        );
        let mut command = Command::new(HELLO);
        command
            .args(container.args.iter().flatten())
            .env_clear()
            .env("KUBECONFIG", &pod.kubeconfig);
        for var in container.env.iter().flatten() {
            let value = match (&var.value, &var.value_from) {
                (Some(v), _) => v.clone(),
                (None, Some(from)) => {
                    let field = from.field_ref.as_ref().map(|f| f.field_path.as_str());
                    assert_eq!(
                        field,
                        Some("metadata.namespace"),
                        "a downward API field this kubelet fills: {var:?}"
                    );
                    pod.namespace.clone()
                }
                (None, None) => String::new(),
            };
            command.env(&var.name, value);
        }
        let out = tokio::task::spawn_blocking(move || command.output())
            .await
            .expect("the hook's process")
            .expect("hello-module runs");
        Exit {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    })
    .await
}

/// `helm install|upgrade` of the tiny-module chart as release `hello` in `ns`, the module
/// at `version`, its upgrade check on, with `extra` values (YAML).
fn release_args(
    verb: &str,
    ns: &str,
    kubeconfig: &str,
    dir: &std::path::Path,
    version: &str,
    extra: &str,
) -> Vec<String> {
    let values = dir.join(format!("{ns}-{verb}-{version}.yaml"));
    std::fs::write(
        &values,
        format!(
            "module: {{name: examples-v0, version: {version}}}\nhooks: {{enabled: false}}\nupgradeCheck: {{enabled: true}}\n{extra}"
        ),
    )
    .expect("write");
    let chart = format!("{REPO}/charts/tiny-module");
    [
        verb,
        &chart,
        "hello",
        "--namespace",
        ns,
        "-f",
        values.to_str().expect("utf-8"),
        "--kubeconfig",
        kubeconfig,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// Release `hello`'s revisions in `ns`: (revision, status), oldest first.
fn history(ns: &str, kubeconfig: &str) -> Vec<(u64, String)> {
    let (ok, stdout, stderr) = helm(&[
        "history",
        "hello",
        "--namespace",
        ns,
        "--kubeconfig",
        kubeconfig,
        "-o",
        "json",
    ]);
    assert!(ok, "{stderr}");
    let revisions: Vec<Value> = serde_json::from_str(&stdout).expect("helm history JSON");
    revisions
        .iter()
        .map(|r| {
            (
                r["revision"].as_u64().expect("revision"),
                r["status"].as_str().expect("status").to_owned(),
            )
        })
        .collect()
}

/// The version the release's Deployment runs the module at.
async fn deployed_version(client: &kube::Client, ns: &str) -> String {
    let deployment = Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), ns)
        .get("hello-tiny-module")
        .await
        .expect("the Deployment");
    let args = deployment
        .spec
        .and_then(|s| s.template.spec)
        .map(|s| s.containers[0].args.clone().unwrap_or_default())
        .unwrap_or_default();
    args.iter()
        .find_map(|a| a.strip_prefix("--version="))
        .expect("--version")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_upgrade_is_refused_by_the_hook_when_it_breaks_a_deployed_edge_and_goes_on_when_allowed_or_compatible() {
    let env = common::env().await;
    let kubeconfig = env.kubeconfig_path().to_str().expect("utf-8").to_owned();
    let dir = tempfile::tempdir().expect("tempdir");
    let args = |verb: &str, ns: &str, version: &str, extra: &str| {
        release_args(verb, ns, &kubeconfig, dir.path(), version, extra)
    };

    // Release 0.1.0 installed (on a first install nothing is deployed: no hook runs); its
    // leader published the build that took a `title` on hello's input, which the deployed
    // edge writes. This build, 0.2.0, has no such field.
    let ns = "helm-upgrade-breaking";
    env.create_namespace(ns).await.expect("namespace");
    let ((ok, _, stderr), ran) = helm_as_kubelet(&env, ns, args("install", ns, "0.1.0", "")).await;
    assert!(ok, "{stderr}");
    assert!(ran.is_empty(), "no hook on install");
    publish(&Api::namespaced(env.client(), ns), with_title()).await;
    common::create_flow(&env.client(), ns, &flow("shop", r#"{ name: "{{$.who}}", title: Dr }"#)).await;

    let ((ok, stdout, stderr), ran) = helm_as_kubelet(&env, ns, args("upgrade", ns, "0.2.0", "")).await;
    assert!(!ok, "the upgrade went on:\n{stdout}\n{stderr}");
    // Helm names the hook that refused it, which the job controller marked Failed (and
    // which stays, for its log).
    assert!(
        stderr.contains("pre-upgrade hooks failed")
            && stderr.contains(&format!("Job/{ns}/hello-tiny-module-upgrade-check"))
            && stderr.contains("status: Failed"),
        "{stderr}"
    );
    let job = Api::<k8s_openapi::api::batch::v1::Job>::namespaced(env.client(), ns)
        .get("hello-tiny-module-upgrade-check")
        .await
        .expect("the failed hook Job is kept");
    let failed = job
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Failed" && c.status == "True");
    assert!(failed, "the hook Job is Failed");
    let [hook] = &ran[..] else {
        panic!("one hook pod ran: {}", ran.len())
    };
    assert_eq!(
        (hook.job.as_str(), hook.code),
        ("hello-tiny-module-upgrade-check", Some(1)),
        "{}",
        hook.stderr
    );
    assert!(
        hook.stdout.starts_with(
            "breaking: flow `shop`, node `shop.examples-v0.hello-1`, edge `to-hello` from \
             `shop.sender-module-v0.sender-1:out`, port `input`, field `/title`"
        ),
        "{}",
        hook.stdout
    );
    // The release stays at its old revision, and so does what it runs.
    assert_eq!(
        history(ns, &kubeconfig),
        [(1, "deployed".to_owned()), (2, "failed".to_owned())]
    );
    assert_eq!(deployed_version(&env.client(), ns).await, "0.1.0");

    // The value that says go on: the check still runs and names the field; the upgrade goes on.
    let go_on = "upgradeCheck: {enabled: true, allowBreaking: true}\n";
    let ((ok, stdout, stderr), ran) = helm_as_kubelet(&env, ns, args("upgrade", ns, "0.2.0", go_on)).await;
    assert!(ok, "{stdout}\n{stderr}");
    let [hook] = &ran[..] else {
        panic!("one hook pod ran: {}", ran.len())
    };
    assert_eq!(hook.code, Some(0), "{}", hook.stderr);
    assert!(hook.stdout.contains("field `/title`"), "{}", hook.stdout);
    assert!(hook.stderr.contains("--allow-breaking: going on"), "{}", hook.stderr);
    assert_eq!(history(ns, &kubeconfig).last(), Some(&(3, "deployed".to_owned())));
    assert_eq!(deployed_version(&env.client(), ns).await, "0.2.0");

    // A compatible build: the deployed build had no `context`, which this one adds.
    let ns = "helm-upgrade-compatible";
    env.create_namespace(ns).await.expect("namespace");
    let ((ok, _, stderr), _) = helm_as_kubelet(&env, ns, args("install", ns, "0.1.0", "")).await;
    assert!(ok, "{stderr}");
    publish(
        &Api::namespaced(env.client(), ns),
        older(|fields| {
            fields.remove("context");
        }),
    )
    .await;
    common::create_flow(&env.client(), ns, &flow("shop", r#"{ name: "{{$.who}}" }"#)).await;
    let ((ok, stdout, stderr), ran) = helm_as_kubelet(&env, ns, args("upgrade", ns, "0.2.0", "")).await;
    assert!(ok, "{stdout}\n{stderr}");
    let [hook] = &ran[..] else {
        panic!("one hook pod ran: {}", ran.len())
    };
    assert_eq!(hook.code, Some(0), "{}", hook.stderr);
    assert!(hook.stdout.starts_with("compatible: flow `shop`"), "{}", hook.stdout);
    assert_eq!(
        history(ns, &kubeconfig),
        [(1, "superseded".to_owned()), (2, "deployed".to_owned())]
    );
    assert_eq!(deployed_version(&env.client(), ns).await, "0.2.0");
}

//! The committed CRD YAML matches the Rust types, and the shapes match the Go SDK's.

use kube::CustomResourceExt;
use serde_json::json;
use tiny_runtime::crd::{self, TinyNode, TinyNodeStatus};

#[test]
fn committed_crds_are_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../crds/tiny.yaml");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    let generated = crd::yaml().expect("CRDs serialise");
    assert!(
        committed == generated,
        "crds/tiny.yaml is stale: run `make crds` and commit the result"
    );
}

#[test]
fn every_kind_is_namespaced_with_a_status_subresource() {
    for c in crd::all() {
        assert_eq!(c.spec.group, "operator.tinysystems.io");
        assert_eq!(c.spec.scope, "Namespaced", "{}", c.spec.names.kind);
        let version = &c.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        assert!(
            version.subresources.as_ref().and_then(|s| s.status.as_ref()).is_some(),
            "{}",
            c.spec.names.kind
        );
    }
    let kinds: Vec<_> = crd::all().into_iter().map(|c| c.spec.names.kind).collect();
    assert_eq!(
        kinds,
        [
            "TinyNode",
            "TinyModule",
            "TinySignal",
            "TinyFlow",
            "TinyProject",
            "TinyTracker",
            "TinyWidgetPage",
            "TinyComponent"
        ]
    );
}

#[test]
fn a_node_written_by_the_go_platform_loads() {
    // Field names and []byte (base64) fields as the Go SDK writes them.
    let go = json!({
        "apiVersion": "operator.tinysystems.io/v1alpha1",
        "kind": "TinyNode",
        "metadata": {"name": "a1b2c3d4.common-module-v0.router-x7k2p", "namespace": "tinysystems",
                     "labels": {"tinysystems.io/flow-name": "f1"}},
        "spec": {
            "module": "common-module-v0",
            "component": "router",
            "ports": [
                {"port": "_settings", "configuration": "eyJlbmFibGVFcnJvclBvcnQiOnRydWV9"},
                {"from": "a:out", "port": "request", "flowID": "f1",
                 "configuration": "eyJ1cmwiOiJ7eyQudXJsfX0ifQ==", "schema": "eyJ0eXBlIjoib2JqZWN0In0="}
            ],
            "edges": [{"id": "e1", "port": "out", "to": "b:in", "flowID": "f1",
                       "retryPolicy": {"maxAttempts": 5, "backoffCoefficient": "1.5", "nonRetryableErrorCodes": ["X"]}}]
        },
        "status": {
            "observedGeneration": 3,
            "module": {"name": "common-module-v0", "version": "0.1.3", "sdkVersion": "v0.13.131"},
            "component": {"description": "Router", "info": "", "tags": ["routing"]},
            "ports": [{"name": "in", "label": "In", "position": 3, "source": false,
                       "schema": "e30=", "configuration": "bnVsbA=="}],
            "status": "OK", "error": false, "metadata": {"_state/k": "dg=="},
            "lastUpdateTime": "2026-08-01T10:00:00Z"
        }
    });
    let node: TinyNode = serde_json::from_value(go.clone()).expect("loads");
    assert_eq!(
        node.spec.ports[0].configuration.as_ref().map(|c| c.value().clone()),
        Some(json!({"enableErrorPort": true}))
    );
    assert_eq!(
        node.spec.ports[1].configuration.as_ref().map(|c| c.value().clone()),
        Some(json!({"url": "{{$.url}}"}))
    );
    let policy = node.spec.edges[0].retry_policy.as_ref().expect("policy");
    assert_eq!(
        (policy.max_attempts, policy.backoff_coefficient.as_deref()),
        (Some(5), Some("1.5"))
    );
    let status: &TinyNodeStatus = node.status.as_ref().expect("status");
    assert_eq!(status.ports[0].position, 3);
    // Written back, the spec keeps the Go shapes (base64 strings, flowID, camelCase).
    let back = serde_json::to_value(&node).expect("serialises");
    assert_eq!(back["spec"], go["spec"]);
    assert_eq!(back["status"]["ports"], go["status"]["ports"]);
}

#[test]
fn byte_fields_are_base64_strings_in_the_schema() {
    let schema = serde_json::to_value(TinyNode::crd()).expect("serialises");
    let port = &schema["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["ports"]
        ["items"];
    assert_eq!(port["properties"]["configuration"]["type"], "string");
    assert_eq!(port["properties"]["configuration"]["format"], "byte");
}

/// The CRDs' group and version (literals in the kube derives) are the wire contract's.
#[test]
fn group_and_version_are_the_contract() {
    use kube::Resource as _;
    assert_eq!(TinyNode::group(&()), tiny_sdk::contract::GROUP);
    assert_eq!(TinyNode::version(&()), tiny_sdk::contract::VERSION);
}

/// `kubectl apply --dry-run=server -f PATH` against `env`: its stdout and stderr.
async fn dry_run_apply(env: &tiny_testenv::TestEnv, path: &str) -> (String, String) {
    let kubectl = tiny_testenv::kubectl().await.expect("kubectl");
    let out = tokio::process::Command::new(&kubectl)
        .arg(format!("--kubeconfig={}", env.kubeconfig_path().display()))
        .args(["apply", "--dry-run=server", "-f", path])
        .output()
        .await
        .expect("kubectl runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "kubectl apply {path} failed:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

/// The committed CRDs as the API server judges them: `kubectl apply --dry-run=server`
/// accepts every one and prints no warning (a structural-schema or format complaint of the
/// API server arrives as a `Warning:` line on stderr).
#[tokio::test]
async fn the_api_server_accepts_the_crds_without_a_warning() {
    let env = tiny_testenv::TestEnv::builder()
        .controller_manager(false)
        .start()
        .await
        .expect("the control plane starts");
    // The check sees warnings: a schema with a format the API server does not know gets
    // one from the current version (1.20 takes any format silently).
    let version = env.client().apiserver_version().await.expect("/version");
    if version
        .minor
        .trim_end_matches('+')
        .parse::<u32>()
        .is_ok_and(|m| m >= 35)
    {
        let bad = env.dir().join("bad-crd.json");
        let mut crd = serde_json::to_value(&crd::all()[0]).expect("a CRD as JSON");
        crd["metadata"]["name"] = json!("badthings.operator.tinysystems.io");
        crd["spec"]["names"] = json!({"kind": "BadThing", "plural": "badthings"});
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["when"] =
            json!({"type": "string", "format": "no-such-format"});
        std::fs::write(&bad, serde_json::to_string(&crd).expect("JSON")).expect("written");
        let (_, stderr) = dry_run_apply(&env, bad.to_str().expect("a UTF-8 path")).await;
        assert!(stderr.contains("Warning: unrecognized format"), "{stderr}");
    }

    let (stdout, stderr) = dry_run_apply(&env, tiny_testkit::cluster::CRDS).await;
    assert_eq!(stderr.trim(), "", "the API server warned about the CRDs");
    for c in crd::all() {
        let name = c.metadata.name.expect("a CRD name");
        assert!(
            stdout.contains(&format!(
                "customresourcedefinition.apiextensions.k8s.io/{name} created (server dry run)"
            )),
            "{name} not accepted:\n{stdout}"
        );
    }
}

#[test]
fn a_component_definition_written_by_go_loads_and_defaults_its_runtime() {
    // Go's field names; `runtime` left out, as a definition written by hand may.
    let go = json!({
        "apiVersion": "operator.tinysystems.io/v1alpha1",
        "kind": "TinyComponent",
        "metadata": {"name": "summarise", "namespace": "tinysystems", "generation": 3},
        "spec": {
            "component": "summarise_pods",
            "script": "export default (input) => ({count: input.pods.length})",
            "input": "{\"type\":\"object\"}",
            "output": "{\"type\":\"object\"}",
            "enableErrorPort": true
        },
        "status": {"installed": true, "module": "js-module-v0", "observedGeneration": 3}
    });
    let def: crd::TinyComponent = serde_json::from_value(go.clone()).expect("a Go TinyComponent loads");
    assert_eq!(def.spec.runtime(), "js");
    assert_eq!(def.spec.component, "summarise_pods");
    assert!(def.spec.enable_error_port);
    let status = def.status.as_ref().expect("status");
    assert!(status.installed);
    assert_eq!(status.observed_generation, 3);
    assert_eq!(serde_json::to_value(&def.status).expect("status as JSON"), go["status"]);
    // The CRD defaults `runtime` as Go's does, and prints Go's columns.
    let crd = serde_json::to_value(crd::TinyComponent::crd()).expect("the CRD as JSON");
    let version = &crd["spec"]["versions"][0];
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(spec["properties"]["runtime"]["default"], "js");
    let mut required: Vec<&str> = spec["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["component", "input", "output", "script"]);
    let columns: Vec<&str> = version["additionalPrinterColumns"]
        .as_array()
        .expect("printer columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(columns, ["Component", "Runtime", "Installed", "Reason"]);
}

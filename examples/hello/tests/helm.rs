//! The Helm charts (`charts/tiny-crds`, `charts/tiny-module`) linted and rendered with
//! real Helm v4 (helm-python-sdk through `tools/helm/helm`), no cluster: values, RBAC,
//! network policy, NATS credentials. Installed on a control plane: `helm_install.rs`.

mod common;

use std::{path::Path, process::Command};

use common::helm::{RELEASE, helm, repo, write};
use serde_json::{Value, json};
use tiny_runtime::rbac::{Rule, cleanup_rules, namespace_rules, runtime_rules};

/// The arguments of `helm template` of the tiny-module chart with extra values files.
fn template_args(values: &[&Path]) -> Vec<String> {
    let chart = repo("charts/tiny-module");
    let mut args: Vec<String> = [
        "template",
        chart.to_str().expect("utf-8 path"),
        "--name",
        RELEASE,
        "--namespace",
        "tinysystems",
    ]
    .map(str::to_owned)
    .to_vec();
    for v in values {
        args.extend(["-f".to_owned(), v.to_str().expect("utf-8 path").to_owned()]);
    }
    args
}

/// `helm template` of the tiny-module chart with extra values files.
fn render(values: &[&Path]) -> String {
    let args = template_args(values);
    helm(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// `helm template` of the tiny-module chart with `values`, which the chart must
/// refuse: what Helm said on standard error.
fn refused(values: &Path) -> String {
    let out = Command::new(repo("tools/helm/helm"))
        .args(template_args(&[values]))
        .output()
        .expect("helm runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "the chart took {}:\n{err}", values.display());
    err
}

fn documents(yaml: &str) -> Vec<Value> {
    use serde::Deserialize as _;
    serde_yaml::Deserializer::from_str(yaml)
        .map(|d| Value::deserialize(d).expect("rendered YAML parses"))
        .filter(|v| !v.is_null())
        .collect()
}

fn find<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} rendered"))
}

/// `tracing.allowPlaintextDsn` passes `OTLP_DSN_PLAINTEXT=allow`; by default nothing lets
/// an OTLP_DSN's token go over plain http.
#[test]
fn the_chart_allows_a_plaintext_dsn_only_when_its_values_say_so() {
    assert!(!render(&[]).contains("OTLP_DSN_PLAINTEXT"));
    let dir = tempfile::tempdir().expect("tempdir");
    let allow = write(dir.path(), "allow.yaml", "tracing:\n  allowPlaintextDsn: true\n");
    let rendered = render(&[&allow]);
    assert!(
        rendered.contains("- name: OTLP_DSN_PLAINTEXT\n              value: \"allow\""),
        "{rendered}"
    );
    let typo = write(dir.path(), "typo.yaml", "tracing:\n  allowPlaintextDSN: true\n");
    assert!(refused(&typo).contains("allowPlaintextDSN"));
}

#[test]
fn both_charts_lint_and_render_and_the_rendered_manifests_are_snapshotted() {
    for chart in ["charts/tiny-crds", "charts/tiny-module"] {
        let report = helm(&["lint", repo(chart).to_str().expect("utf-8")]);
        assert!(report.contains("0 problem(s)"), "{report}");
    }
    insta::assert_snapshot!("tiny-module-defaults", render(&[]));

    // A module whose components declare rules: they land in the Role and a ClusterRole.
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = write(
        dir.path(),
        "extra.yaml",
        "hooks: {enabled: false}\nrbac:\n  extraRules:\n  - {apiGroups: [''], resources: [configmaps], verbs: [get]}\n  extraClusterRules:\n  - {apiGroups: [''], resources: [nodes], verbs: [list]}\n",
    );
    let rendered = render(&[&extra]);
    insta::assert_snapshot!("tiny-module-extra-rules", rendered);
    let docs = documents(&rendered);
    assert!(docs.iter().all(|d| d["kind"] != "Job"), "hooks off");
    let role_rules = find(&docs, "Role")["rules"].as_array().expect("rules").clone();
    assert_eq!(
        role_rules.last(),
        Some(&json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}))
    );
    let cluster_role = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "tinysystems-hello-tiny-module")
        .expect("the components' ClusterRole");
    assert_eq!(
        cluster_role["rules"],
        json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}])
    );

    // Secrets for `[[secret:...]]` placeholders: `get` on those names only, and the
    // module is told which they are.
    let secrets = write(dir.path(), "secrets.yaml", "rbac:\n  secrets: [creds, api.v1]\n");
    let docs = documents(&render(&[&secrets]));
    let role = docs
        .iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "hello-tiny-module")
        .expect("the module's Role");
    let role_rules = role["rules"].as_array().expect("rules").clone();
    assert_eq!(
        role_rules.last(),
        Some(
            &json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["creds", "api.v1"]})
        )
    );
    let container = &find(&docs, "Deployment")["spec"]["template"]["spec"]["containers"][0];
    let env = container["env"].as_array().expect("env");
    assert!(
        env.contains(&json!({"name": "TINY_SECRETS", "value": "creds,api.v1"})),
        "{env:?}"
    );
    // Without any, no rule names Secrets and the module is told of none.
    let plain = render(&[]);
    assert!(
        !plain.contains("TINY_SECRETS") && !plain.contains("- secrets"),
        "{plain}"
    );

    // values.schema.json refuses a wildcard rule, naming where it is.
    let bad = write(
        dir.path(),
        "bad.yaml",
        "rbac:\n  extraRules:\n  - {apiGroups: [batch], resources: [jobs], verbs: ['*']}\n",
    );
    let err = refused(&bad);
    assert!(err.contains("extraRules"), "{err}");
}

#[test]
fn a_module_on_nats_gets_its_url_or_its_token_from_the_brokers_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let env_of = |values: &str| -> Value {
        let file = write(dir.path(), "nats.yaml", values);
        let docs = documents(&render(&[&file]));
        find(&docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"].clone()
    };
    let var = |env: &Value, name: &str| {
        env.as_array()
            .and_then(|e| e.iter().find(|v| v["name"] == name).cloned())
    };
    // None by default: the module stays on gRPC.
    assert_eq!(var(&env_of("{}"), "TINY_NATS_URL"), None);
    // The URL as given.
    let env = env_of("nats: {url: 'nats://tok@tinysystems-nats:4222'}");
    assert_eq!(
        var(&env, "TINY_NATS_URL"),
        Some(json!({"name": "TINY_NATS_URL", "value": "nats://tok@tinysystems-nats:4222"}))
    );
    // The TinySystems NATS chart's Secret: the token comes from it, never from values,
    // in a variable of its own (written into the URL, a `/` in it would end the
    // authority); the URL keeps its scheme and loses any user info.
    let env = env_of("nats: {url: 'tls://old@tinysystems-nats:4222', tokenSecret: {name: tinysystems-nats-auth}}");
    assert_eq!(
        var(&env, "TINY_NATS_TOKEN"),
        Some(
            json!({"name": "TINY_NATS_TOKEN", "valueFrom": {"secretKeyRef": {"name": "tinysystems-nats-auth", "key": "token"}}})
        )
    );
    assert_eq!(
        var(&env, "TINY_NATS_URL").map(|v| v["value"].clone()),
        Some(json!("tls://tinysystems-nats:4222"))
    );
    assert_eq!(var(&env, "NATS_TOKEN"), None);
    let env = env_of("nats: {url: 'nats://tinysystems-nats:4222', tokenSecret: {name: tinysystems-nats-auth}}");
    assert_eq!(
        var(&env, "TINY_NATS_URL").map(|v| v["value"].clone()),
        Some(json!("nats://tinysystems-nats:4222"))
    );
    // Core by default; JetStream with the reconciler's settings.
    assert_eq!(
        var(&env, "TINY_NATS_TRANSPORT").map(|v| v["value"].clone()),
        Some(json!("core"))
    );
    assert_eq!(var(&env, "TINY_RUN_STALE_AFTER"), None, "no reconciler on core");
    let env = env_of("nats: {url: 'nats://n:4222', transport: jetstream, runs: {staleAfter: 30}}");
    assert_eq!(
        var(&env, "TINY_NATS_TRANSPORT").map(|v| v["value"].clone()),
        Some(json!("jetstream"))
    );
    assert_eq!(
        var(&env, "TINY_RUN_STALE_AFTER").map(|v| v["value"].clone()),
        Some(json!("30"))
    );
    assert_eq!(
        var(&env, "TINY_RUN_MAX_REDRIVES").map(|v| v["value"].clone()),
        Some(json!("3"))
    );
    // JetStream's limits (docs/limits.md): the defaults, written out whole (not as
    // floats), and a value given beside them.
    assert_eq!(
        var(&env, "TINY_JETSTREAM_EDGES_MAX_BYTES").map(|v| v["value"].clone()),
        Some(json!("1073741824"))
    );
    let env = env_of("nats: {url: 'nats://n:4222', transport: jetstream, limits: {edgesMaxMsgs: 5000}}");
    assert_eq!(
        var(&env, "TINY_JETSTREAM_EDGES_MAX_MSGS").map(|v| v["value"].clone()),
        Some(json!("5000"))
    );
    assert_eq!(
        var(&env, "TINY_JETSTREAM_MAX_MSG_SIZE").map(|v| v["value"].clone()),
        Some(json!("1048576"))
    );
    // values.schema.json refuses what is not a NATS URL, and a transport it does not
    // know, naming the field.
    let refuses = |file: &str, values: &str, field: &str| {
        let err = refused(&write(dir.path(), file, values));
        assert!(err.contains(field), "{err}");
    };
    refuses(
        "bad-nats.yaml",
        "nats: {url: 'http://tinysystems-nats:4222'}",
        "/nats/url",
    );
    refuses(
        "bad-transport.yaml",
        "nats: {url: 'nats://n:4222', transport: jetsream}",
        "/nats/transport",
    );
}

#[test]
fn the_crds_chart_holds_the_crds_generated_from_the_rust_types() {
    let rendered = helm(&[
        "template",
        repo("charts/tiny-crds").to_str().expect("utf-8"),
        "--name",
        "crds",
        "--namespace",
        "x",
    ]);
    let want = tiny_runtime::crd::yaml().expect("CRD YAML");
    assert_eq!(
        documents(&rendered),
        documents(&want),
        "charts/tiny-crds drifted from the Rust types: run `make crds`"
    );
    assert_eq!(documents(&rendered).len(), 8);
}

#[test]
fn the_charts_rbac_is_the_codes_and_least_privilege() {
    // `hello-module rbac` prints what the chart's values hold.
    let out = Command::new(env!("CARGO_BIN_EXE_hello-module"))
        .arg("rbac")
        .output()
        .expect("hello-module rbac");
    assert!(out.status.success());
    let printed: Value = serde_yaml::from_slice(&out.stdout).expect("rbac YAML");
    let values: Value =
        serde_yaml::from_str(&std::fs::read_to_string(repo("charts/tiny-module/values.yaml")).expect("values.yaml"))
            .expect("values.yaml parses");
    for (key, code) in [
        ("rules", runtime_rules()),
        ("cleanupRules", cleanup_rules()),
        ("namespaceRules", namespace_rules()),
    ] {
        let code = serde_json::to_value(code).expect("rules");
        assert_eq!(printed["rbac"][key], code, "`hello-module rbac` {key}");
        assert_eq!(
            values["rbac"][key], code,
            "charts/tiny-module/values.yaml rbac.{key} drifted from tiny_runtime::rbac: run `make chart-rbac`"
        );
    }
    // The rendered Roles are exactly those rules; no wildcard anywhere.
    let docs = documents(&render(&[]));
    let role = |name: &str| -> Vec<Rule> {
        let doc = docs
            .iter()
            .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == name)
            .unwrap_or_else(|| panic!("no Role {name}"));
        serde_json::from_value(doc["rules"].clone()).expect("rules")
    };
    // The module's own Lease and TinyModule by name: `$(MODULE)` is its sanitised name
    // (the release's here), `$(NAMESPACE)` the release's namespace.
    let ours = |rules: Vec<Rule>| -> Vec<Rule> {
        rules
            .into_iter()
            .map(|r| r.for_module("hello", "tinysystems"))
            .collect()
    };
    assert_eq!(role("hello-tiny-module"), ours(runtime_rules()));
    assert_eq!(role("hello-tiny-module-cleanup"), ours(cleanup_rules()));
    let namespace = docs
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "tinysystems-hello-tiny-module-namespace")
        .expect("the namespace ClusterRole");
    let namespace: Vec<Rule> = serde_json::from_value(namespace["rules"].clone()).expect("rules");
    assert_eq!(namespace, ours(namespace_rules()));
    assert!(
        namespace.iter().all(|r| r.resource_names == ["tinysystems"]),
        "{namespace:?}"
    );
    // A module name the runtime sanitises is sanitised the same way by the chart.
    let dir = tempfile::tempdir().expect("tempdir");
    let odd = write(
        dir.path(),
        "odd.yaml",
        "module: {name: 'ghcr.io/Tiny/Common_Module:v0'}\n",
    );
    let docs_odd = documents(&render(&[&odd]));
    let role_odd = docs_odd
        .iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "hello-tiny-module")
        .expect("Role");
    let sanitised = tiny_runtime::config::sanitize("ghcr.io/Tiny/Common_Module:v0");
    let rules_odd: Vec<Rule> = serde_json::from_value(role_odd["rules"].clone()).expect("rules");
    assert_eq!(
        rules_odd,
        runtime_rules()
            .into_iter()
            .map(|r| r.for_module(&sanitised, "tinysystems"))
            .collect::<Vec<_>>()
    );
    for doc in &docs {
        for rule in doc["rules"].as_array().into_iter().flatten() {
            let rule: Rule = serde_json::from_value(rule.clone()).expect("rule");
            assert_eq!(rule.wildcard(), None, "{} {}", doc["kind"], doc["metadata"]["name"]);
        }
    }
}

#[test]
fn the_network_policy_lets_only_module_peers_reach_grpc_and_the_cleanup_hook_retries() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Off by default.
    let docs = documents(&render(&[]));
    assert!(docs.iter().all(|d| d["kind"] != "NetworkPolicy"));
    // The cleanup Job is retried: a failed cleanup leaves finalizers behind.
    let cleanup = docs
        .iter()
        .find(|d| d["kind"] == "Job" && d["metadata"]["name"] == "hello-tiny-module-cleanup")
        .expect("the cleanup Job");
    assert!(
        cleanup["spec"]["backoffLimit"].as_u64().is_some_and(|n| n > 0),
        "{}",
        cleanup["spec"]
    );

    let on = write(
        dir.path(),
        "on.yaml",
        "networkPolicy: {enabled: true}\ngrpc: {port: 9000}\n",
    );
    let report = helm(&[
        "lint",
        repo("charts/tiny-module").to_str().expect("utf-8"),
        "-f",
        on.to_str().expect("utf-8"),
    ]);
    assert!(report.contains("0 problem(s)"), "{report}");
    let docs = documents(&render(&[&on]));
    let policy = find(&docs, "NetworkPolicy");
    let pod_labels = &find(&docs, "Deployment")["spec"]["template"]["metadata"]["labels"];
    // It selects this module's pods; they carry the label its default peers select.
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        find(&docs, "Deployment")["spec"]["selector"]["matchLabels"]
    );
    assert_eq!(pod_labels["tinysystems.io/module"], "true");
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    let rules = policy["spec"]["ingress"].as_array().expect("ingress rules");
    assert_eq!(
        rules[0],
        json!({
            "from": [{"podSelector": {"matchLabels": {"tinysystems.io/module": "true"}}}],
            "ports": [{"port": 9000, "protocol": "TCP"}],
        })
    );
    // Every other port stays open, and no range includes gRPC's.
    assert_eq!(
        rules[1],
        json!({"ports": [
            {"port": 1, "endPort": 8999, "protocol": "TCP"},
            {"port": 9001, "endPort": 65535, "protocol": "TCP"},
            {"protocol": "UDP"},
        ]})
    );
    assert_eq!(rules.len(), 2);

    // Peers of one's own choosing; other ports closed.
    let peers = write(
        dir.path(),
        "peers.yaml",
        "networkPolicy:\n  enabled: true\n  otherPortsOpen: false\n  grpcFrom:\n  - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: tinysystems}}\n    podSelector: {matchLabels: {app: platform}}\n",
    );
    let docs = documents(&render(&[&peers]));
    let rules = find(&docs, "NetworkPolicy")["spec"]["ingress"].clone();
    assert_eq!(
        rules,
        json!([{
            "from": [{
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "tinysystems"}},
                "podSelector": {"matchLabels": {"app": "platform"}},
            }],
            "ports": [{"port": 8483, "protocol": "TCP"}],
        }])
    );

    // No peers would let every pod in: refused, saying which value.
    let empty = write(
        dir.path(),
        "empty.yaml",
        "networkPolicy: {enabled: true, grpcFrom: []}\n",
    );
    let err = refused(&empty);
    assert!(err.contains("networkPolicy.grpcFrom is empty"), "{err}");
}

#[test]
fn a_module_on_nats_may_connect_as_its_own_user_from_a_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let own = write(
        dir.path(),
        "own.yaml",
        "nats: {url: 'nats://old@nats:4222', userSecret: {name: alpha-nats, passwordKey: pw}}\n",
    );
    let docs = documents(&render(&[&own]));
    let env = find(&docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"].clone();
    let var = |name: &str| {
        env.as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {env}"))
    };
    assert_eq!(
        var("TINY_NATS_USER")["valueFrom"],
        json!({"secretKeyRef": {"name": "alpha-nats", "key": "user"}})
    );
    assert_eq!(
        var("TINY_NATS_PASSWORD")["valueFrom"],
        json!({"secretKeyRef": {"name": "alpha-nats", "key": "pw"}})
    );
    // The URL keeps no user info: the credentials come from the Secret only.
    assert_eq!(var("TINY_NATS_URL")["value"], "nats://nats:4222");
    assert!(
        env.as_array()
            .into_iter()
            .flatten()
            .all(|v| v["name"] != "TINY_NATS_TOKEN"),
        "{env}"
    );
    // Both a user and the shared token: refused, naming both.
    let both = write(
        dir.path(),
        "both.yaml",
        "nats: {url: 'nats://nats:4222', userSecret: {name: a}, tokenSecret: {name: b}}\n",
    );
    let err = refused(&both);
    assert!(err.contains("nats.userSecret and nats.tokenSecret"), "{err}");
}

#[test]
fn a_module_on_nats_may_connect_with_its_own_nkey_or_creds_file_from_a_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let deployment = |values: &str| {
        let file = write(dir.path(), "values.yaml", values);
        let path = file.to_str().expect("utf-8");
        let report = helm(&["lint", repo("charts/tiny-module").to_str().expect("utf-8"), "-f", path]);
        assert!(report.contains("0 problem(s)"), "{report}");
        let docs = documents(&render(&[&file]));
        find(&docs, "Deployment")["spec"]["template"]["spec"].clone()
    };
    let var = |pod: &Value, name: &str| {
        pod["containers"][0]["env"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == name)
            .cloned()
    };
    // An nkey: the seed from the Secret's key, the URL without user info, no volume.
    let pod = deployment("nats: {url: 'nats://old@nats:4222', nkeySecret: {name: alpha-nkey}}\n");
    assert_eq!(
        var(&pod, "TINY_NATS_NKEY_SEED").map(|v| v["valueFrom"].clone()),
        Some(json!({"secretKeyRef": {"name": "alpha-nkey", "key": "seed"}}))
    );
    assert_eq!(
        var(&pod, "TINY_NATS_URL").map(|v| v["value"].clone()),
        Some(json!("nats://nats:4222"))
    );
    assert_eq!(var(&pod, "TINY_NATS_TOKEN"), None);
    assert!(pod["volumes"].is_null(), "{pod}");
    // A .creds file: mounted read-only from the Secret, its path in TINY_NATS_CREDS; the
    // file's text is in no variable.
    let pod = deployment("nats: {url: 'tls://nats:4222', credsSecret: {name: alpha-creds, key: alpha.creds}}\n");
    assert_eq!(
        var(&pod, "TINY_NATS_CREDS").map(|v| v["value"].clone()),
        Some(json!("/var/run/secrets/tinysystems.io/nats/alpha.creds"))
    );
    assert_eq!(
        var(&pod, "TINY_NATS_URL").map(|v| v["value"].clone()),
        Some(json!("tls://nats:4222"))
    );
    assert_eq!(
        pod["volumes"],
        json!([{"name": "nats-creds", "secret": {"secretName": "alpha-creds", "defaultMode": 256,
            "items": [{"key": "alpha.creds", "path": "alpha.creds"}]}}])
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"],
        json!([{"name": "nats-creds", "mountPath": "/var/run/secrets/tinysystems.io/nats", "readOnly": true}])
    );
    // Two ways at once: refused, naming them.
    let two = write(
        dir.path(),
        "two.yaml",
        "nats: {url: 'nats://nats:4222', nkeySecret: {name: a}, credsSecret: {name: b}, tokenSecret: {name: c}}\n",
    );
    let err = refused(&two);
    assert!(
        err.contains("nats.nkeySecret, nats.credsSecret and nats.tokenSecret are set together"),
        "{err}"
    );
}

#[test]
fn system_ports_from_reaches_the_module_and_a_bad_value_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let platform = write(dir.path(), "platform.yaml", "systemPortsFrom: platform\n");
    let docs = documents(&render(&[&platform]));
    let env = &find(&docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"];
    let var = env
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == "TINY_SYSTEM_PORTS_FROM");
    assert_eq!(var.map(|v| v["value"].clone()), Some(json!("platform")), "{env}");
    let bad = write(dir.path(), "bad.yaml", "systemPortsFrom: modules\n");
    let err = refused(&bad);
    assert!(err.contains("systemPortsFrom"), "{err}");
}

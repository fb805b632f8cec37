//! `KubeSecrets` against a real API server (tiny-testenv), through a ServiceAccount's
//! own token: a Secret it may not read is a `Forbidden`, the rule the chart makes
//! (`get` on the declared names) is enough, a read is trusted for the TTL and a
//! rotation seen after it, and a missing Secret or key names what is there. A Secret
//! annotated `tinysystems.io/allowed-flows` or `-nodes` resolves only for the nodes it
//! names, through an engine whose nodes carry their flow label.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use k8s_openapi::api::{
    core::v1::{Secret, ServiceAccount},
    rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject},
};
use kube::{
    Api, Client,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tiny_runtime::secrets::KubeSecrets;
use tiny_sdk::secret::{SecretError, SecretSource as _};
use tiny_testkit::{cluster::env, eventually};

const NS: &str = "sec";

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(NS.to_owned()),
        ..Default::default()
    }
}

fn secret(name: &str, data: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: meta(name),
        string_data: Some(data.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
        ..Default::default()
    }
}

/// A client that acts as ServiceAccount `module` of the namespace, with a token the
/// TokenRequest API gives for it (what the kubelet mounts into the module's Pod).
async fn as_service_account(env: &tiny_testenv::TestEnv, admin: &Client) -> Client {
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), NS);
    sas.create(
        &PostParams::default(),
        &ServiceAccount {
            metadata: meta("module"),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let bearer = env.service_account_token(NS, "module").await.unwrap();
    let mut config = env.config().clone();
    config.auth_info = kube::config::AuthInfo {
        token: Some(bearer.into()),
        ..Default::default()
    };
    Client::try_from(config).unwrap()
}

/// The Role the tiny-module chart makes for `rbac.secrets`, bound to the ServiceAccount.
async fn grant(admin: &Client, names: &[&str]) {
    let roles: Api<Role> = Api::namespaced(admin.clone(), NS);
    roles
        .create(
            &PostParams::default(),
            &Role {
                metadata: meta("secrets"),
                rules: Some(vec![PolicyRule {
                    api_groups: Some(vec![String::new()]),
                    resources: Some(vec!["secrets".into()]),
                    verbs: vec!["get".into()],
                    resource_names: Some(names.iter().map(|n| (*n).to_owned()).collect()),
                    ..Default::default()
                }]),
            },
        )
        .await
        .unwrap();
    let bindings: Api<RoleBinding> = Api::namespaced(admin.clone(), NS);
    bindings
        .create(
            &PostParams::default(),
            &RoleBinding {
                metadata: meta("secrets"),
                role_ref: RoleRef {
                    api_group: "rbac.authorization.k8s.io".into(),
                    kind: "Role".into(),
                    name: "secrets".into(),
                },
                subjects: Some(vec![Subject {
                    kind: "ServiceAccount".into(),
                    name: "module".into(),
                    namespace: Some(NS.into()),
                    ..Default::default()
                }]),
            },
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_read_as_the_service_account_by_name_and_trusted_for_the_ttl() {
    let env = env().await;
    let admin = env.client();
    env.create_namespace(NS).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), NS);
    secrets
        .create(&PostParams::default(), &secret("creds", &[("token", "first-Value")]))
        .await
        .unwrap();
    secrets
        .create(&PostParams::default(), &secret("rotating", &[("token", "first-Value")]))
        .await
        .unwrap();
    secrets
        .create(&PostParams::default(), &secret("binary", &[]))
        .await
        .unwrap();
    secrets
        .patch(
            "binary",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"raw": "/w=="}})), // 0xff: not UTF-8
        )
        .await
        .unwrap();
    let sa = as_service_account(&env, &admin).await;
    // Two sources: one trusts a read for an hour (what it read stays), one not at all
    // (every get reads again). The TTL's rule, to the millisecond, is the unit test
    // `a_kept_read_is_trusted_for_the_ttl_and_not_a_moment_longer` on a paused clock;
    // here no assertion depends on how fast the API server answers.
    let declared = ["creds", "gone", "binary", "rotating"].map(str::to_owned).to_vec();
    let source = KubeSecrets::new(sa.clone(), NS, declared.clone(), Duration::from_secs(3600));
    let fresh = KubeSecrets::new(sa, NS, declared, Duration::ZERO);

    // No RBAC yet: refused, and the error says what to grant.
    let err = source.get("creds", "token").await.unwrap_err();
    assert_eq!(err, SecretError::Forbidden { name: "creds".into() });
    assert!(err.to_string().contains("grant `get`"), "{err}");

    // The chart's rule: `get` on the declared names. A refusal is not kept.
    grant(&admin, &["creds", "gone", "binary", "rotating"]).await;
    let value = eventually("the grant to take effect", Duration::from_secs(30), || {
        let source = &source;
        async move { source.get("creds", "token").await.ok() }
    })
    .await;
    assert_eq!(value, "first-Value");

    // Undeclared: not even asked for.
    let err = source.get("other", "token").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "Secret `other` is not among the Secrets the module declares (creds, gone, binary, rotating); add it to the module's requirements"
    );
    // Missing Secret, missing key, a value that is not text.
    assert_eq!(
        source.get("gone", "token").await.unwrap_err(),
        SecretError::NotFound {
            name: "gone".into(),
            namespace: NS.into()
        }
    );
    assert_eq!(
        source.get("creds", "nope").await.unwrap_err().to_string(),
        "Secret `creds` has no key `nope` (keys: token)"
    );
    assert!(matches!(
        source.get("binary", "raw").await.unwrap_err(),
        SecretError::NotText { .. }
    ));

    // Rotated: a read is trusted for the TTL (kept), and read again once it is over.
    assert_eq!(source.get("rotating", "token").await.unwrap(), "first-Value");
    assert_eq!(fresh.get("rotating", "token").await.unwrap(), "first-Value");
    secrets
        .patch(
            "rotating",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"token": "second-Value"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        source.get("rotating", "token").await.unwrap(),
        "first-Value",
        "within the TTL: the kept read"
    );
    assert_eq!(
        fresh.get("rotating", "token").await.unwrap(),
        "second-Value",
        "the TTL over: read again"
    );

    // A missing Secret is kept as missing too; a Secret created late is found once that
    // read is over.
    secrets
        .create(&PostParams::default(), &secret("gone", &[("token", "late-Value")]))
        .await
        .unwrap();
    assert!(matches!(
        source.get("gone", "token").await.unwrap_err(),
        SecretError::NotFound { .. }
    ));
    assert_eq!(fresh.get("gone", "token").await.unwrap(), "late-Value");
}

/// The Secret `name`, limited by `annotation` to `allowed`.
fn limited(name: &str, annotation: &str, allowed: &str) -> Secret {
    let mut s = secret(name, &[("token", "limited-Value")]);
    s.metadata.annotations = Some([(annotation.to_owned(), allowed.to_owned())].into());
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_limited_to_flows_or_nodes_resolves_only_for_them() {
    use tiny_sdk::{
        contract::{
            annotation::{SECRET_ALLOWED_FLOWS, SECRET_ALLOWED_NODES},
            label::FLOW_NAME,
        },
        engine::Engine,
        error::code,
        flow::FlowBuilder,
        harness::Relay,
        secret::Requester,
    };

    const LIMITS: &str = "sec-limits";
    let env = env().await;
    let admin = env.client();
    env.create_namespace(LIMITS).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), LIMITS);
    // With both annotations a node must be on both lists.
    let mut both = limited("for-both", SECRET_ALLOWED_FLOWS, "flow-a");
    if let Some(a) = both.metadata.annotations.as_mut() {
        a.insert(SECRET_ALLOWED_NODES.to_owned(), "a-sink".to_owned());
    }
    for s in [
        limited("for-flow-a", SECRET_ALLOWED_FLOWS, "flow-a, flow-c"),
        limited("for-node", SECRET_ALLOWED_NODES, "a-sink"),
        both,
        limited("for-none", SECRET_ALLOWED_NODES, ""),
        secret("open", &[("token", "open-Value")]),
    ] {
        let mut s = s;
        s.metadata.namespace = Some(LIMITS.to_owned());
        secrets.create(&PostParams::default(), &s).await.unwrap();
    }
    let declared = ["for-flow-a", "for-node", "for-both", "for-none", "open"]
        .map(str::to_owned)
        .to_vec();
    let source = std::sync::Arc::new(KubeSecrets::new(admin, LIMITS, declared, Duration::from_secs(60)));
    let engine = Engine::builder().register::<Relay>().secrets(source.clone()).build();
    // Asked without a node (not what the engine does), a limited Secret is refused.
    assert!(matches!(
        source.get("for-node", "token").await,
        Err(SecretError::NotAllowed { node, .. }) if node.is_empty()
    ));
    assert_eq!(source.get("open", "token").await.unwrap(), "open-Value");
    // Which annotation refuses node `node` of flow `flow` the Secret `name`; None: it resolves.
    let refused_by = |node: &'static str, flow: &'static str, name: &'static str| {
        let source = source.clone();
        async move {
            let who = Requester { node, flow: Some(flow) };
            match source.get_for(who, name, "token").await {
                Ok(value) => {
                    assert_eq!(value, "limited-Value");
                    None
                }
                Err(SecretError::NotAllowed { annotation, .. }) => Some(annotation),
                Err(e) => panic!("{name} for {node}: {e}"),
            }
        }
    };
    // On both lists it resolves; on one list only it is refused by the other.
    assert_eq!(refused_by("a-sink", "flow-a", "for-both").await, None);
    assert_eq!(
        refused_by("a-sink", "flow-b", "for-both").await.as_deref(),
        Some(SECRET_ALLOWED_FLOWS)
    );
    assert_eq!(
        refused_by("c-sink", "flow-a", "for-both").await.as_deref(),
        Some(SECRET_ALLOWED_NODES)
    );
    // An annotation that names nothing allows no node.
    assert_eq!(
        refused_by("a-sink", "flow-a", "for-none").await.as_deref(),
        Some(SECRET_ALLOWED_NODES)
    );

    // Each sink reads a Secret in its edge's configuration; a-sink is in flow A, b-sink in B.
    let mapping = |secret: &str| {
        json!({
            "open": "[[secret:open/token]]",
            "t": format!("[[secret:{secret}/token]]"),
        })
    };
    let apply = |sink: &'static str, flow: &'static str, secret: &'static str| {
        let engine = &engine;
        let mut node = FlowBuilder::new()
            .node("src", "relay")
            .node(sink, "relay")
            .edge("src:out", &format!("{sink}:input"), mapping(secret))
            .build()
            .nodes
            .into_iter()
            .find(|n| n.name == sink)
            .unwrap();
        node.labels.insert(FLOW_NAME.to_owned(), flow.to_owned());
        async move { engine.apply(node).await }
    };

    // A node loads whatever its edges' Secrets; an edge whose Secret it may not use
    // fails its messages, and the node's report says why.
    let refusal = |sink: &str| {
        let error = engine.report(sink).unwrap().error;
        error
            .inspect(|e| assert_eq!(e.code(), Some(code::SECRET), "{e}"))
            .map(|e| e.to_string())
    };

    // Limited to flows A and C: a node of flow A resolves it, a node of flow B is refused.
    apply("a-sink", "flow-a", "for-flow-a").await.unwrap();
    assert_eq!(refusal("a-sink"), None);
    apply("b-sink", "flow-b", "for-flow-a").await.unwrap();
    let err = refusal("b-sink").unwrap();
    assert_eq!(
        err,
        "port `input` (edge from `src:out`) field `t`: [[secret:for-flow-a/token]]: Secret `for-flow-a` is limited by its annotation `tinysystems.io/allowed-flows` to flows flow-a, flow-c; node `b-sink` is in flow `flow-b` [SECRET]"
    );
    // A message on that edge fails, one on a-sink's edge arrives.
    let src = |sink: &str| {
        FlowBuilder::new()
            .node("src", "relay")
            .node(sink, "relay")
            .edge("src:out", &format!("{sink}:input"), json!({}))
            .build()
            .nodes
            .into_iter()
            .find(|n| n.name == "src")
            .unwrap()
    };
    engine.apply(src("b-sink")).await.unwrap();
    let err = engine.send("src:input", json!({})).await.unwrap_err();
    assert_eq!(err.code(), Some(code::SECRET), "{err}");
    engine.apply(src("a-sink")).await.unwrap();
    engine.send("src:input", json!({})).await.unwrap();

    // Limited to the node `a-sink`: it resolves it, whatever its flow; another node is refused.
    apply("a-sink", "flow-b", "for-node").await.unwrap();
    assert_eq!(refusal("a-sink"), None);
    apply("c-sink", "flow-a", "for-node").await.unwrap();
    let err = refusal("c-sink").unwrap();
    assert!(
        err.contains(
            "[[secret:for-node/token]]: Secret `for-node` is limited by its annotation `tinysystems.io/allowed-nodes` to nodes a-sink; node `c-sink` is in flow `flow-a`"
        ),
        "{err}"
    );
    assert!(!err.contains("limited-Value"), "{err}");

    // The unannotated Secret is any node's.
    apply("d-sink", "flow-z", "open").await.unwrap();
    assert_eq!(refusal("d-sink"), None);
}

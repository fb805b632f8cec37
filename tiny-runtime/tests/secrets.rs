//! `KubeSecrets` against a real API server (tiny-testenv), through a ServiceAccount's
//! own token: a Secret it may not read is a `Forbidden`, the rule the chart makes
//! (`get` on the declared names) is enough, a read is trusted for the TTL and a
//! rotation seen after it, and a missing Secret or key names what is there.
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
    // Long enough that no API server, however loaded, takes it to answer one patch.
    let ttl = Duration::from_secs(6);
    let declared = ["creds", "gone", "binary", "rotating"].map(str::to_owned).to_vec();
    let source = KubeSecrets::new(sa, NS, declared, ttl);

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

    // Rotated: the read is trusted for the TTL, then read again. `rotating` is read for
    // the first time here, so the TTL counts from this read.
    let before_read = std::time::Instant::now();
    assert_eq!(source.get("rotating", "token").await.unwrap(), "first-Value");
    let after_read = std::time::Instant::now();
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
        "within the TTL ({:?} after the read)",
        after_read.elapsed()
    );
    let value = eventually("the rotated value", Duration::from_secs(20), || {
        let source = &source;
        async move {
            source
                .get("rotating", "token")
                .await
                .ok()
                .filter(|v| v == "second-Value")
        }
    })
    .await;
    assert_eq!(value, "second-Value");
    // Read again once the TTL is over, not before, and not much later.
    assert!(before_read.elapsed() >= ttl, "{:?}", before_read.elapsed());
    assert!(
        after_read.elapsed() <= ttl + Duration::from_secs(6),
        "{:?}",
        after_read.elapsed()
    );

    // A Secret created late is found once the missing read expires.
    secrets
        .create(&PostParams::default(), &secret("gone", &[("token", "late-Value")]))
        .await
        .unwrap();
    let value = eventually("the late Secret", Duration::from_secs(20), || {
        let source = &source;
        async move { source.get("gone", "token").await.ok() }
    })
    .await;
    assert_eq!(value, "late-Value");
}

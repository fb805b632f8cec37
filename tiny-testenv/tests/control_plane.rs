//! Tests against a real local control plane (etcd + kube-apiserver + kube-controller-manager).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, Patch, PatchParams,
    PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tiny_testenv::TestEnv;

fn fixtures() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures"))
}

fn widget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.tinysystems.io", "v1alpha1", "Widget"),
        "widgets",
    )
}

#[tokio::test]
async fn crd_apply_and_custom_objects() {
    let env = TestEnv::builder()
        .controller_manager(false)
        .crds_dir(fixtures())
        .start()
        .await
        .expect("control plane starts");
    env.create_namespace("crd-test").await.unwrap();
    // Idempotent.
    env.create_namespace("crd-test").await.unwrap();
    // Applying the same CRDs again is a no-op.
    env.apply_crds_from_dir(fixtures()).await.unwrap();

    let ar = widget_resource();
    let widgets: Api<DynamicObject> = Api::namespaced_with(env.client(), "crd-test", &ar);
    let mut widget = DynamicObject::new("w1", &ar).data(json!({ "spec": { "size": 3, "label": "first" } }));
    widget.metadata.namespace = Some("crd-test".into());
    widgets.create(&PostParams::default(), &widget).await.unwrap();

    let got = widgets.get("w1").await.unwrap();
    assert_eq!(got.data["spec"]["size"], 3);
    assert_eq!(got.data["spec"]["label"], "first");

    // The structural schema is enforced by the real API server.
    let bad = DynamicObject::new("w2", &ar).data(json!({ "spec": { "size": 0 } }));
    let err = widgets.create(&PostParams::default(), &bad).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422),
        "expected 422, got {err:?}"
    );

    // Status subresource, through server-side apply.
    let status = json!({
        "apiVersion": "test.tinysystems.io/v1alpha1",
        "kind": "Widget",
        "status": { "ready": true },
    });
    widgets
        .patch_status(
            "w1",
            &PatchParams::apply("tiny-testenv-test").force(),
            &Patch::Apply(&status),
        )
        .await
        .unwrap();
    let got = widgets.get("w1").await.unwrap();
    assert_eq!(got.data["status"]["ready"], true);
    assert_eq!(got.data["spec"]["size"], 3, "a status write leaves spec alone");

    // A spec change through the main resource does not touch status.
    let spec = json!({
        "apiVersion": "test.tinysystems.io/v1alpha1",
        "kind": "Widget",
        "spec": { "size": 5 },
    });
    widgets
        .patch(
            "w1",
            &PatchParams::apply("tiny-testenv-test").force(),
            &Patch::Apply(&spec),
        )
        .await
        .unwrap();
    let got = widgets.get("w1").await.unwrap();
    assert_eq!(got.data["spec"]["size"], 5);
    assert_eq!(got.data["status"]["ready"], true);

    let list = widgets.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
}

#[tokio::test]
async fn garbage_collector_removes_owned_objects() {
    let env = TestEnv::start().await.expect("control plane starts");
    assert!(env.has_controller_manager());
    env.create_namespace("gc-test").await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "gc-test");

    let owner = cms
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("owner".into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await
        .unwrap();
    let dependent = ConfigMap {
        metadata: ObjectMeta {
            name: Some("dependent".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "owner".into(),
                uid: owner.metadata.uid.clone().unwrap(),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_owned(), "v".to_owned())].into()),
        ..ConfigMap::default()
    };
    cms.create(&PostParams::default(), &dependent).await.unwrap();
    assert!(cms.get_opt("dependent").await.unwrap().is_some());

    cms.delete("owner", &DeleteParams::background()).await.unwrap();

    let start = Instant::now();
    loop {
        if cms.get_opt("dependent").await.unwrap().is_none() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the garbage collector did not delete the dependent within 30 s\n{}",
            env.log_tail("kube-controller-manager", 30)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!("dependent collected {:?} after its owner was deleted", start.elapsed());
}

#[tokio::test]
async fn leases_and_kubeconfig_file() {
    let env = TestEnv::builder()
        .controller_manager(false)
        .start()
        .await
        .expect("control plane starts");
    env.create_namespace("lease-test").await.unwrap();

    let leases: Api<Lease> = Api::namespaced(env.client(), "lease-test");
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("leader".into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("pod-a".into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            ..LeaseSpec::default()
        }),
    };
    leases.create(&PostParams::default(), &lease).await.unwrap();
    let mut got = leases.get("leader").await.unwrap();
    assert_eq!(got.spec.as_ref().unwrap().holder_identity.as_deref(), Some("pod-a"));

    // An update with a stale resourceVersion is refused: leases really are compare-and-swap.
    let stale = got.clone();
    got.spec.as_mut().unwrap().holder_identity = Some("pod-b".into());
    leases.replace("leader", &PostParams::default(), &got).await.unwrap();
    let err = leases
        .replace("leader", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409),
        "expected 409, got {err:?}"
    );

    // The kubeconfig file works for another client, as it would for another process.
    let kubeconfig = Kubeconfig::read_from(env.kubeconfig_path()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    let other = kube::Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(other.clone());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.iter().any(|n| n == "lease-test"), "{names:?}");
    let version = other.apiserver_version().await.unwrap();
    // The version TINY_K8S_VERSION selects (1.35.4 unless told otherwise), as built.
    let want = tiny_testenv::kubernetes_version().unwrap();
    assert_eq!(version.git_version, format!("v{want}"));
    assert_eq!(
        format!("{}.{}", version.major, version.minor),
        want[..want.rfind('.').unwrap()]
    );
}

#[tokio::test]
async fn a_failing_apiserver_is_reported_with_its_log() {
    let err = TestEnv::builder()
        .controller_manager(false)
        .apiserver_arg("--no-such-flag")
        .start()
        .await
        .expect_err("kube-apiserver refuses an unknown flag");
    let message = err.to_string();
    assert!(
        matches!(
            err,
            tiny_testenv::Error::NotReady {
                component: "kube-apiserver",
                ..
            }
        ),
        "{message}"
    );
    assert!(message.contains("unknown flag: --no-such-flag"), "{message}");
    // Shown with --nocapture: what a user sees when the API server does not start.
    eprintln!("{message}");
}

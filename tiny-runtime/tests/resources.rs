//! `KubeResources` against a real API server and garbage collector (tiny-testenv): no mocks.
//!
//! Two tests, each with its own control plane, run their scenarios in sequence, each
//! scenario in its own namespace.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use tiny_runtime::crd::{TinyFlow, TinyNode, TinyNodeSpec, TinyProject, TinyProjectSpec, TinySignal};
use tiny_runtime::resources::KubeResources;
use tiny_sdk::client::{CreateNodeRequest, ExposePortRequest};
use tiny_sdk::contract::{annotation::FLOW_DESCRIPTION, label as labels};
use tiny_sdk::{ErrorKind, ResourceManager};
use tiny_testenv::TestEnv;

const MODULE: &str = "http-module-v0";

async fn start() -> TestEnv {
    let crds = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../crds"));
    let started = Instant::now();
    let env = TestEnv::builder()
        .crds_dir(crds)
        .start()
        .await
        .expect("the control plane starts with the CRDs of crds/");
    eprintln!("control plane started in {:?}", started.elapsed());
    env
}

fn selector() -> BTreeMap<String, String> {
    BTreeMap::from([("app.kubernetes.io/name".to_owned(), MODULE.to_owned())])
}

/// Creates the TinyNode `name` in `ns` (as the platform would); returns its uid.
async fn make_node(client: &kube::Client, ns: &str, name: &str) -> String {
    let mut node = TinyNode::new(
        name,
        TinyNodeSpec(tiny_sdk::flow::NodeSpec {
            module: MODULE.into(),
            component: "server".into(),
            ..tiny_sdk::flow::NodeSpec::default()
        }),
    );
    node.metadata.namespace = Some(ns.into());
    let api: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let created = api.create(&PostParams::default(), &node).await.unwrap();
    created.metadata.uid.unwrap()
}

fn assert_owned_by_node(what: &str, refs: Option<&Vec<OwnerReference>>, node: &str, uid: &str) {
    let refs = refs.unwrap_or_else(|| panic!("{what} has no owner references"));
    assert_eq!(refs.len(), 1, "{what}: {refs:?}");
    let r = &refs[0];
    assert_eq!(
        (r.api_version.as_str(), r.kind.as_str(), r.name.as_str(), r.uid.as_str()),
        ("operator.tinysystems.io/v1alpha1", "TinyNode", node, uid),
        "{what}"
    );
    assert_eq!(r.controller, Some(true), "{what}: controller");
    assert_eq!(r.block_owner_deletion, Some(true), "{what}: blockOwnerDeletion");
}

/// Waits until `get` says the object is gone, at most `limit`.
async fn wait_gone<K>(api: &Api<K>, name: &str, limit: Duration, env: &TestEnv) -> Duration
where
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned,
{
    let start = Instant::now();
    loop {
        if api.get_opt(name).await.unwrap().is_none() {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "{name} still exists {limit:?} after its owner was deleted\n--- kube-controller-manager ---\n{}",
            env.log_tail("kube-controller-manager", 40)
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn expose_and_unexpose_ports() {
    let env = start().await;
    let client = env.client();

    // --- unexpose_port removes what expose_port made; hostnames can change ---------------
    let ns = "unexpose";
    env.create_namespace(ns).await.unwrap();
    let node = "a1b2c3d4.http-module-v0.server-x7k2p";
    let uid = make_node(&client, ns, node).await;
    let rm = KubeResources::new(client.clone(), ns, node).with_selector(selector());
    let svc_name = rm.service_name(9000);
    assert!(svc_name.len() <= 63 && !svc_name.contains('.'), "{svc_name}");
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), ns);

    // No hostnames: a Service only, reachable inside the cluster.
    let urls = rm
        .expose_port(ExposePortRequest {
            port: 9000,
            service_type: Some("NodePort".into()),
            ..ExposePortRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(urls, [format!("http://{svc_name}.{ns}.svc:9000")]);
    let svc = services.get(&svc_name).await.unwrap();
    let spec = svc.spec.as_ref().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("NodePort"));
    assert!(
        spec.ports.as_ref().unwrap()[0].node_port.is_some(),
        "a node port is allocated"
    );
    assert_owned_by_node("the Service", svc.metadata.owner_references.as_ref(), node, &uid);
    assert!(ingresses.get_opt(&svc_name).await.unwrap().is_none());

    // Hostnames added: an Ingress appears, without TLS.
    let urls = rm
        .expose_port(ExposePortRequest {
            port: 9000,
            hostnames: vec!["one.example.com".into()],
            service_type: Some("NodePort".into()),
            ..ExposePortRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(urls, ["http://one.example.com"]);
    let ing = ingresses.get(&svc_name).await.unwrap();
    assert!(ing.spec.as_ref().unwrap().tls.is_none());

    // Hostnames changed: the Ingress follows (the old host is gone).
    let urls = rm
        .expose_port(ExposePortRequest {
            port: 9000,
            hostnames: vec!["two.example.com".into()],
            service_type: Some("NodePort".into()),
            ..ExposePortRequest::default()
        })
        .await
        .unwrap();
    assert_eq!(urls, ["http://two.example.com"]);
    let hosts: Vec<_> = ingresses
        .get(&svc_name)
        .await
        .unwrap()
        .spec
        .unwrap()
        .rules
        .unwrap()
        .into_iter()
        .filter_map(|r| r.host)
        .collect();
    assert_eq!(hosts, ["two.example.com"]);

    // The service type can change back (the allocated node port is dropped).
    rm.expose_port(ExposePortRequest {
        port: 9000,
        hostnames: vec!["two.example.com".into()],
        ..ExposePortRequest::default()
    })
    .await
    .unwrap();
    let spec = services.get(&svc_name).await.unwrap().spec.unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.ports.unwrap()[0].node_port, None);

    rm.unexpose_port(9000).await.unwrap();
    assert!(services.get_opt(&svc_name).await.unwrap().is_none(), "Service removed");
    assert!(ingresses.get_opt(&svc_name).await.unwrap().is_none(), "Ingress removed");
    // Again: nothing to remove is fine.
    rm.unexpose_port(9000).await.unwrap();

    // --- invalid requests are permanent errors, before anything is written ----------------
    let bad = [
        ExposePortRequest {
            port: 0,
            ..ExposePortRequest::default()
        },
        ExposePortRequest {
            port: 80,
            service_type: Some("ExternalName".into()),
            ..ExposePortRequest::default()
        },
        ExposePortRequest {
            port: 80,
            hostnames: vec!["not_a host".into()],
            ..ExposePortRequest::default()
        },
        ExposePortRequest {
            port: 80,
            auto_hostname: Some("auto".into()),
            ..ExposePortRequest::default()
        },
    ];
    for req in bad {
        let err = rm.expose_port(req.clone()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Permanent, "{req:?}: {err}");
    }
    let err = KubeResources::new(client.clone(), ns, node)
        .expose_port(ExposePortRequest {
            port: 80,
            ..ExposePortRequest::default()
        })
        .await
        .unwrap_err();
    assert!(err.message().contains("selector"), "{err}");
    let err = KubeResources::new(client.clone(), ns, "no-such-node")
        .with_selector(selector())
        .expose_port(ExposePortRequest {
            port: 80,
            ..ExposePortRequest::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permanent, "{err}");
    assert!(
        err.message().contains("TinyNode unexpose/no-such-node not found"),
        "{err}"
    );
    assert!(
        services.list(&ListParams::default()).await.unwrap().items.is_empty(),
        "nothing was left behind"
    );

    // --- two hostnames with TLS, idempotent, garbage-collected with the node -----------
    let ns = "expose";
    env.create_namespace(ns).await.unwrap();
    let node = "server-1";
    let uid = make_node(&client, ns, node).await;
    let rm = KubeResources::new(client.clone(), ns, node)
        .with_selector(selector())
        .with_ingress(None, Some("abc.example.net".into()));
    let req = ExposePortRequest {
        port: 8080,
        hostnames: vec!["a.example.com".into(), "b.example.com".into()],
        auto_hostname: Some("web".into()),
        tls: true,
        service_type: None,
    };
    let started = Instant::now();
    let urls = rm.expose_port(req.clone()).await.unwrap();
    eprintln!("expose_port took {:?}", started.elapsed());
    let want_urls = [
        "https://a.example.com",
        "https://b.example.com",
        "https://web-abc.example.net",
    ];
    assert_eq!(urls, want_urls);
    let name = rm.service_name(8080);
    assert_eq!(name, "server-1-8080");

    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let svc = services.get(&name).await.unwrap();
    let spec = svc.spec.as_ref().unwrap();
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.selector.as_ref(), Some(&selector()));
    let ports = spec.ports.as_ref().unwrap();
    assert_eq!(ports.len(), 1, "{ports:?}");
    assert_eq!(ports[0].port, 8080);
    assert_eq!(ports[0].target_port, Some(IntOrString::Int(8080)));
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
    assert_owned_by_node("the Service", svc.metadata.owner_references.as_ref(), node, &uid);

    let ingresses: Api<Ingress> = Api::namespaced(client.clone(), ns);
    let ing = ingresses.get(&name).await.unwrap();
    assert_owned_by_node("the Ingress", ing.metadata.owner_references.as_ref(), node, &uid);
    let spec = ing.spec.as_ref().unwrap();
    assert_eq!(spec.ingress_class_name.as_deref(), Some("nginx"));
    let rules = spec.rules.as_ref().unwrap();
    let hosts: Vec<_> = rules.iter().map(|r| r.host.clone().unwrap()).collect();
    assert_eq!(hosts, ["a.example.com", "b.example.com", "web-abc.example.net"]);
    for rule in rules {
        let paths = &rule.http.as_ref().unwrap().paths;
        assert_eq!(paths.len(), 1);
        assert_eq!(paths[0].path.as_deref(), Some("/"));
        assert_eq!(paths[0].path_type, "Prefix");
        let backend = paths[0].backend.service.as_ref().unwrap();
        assert_eq!(backend.name, name);
        assert_eq!(backend.port.as_ref().unwrap().number, Some(8080));
    }
    let tls = spec.tls.as_ref().unwrap();
    assert_eq!(tls.len(), 1);
    assert_eq!(tls[0].secret_name.as_deref(), Some("server-1-8080-tls"));
    assert_eq!(tls[0].hosts.as_ref().unwrap(), &hosts);

    // Idempotent: the same call again changes nothing and makes nothing new.
    let urls = rm.expose_port(req.clone()).await.unwrap();
    assert_eq!(urls, want_urls);
    assert_eq!(services.get(&name).await.unwrap().spec, svc.spec);
    assert_eq!(ingresses.get(&name).await.unwrap().spec, ing.spec);
    assert_eq!(services.list(&ListParams::default()).await.unwrap().items.len(), 1);
    assert_eq!(ingresses.list(&ListParams::default()).await.unwrap().items.len(), 1);

    // Deleting the TinyNode lets the garbage collector remove both.
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    nodes.delete(node, &DeleteParams::background()).await.unwrap();
    let limit = Duration::from_secs(60);
    let svc_gone = wait_gone(&services, &name, limit, &env).await;
    let ing_gone = wait_gone(&ingresses, &name, limit, &env).await;
    eprintln!("garbage collected: Service after {svc_gone:?}, Ingress {ing_gone:?} later");
}

#[tokio::test]
async fn flows_nodes_metadata_and_signals() {
    let env = start().await;
    let client = env.client();

    // --- create_flow, create_node, get_node -------------------------------------------------
    let ns = "flows";
    env.create_namespace(ns).await.unwrap();
    let projects: Api<TinyProject> = Api::namespaced(client.clone(), ns);
    let mut project = TinyProject::new(
        "proj-1",
        TinyProjectSpec {
            description: "a project".into(),
        },
    );
    project.metadata.namespace = Some(ns.into());
    let project = projects.create(&PostParams::default(), &project).await.unwrap();
    let project_uid = project.metadata.uid.unwrap();

    // The node the manager acts for need not exist to create flows and nodes.
    let rm = KubeResources::new(client.clone(), ns, "creator");
    let flow_name = rm.create_flow("proj-1", "My Flow").await.unwrap();
    assert!(flow_name.starts_with("my-flow-"), "{flow_name}");
    let flows: Api<TinyFlow> = Api::namespaced(client.clone(), ns);
    let flow = flows.get(&flow_name).await.unwrap();
    let meta = &flow.metadata;
    assert_eq!(
        meta.labels
            .as_ref()
            .unwrap()
            .get(labels::PROJECT_NAME)
            .map(String::as_str),
        Some("proj-1")
    );
    assert_eq!(
        meta.annotations
            .as_ref()
            .unwrap()
            .get(FLOW_DESCRIPTION)
            .map(String::as_str),
        Some("My Flow")
    );
    let owners = meta.owner_references.as_ref().unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].name.as_str(), owners[0].uid.as_str()),
        ("TinyProject", "proj-1", project_uid.as_str())
    );

    let err = rm.create_flow("no-such-project", "x").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permanent, "{err}");
    assert!(
        err.message().contains("TinyProject flows/no-such-project not found"),
        "{err}"
    );

    let node_name = rm
        .create_node(CreateNodeRequest {
            name: "hello".into(),
            flow: flow_name.clone(),
            module: "hello-module-v0".into(),
            component: "hello".into(),
            settings: Some(json!({"greeting": "Hi"})),
        })
        .await
        .unwrap();
    assert!(node_name.starts_with("hello-"), "{node_name}");
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let created = nodes.get(&node_name).await.unwrap();
    assert_eq!(
        created.metadata.labels.as_ref().unwrap().get(labels::FLOW_NAME),
        Some(&flow_name)
    );
    let owners = created.metadata.owner_references.as_ref().unwrap();
    assert_eq!(owners.len(), 1);
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].name.as_str(), owners[0].uid.as_str()),
        ("TinyFlow", flow_name.as_str(), flow.metadata.uid.as_deref().unwrap())
    );

    let node = rm.get_node(&node_name).await.unwrap();
    assert_eq!(node.name, node_name);
    assert_eq!(node.namespace, ns);
    assert_eq!(node.labels.get(labels::FLOW_NAME), Some(&flow_name));
    assert_eq!(
        (node.spec.module.as_str(), node.spec.component.as_str()),
        ("hello-module-v0", "hello")
    );
    assert_eq!(node.spec.ports.len(), 1);
    assert_eq!(node.spec.ports[0].port, "_settings");
    assert_eq!(
        node.spec.ports[0].configuration.as_ref().map(|c| c.value().clone()),
        Some(json!({"greeting": "Hi"}))
    );
    assert!(node.metadata.is_empty());

    let err = rm
        .create_node(CreateNodeRequest {
            name: "x".into(),
            flow: "no-such-flow".into(),
            module: "m".into(),
            component: "c".into(),
            settings: None,
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permanent, "{err}");
    assert!(err.message().contains("TinyFlow flows/no-such-flow not found"), "{err}");
    let err = rm.get_node("no-such-node").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permanent, "{err}");
    assert!(err.message().contains("TinyNode flows/no-such-node not found"), "{err}");

    // --- update_metadata merges --------------------------------------------------------------
    let ns = "metadata";
    env.create_namespace(ns).await.unwrap();
    make_node(&client, ns, "keeper").await;
    let rm = KubeResources::new(client.clone(), ns, "keeper");
    // A component that manages Kubernetes objects itself gets the runtime's client and
    // its namespace through the resource manager.
    assert_eq!(ResourceManager::namespace(&rm), ns);
    let raw = rm.kube_client().expect("the runtime hands out its client");
    let listed = Api::<TinyNode>::namespaced(raw, ResourceManager::namespace(&rm))
        .list(&ListParams::default())
        .await
        .expect("the raw client lists");
    assert_eq!(listed.items.len(), 1, "{:?}", listed.items);
    rm.update_metadata(vec![("http-server-port".into(), Some("8080".into()))])
        .await
        .unwrap();
    rm.update_metadata(vec![
        ("exposed-at".into(), Some("2026-08-01T10:00:00Z".into())),
        ("other".into(), Some("x".into())),
    ])
    .await
    .unwrap();
    let got = rm.get_node("keeper").await.unwrap().metadata;
    let want: BTreeMap<String, String> = [
        ("http-server-port", "8080"),
        ("exposed-at", "2026-08-01T10:00:00Z"),
        ("other", "x"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(got, want);
    // A key written again takes the new value; the others stay.
    rm.update_metadata(vec![("other".into(), Some("y".into()))])
        .await
        .unwrap();
    let got = rm.get_node("keeper").await.unwrap().metadata;
    assert_eq!(got.get("other").map(String::as_str), Some("y"));
    assert_eq!(got.len(), 3, "{got:?}");
    // `None` removes a key (node state's delete); removing a missing key is fine.
    rm.update_metadata(vec![("other".into(), None), ("never".into(), None)])
        .await
        .unwrap();
    let got = rm.get_node("keeper").await.unwrap().metadata;
    assert_eq!(got.get("other"), None, "{got:?}");
    assert_eq!(got.len(), 2, "{got:?}");
    rm.update_metadata(vec![("other".into(), Some("y".into()))])
        .await
        .unwrap();
    // Concurrent writers of different keys all land (conflicts, if any, are retried).
    let writers = (0..8).map(|i| {
        let rm = rm.clone();
        async move { rm.update_metadata(vec![(format!("k{i}"), Some(i.to_string()))]).await }
    });
    for result in futures::future::join_all(writers).await {
        result.unwrap();
    }
    let got = rm.get_node("keeper").await.unwrap().metadata;
    assert_eq!(got.len(), 11, "{got:?}");
    let err = KubeResources::new(client.clone(), ns, "gone")
        .update_metadata(vec![("a".into(), Some("b".into()))])
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permanent, "{err}");

    // --- create_signal --------------------------------------------------------------------
    let ns = "signals";
    env.create_namespace(ns).await.unwrap();
    let rm = KubeResources::new(client.clone(), ns, "sender");
    let data = json!({"name": "Ada", "n": [1, 2, 3]});
    let name = rm
        .create_signal("greet.hello-module-v0.hello-1", "input", data.clone())
        .await
        .unwrap();
    assert!(name.starts_with("greet.hello-module-v0.hello-1-"), "{name}");
    let signals: Api<TinySignal> = Api::namespaced(client.clone(), ns);
    let signal = signals.get(&name).await.unwrap();
    assert_eq!(signal.spec.node, "greet.hello-module-v0.hello-1");
    assert_eq!(signal.spec.port, "input");
    assert_eq!(signal.spec.data.as_ref().map(|d| d.value().clone()), Some(data));
    let other = rm
        .create_signal("greet.hello-module-v0.hello-1", "input", json!(null))
        .await
        .unwrap();
    assert_ne!(other, name, "each signal is a new object");
    let err = rm.create_signal("", "input", json!({})).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Permanent, "{err}");
}

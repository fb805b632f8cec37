//! A module is who it says it is, and nothing is left stuck (issue 48), on a real control
//! plane and a real `nats-server`:
//! - RBAC: with the rules the runtime's code gives (`tiny_runtime::rbac`), module A's
//!   ServiceAccount writes its own Lease and TinyModule status, and is refused B's, and
//!   Services unless it declares it exposes ports;
//! - NATS: each module with a user of its own whose subject permissions are those the
//!   README gives; the modules answer across each other, and A's credentials are refused
//!   B's subject by the broker;
//! - a namespace whose nodes wait on tiny's finalizer for a module that is gone (its
//!   cleanup hook failed, or `helm uninstall --no-hooks`) is deleted all the same.

mod common;

use std::time::Duration;

use common::{
    create_flow, env, eventually, hello,
    nats::{advertise_nats, broker_config, greet, refused_subscription, watched},
    nodes_ready, round_trip, start_module,
};
use k8s_openapi::api::{
    coordination::v1::Lease,
    core::v1::{Namespace, Service, ServiceAccount},
    rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject},
};
use kube::{
    Api, Client,
    api::{ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::json;
use tiny_runtime::{
    crd::{TinyModule, TinyModuleSpec, TinyNode},
    nats::{Link, with_user},
    rbac::{Requirements, Rule, namespace_rules, runtime_rules_for},
};
use tiny_sdk::contract::NODE_FINALIZER;
use tiny_testenv::{NatsServer, TestEnv};

fn meta(name: &str, ns: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: ns.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

fn policy(rules: Vec<Rule>) -> Vec<PolicyRule> {
    serde_json::from_value(serde_json::to_value(rules).expect("rules")).expect("PolicyRules")
}

/// ServiceAccount `module` of `ns` with the Role and namespace ClusterRole the chart makes
/// from the runtime's rules for module `module` (`requirements` declared), and a client
/// with its token (the TokenRequest API's, as the kubelet mounts it).
async fn module_account(env: &TestEnv, ns: &str, module: &str, requirements: &Requirements) -> Client {
    let admin = env.client();
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), ns);
    sas.create(
        &PostParams::default(),
        &ServiceAccount {
            metadata: meta(module, Some(ns)),
            ..ServiceAccount::default()
        },
    )
    .await
    .expect("ServiceAccount");
    let for_module = |rules: Vec<Rule>| policy(rules.into_iter().map(|r| r.for_module(module, ns)).collect());
    let subject = Subject {
        kind: "ServiceAccount".into(),
        name: module.into(),
        namespace: Some(ns.into()),
        ..Subject::default()
    };
    let role_ref = |kind: &str, name: &str| RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind: kind.into(),
        name: name.into(),
    };
    Api::<Role>::namespaced(admin.clone(), ns)
        .create(
            &PostParams::default(),
            &Role {
                metadata: meta(module, Some(ns)),
                rules: Some(for_module(runtime_rules_for(requirements))),
            },
        )
        .await
        .expect("Role");
    Api::<RoleBinding>::namespaced(admin.clone(), ns)
        .create(
            &PostParams::default(),
            &RoleBinding {
                metadata: meta(module, Some(ns)),
                role_ref: role_ref("Role", module),
                subjects: Some(vec![subject.clone()]),
            },
        )
        .await
        .expect("RoleBinding");
    let cluster_name = format!("{ns}-{module}-namespace");
    Api::<ClusterRole>::all(admin.clone())
        .create(
            &PostParams::default(),
            &ClusterRole {
                metadata: meta(&cluster_name, None),
                rules: Some(for_module(namespace_rules())),
                ..ClusterRole::default()
            },
        )
        .await
        .expect("ClusterRole");
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(
            &PostParams::default(),
            &ClusterRoleBinding {
                metadata: meta(&cluster_name, None),
                role_ref: role_ref("ClusterRole", &cluster_name),
                subjects: Some(vec![subject]),
            },
        )
        .await
        .expect("ClusterRoleBinding");
    let token = env.service_account_token(ns, module).await.expect("token");
    let mut config = env.config().clone();
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.into()),
        ..kube::config::AuthInfo::default()
    };
    Client::try_from(config).expect("client")
}

/// The API server's 403, and nothing else.
fn forbidden<T: std::fmt::Debug>(what: &str, result: Result<T, kube::Error>) {
    match result {
        Err(kube::Error::Api(e)) if e.code == 403 => {}
        other => panic!("{what}: expected Forbidden, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modules_account_writes_its_own_lease_and_status_and_not_another_modules() {
    let env = env().await;
    let ns = "rbac-ab";
    env.create_namespace(ns).await.expect("namespace");
    env.create_namespace("elsewhere").await.expect("namespace");
    let admin = env.client();
    // B's Lease and TinyModule, as B's leader made them; A's too.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), ns);
    let modules: Api<TinyModule> = Api::namespaced(admin.clone(), ns);
    for m in ["a-v0", "b-v0"] {
        leases
            .create(
                &PostParams::default(),
                &Lease {
                    metadata: meta(&format!("{m}-lock"), Some(ns)),
                    ..Lease::default()
                },
            )
            .await
            .expect("Lease");
        let spec = TinyModuleSpec {
            image: format!("{m}:0.1.0"),
        };
        modules
            .create(&PostParams::default(), &TinyModule::new(m, spec))
            .await
            .expect("TinyModule");
    }
    let a = module_account(&env, ns, "a-v0", &Requirements::none()).await;
    let a_leases: Api<Lease> = Api::namespaced(a.clone(), ns);
    let a_modules: Api<TinyModule> = Api::namespaced(a.clone(), ns);
    let take = Patch::Merge(json!({ "spec": { "holderIdentity": "a-0", "leaseDurationSeconds": 15 } }));
    let advertise = Patch::Merge(json!({ "status": { "addr": "a.evil:8483" } }));
    let params = PatchParams::default();

    // What A may do: its own Lease and status (the authorizer may take a moment to see
    // the new Role, so the first is waited for; everything after it sees the Role).
    eventually("A to take its own Lease", Duration::from_secs(30), || async {
        a_leases.patch("a-v0-lock", &params, &take).await.ok()
    })
    .await;
    a_leases.get("a-v0-lock").await.expect("A reads its own Lease");
    a_modules
        .patch_status("a-v0", &params, &advertise)
        .await
        .expect("A writes its own TinyModule status");
    Api::<Namespace>::all(a.clone())
        .get(ns)
        .await
        .expect("A reads its own namespace (whether it terminates)");
    // Creating a Lease cannot be limited by name: the first replica makes its own.
    a_leases
        .create(
            &PostParams::default(),
            &Lease {
                metadata: meta("a-v0-new", Some(ns)),
                ..Lease::default()
            },
        )
        .await
        .expect("A creates a Lease");

    // What it may not: B's leadership, B's advertised address, Services (A declares no
    // exposed port), another namespace.
    forbidden("A takes B's Lease", a_leases.patch("b-v0-lock", &params, &take).await);
    forbidden("A reads B's Lease", a_leases.get("b-v0-lock").await);
    forbidden(
        "A rewrites B's address",
        a_modules.patch_status("b-v0", &params, &advertise).await,
    );
    forbidden(
        "A creates a Service",
        Api::<Service>::namespaced(a.clone(), ns)
            .create(
                &PostParams::default(),
                &Service {
                    metadata: meta("a-svc", Some(ns)),
                    ..Service::default()
                },
            )
            .await,
    );
    forbidden(
        "A reads another namespace",
        Api::<Namespace>::all(a.clone()).get("elsewhere").await,
    );
    let b = modules.get("b-v0").await.expect("B's TinyModule");
    assert_ne!(b.status.map(|s| s.addr).as_deref(), Some("a.evil:8483"));

    // A module that declares it exposes ports may make Services.
    let c = module_account(&env, ns, "c-v0", &Requirements::none().exposes_ports()).await;
    eventually(
        "C (exposing ports) to create a Service",
        Duration::from_secs(30),
        || async {
            let service = Service {
                metadata: meta("c-svc", Some(ns)),
                spec: Some(k8s_openapi::api::core::v1::ServiceSpec {
                    ports: Some(vec![k8s_openapi::api::core::v1::ServicePort {
                        port: 80,
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
                ..Service::default()
            };
            Api::<Service>::namespaced(c.clone(), ns)
                .create(&PostParams::default(), &service)
                .await
                .ok()
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_whose_nodes_wait_on_a_gone_modules_finalizer_is_deleted() {
    let env = env().await;
    let ns = "leaving";
    env.create_namespace(ns).await.expect("namespace");
    let client = env.client();
    let _module = start_module(&client, ns).await;
    // A node of this module, and one of module `gone-v0`, uninstalled without its cleanup
    // hook: its finalizer is still there, and no process of its module runs.
    let flow = create_flow(
        &client,
        ns,
        "kind: TinyNode\nmetadata: { name: f.examples-v0.hello-1 }\nspec: { module: examples-v0, component: hello }\n",
    )
    .await;
    let names: Vec<String> = flow.nodes.iter().map(|n| n.name.clone()).collect();
    nodes_ready(&client, ns, &names).await;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let mut orphan: TinyNode = serde_json::from_value(json!({
        "apiVersion": "operator.tinysystems.io/v1alpha1",
        "kind": "TinyNode",
        "metadata": { "name": "f.gone-v0.thing-1", "finalizers": [NODE_FINALIZER] },
        "spec": { "module": "gone-v0", "component": "thing" },
    }))
    .expect("a TinyNode");
    orphan.metadata.namespace = Some(ns.into());
    nodes
        .create(&PostParams::default(), &orphan)
        .await
        .expect("the orphan node");

    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete(ns, &Default::default())
        .await
        .expect("namespace deleted");
    // kube-controller-manager's namespace controller deletes the content; the namespace
    // goes once no object is left.
    eventually("the namespace to be gone", Duration::from_secs(120), || async {
        namespaces
            .get_opt(ns)
            .await
            .ok()
            .and_then(|n| n.is_none().then_some(()))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_with_nats_users_of_their_own_answer_and_cannot_subscribe_to_each_other() {
    let env = env().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("nats.conf");
    let users = [("alpha-v0", "alpha/pa:ss@1"), ("beta-v0", "beta-pass")];
    let identities = users.map(|(module, password)| (module, format!(r#"user: "{module}", password: "{password}""#)));
    std::fs::write(&config, broker_config("platform-pass", &[], &identities)).expect("config");
    let broker = NatsServer::start_with_config(&config)
        .await
        .expect("nats-server starts");
    let url = format!("nats://127.0.0.1:{}", broker.port());
    let ns = "own-users";
    env.create_namespace(ns).await.expect("namespace");
    let client = env.client();
    let logs = |module: &str| dir.path().join(format!("{module}.log"));
    let _modules: Vec<_> = users
        .iter()
        .map(|(module, password)| {
            hello(&env, ns, &format!("{module}-0"), module)
                .nats(&url)
                .env("TINY_NATS_USER", module)
                .env("TINY_NATS_PASSWORD", password)
                // `info`: the log says the broker took the connection.
                .env("RUST_LOG", "info")
                .logs(logs(module))
                .start()
        })
        .collect();
    let flow = create_flow(&client, ns, &round_trip(ns, None)).await;
    let names: Vec<String> = flow.nodes.iter().map(|n| n.name.clone()).collect();
    nodes_ready(&client, ns, &names).await;
    // Both modules advertise NATS: each connected with its own user.
    advertise_nats(&client, ns, &users.map(|(module, _)| module)).await;

    let platform = Link::connect(&with_user(&url, "platform", "platform-pass"))
        .await
        .expect("a URL");
    assert!(platform.wait_up(Duration::from_secs(10)).await, "the platform connects");
    let hello_1 = format!("{ns}.alpha-v0.hello-1");
    // alpha -> beta -> alpha, each hop under its module's own permissions.
    assert_eq!(
        greet(&platform, &hello_1, "ada").await,
        Some(json!({ "answer": "HELLO, ADA!" }))
    );

    // A client with alpha's credentials: its own subjects, yes; beta's, refused by the
    // broker (a permissions violation, sent as the subscription is made).
    let (spy, mut seen) = watched(
        async_nats::ConnectOptions::with_user_and_password("alpha-v0".into(), users[0].1.into()),
        &url,
        "alpha's credentials",
    )
    .await;
    let _theirs = spy.subscribe("tinymodule.beta-v0.msg").await.expect("SUB sent");
    refused_subscription(&mut seen, "tinymodule.beta-v0.msg").await;
    // The same credentials subscribe to alpha's own inboxes and get what is sent there.
    let mut own = spy.subscribe("_INBOX.alpha-v0.spy").await.expect("own inbox");
    spy.flush().await.expect("flushed");
    platform
        .client()
        .publish("_INBOX.alpha-v0.spy", "probe".into())
        .await
        .expect("published");
    let got = tokio::time::timeout(Duration::from_secs(10), futures::StreamExt::next(&mut own)).await;
    assert_eq!(got.ok().flatten().map(|m| m.payload.to_vec()), Some(b"probe".to_vec()));
    // And the modules' own traffic goes on, none of it refused by the broker.
    assert_eq!(
        greet(&platform, &hello_1, "bob").await,
        Some(json!({ "answer": "HELLO, BOB!" }))
    );
    // The command line sends as a user of its own too (here the platform's).
    let out = std::process::Command::new(common::HELLO)
        .args([
            "send",
            &format!("{ns}.alpha-v0.hello-1"),
            "input",
            r#"{"name":"cy"}"#,
            "--wait",
        ])
        .env("TINY_NATS_URL", &url)
        .env("TINY_NATS_USER", "platform")
        .env("TINY_NATS_PASSWORD", "platform-pass")
        .output()
        .expect("hello-module send");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && printed.contains("HELLO, CY!"),
        "{printed}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (module, _) in users {
        let log = std::fs::read_to_string(logs(module)).expect("the module's log");
        assert!(
            !log.contains("Permissions Violation") && log.contains("NATS broker connected"),
            "{module}:\n{log}"
        );
    }
}

//! The http module on a real control plane, as its README's first example: an HTTP
//! request travels a flow that crosses into the common module (its router) and back,
//! and the flow's answer is the HTTP response. The flow is applied as the Go editor
//! writes it: Go's port names, configurations as base64 of JSON.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use base64::{Engine as _, engine::general_purpose::STANDARD};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Request, StatusCode};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use k8s_openapi::api::core::v1::Service;
use kube::{
    Api, Client as Kube,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use tiny_runtime::{
    carrier::Carrier,
    config::ModuleConfig,
    crd::{TinyModule, TinyNode},
    grpc::Grpc,
    nats::{Broker, Credentials, NatsRouter},
    runtime::{Options, Runtime},
    transport::{Routes, Transport},
};
use tiny_testkit::{
    Replica, TestEnv,
    cluster::{delivered, env, port_config},
    eventually,
};

const NS: &str = "web";
const SERVER: &str = "web.http-module-v0.http-server-1";
const CLIENT: &str = "web.http-module-v0.http-request-1";
const ROUTER: &str = "web.common-module-v0.router-1";
const DELAY: &str = "web.common-module-v0.delay-1";
const DEBUG: &str = "web.common-module-v0.debug-1";

fn b64(v: &Value) -> String {
    STANDARD.encode(serde_json::to_vec(v).expect("json"))
}

/// A port configuration entry: `from` (empty for the node's own) and base64 JSON.
fn port(port: &str, from: &str, config: &Value) -> Value {
    json!({"port": port, "from": from, "configuration": b64(config)})
}

fn node(name: &str, component: &str, ports: Vec<Value>, edges: Vec<Value>) -> TinyNode {
    let module = name.split('.').nth(1).expect("module segment");
    serde_json::from_value(json!({
        "apiVersion": "operator.tinysystems.io/v1alpha1",
        "kind": "TinyNode",
        "metadata": {"name": name, "labels": {"tinysystems.io/flow-name": "web"}},
        "spec": {"module": module, "component": component, "ports": ports, "edges": edges},
    }))
    .expect("a TinyNode")
}

/// The flow: server.request → router (common module) → server.response; the route
/// `slow` goes to a delay that answers too late; a client calls the server.
fn flow() -> Vec<TinyNode> {
    let server = node(
        SERVER,
        "http_server",
        vec![
            port(
                "_settings",
                "",
                &json!({"enableStopPort": true, "enableStatusPort": false, "maxBodySize": 1}),
            ),
            port(
                "response",
                &format!("{ROUTER}:out_ok"),
                &json!({
                    "statusCode": "{{$.context.path == '/teapot' ? 418 : 200}}",
                    "contentType": "text/plain",
                    "headers": [{"key": "X-Echo-Path", "value": "{{$.context.path}}"}],
                    "body": "{{$.context.body}}"
                }),
            ),
        ],
        vec![json!({"id": "to-router", "port": "request", "to": format!("{ROUTER}:input")})],
    );
    let router = node(
        ROUTER,
        "router",
        vec![
            port(
                "_settings",
                "",
                &json!({"routes": ["OK", "SLOW"], "enableDefaultPort": false}),
            ),
            port(
                "input",
                &format!("{SERVER}:request"),
                &json!({"context": "{{$}}", "conditions": [
                    {"route": "SLOW", "condition": "{{$.path == '/slow'}}"},
                    {"route": "OK", "condition": true}
                ]}),
            ),
        ],
        vec![
            json!({"id": "ok", "port": "out_ok", "to": format!("{SERVER}:response")}),
            json!({"id": "slow", "port": "out_slow", "to": format!("{DELAY}:in")}),
        ],
    );
    let delay = node(
        DELAY,
        "delay",
        vec![port(
            "in",
            &format!("{ROUTER}:out_slow"),
            &json!({"context": "{{$.context.path}}", "delay": 3000}),
        )],
        vec![json!({"id": "late", "port": "out", "to": format!("{DEBUG}:in")})],
    );
    let debug = node(
        DEBUG,
        "debug",
        vec![
            port("in", &format!("{DELAY}:out"), &json!("{{$}}")),
            port("in", &format!("{CLIENT}:response"), &json!("{{$}}")),
        ],
        vec![],
    );
    let client = node(
        CLIENT,
        "http_request",
        vec![],
        vec![json!({"id": "answer", "port": "response", "to": format!("{DEBUG}:in")})],
    );
    vec![server, router, delay, debug, client]
}

/// The common module, in this process: its engine, served over gRPC, or only over
/// NATS when a broker is given (no gRPC server at all: the hops must cross NATS).
async fn common_module(client: &Kube, ns: &str, nats: Option<&str>) -> (Runtime, Option<tiny_runtime::nats::Receiver>) {
    let grpc = Grpc::bind("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("gRPC binds");
    let mut config = ModuleConfig::new("common-module-v0", "0.1.0", ns, "common-0");
    let grpc_addr = format!("127.0.0.1:{}", grpc.port());
    config.grpc_addr = Some(grpc_addr.clone());
    // As the module binary chooses them: gRPC, and NATS beside it when given.
    let broker = match nats {
        Some(url) => Some(Arc::new(Broker::connect(&config.name, url, Ok(Credentials::Url)).await)),
        None => None,
    };
    let link = broker.as_ref().and_then(|b| b.link()).cloned();
    let transport = Arc::new(match &broker {
        Some(broker) => Transport::beside(&grpc_addr, broker.clone()),
        None => Transport::grpc(&grpc_addr),
    });
    let mut carriers: Vec<Arc<dyn Carrier>> = vec![grpc.pool()];
    carriers.extend(link.clone().map(|l| Arc::new(NatsRouter::new(l)) as Arc<dyn Carrier>));
    let routes = Arc::new(Routes::over(carriers).advertising(transport.clone()));
    let runtime = Runtime::start(
        client.clone(),
        Options {
            carrier: Some(routes),
            ..Options::new(config, tiny_example_common::registry())
        },
    )
    .await
    .expect("the common module starts");
    let receiver = match link {
        Some(link) => Some(
            tiny_runtime::nats::listen(link.client().clone(), runtime.engine().clone(), None)
                .await
                .expect("subscribes"),
        ),
        None => {
            tokio::spawn(grpc.serve(runtime.engine().clone()));
            None
        }
    };
    (runtime, receiver)
}

/// `http-module run`, on NATS when `nats` is given.
fn http_module(env: &TestEnv, ns: &str, nats: Option<&str>) -> Replica {
    let module = Replica::builder(env!("CARGO_BIN_EXE_http-module"), env, ns, "http-0", "http-module-v0")
        .args(["--pod-selector", "app=http-module"]);
    match nats {
        Some(url) => module.nats(url),
        None => module,
    }
    .start()
}

/// Sends a TinySignal in `ns` and asserts it was delivered.
async fn signal_in(kube: &Kube, ns: &str, name: &str, node: &str, port: &str, data: Value) {
    delivered(&tiny_testkit::cluster::signal(kube, ns, name, node, port, data).await);
}

async fn signal(kube: &Kube, name: &str, node: &str, port: &str, data: Value) {
    signal_in(kube, NS, name, node, port, data).await;
}

fn view(node: &TinyNode) -> Option<Value> {
    port_config(node, "_control")
}

/// The server's port, once its view says it runs.
async fn running_port(nodes: &Api<TinyNode>) -> u16 {
    eventually("the server to run", Duration::from_secs(60), || {
        let nodes = nodes.clone();
        async move {
            let v = view(&nodes.get(SERVER).await.ok()?)?;
            (v["status"] == "Running").then_some(())?;
            v["listenAddr"][0].as_str()?.rsplit(':').next()?.parse().ok()
        }
    })
    .await
}

type Http = Client<HttpConnector, Full<Bytes>>;

async fn call(http: &Http, port: u16, method: &str, path: &str, body: &str) -> (StatusCode, hyper::HeaderMap, Bytes) {
    let req = Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request");
    let resp = http.request(req).await.expect("an answer");
    let (parts, body) = resp.into_parts();
    (
        parts.status,
        parts.headers,
        body.collect().await.expect("body").to_bytes(),
    )
}

/// `n` requests at once, each with its own path and body: each gets its own answer.
async fn concurrent_echoes(http: &Http, port: u16, n: usize) {
    let calls = (0..n).map(|i| async move {
        (
            i,
            call(http, port, "PUT", &format!("/n/{i}"), &format!("request {i}")).await,
        )
    });
    for (i, (status, headers, got)) in futures::future::join_all(calls).await {
        assert_eq!(status, StatusCode::OK, "request {i}");
        assert_eq!(headers["x-echo-path"], format!("/n/{i}").as_str());
        assert_eq!(got, format!("request {i}").as_bytes());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_requests_get_the_flows_answers_across_two_modules() {
    let env = env().await;
    let kube = env.client();
    env.create_namespace(NS).await.expect("namespace");
    let (common, _) = common_module(&kube, NS, None).await;
    let _http = http_module(&env, NS, None);
    let nodes: Api<TinyNode> = Api::namespaced(kube.clone(), NS);
    for n in flow() {
        nodes.create(&PostParams::default(), &n).await.expect("node created");
    }
    signal(
        &kube,
        "start",
        SERVER,
        "start",
        json!({"context": {"run": 1}, "writeTimeout": 30}),
    )
    .await;
    let port = running_port(&nodes).await;
    let http: Http = Client::builder(TokioExecutor::new()).build_http();
    // The dashboard shows the Service, and, run outside a pod, the address that answers here.
    let shown = view(&nodes.get(SERVER).await.expect("server")).expect("a view");
    let addresses: Vec<&str> = shown["listenAddr"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    assert!(addresses.first().is_some_and(|a| a.contains(".svc")), "{addresses:?}");
    assert_eq!(
        addresses.last().copied(),
        Some(format!("http://localhost:{port}").as_str())
    );

    // The flow's answer, byte for byte: status, type, headers, body.
    let body = "héllo wörld — \"quoted\" {json: true}\n\ttabs & <tags>";
    let (status, headers, got) = call(&http, port, "POST", "/echo/path?x=1", body).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/plain");
    assert_eq!(headers["x-echo-path"], "/echo/path");
    assert_eq!(got, body.as_bytes());
    let (status, _, _) = call(&http, port, "GET", "/teapot", "").await;
    assert_eq!(status, StatusCode::IM_A_TEAPOT);

    // 500 at once, each with its own body, each gets its own answer.
    let started = Instant::now();
    concurrent_echoes(&http, port, 500).await;
    println!("500 concurrent requests across two modules in {:?}", started.elapsed());

    // The body limit (1 MB here) is enforced before the flow.
    let (status, _, _) = call(&http, port, "POST", "/big", &"x".repeat(1024 * 1024 + 1)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

    // The node's Service, owned by the node.
    let services: Api<Service> = Api::namespaced(kube.clone(), NS);
    let owned = |s: &Service| {
        s.metadata
            .owner_references
            .as_ref()
            .is_some_and(|o| o.iter().any(|r| r.kind == "TinyNode" && r.name == SERVER))
    };
    let service = eventually("the node's Service", Duration::from_secs(30), || {
        let services = services.clone();
        async move {
            services
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .into_iter()
                .find(owned)
        }
    })
    .await;
    let ports = service.spec.and_then(|s| s.ports).unwrap_or_default();
    assert_eq!(ports.first().map(|p| p.port), Some(i32::from(port)));

    // `http_request` calls this server; the answer reaches the debug node (common module).
    signal(
        &kube,
        "client",
        CLIENT,
        "request",
        json!({"context": "via-client", "method": "POST", "url": format!("http://127.0.0.1:{port}/from-client"), "body": "ping", "timeout": 10}),
    )
    .await;
    let shown = eventually("the client's answer at the debug node", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move { view(&nodes.get(DEBUG).await.ok()?).filter(|v| v["context"]["context"] == "via-client") }
    })
    .await;
    assert_eq!(shown["context"]["response"]["statusCode"], 200);
    assert_eq!(shown["context"]["response"]["body"], "ping");

    // Stop closes the listener; Start opens it again on the same port, here with a
    // write timeout that the slow route misses.
    signal(&kube, "stop", SERVER, "stop", json!({})).await;
    eventually("the listener to close", Duration::from_secs(30), || {
        let http = http.clone();
        async move {
            let uri = format!("http://127.0.0.1:{port}/").parse().ok()?;
            http.get(uri).await.is_err().then_some(())
        }
    })
    .await;
    signal(&kube, "start-again", SERVER, "start", json!({"writeTimeout": 1})).await;
    let again = eventually("the server to run again", Duration::from_secs(60), || {
        let nodes = nodes.clone();
        async move {
            let v = view(&nodes.get(SERVER).await.ok()?)?;
            (v["status"] == "Running").then_some(())?;
            let uri = format!("http://127.0.0.1:{port}/").parse().ok()?;
            Client::builder(TokioExecutor::new())
                .build_http::<Full<Bytes>>()
                .get(uri)
                .await
                .ok()
                .map(|_| port)
        }
    })
    .await;
    assert_eq!(again, port, "the same port");

    // A flow that does not answer in time: 504, and the delay in the other module is
    // abandoned (it never emits what it would have sent after 3 s). That the configured
    // 1 s held, not the default 10 s, is read from the same count rather than a clock:
    // under 10 s the delay would have emitted to the debug node before the 504.
    let received = |node: &TinyNode| view(node).and_then(|v| v["received"].as_u64());
    let received_before = received(&nodes.get(DEBUG).await.expect("debug")).expect("a count");
    let (status, _, got) = call(&http, port, "GET", "/slow", "").await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(got, r#"{"message":"Gateway Timeout"}"#.as_bytes());
    // Read against a marker, not a guessed time: the same 3 s delay, started after the
    // slow one, whose answer the signal waits for. Had the slow one run on, it would
    // have reached the debug node first, and the count would show both.
    signal(
        &kube,
        "marker",
        DELAY,
        "in",
        json!({"context": "marker", "delay": 3000}),
    )
    .await;
    let debug = eventually("the marker at the debug node", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get(DEBUG).await.ok()?;
            (view(&n)?["context"]["context"] == "marker").then_some(n)
        }
    })
    .await;
    assert_eq!(
        received(&debug),
        Some(received_before + 1),
        "the slow route ran on: {:?}",
        view(&debug)
    );

    // Deleting the node garbage-collects its Service.
    nodes.delete(SERVER, &DeleteParams::default()).await.expect("deleted");
    eventually("the Service to be collected", Duration::from_secs(60), || {
        let services = services.clone();
        async move {
            (!services
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .iter()
                .any(owned))
            .then_some(())
        }
    })
    .await;
    common.stop().await;
}

/// The same flow on a cluster on NATS: the http module's process and the common module
/// (no gRPC server at all) reach each other over the broker only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_requests_get_the_flows_answers_with_the_router_over_nats() {
    let env = env().await;
    let broker = tiny_testenv::NatsServer::start().await.expect("nats-server starts");
    let kube = env.client();
    let ns = "webn";
    env.create_namespace(ns).await.expect("namespace");
    let url = broker.url();
    let (common, receiver) = common_module(&kube, ns, Some(&url)).await;
    let _http = http_module(&env, ns, Some(&url));
    let nodes: Api<TinyNode> = Api::namespaced(kube.clone(), ns);
    for n in flow() {
        nodes.create(&PostParams::default(), &n).await.expect("node created");
    }
    let modules: Api<TinyModule> = Api::namespaced(kube.clone(), ns);
    eventually("the http module to advertise NATS", Duration::from_secs(60), || {
        let modules = modules.clone();
        async move {
            let m = modules.get("http-module-v0").await.ok()?;
            (m.status?.addr == "nats://tinymodule.http-module-v0.msg").then_some(())
        }
    })
    .await;
    signal_in(
        &kube,
        ns,
        "start",
        SERVER,
        "start",
        json!({"context": {"run": 1}, "writeTimeout": 30}),
    )
    .await;
    let port = running_port(&nodes).await;
    let http: Http = Client::builder(TokioExecutor::new()).build_http();
    let (status, headers, got) = call(&http, port, "POST", "/echo/nats", "over the broker").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["x-echo-path"], "/echo/nats");
    assert_eq!(got, "over the broker".as_bytes());
    let (status, _, _) = call(&http, port, "GET", "/teapot", "").await;
    assert_eq!(status, StatusCode::IM_A_TEAPOT);
    let started = Instant::now();
    concurrent_echoes(&http, port, 200).await;
    println!(
        "200 concurrent requests across two modules over NATS in {:?}",
        started.elapsed()
    );
    if let Some(r) = receiver {
        r.stop().await;
    }
    common.stop().await;
}

/// A server the Go module ran is taken over by this module: it listens again on the
/// port Go's `port` metadata holds, with the start Go's `http-start` holds, and Stop
/// clears the start as Go's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_ran_under_go_listens_on_its_port_when_this_module_takes_over() {
    let env = env().await;
    let kube = env.client();
    let ns = "webgo";
    env.create_namespace(ns).await.expect("namespace");
    let nodes: Api<TinyNode> = Api::namespaced(kube.clone(), ns);
    let server = "webgo.http-module-v0.http-server-1";
    let answer = json!({"statusCode": 200, "contentType": "text/plain", "body": "{{$.context.from}}"});
    nodes
        .create(
            &PostParams::default(),
            &node(
                server,
                "http_server",
                vec![
                    port("_settings", "", &json!({"enableStopPort": true})),
                    port("response", &format!("{server}:request"), &answer),
                ],
                vec![json!({"id": "loop", "port": "request", "to": format!("{server}:response")})],
            ),
        )
        .await
        .expect("node created");
    // What Go's http_server leaves on a node it ran: the start message as JSON text and
    // the port in decimal. Named before anything listens, so not one bound and released
    // (another process's port-0 bind could take it in between): one below the ephemeral
    // range, which only a process naming this very port takes. Should one hold it
    // (another test drawing the same port), the server's view says it cannot listen
    // there; the test stops the module and draws another.
    let http: Http = Client::builder(TokioExecutor::new()).build_http();
    let mut tries = 0;
    let (_http, free, body) = loop {
        tries += 1;
        let free = tiny_testenv::random_port().expect("a port");
        let metadata = json!({
            "http-start": r#"{"context":{"from":"go"},"autoHostName":true,"readTimeout":60,"writeTimeout":10}"#,
            "port": free.to_string(),
        });
        nodes
            .patch_status(
                server,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"metadata": metadata}})),
            )
            .await
            .expect("status metadata patched");
        let module = http_module(&env, ns, None);
        let cannot = format!("cannot listen on port {free}");
        let outcome = eventually(
            "the server on Go's port, or its view saying it cannot listen",
            Duration::from_secs(60),
            || {
                let (http, nodes, cannot) = (http.clone(), nodes.clone(), cannot.clone());
                async move {
                    let uri = format!("http://127.0.0.1:{free}/").parse().ok()?;
                    // Bounded: a process that took the port may accept and never answer.
                    if let Ok(Ok(resp)) = tokio::time::timeout(Duration::from_secs(5), http.get(uri)).await {
                        return Some(Ok(resp.into_body().collect().await.ok()?.to_bytes()));
                    }
                    let v = view(&nodes.get(server).await.ok()?)?;
                    v["status"]
                        .as_str()
                        .is_some_and(|s| s.contains(&cannot))
                        .then_some(Err(v))
                }
            },
        )
        .await;
        match outcome {
            Ok(body) => break (module, free, body),
            Err(v) => assert!(tries < 3, "port after port taken: {v}"),
        }
    };
    assert_eq!(body, "go".as_bytes(), "the start's context from Go's `http-start`");
    // The view follows once the port is exposed.
    let on_free = |v: &Value| {
        v["listenAddr"].as_array().is_some_and(|a| {
            a.iter()
                .any(|v| v.as_str().is_some_and(|s| s.ends_with(&format!(":{free}"))))
        })
    };
    let running = eventually("the view to list Go's port", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get(server).await.ok()?;
            view(&n).filter(on_free).map(|_| n)
        }
    })
    .await;
    let meta = |n: &TinyNode, key: &str| n.status.as_ref().and_then(|s| s.metadata.get(key).cloned());
    assert_eq!(meta(&running, "port"), Some(free.to_string()), "the port stays Go's");
    assert_eq!(meta(&running, "_state/port"), None);

    // Stop: the listener closes and `http-start` goes, as Go's; `port` stays for the
    // next Start; the idle view shows no address (`null`, as Go's).
    signal_in(&kube, ns, "stop", server, "stop", json!({})).await;
    let stopped = eventually("Stop to clear the start", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get(server).await.ok()?;
            let v = view(&n)?;
            (meta(&n, "http-start").is_none() && v["status"] == "Not running").then_some(n)
        }
    })
    .await;
    assert_eq!(meta(&stopped, "port"), Some(free.to_string()));
    assert_eq!(view(&stopped).expect("a view")["listenAddr"], Value::Null);
}

/// `http-module validate --kubeconfig` on the flow above, the router read from the
/// common module's TinyModule: its route ports (made from its settings) are known,
/// and the server → router → server shape is no loop (issue 47).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_in_the_http_module_accepts_the_flow_that_runs() {
    let env = env().await;
    let kube = env.client();
    let ns = "webv";
    env.create_namespace(ns).await.expect("namespace");
    let (common, _) = common_module(&kube, ns, None).await;
    let modules: Api<TinyModule> = Api::namespaced(kube.clone(), ns);
    eventually(
        "the common module to publish its components",
        Duration::from_secs(60),
        || {
            let modules = modules.clone();
            async move {
                let m = modules.get("common-module-v0").await.ok()?;
                (!m.status?.components.is_empty()).then_some(())
            }
        },
    )
    .await;
    let published = modules.get("common-module-v0").await.expect("TinyModule");
    let router = published
        .status
        .iter()
        .flat_map(|s| &s.components)
        .find(|c| c.name == "router")
        .expect("the router is published");
    let names: Vec<&str> = router.ports.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"out_a") && names.contains(&"out_b"),
        "its routes under the default settings, as Go publishes them: {names:?}"
    );
    let file = std::env::temp_dir().join(format!("tiny-validate-{}.yaml", std::process::id()));
    let docs: Vec<String> = flow().iter().map(|n| serde_json::to_string(n).expect("json")).collect();
    std::fs::write(&file, docs.join("\n---\n")).expect("written");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_http-module"))
        .arg("validate")
        .arg(&file)
        .args(["--kubeconfig", env.kubeconfig_path().to_str().expect("utf-8")])
        .args(["--namespace", ns, "--name", "http-module-v0"])
        .output()
        .expect("http-module runs");
    let _ = std::fs::remove_file(&file);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout, "");
    common.stop().await;
}

/// A body over a default broker's 1 MiB crossing to the common module on NATS: the
/// client gets 413 `MESSAGE_TOO_LARGE`, the server's node shows why, and the module
/// warned when the server started that `maxBodySize` is over what the broker takes
/// (issue 47).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_brokers_max_payload_is_413_and_the_node_shows_why() {
    let env = env().await;
    let broker = tiny_testenv::NatsServer::start().await.expect("nats-server starts");
    let kube = env.client();
    let ns = "webbig";
    env.create_namespace(ns).await.expect("namespace");
    let url = broker.url();
    let (common, receiver) = common_module(&kube, ns, Some(&url)).await;
    let log = std::env::temp_dir().join(format!("tiny-http-big-{}.log", std::process::id()));
    let module = Replica::builder(env!("CARGO_BIN_EXE_http-module"), &env, ns, "http-0", "http-module-v0")
        .args(["--pod-selector", "app=http-module"])
        .nats(&url)
        .logs(&log)
        .start();
    let nodes: Api<TinyNode> = Api::namespaced(kube.clone(), ns);
    for n in flow() {
        let mut n = serde_json::to_value(&n).expect("json");
        if n["metadata"]["name"] == SERVER {
            // Bodies up to 4 MB pass the server, to reach the wire.
            n["spec"]["ports"][0]["configuration"] = json!(b64(&json!({"maxBodySize": 4})));
        }
        let n: TinyNode = serde_json::from_value(n).expect("a TinyNode");
        nodes.create(&PostParams::default(), &n).await.expect("node created");
    }
    signal_in(&kube, ns, "start", SERVER, "start", json!({"writeTimeout": 30})).await;
    let port = running_port(&nodes).await;
    let http: Http = Client::builder(TokioExecutor::new()).build_http();
    let (status, _, body) = call(&http, port, "POST", "/big", &"x".repeat(1536 * 1024)).await;
    assert_eq!(
        status,
        StatusCode::PAYLOAD_TOO_LARGE,
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert!(String::from_utf8_lossy(&body).contains("MESSAGE_TOO_LARGE"));
    // The node that sent it says why (today it stayed `OK`).
    let shown = eventually("the server's node to show the failure", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            let status = nodes.get(SERVER).await.ok()?.status?;
            let c = status.conditions.iter().find(|c| c.type_ == "Delivered")?.clone();
            Some((status.status, c))
        }
    })
    .await;
    assert_eq!(shown.1.status, "False");
    assert_eq!(shown.1.reason, "MessageTooLarge");
    assert!(
        shown.1.message.contains("too large") && shown.1.message.contains(ROUTER),
        "{:?}",
        shown.1
    );
    assert_eq!(shown.0, shown.1.message, "the status text says it too");
    // A small one still crosses.
    let (status, _, got) = call(&http, port, "POST", "/small", "fits").await;
    assert_eq!((status, &got[..]), (StatusCode::OK, &b"fits"[..]));
    drop(module);
    let logs = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert!(
        logs.contains("maxBodySize is larger than the wire"),
        "warned once at start: {logs}"
    );
    assert_eq!(logs.matches("maxBodySize is larger than the wire").count(), 1, "{logs}");
    if let Some(r) = receiver {
        r.stop().await;
    }
    common.stop().await;
}

/// The http module restarted: the server it brings back from `http-start` keeps the
/// node's `maxBodySize` (1 MB here), as a started one does (issue 47: it took the
/// 10 MB default and answered a 1.5 MB body with 200).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_module_brings_its_server_back_with_its_settings() {
    let env = env().await;
    let kube = env.client();
    let ns = "webre";
    env.create_namespace(ns).await.expect("namespace");
    let (common, _) = common_module(&kube, ns, None).await;
    let http = http_module(&env, ns, None);
    let nodes: Api<TinyNode> = Api::namespaced(kube.clone(), ns);
    for n in flow() {
        nodes.create(&PostParams::default(), &n).await.expect("node created");
    }
    signal_in(&kube, ns, "start", SERVER, "start", json!({"writeTimeout": 30})).await;
    let port = running_port(&nodes).await;
    let client: Http = Client::builder(TokioExecutor::new()).build_http();
    let big = "x".repeat(1536 * 1024);
    assert_eq!(
        call(&client, port, "POST", "/big", &big).await.0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    drop(http);
    let _http = http_module(&env, ns, None);
    // Back on its saved port once the new process resumed it.
    eventually("the restarted server to answer", Duration::from_secs(60), || {
        let client = client.clone();
        async move {
            let req = Request::builder()
                .method("POST")
                .uri(format!("http://127.0.0.1:{port}/again"))
                .body(Full::new(Bytes::from_static(b"small")))
                .ok()?;
            let resp = client.request(req).await.ok()?;
            (resp.status() == StatusCode::OK).then_some(())
        }
    })
    .await;
    assert_eq!(
        call(&client, port, "POST", "/big", &big).await.0,
        StatusCode::PAYLOAD_TOO_LARGE,
        "maxBodySize holds after a restart"
    );
    common.stop().await;
}

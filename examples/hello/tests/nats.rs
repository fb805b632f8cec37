//! Modules on NATS, as a current TinySystems cluster runs them: a real control plane
//! and a real `nats-server`, module processes started with `--nats-url`. A flow
//! crosses two modules over NATS; a person sends into it with the binary's `send`;
//! replicas share the business messages; a replica dies under load; the broker dies
//! and comes back.

mod common;

use std::{
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use common::{Replica, create_flow, env, eventually, hello, nodes_ready, round_trip, signal};
use kube::Api;
use serde_json::{Value, json};
use tiny_runtime::{
    crd::TinyModule,
    nats::{Link, SendOptions, send},
};
use tiny_testenv::{NatsServer, TestEnv};

/// alpha.hello -> beta.shout -> alpha.respond (retried, 5 s an attempt); beta's login
/// (a secret in its settings); alpha's shout -> beta's delay (200 ms), retried.
fn nats_flow(flow: &str) -> String {
    let retry = r#"{ maxAttempts: 3, initialDelayMs: 100, backoffCoefficient: "1.0", timeoutMs: 5000 }"#;
    round_trip(flow, Some(retry))
        + &format!(
            r#"
---
kind: TinyNode
metadata: {{ name: {flow}.beta-v0.login-1, labels: {{ tinysystems.io/flow-name: {flow} }} }}
spec:
  module: beta
  component: login
  ports:
    - {{ port: _settings, configuration: {{ user: ada, password: hunter2 }} }}
---
kind: TinyNode
metadata: {{ name: {flow}.alpha-v0.shout-9, labels: {{ tinysystems.io/flow-name: {flow} }} }}
spec:
  module: alpha
  component: shout
  edges:
    - id: to-delay
      port: out
      to: "{flow}.beta-v0.delay-1:input"
      flowID: {flow}
      retryPolicy: {{ maxAttempts: 3, initialDelayMs: 10, backoffCoefficient: "1.0", timeoutMs: 5000 }}
---
kind: TinyNode
metadata: {{ name: {flow}.beta-v0.delay-1, labels: {{ tinysystems.io/flow-name: {flow} }} }}
spec:
  module: beta
  component: delay
  ports:
    - from: "{flow}.alpha-v0.shout-9:out"
      port: input
      configuration: {{ context: "{{{{$.text}}}}", delay: 200 }}
"#
        )
}

fn start(env: &TestEnv, ns: &str, identity: &str, module: &str, broker: &NatsServer) -> Replica {
    hello(env, ns, identity, module).nats(&broker.url()).start()
}

/// The module's TinyModule once its status says `addr` and its Transport condition `status`.
async fn module_says(
    client: &kube::Client,
    ns: &str,
    module: &str,
    addr: impl Fn(&str) -> bool,
    status: &str,
) -> TinyModule {
    let modules: Api<TinyModule> = Api::namespaced(client.clone(), ns);
    eventually(
        &format!("TinyModule {module} to advertise the right address with Transport={status}"),
        Duration::from_secs(60),
        || {
            let modules = modules.clone();
            let addr = &addr;
            async move {
                let m = modules.get(module).await.ok()?;
                let s = m.status.as_ref()?;
                let c = s.conditions.iter().find(|c| c.type_ == "Transport")?;
                (addr(&s.addr) && c.status == status).then_some(m)
            }
        },
    )
    .await
}

/// `hello-module send ...`: stdout, or stderr on failure.
fn send_cli(broker: &NatsServer, args: &[&str]) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_hello-module"))
        .arg("send")
        .args(args)
        .env("TINY_NATS_URL", broker.url())
        .env("RUST_LOG", "warn")
        .output()
        .expect("hello-module runs");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_crosses_modules_over_nats_and_survives_the_broker() {
    let env = env().await;
    let mut broker = NatsServer::start().await.expect("nats-server starts");
    let client = env.client();
    let ns = "n";
    env.create_namespace(ns).await.expect("namespace");
    let mut alpha = start(&env, ns, "alpha-0", "alpha-v0", &broker);
    let mut beta = start(&env, ns, "beta-0", "beta-v0", &broker);
    let flow = create_flow(&client, ns, &nats_flow(ns)).await;
    let names: Vec<String> = flow.nodes.iter().map(|n| n.name.clone()).collect();
    nodes_ready(&client, ns, &names).await;
    let announced = module_says(&client, ns, "beta-v0", |a| a == "nats://tinymodule.beta-v0.msg", "True").await;
    let condition = announced
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Transport").cloned())
        .expect("a Transport condition");
    assert_eq!(condition.reason, "Nats");

    // A person sends into the flow over NATS, as the platform does, and reads the reply.
    let reply = send_cli(&broker, &["n.alpha-v0.hello-1", "input", r#"{"name":"Ada"}"#, "--wait"]).expect("send works");
    assert_eq!(
        serde_json::from_str::<Value>(&reply).ok(),
        Some(json!({"answer": "HELLO, ADA!"}))
    );
    assert!(
        beta.metric(r#"tiny_nats_server_calls_total{outcome="OK"}"#)
            .await
            .unwrap_or(0)
            >= 1
    );
    assert!(
        alpha
            .metric(r#"tiny_nats_client_calls_total{module="beta-v0",outcome="OK"}"#)
            .await
            .unwrap_or(0)
            >= 1,
        "alpha reached beta over NATS"
    );
    // Bad input from the command line: the error names what was wrong.
    let e = send_cli(&broker, &["n.alpha-v0.hello-1", "nope", "{}", "--wait"]).expect_err("no such port");
    assert!(
        e.contains("has no input port `nope`") && e.contains("UNKNOWN_PORT"),
        "{e}"
    );
    let e = send_cli(&broker, &["n.alpha-v0.hello-1", "input", "{name", "--wait"]).expect_err("not JSON");
    assert!(e.contains("not JSON"), "{e}");
    // Secrets stay masked in `x-error`, as everywhere else.
    let e = send_cli(
        &broker,
        &["n.beta-v0.login-1", "input", r#"{"password":"guess"}"#, "--wait"],
    )
    .expect_err("refused");
    assert!(
        e.contains("is wrong") && !e.contains("hunter2") && !e.contains("guess"),
        "{e}"
    );
    // TinySignals still work beside NATS.
    let s = signal(
        &client,
        ns,
        "classic",
        "n.alpha-v0.hello-1",
        "input",
        json!({"name": "Bo"}),
    )
    .await;
    assert_eq!(
        s.status.and_then(|s| s.reply).map(|r| r.0),
        Some(json!({"answer": "HELLO, BO!"}))
    );

    // The broker dies: readiness says so, the modules advertise their gRPC addresses,
    // and tiny to tiny goes on over gRPC.
    broker.kill();
    for r in [&alpha, &beta] {
        let (code, body) = eventually("/readyz to say NATS is down", Duration::from_secs(20), || async {
            r.probe("/readyz").await.filter(|(code, _)| *code == 503)
        })
        .await;
        assert_eq!(code, 503);
        assert!(body.contains("NATS: the broker at nats://***@127.0.0.1"), "{body}");
        assert!(!body.contains(broker.token()), "the token stays secret: {body}");
    }
    module_says(&client, ns, "beta-v0", |a| !a.starts_with("nats://"), "False").await;
    let s = signal(
        &client,
        ns,
        "during-outage",
        "n.alpha-v0.hello-1",
        "input",
        json!({"name": "Cy"}),
    )
    .await;
    assert_eq!(
        s.status.and_then(|s| s.reply).map(|r| r.0),
        Some(json!({"answer": "HELLO, CY!"})),
        "alpha reaches beta over gRPC while the broker is away"
    );

    // It comes back: both reconnect by themselves, nobody restarted.
    broker.restart().await.expect("the broker restarts");
    for r in [&alpha, &beta] {
        eventually("/readyz ready again", Duration::from_secs(30), || async {
            r.probe("/readyz").await.filter(|(code, _)| *code == 200)
        })
        .await;
    }
    module_says(&client, ns, "beta-v0", |a| a == "nats://tinymodule.beta-v0.msg", "True").await;
    assert!(alpha.running() && beta.running(), "no process restarted");
    let reply =
        send_cli(&broker, &["n.alpha-v0.hello-1", "input", r#"{"name":"Di"}"#, "--wait"]).expect("send works again");
    assert_eq!(
        serde_json::from_str::<Value>(&reply).ok(),
        Some(json!({"answer": "HELLO, DI!"}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_messages_and_the_edge_retry_recovers_a_killed_one() {
    let env = env().await;
    let broker = NatsServer::start().await.expect("nats-server starts");
    let client = env.client();
    let ns = "r";
    env.create_namespace(ns).await.expect("namespace");
    let alpha = start(&env, ns, "alpha-0", "alpha-v0", &broker);
    let mut betas: Vec<Replica> = (0..3)
        .map(|i| start(&env, ns, &format!("beta-{i}"), "beta-v0", &broker))
        .collect();
    let flow = create_flow(&client, ns, &nats_flow(ns)).await;
    let names: Vec<String> = flow.nodes.iter().map(|n| n.name.clone()).collect();
    nodes_ready(&client, ns, &names).await;
    module_says(&client, ns, "beta-v0", |a| a.starts_with("nats://"), "True").await;
    let link = Link::connect(&broker.url()).await.expect("a URL");
    assert!(link.wait_up(Duration::from_secs(10)).await);
    // Every replica has loaded the node before the count starts.
    for b in &betas {
        eventually("each beta to load its node", Duration::from_secs(60), || async {
            b.metric(r#"tiny_nodes{state="running"}"#).await.filter(|n| *n >= 1)
        })
        .await;
    }

    let nats = link.client().clone();
    let greet = move |name: String| {
        let client = nats.clone();
        async move {
            send(
                &client,
                "r.alpha-v0.hello-1",
                "input",
                serde_json::to_vec(&json!({ "name": name })).unwrap_or_default(),
                &SendOptions::default().wait(),
            )
            .await
        }
    };
    // Shares: 90 greetings, each crossing alpha -> beta (one of three) -> alpha.
    for i in 0..90 {
        let reply = greet(format!("n{i}"))
            .await
            .expect("answers")
            .and_then(|r| r.into_value());
        assert_eq!(reply, Some(json!({"answer": format!("HELLO, N{i}!")})));
    }
    let mut counts = Vec::new();
    for b in &betas {
        counts.push(
            b.metric(r#"tiny_nats_server_calls_total{outcome="OK"}"#)
                .await
                .unwrap_or(0),
        );
    }
    println!("90 messages over 3 beta replicas: {counts:?}");
    assert_eq!(counts.iter().sum::<u64>(), 90);
    assert!(counts.iter().all(|&n| n > 0), "each replica takes a share: {counts:?}");

    // Under load, one replica is SIGKILLed while it holds messages (each waits 200 ms
    // in beta's delay): what it held is lost (core NATS delivers at most once), and
    // alpha's edge retry (3 attempts, 5 s each) sends it to a survivor. 24 in flight over
    // three replicas: the chance that the victim holds none when it dies is (2/3)^24,
    // under one in ten thousand, and the test says so rather than pass on nothing.
    let total = 120u32;
    let (done, failed) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let load = {
        let (done, failed, nats) = (done.clone(), failed.clone(), link.client().clone());
        let calls = (0..total).map(move |i| {
            let (done, failed, nats) = (done.clone(), failed.clone(), nats.clone());
            async move {
                let data = serde_json::to_vec(&json!({ "text": format!("k{i}") })).unwrap_or_default();
                let wait = SendOptions::default().wait();
                match send(&nats, "r.alpha-v0.shout-9", "input", data, &wait).await {
                    Ok(_) => done.fetch_add(1, Ordering::SeqCst),
                    Err(_) => failed.fetch_add(1, Ordering::SeqCst),
                };
            }
        });
        tokio::spawn(async move {
            use futures::StreamExt as _;
            futures::stream::iter(calls)
                .buffer_unordered(24)
                .collect::<Vec<()>>()
                .await
        })
    };
    eventually("a quarter of the load answered", Duration::from_secs(60), || async {
        (done.load(Ordering::SeqCst) >= total / 4).then_some(())
    })
    .await;
    let killed = betas.remove(1);
    let handled_before_kill = killed
        .metric(r#"tiny_nats_server_calls_total{outcome="OK"}"#)
        .await
        .unwrap_or(0);
    drop(killed); // SIGKILL
    load.await.expect("the load finishes");
    let (done, failed) = (done.load(Ordering::SeqCst), failed.load(Ordering::SeqCst));
    let lost = alpha
        .metric(r#"tiny_nats_client_calls_total{module="beta-v0",outcome="Abandoned"}"#)
        .await
        .unwrap_or(0);
    let mut retried = 0;
    for b in &betas {
        retried += b
            .metric(r#"tiny_node_retries_total{node="r.beta-v0.delay-1",port="input"}"#)
            .await
            .unwrap_or(0);
    }
    println!(
        "SIGKILL of a beta replica under load ({total} messages of 200 ms, 24 in flight; it had handled {handled_before_kill}): \
         {done} answered, {failed} failed; {lost} hops were lost in flight, {retried} sent again by alpha's edge retry and answered by a survivor"
    );
    assert!(
        lost > 0,
        "the victim held no message when it was killed: nothing to recover"
    );
    assert_eq!((done, failed), (total, 0), "every lost hop is recovered by the retry");
    assert_eq!(lost, retried, "each lost hop was retried once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_started_before_its_broker_serves_grpc_until_the_broker_answers() {
    let env = env().await;
    let client = env.client();
    let ns = "early";
    env.create_namespace(ns).await.expect("namespace");
    // The broker holds its port from the start but answers nothing until resumed:
    // to the module, a broker not there yet (no port reserved and released for it).
    let broker = NatsServer::start().await.expect("nats-server starts");
    broker.pause().expect("SIGSTOP");
    let (token, url) = (broker.token().to_owned(), broker.url());
    let mut beta = hello(&env, ns, "beta-0", "beta-v0").nats(&url).start();
    // Go would fall back to gRPC in silence; tiny says so.
    let (code, body) = eventually(
        "/readyz to say NATS is not there yet",
        Duration::from_secs(30),
        || async { beta.probe("/readyz").await.filter(|(code, _)| *code == 503) },
    )
    .await;
    assert_eq!(code, 503);
    assert!(body.contains("NATS: not connected to nats://***@127.0.0.1"), "{body}");
    assert!(!body.contains(&token), "{body}");
    let waiting = module_says(&client, ns, "beta-v0", |a| a.starts_with("127.0.0.1:"), "False").await;
    let condition = waiting
        .status
        .and_then(|s| s.conditions.into_iter().find(|c| c.type_ == "Transport"));
    assert_eq!(condition.map(|c| c.reason).as_deref(), Some("NatsUnreachable"));

    // The broker answers: the module moves to NATS by itself and the condition clears.
    broker.resume().expect("SIGCONT");
    module_says(&client, ns, "beta-v0", |a| a == "nats://tinymodule.beta-v0.msg", "True").await;
    eventually("/readyz ready", Duration::from_secs(30), || async {
        beta.probe("/readyz").await.filter(|(code, _)| *code == 200)
    })
    .await;
    assert!(beta.running());
    let flow = create_flow(
        &client,
        ns,
        "kind: TinyNode\nmetadata: { name: early.beta-v0.shout-1 }\nspec: { module: beta, component: shout }\n",
    )
    .await;
    nodes_ready(&client, ns, &[flow.nodes[0].name.clone()]).await;
    let reply = send_cli(
        &broker,
        &["early.beta-v0.shout-1", "input", r#"{"text":"up"}"#, "--wait"],
    )
    .expect("answers");
    assert_eq!(
        reply, "",
        "shout's out leads nowhere: an empty reply, printed as nothing"
    );
    assert!(
        beta.metric(r#"tiny_nats_server_calls_total{outcome="OK"}"#)
            .await
            .unwrap_or(0)
            >= 1
    );
}

/// `hello-module send` with the default log level: exit status, stdout, stderr.
fn send_plain(broker: &NatsServer, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hello-module"))
        .arg("send")
        .args(args)
        .env("TINY_NATS_URL", broker.url())
        .env_remove("RUST_LOG")
        .output()
        .expect("hello-module runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_line_send_prints_only_its_answer_or_its_error() {
    // Issue 47: every send logged `INFO NATS connected`, sometimes a WARN as it closed.
    let broker = NatsServer::start().await.expect("nats-server starts");
    for _ in 0..3 {
        let (ok, stdout, stderr) = send_plain(&broker, &["f.nobody-v0.hello-1", "input", "{}"]);
        assert!(ok, "{stderr}");
        assert_eq!((stdout.as_str(), stderr.as_str()), ("", ""), "sent, and nothing to say");
    }
    let (ok, stdout, stderr) = send_plain(
        &broker,
        &["f.nobody-v0.hello-1", "input", "{}", "--wait", "--timeout", "2"],
    );
    assert!(!ok);
    assert_eq!(stdout, "");
    assert_eq!(stderr.trim().lines().count(), 1, "the error alone: {stderr}");
    assert!(!stderr.contains("NATS connect"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_on_nats_shuts_down_without_a_warning() {
    // Issue 47: a clean shutdown logged `WARN NATS connection lost; reconnecting`.
    let env = env().await;
    let broker = NatsServer::start().await.expect("nats-server starts");
    let ns = "nshut";
    env.create_namespace(ns).await.expect("namespace");
    let log = std::env::temp_dir().join(format!("tiny-shutdown-{}.log", std::process::id()));
    let mut module = hello(&env, ns, "shut-0", "shut-v0")
        .nats(&broker.url())
        .env("RUST_LOG", "info")
        .logs(&log)
        .start();
    module_says(
        &env.client(),
        ns,
        "shut-v0",
        |a| a == "nats://tinymodule.shut-v0.msg",
        "True",
    )
    .await;
    let killed = Command::new("kill")
        .args(["-TERM", &module.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    while module.running() {
        assert!(Instant::now() < deadline, "the module did not stop");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let logs = std::fs::read_to_string(&log).expect("logs");
    let _ = std::fs::remove_file(&log);
    let (_, after) = logs
        .split_once("shutting down")
        .unwrap_or_else(|| panic!("it says so: {logs}"));
    assert!(!after.contains("WARN"), "a clean shutdown warns of nothing: {logs}");
}

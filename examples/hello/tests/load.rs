//! Load and scale on a real control plane, each beside a bare kube-rs baseline in the
//! same run: a burst of TinySignals (each handled exactly once; creation-to-handler
//! latency against a bare watch's event latency), and many TinyNodes at once (all
//! Ready; time and resident memory per node against a bare `Controller` that only
//! writes a Ready status).
//!
//! `make test` runs the short form (100 signals, 300 nodes) and checks the properties;
//! `make load` runs 1,000 signals and 5,000 nodes in release mode and prints the figures
//! (`TINY_LOAD_SIGNALS`, `TINY_LOAD_NODES` override the sizes).

mod common;

use std::{
    collections::HashMap,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use common::{env, eventually, replica, rss_kib};

/// CPU time (user + system) a process has used so far, in seconds.
fn cpu_secs(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // The fields after the command (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command.
    (ticks(11) + ticks(12)) / 100.0
}
use futures::{StreamExt as _, TryStreamExt as _};
use kube::{Api, Client, ResourceExt as _, api::PostParams, runtime::watcher};
use serde_json::json;
use tiny_runtime::{
    config::ModuleConfig,
    crd::{SignalPhase, TinyNode, TinyNodeSpec, TinySignal, TinySignalSpec},
};
use tiny_sdk::{flow::RawJson, prelude::*};

fn size(var: &str, default: usize) -> usize {
    std::env::var(var).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Handler entry times by message id, from every `stamp` node of this process.
static STAMPS: Mutex<Vec<(u64, Instant)>> = Mutex::new(Vec::new());

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
struct Id {
    id: u64,
}

/// Notes when each message reached it.
#[derive(Debug, Component, Default)]
#[component(name = "stamp")]
struct Stamp {
    input: Input<Id>,
}

#[handlers]
impl Stamp {
    async fn on_input(&self, _: &Ctx<Self>, msg: Id) {
        let now = Instant::now();
        if let Ok(mut s) = STAMPS.lock() {
            s.push((msg.id, now));
        }
    }
}

/// Follows `api` with a watch in a task, handing `seen` each object it applies, and
/// returns once the watch has listed what exists: what is created after is an event
/// it sees, so that its timings start from a live watch rather than a guessed pause.
async fn follow<K>(api: Api<K>, mut seen: impl FnMut(K) + Send + 'static) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let (listed, is_listed) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let mut listed = Some(listed);
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Ok(Some(event)) = events.try_next().await {
            match event {
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) => seen(o),
                watcher::Event::InitDone => {
                    if let Some(listed) = listed.take() {
                        let _ = listed.send(());
                    }
                }
                watcher::Event::Delete(_) | watcher::Event::Init => {}
            }
        }
    });
    is_listed.await.expect("the watch lists the objects (it ended first)");
    task
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_signals_is_handled_exactly_once_beside_a_bare_watch() {
    let n = size("TINY_LOAD_SIGNALS", 100);
    let env = env().await;
    let client = env.client();
    let ns = "burst";
    env.create_namespace(ns).await.expect("namespace");
    let mut registry = tiny_example_hello::registry();
    registry.register::<Stamp>();
    let _module = tiny_testkit::cluster::start_module(
        &client,
        ModuleConfig::new("examples-v0", "0.1.0", ns, "load-0"),
        registry,
    )
    .await;
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let node = "load.examples-v0.stamp-1";
    let spec = TinyNodeSpec(tiny_sdk::flow::NodeSpec {
        module: "examples".into(),
        component: "stamp".into(),
        ..tiny_sdk::flow::NodeSpec::default()
    });
    nodes
        .create(&PostParams::default(), &TinyNode::new(node, spec))
        .await
        .expect("created");
    eventually("the stamp node to be Ready", Duration::from_secs(60), || {
        let nodes = nodes.clone();
        async move { nodes.get(node).await.ok().filter(|n| common::ready(n) == Some(true)) }
    })
    .await;

    // The baseline: when a bare watch in this process first sees each signal.
    let signals: Api<TinySignal> = Api::namespaced(client.clone(), ns);
    let seen: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let watch = {
        let seen = seen.clone();
        follow(signals.clone(), move |s: TinySignal| {
            let now = Instant::now();
            if let Ok(mut seen) = seen.lock() {
                seen.entry(s.name_any()).or_insert(now);
            }
        })
        .await
    };

    let created: Arc<Mutex<HashMap<u64, Instant>>> = Arc::default();
    let started = Instant::now();
    futures::stream::iter(0..n as u64)
        .for_each_concurrent(32, |id| {
            let (signals, created) = (signals.clone(), created.clone());
            async move {
                let spec = TinySignalSpec {
                    node: node.into(),
                    port: "input".into(),
                    data: Some(RawJson(json!({ "id": id }))),
                    ..Default::default()
                };
                let t0 = Instant::now();
                if let Ok(mut c) = created.lock() {
                    c.insert(id, t0);
                }
                signals
                    .create(&PostParams::default(), &TinySignal::new(&format!("sig-{id}"), spec))
                    .await
                    .expect("created");
            }
        })
        .await;
    let create_time = started.elapsed();
    eventually(
        "every signal to be handled",
        Duration::from_secs(60 + n as u64 / 5),
        || async {
            let count = STAMPS.lock().map(|s| s.len()).unwrap_or(0);
            (count >= n).then_some(())
        },
    )
    .await;
    watch.abort();
    // The status still says how each delivery ended: every one Delivered, by us.
    eventually(
        "every signal's status to say Delivered",
        Duration::from_secs(60 + n as u64 / 5),
        || {
            let signals = signals.clone();
            async move {
                let list = signals.list(&Default::default()).await.ok()?;
                let delivered = list
                    .items
                    .iter()
                    .filter(|s| {
                        s.status.as_ref().is_some_and(|st| {
                            st.signal_phase() == Some(SignalPhase::Delivered)
                                && st.claimed_by.as_deref() == Some("load-0")
                                && st.delivered_at.is_some()
                                && st.error.is_none()
                        })
                    })
                    .count();
                (delivered == n).then_some(())
            }
        },
    )
    .await;
    // A late duplicate would come from an event before this signal's (the status
    // writes above): once this one is handled, the module's ordered watch has passed
    // them all.
    let marker = n as u64;
    let spec = TinySignalSpec {
        node: node.into(),
        port: "input".into(),
        data: Some(RawJson(json!({ "id": marker }))),
        ..Default::default()
    };
    signals
        .create(&PostParams::default(), &TinySignal::new("sig-marker", spec))
        .await
        .expect("created");
    eventually("the marker signal to be handled", Duration::from_secs(60), || async {
        let stamps = STAMPS.lock().ok()?;
        stamps.iter().any(|(id, _)| *id == marker).then_some(())
    })
    .await;

    let stamps = STAMPS.lock().map(|s| s.clone()).unwrap_or_default();
    let mut per_id: HashMap<u64, Vec<Instant>> = HashMap::new();
    for (id, t) in stamps.into_iter().filter(|(id, _)| *id != marker) {
        per_id.entry(id).or_default().push(t);
    }
    assert_eq!(per_id.len(), n, "every signal reached the handler");
    assert!(per_id.values().all(|v| v.len() == 1), "no signal was handled twice");
    let created = created.lock().map(|c| c.clone()).unwrap_or_default();
    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let mut handler: Vec<Duration> = Vec::new();
    let mut bare: Vec<Duration> = Vec::new();
    for (id, t0) in &created {
        if let Some(t) = per_id.get(id).and_then(|v| v.first()) {
            handler.push(t.saturating_duration_since(*t0));
        }
        if let Some(t) = seen.get(&format!("sig-{id}")) {
            bare.push(t.saturating_duration_since(*t0));
        }
    }
    handler.sort();
    bare.sort();
    assert_eq!(bare.len(), n, "the bare watch saw every signal");
    println!(
        "signals: {n} created in {:.2} s; creation -> handler p50 {:.1} ms p99 {:.1} ms; bare watch p50 {:.1} ms p99 {:.1} ms; p50 difference {:+.1} ms",
        create_time.as_secs_f64(),
        ms(percentile(&handler, 0.5)),
        ms(percentile(&handler, 0.99)),
        ms(percentile(&bare, 0.5)),
        ms(percentile(&bare, 0.99)),
        ms(percentile(&handler, 0.5)) - ms(percentile(&bare, 0.5)),
    );
}

/// Creates `n` TinyNodes of component `hello` in `ns` and returns how long it took
/// until all of them said Ready (seen by a watch, not by polling lists).
async fn nodes_to_ready(client: &Client, ns: &str, n: usize) -> Duration {
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    let ready: Arc<Mutex<std::collections::HashSet<String>>> = Arc::default();
    let watch = {
        let ready = ready.clone();
        follow(nodes.clone(), move |node: TinyNode| {
            if common::ready(&node) == Some(true)
                && let Ok(mut r) = ready.lock()
            {
                r.insert(node.name_any());
            }
        })
        .await
    };
    let started = Instant::now();
    futures::stream::iter(0..n)
        .for_each_concurrent(32, |i| {
            let nodes = nodes.clone();
            async move {
                let spec = TinyNodeSpec(tiny_sdk::flow::NodeSpec {
                    module: "examples".into(),
                    component: "hello".into(),
                    ..tiny_sdk::flow::NodeSpec::default()
                });
                let node = TinyNode::new(&format!("scale.examples-v0.hello-{i}"), spec);
                nodes.create(&PostParams::default(), &node).await.expect("created");
            }
        })
        .await;
    eventually(
        &format!("{n} nodes in {ns} to be Ready"),
        Duration::from_secs(120 + n as u64 / 10),
        || async {
            let count = ready.lock().map(|r| r.len()).unwrap_or(0);
            (count >= n).then_some(())
        },
    )
    .await;
    let took = started.elapsed();
    watch.abort();
    took
}

/// The baseline controller as a process, once its first line says its watch has
/// listed the namespace.
fn bare_controller(env: &tiny_testenv::TestEnv, ns: &str) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bare-controller"))
        .arg(ns)
        .env("KUBECONFIG", env.kubeconfig_path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("bare-controller starts");
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut line);
    }
    assert_eq!(line.trim(), "ready");
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_nodes_reach_ready_beside_a_bare_controller() {
    let n = size("TINY_LOAD_NODES", 300);
    let env = env().await;
    let client = env.client();
    for ns in ["bare", "tiny"] {
        env.create_namespace(ns).await.expect("namespace");
    }
    // The baseline first, alone on the control plane.
    let mut bare = bare_controller(&env, "bare");
    let bare_rss0 = rss_kib(bare.id()).unwrap_or(0);
    let bare_cpu0 = cpu_secs(bare.id());
    let bare_time = nodes_to_ready(&client, "bare", n).await;
    let bare_rss = rss_kib(bare.id()).unwrap_or(0).saturating_sub(bare_rss0);
    let bare_cpu = cpu_secs(bare.id()) - bare_cpu0;
    let _ = bare.kill();
    let _ = bare.wait();

    let module = replica(&env, "tiny", "scale-0");
    eventually("the module to be ready", Duration::from_secs(30), || async {
        module.probe("/readyz").await.filter(|(code, _)| *code == 200)
    })
    .await;
    let tiny_rss0 = rss_kib(module.pid()).unwrap_or(0);
    let tiny_cpu0 = cpu_secs(module.pid());
    let tiny_time = nodes_to_ready(&client, "tiny", n).await;
    let tiny_rss = rss_kib(module.pid()).unwrap_or(0).saturating_sub(tiny_rss0);
    let tiny_cpu = cpu_secs(module.pid()) - tiny_cpu0;
    let writes = module.metric("tiny_status_writes_total").await.unwrap_or(0);
    // What each Ready node weighs on the API server and every watch: tiny's status
    // carries the ports and their schemas, the bare one a condition.
    let size = |ns: &'static str| {
        let client = client.clone();
        async move {
            let nodes: Api<TinyNode> = Api::namespaced(client, ns);
            let node = nodes.get("scale.examples-v0.hello-0").await.ok();
            node.and_then(|n| serde_json::to_vec(&n).ok()).map_or(0, |v| v.len())
        }
    };
    let (tiny_bytes, bare_bytes) = (size("tiny").await, size("bare").await);
    println!(
        "nodes: {n} to Ready: tiny {:.2} s, bare controller {:.2} s, ratio {:.2}; resident memory per node: tiny {:.1} KiB, bare {:.1} KiB; CPU: tiny {tiny_cpu:.1} s, bare {bare_cpu:.1} s; tiny status writes {writes}; object size: tiny {tiny_bytes} B, bare {bare_bytes} B",
        tiny_time.as_secs_f64(),
        bare_time.as_secs_f64(),
        tiny_time.as_secs_f64() / bare_time.as_secs_f64().max(1e-9),
        tiny_rss as f64 / n as f64,
        bare_rss as f64 / n as f64,
    );
}

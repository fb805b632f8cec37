//! Helpers shared by the tests that run the hello module on a real control plane.
#![allow(dead_code)]

use std::{
    collections::BTreeMap,
    io::{BufRead as _, BufReader},
    process::{Child, Command, Stdio},
    time::Duration,
};

use kube::{Api, Client, api::PostParams};
use serde_json::Value;
use tiny_example_hello::registry;
use tiny_runtime::{
    config::ModuleConfig,
    crd::{TinyNode, TinySignal, TinySignalSpec},
    runtime::{Options, Runtime},
};
use tiny_sdk::flow::{Flow, RawJson};
use tiny_testenv::TestEnv;
pub use tiny_testenv::eventually;

const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../crds");

pub async fn env() -> TestEnv {
    TestEnv::builder()
        .crds_dir(CRDS)
        .start()
        .await
        .expect("the control plane starts")
}

pub async fn start_module(client: &Client, namespace: &str) -> Runtime {
    Runtime::start(
        client.clone(),
        Options {
            config: ModuleConfig::new("examples", "0.1.0", namespace, "test-0"),
            registry: registry(),
            lease_duration: None,
            probe_addr: None,
            discovery: None,
            router: None,
            transport: None,
        },
    )
    .await
    .expect("the module starts")
}

pub async fn create_flow(client: &Client, ns: &str, yaml: &str) -> Flow {
    let flow = Flow::from_yaml(yaml).expect("flow YAML");
    let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
    for n in &flow.nodes {
        let mut node = TinyNode::new(&n.name, n.spec.clone().into());
        node.metadata.labels = Some(n.labels.clone());
        nodes.create(&PostParams::default(), &node).await.expect("node created");
    }
    flow
}

pub async fn signal(client: &Client, ns: &str, name: &str, node: &str, port: &str, data: Value) -> TinySignal {
    let signals: Api<TinySignal> = Api::namespaced(client.clone(), ns);
    let spec = TinySignalSpec {
        node: node.into(),
        port: port.into(),
        data: Some(RawJson(data)),
        ..Default::default()
    };
    signals
        .create(&PostParams::default(), &TinySignal::new(name, spec))
        .await
        .expect("signal created");
    eventually(&format!("signal {name} to finish"), Duration::from_secs(60), || {
        let signals = signals.clone();
        async move {
            let s = signals.get(name).await.ok()?;
            let phase = s.status.as_ref()?.phase.clone()?;
            (phase == "Delivered" || phase == "Failed").then_some(s)
        }
    })
    .await
}

pub fn ready(node: &TinyNode) -> Option<bool> {
    let c = node.status.as_ref()?.conditions.iter().find(|c| c.type_ == "Ready")?;
    Some(c.status == "True")
}

/// A `hello-module run` process; its stdout says where its metrics are.
pub struct Replica {
    child: Child,
    metrics: String,
    /// The `--identity` it runs with.
    pub identity: String,
}

impl Replica {
    pub fn start(env: &TestEnv, namespace: &str, identity: &str) -> Replica {
        Replica::start_as(env, namespace, identity, "examples", &[])
    }

    /// Runs module `module` with extra arguments.
    pub fn start_as(env: &TestEnv, namespace: &str, identity: &str, module: &str, extra: &[&str]) -> Replica {
        Replica::start_with(env, namespace, identity, module, extra, &[], None)
    }

    /// [`start_as`](Self::start_as) with extra environment variables, and its stderr
    /// (the logs) written to `logs` instead of the test's.
    pub fn start_with(
        env: &TestEnv,
        namespace: &str,
        identity: &str,
        module: &str,
        extra: &[&str],
        vars: &[(&str, &str)],
        logs: Option<&std::path::Path>,
    ) -> Replica {
        let stderr = match logs {
            Some(path) => Stdio::from(std::fs::File::create(path).expect("log file")),
            None => Stdio::inherit(),
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_hello-module"))
            .args([
                "run",
                "--name",
                module,
                "--version",
                "0.1.0",
                "--namespace",
                namespace,
                "--lease-seconds",
                "4",
            ])
            .args(["--identity", identity])
            .args(if extra.is_empty() {
                &["--grpc-server-bind-address", "127.0.0.1:0"][..]
            } else {
                extra
            })
            .env("KUBECONFIG", env.kubeconfig_path())
            .env("RUST_LOG", "warn")
            .envs(vars.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("hello-module starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let addr = line
            .trim()
            .strip_prefix("probe-addr ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Replica {
            child,
            metrics: addr,
            identity: identity.into(),
        }
    }

    /// Whether the process is still running (it has not exited or been restarted).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `GET path` on its probe address: the status code and the body.
    pub async fn probe(&self, path: &str) -> Option<(u16, String)> {
        let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n");
        let response = tokio::task::spawn_blocking({
            let addr = self.metrics.clone();
            move || {
                use std::io::{Read as _, Write as _};
                let mut s = std::net::TcpStream::connect(&addr).ok()?;
                s.write_all(request.as_bytes()).ok()?;
                let mut out = String::new();
                s.read_to_string(&mut out).ok()?;
                Some(out)
            }
        })
        .await
        .ok()??;
        let code = response.split_whitespace().nth(1)?.parse().ok()?;
        let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
        Some((code, body))
    }

    /// A counter or gauge from its `/metrics`.
    pub async fn metric(&self, name: &str) -> Option<u64> {
        let (_, body) = self.probe("/metrics").await?;
        let values: BTreeMap<&str, u64> = body
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once(' '))
            .filter_map(|(k, v)| Some((k, v.trim().parse().ok()?)))
            .collect();
        values.get(name).copied()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Resident memory of process `pid`, in KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

//! Helpers shared by the tests that run the hello module on a real control plane: the
//! kit's, and the hello module's binary and in-process runtime.
#![allow(dead_code, unused_imports)]

pub mod helm;
pub mod nats;

use kube::Client;
use tiny_example_hello::registry;
use tiny_runtime::{config::ModuleConfig, runtime::Runtime};
use tiny_testenv::TestEnv;
pub use tiny_testkit::{
    Replica, ReplicaBuilder,
    cluster::{create_flow, delivered, env, failed, nodes_ready, ready, signal},
    eventually,
};

/// The hello module's binary.
pub const HELLO: &str = env!("CARGO_BIN_EXE_hello-module");

/// `hello-module run` as module `module`, to be started.
pub fn hello(env: &TestEnv, namespace: &str, identity: &str, module: &str) -> ReplicaBuilder {
    Replica::builder(HELLO, env, namespace, identity, module)
}

/// `hello-module run` as module `examples-v0`, started.
pub fn replica(env: &TestEnv, namespace: &str, identity: &str) -> Replica {
    hello(env, namespace, identity, "examples-v0").start()
}

pub async fn start_module(client: &Client, namespace: &str) -> Runtime {
    tiny_testkit::cluster::start_module(
        client,
        ModuleConfig::new("examples-v0", "0.1.0", namespace, "test-0"),
        registry(),
    )
    .await
}

/// alpha's `hello` -> beta's `shout` -> alpha's `respond`, in flow `flow` (the first
/// part of the node names): the cross-module round trip the tests share. `retry` is
/// the first edge's `retryPolicy` (a YAML flow mapping), if it has one. Append more
/// documents after a `---` line.
pub fn round_trip(flow: &str, retry: Option<&str>) -> String {
    let retry = retry.map(|r| format!("\n      retryPolicy: {r}")).unwrap_or_default();
    format!(
        r#"
kind: TinyNode
metadata: {{ name: {flow}.alpha-v0.hello-1, labels: {{ tinysystems.io/flow-name: {flow} }} }}
spec:
  module: alpha
  component: hello
  edges:
    - id: to-beta
      port: greeting
      to: "{flow}.beta-v0.shout-1:input"
      flowID: {flow}{retry}
---
kind: TinyNode
metadata: {{ name: {flow}.beta-v0.shout-1, labels: {{ tinysystems.io/flow-name: {flow} }} }}
spec:
  module: beta
  component: shout
  ports:
    - from: "{flow}.alpha-v0.hello-1:greeting"
      port: input
      configuration: {{ context: "{{{{$.context}}}}", text: "{{{{$.greeting}}}}" }}
  edges:
    - {{ id: back, port: out, to: "{flow}.alpha-v0.respond-1:response", flowID: {flow} }}
---
kind: TinyNode
metadata: {{ name: {flow}.alpha-v0.respond-1, labels: {{ tinysystems.io/flow-name: {flow} }} }}
spec:
  module: alpha
  component: respond
  ports:
    - from: "{flow}.beta-v0.shout-1:out"
      port: response
      configuration: {{ answer: "{{{{$.text}}}}" }}
"#
    )
}

/// The example flow files (`flows/*.yaml`), in name order; there is at least one.
pub fn flow_files() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/flows"));
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("flows/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    files
}

/// Resident memory of process `pid`, in KiB (`VmRSS`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

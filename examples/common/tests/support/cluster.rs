//! What the common module's tests on a real control plane share: the module started
//! in-process, and the state its components keep in a TinyNode's `status.metadata`.

use base64::{Engine as _, engine::general_purpose::STANDARD};
use kube::Client;
use serde_json::Value;
use tiny_runtime::{config::ModuleConfig, crd::TinyNode, runtime::Runtime};

/// `--name common-module-v0` owns nodes named `*.common-module-v0.*`, as a Go module does.
pub const MODULE: &str = "common-module-v0";

/// The common module in-process in namespace `ns`, as replica `test-0`.
pub async fn start_module(client: &Client, ns: &str) -> Runtime {
    tiny_testkit::cluster::start_module(
        client,
        ModuleConfig::new(MODULE, "0.1.0", ns, "test-0"),
        tiny_example_common::registry(),
    )
    .await
}

/// The raw bytes of a node's state value (`_state/<key>`, base64).
pub fn state_bytes(node: &TinyNode, key: &str) -> Option<Vec<u8>> {
    let raw = node.status.as_ref()?.metadata.get(&format!("_state/{key}"))?;
    STANDARD.decode(raw).ok()
}

/// A node's state value, read as the Go SDK stores it (`_state/<key>`, base64 JSON).
pub fn state(node: &TinyNode, key: &str) -> Option<Value> {
    serde_json::from_slice(&state_bytes(node, key)?).ok()
}

/// `v` as base64 JSON, as a TinyNode's port configurations and Go's state are written.
pub fn b64(v: &Value) -> String {
    STANDARD.encode(serde_json::to_vec(v).expect("json"))
}

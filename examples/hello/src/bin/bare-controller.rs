//! The baseline of the scale benchmark (`make load`): a bare kube-rs `Controller` that
//! does the least a module must, for every TinyNode of a namespace: see it, and write a
//! `Ready` status once. `bare-controller <namespace>`, with `KUBECONFIG` set; prints
//! `ready` once it watches.

use std::{sync::Arc, time::Duration};

use futures::StreamExt as _;
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api, Client, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::{Controller, controller::Action, watcher},
};
use serde_json::json;
use tiny_runtime::crd::TinyNode;

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct Failed(#[from] kube::Error);

async fn reconcile(node: Arc<TinyNode>, api: Arc<Api<TinyNode>>) -> Result<Action, Failed> {
    let ready = node
        .status
        .as_ref()
        .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    if !ready {
        let status = json!({ "status": {
            "status": "OK",
            "conditions": [{ "type": "Ready", "status": "True", "reason": "Running", "message": "",
                             "lastTransitionTime": Time(Timestamp::now()) }],
        }});
        api.patch_status(&node.name_any(), &PatchParams::default(), &Patch::Merge(status))
            .await?;
    }
    Ok(Action::await_change())
}

fn error_policy(_: Arc<TinyNode>, _: &Failed, _: Arc<Api<TinyNode>>) -> Action {
    Action::requeue(Duration::from_secs(1))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let Some(namespace) = std::env::args().nth(1) else {
        eprintln!("usage: bare-controller <namespace>");
        return std::process::ExitCode::FAILURE;
    };
    let client = match Client::try_default().await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bare-controller: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let api: Api<TinyNode> = Api::namespaced(client, &namespace);
    println!("ready");
    Controller::new(api.clone(), watcher::Config::default())
        .run(reconcile, error_policy, Arc::new(api))
        .for_each(|_| async {})
        .await;
    std::process::ExitCode::SUCCESS
}

//! The baseline of the scale benchmark (`make load`): a bare kube-rs `Controller` that
//! does the least a module must, for every TinyNode of a namespace: see it, and write a
//! `Ready` status once. `bare-controller <namespace>`, with `KUBECONFIG` set; prints
//! `ready` once its watch has listed the namespace.

use std::{sync::Arc, time::Duration};

use futures::StreamExt as _;
use k8s_openapi::{apimachinery::pkg::apis::meta::v1::Time, jiff::Timestamp};
use kube::{
    Api, Client, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::{Controller, WatchStreamExt as _, controller::Action, reflector, watcher},
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
    // `ready` when the first list is done, so that the benchmark's clock starts with a
    // running watch and not with the process's start-up.
    let (reader, writer) = reflector::store();
    let mut announced = false;
    let nodes = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .inspect(move |event| {
            if !announced && matches!(event, Ok(watcher::Event::InitDone)) {
                announced = true;
                println!("ready");
            }
        })
        .reflect(writer)
        .applied_objects();
    Controller::for_stream(nodes, reader)
        .run(reconcile, error_policy, Arc::new(api))
        .for_each(|_| async {})
        .await;
    std::process::ExitCode::SUCCESS
}

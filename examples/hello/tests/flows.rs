//! Every flow file of this example, applied to a real API server exactly as its header
//! and the README say (`hello-module render <file> | kubectl apply -n <ns> -f -`), runs;
//! and `render --inline` reads what the cluster holds back as it was written.

mod common;

use std::{path::Path, process::Command, time::Duration};

use common::{HELLO, delivered, env, eventually, flow_files, replica};
use kube::Api;
use serde_json::json;
use tiny_runtime::crd::TinySignal;

/// `sh -c script` with `MODULE`, `KUBECTL`, `NS` and `KUBECONFIG` set; its stdout.
fn shell(script: &str, kubectl: &Path, kubeconfig: &Path, ns: &str) -> String {
    let out = Command::new("bash")
        .args(["-o", "pipefail", "-c", script])
        .env("MODULE", HELLO)
        .env("KUBECTL", kubectl)
        .env("KUBECONFIG", kubeconfig)
        .env("NS", ns)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{script}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_flow_file_applies_with_kubectl_as_documented_and_runs() {
    let env = env().await;
    let ns = "tinysystems";
    env.create_namespace(ns).await.expect("namespace");
    let kubectl = tiny_testenv::kubectl().await.expect("kubectl");
    let _module = replica(&env, ns, "flows-0");
    let files = flow_files();
    for file in &files {
        let script = format!(
            r#""$MODULE" render {} | "$KUBECTL" apply -n "$NS" -f -"#,
            file.display()
        );
        let applied = shell(&script, &kubectl, env.kubeconfig_path(), ns);
        assert!(applied.contains("created"), "{}: {applied}", file.display());
    }
    // greet.yaml's signal runs the flow.
    let signals: Api<TinySignal> = Api::namespaced(env.client(), ns);
    let done = eventually("greet-ada to be delivered", Duration::from_secs(60), || {
        let signals = signals.clone();
        async move {
            let s = signals.get("greet-ada").await.ok()?;
            s.status.as_ref()?.signal_phase()?.is_final().then_some(s)
        }
    })
    .await;
    assert_eq!(delivered(&done), Some(json!({"greeting": "HELLO, ADA!", "for": "ada"})));
    // What the cluster holds, read back as it was written.
    let back = shell(
        r#""$KUBECTL" get tinynodes,tinysignals -n "$NS" -o yaml | "$MODULE" render --inline -"#,
        &kubectl,
        env.kubeconfig_path(),
        ns,
    );
    assert!(back.contains("greetingWord: Hello"), "{back}");
    assert!(back.contains("text: '{{$.greeting}}'"), "{back}");
    assert!(back.contains("name: Ada"), "{back}");
}

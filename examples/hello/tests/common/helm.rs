//! Real Helm (`tools/helm/helm`) for the chart tests (`helm.rs`, `helm_install.rs`,
//! `upgrade.rs`), and the kubelet's part for the Jobs Helm makes (the test control plane
//! has no kubelet): one loop for the install, uninstall and upgrade hooks.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use futures::{Future, StreamExt as _};
use k8s_openapi::api::core::v1::{Pod, PodSpec};
use kube::{
    Api, ResourceExt as _,
    api::{Patch, PatchParams},
    runtime::{WatchStreamExt as _, watcher},
};
use serde_json::json;
use tiny_runtime::config::ModuleConfig;
use tiny_testenv::TestEnv;

/// The repository's root.
pub const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
/// The module the chart tests install.
pub const MODULE: &str = "examples-v0";
/// The module's version the chart tests install.
pub const VERSION: &str = "0.1.0";
/// The Helm release the chart tests install.
pub const RELEASE: &str = "hello";

/// `path` in the repository.
pub fn repo(path: &str) -> PathBuf {
    Path::new(REPO).join(path)
}

/// `tools/helm/helm <args>`: whether it succeeded, stdout, stderr.
pub fn helm_output(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(repo("tools/helm/helm"))
        .args(args)
        .output()
        .expect("tools/helm/helm runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `tools/helm/helm ARGS`; its stdout, or a panic with its output.
pub fn helm(args: &[&str]) -> String {
    let (ok, stdout, stderr) = helm_output(args);
    assert!(ok, "helm {args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

/// Writes `text` to `dir/name`; the file's path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("written");
    path
}

/// The TinyModule name of `MODULE` at `VERSION`.
pub fn module_name() -> String {
    ModuleConfig::new(MODULE, VERSION, "tinysystems", "x").name
}

/// A kubeconfig in `dir` for the test API server with `token` (of ServiceAccount `sa` of
/// `ns`): what the in-cluster credentials a kubelet mounts into a pod give.
pub fn kubeconfig_with(env: &TestEnv, ns: &str, sa: &str, token: &str, dir: &Path) -> PathBuf {
    let ca = dir.join(format!("{ns}-ca.pem"));
    std::fs::write(&ca, env.ca_pem().expect("CA")).expect("write");
    let kubeconfig = dir.join(format!("{ns}-{sa}.kubeconfig"));
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: \"{}\", certificate-authority: \"{}\"}}}}]\n\
             users: [{{name: hook, user: {{token: \"{token}\"}}}}]\ncontexts: [{{name: hook, context: {{cluster: c, user: hook}}}}]\n\
             current-context: hook\n",
            env.server_url(),
            ca.display()
        ),
    )
    .expect("write");
    kubeconfig
}

/// A pod of a Job, to be run as a kubelet would.
pub struct JobPod {
    /// The Job that owns the pod.
    pub job: String,
    /// The pod's name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// What it runs: containers, args, env, ServiceAccount.
    pub spec: PodSpec,
    /// A token of the pod's ServiceAccount.
    pub token: String,
    /// A kubeconfig with that token, standing in for the in-cluster credentials.
    pub kubeconfig: PathBuf,
}

/// How a Job's pod ended: exit status, stdout, stderr.
pub struct Exit {
    /// The exit status, `None` when a signal ended it.
    pub code: Option<i32>,
    /// What it wrote on stdout.
    pub stdout: String,
    /// What it wrote on stderr.
    pub stderr: String,
}

/// A Job's pod run as the kubelet would: its Job, exit status, stdout, stderr.
pub struct RanJob {
    /// The Job that owns the pod.
    pub job: String,
    /// The pod's exit status, `None` when a signal ended it.
    pub code: Option<i32>,
    /// What it wrote on stdout.
    pub stdout: String,
    /// What it wrote on stderr.
    pub stderr: String,
}

impl RanJob {
    /// Whether the pod exited 0 (the Job then completes).
    pub fn succeeded(&self) -> bool {
        self.code == Some(0)
    }
}

/// Runs `helm args` and meanwhile plays the kubelet's part, and only that, for the pods
/// the job controller makes for the Jobs Helm creates in `ns` (its hooks, which Helm waits
/// for): `run` runs each such pod once, given its spec and its ServiceAccount's token and
/// kubeconfig; its exit status becomes the pod's phase, from which the control plane's job
/// controller marks the Job Complete or Failed. What Helm said, and the pods run.
pub async fn helm_running_jobs<F, Fut>(
    env: &TestEnv,
    ns: &str,
    args: Vec<String>,
    mut run: F,
) -> ((bool, String, String), Vec<RanJob>)
where
    F: FnMut(JobPod) -> Fut,
    Fut: Future<Output = Exit>,
{
    let mut helm_run = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        helm_output(&args)
    });
    let pods: Api<Pod> = Api::namespaced(env.client(), ns);
    let mut pod_events = watcher(pods.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ran: Vec<RanJob> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    loop {
        let pod = tokio::select! {
            out = &mut helm_run => {
                for RanJob { job, code, stdout, stderr } in &ran {
                    eprintln!("--- hook Job {job} exited {code:?}:\n{stdout}{stderr}");
                }
                return (out.expect("helm ran"), ran);
            }
            event = pod_events.next() => match event {
                Some(Ok(pod)) => pod,
                // The watcher lists again after an error.
                Some(Err(_)) => continue,
                None => panic!("the pod watch ended"),
            },
        };
        let Some(job) = pod
            .owner_references()
            .iter()
            .find(|o| o.kind == "Job")
            .map(|o| o.name.clone())
        else {
            continue; // the Deployment's pods: the tests start those themselves, if at all
        };
        // A pod of an earlier hook Job that already ran (Helm deletes that Job before it
        // makes the next): a kubelet runs a pod once.
        let finished = pod
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|p| p == "Succeeded" || p == "Failed");
        if finished || pod.metadata.deletion_timestamp.is_some() || !seen.insert(pod.uid().unwrap_or_default()) {
            continue;
        }
        let name = pod.name_any();
        let spec = pod.spec.clone().expect("the pod's spec");
        let container = spec.containers[0].clone();
        let sa = spec.service_account_name.clone().unwrap_or_else(|| "default".into());
        let token = env.service_account_token(ns, &sa).await.expect("the Job's token");
        let kubeconfig = kubeconfig_with(env, ns, &sa, &token, dir.path());
        let exit = run(JobPod {
            job: job.clone(),
            name: name.clone(),
            namespace: ns.to_owned(),
            spec,
            token,
            kubeconfig,
        })
        .await;
        // What a kubelet reports of a finished pod. Finishing the Job is the job
        // controller's part (Kubernetes 1.35 refuses a Complete Job status without the
        // conditions, counts and start time it writes).
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let (phase, reason) = if exit.code == Some(0) {
            ("Succeeded", "Completed")
        } else {
            ("Failed", "Error")
        };
        let status = json!({
            "phase": phase,
            "startTime": now,
            "containerStatuses": [{
                "name": container.name,
                "image": container.image.unwrap_or_default(),
                "imageID": "",
                "ready": false,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": exit.code.unwrap_or(137), "reason": reason, "startedAt": now, "finishedAt": now}},
            }],
        });
        pods.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .expect("the pod's status");
        let Exit { code, stdout, stderr } = exit;
        ran.push(RanJob {
            job,
            code,
            stdout,
            stderr,
        });
    }
}

/// A kubeconfig in `dir` for the test API server with a token of ServiceAccount `sa` of
/// `ns`: what the in-cluster credentials a kubelet mounts into a Job's pod give.
pub async fn kubeconfig_as(env: &TestEnv, ns: &str, sa: &str, dir: &Path) -> PathBuf {
    let token = env.service_account_token(ns, sa).await.expect("token");
    kubeconfig_with(env, ns, sa, &token, dir)
}

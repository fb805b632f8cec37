//! The Helm charts installed with real Helm v4 (`tools/helm/helm`) on a real control plane,
//! and the module's OCI image (`tools/image/build.sh`) run from its unpacked root filesystem
//! (`chroot`, user 65532) with the chart's ServiceAccount token: the chart's RBAC is
//! enough, and every rule of it is needed. The charts rendered and linted: `helm.rs`.

mod common;

use std::{
    collections::BTreeMap,
    io::{BufRead as _, BufReader, Read as _},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use common::{
    create_flow, eventually,
    helm::{Exit, JobPod, MODULE, RELEASE, RanJob, VERSION, helm, module_name, repo, write},
    ready, signal,
};
use k8s_openapi::api::{
    apps::v1::Deployment,
    authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec},
    coordination::v1::Lease,
    core::v1::{Namespace, PodSpec, Service, ServiceAccount},
    rbac::v1::{Role, RoleBinding},
};
use kube::{
    Api, Client, ResourceExt as _,
    api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use tiny_example_hello::GREET_FLOW;
use tiny_runtime::{
    crd::{SignalPhase, TinyModule, TinyNode, TinySignal, TinySignalSpec},
    rbac::{Requirements, Rule, runtime_rules, runtime_rules_for},
};
use tiny_sdk::{ResourceManager as _, client::ExposePortRequest, contract::NODE_FINALIZER, flow::RawJson};
use tiny_testenv::TestEnv;

/// The unpacked root filesystem of the module image, built by `tools/image/build.sh`.
struct Image {
    dir: tempfile::TempDir,
}

impl Image {
    fn build() -> Image {
        let dir = tempfile::tempdir().expect("tempdir");
        let oci = dir.path().join("oci");
        // The binary `cargo test` built, packed as `make image` packs the release one;
        // TINY_IMAGE_PROFILE=release builds and packs that instead.
        let mut build = Command::new(repo("tools/image/build.sh"));
        match std::env::var("TINY_IMAGE_PROFILE") {
            Ok(profile) => build.args(["--profile", &profile]),
            Err(_) => build.args(["--binary", env!("CARGO_BIN_EXE_hello-module")]),
        };
        let out = build
            .arg("--out")
            .arg(&oci)
            .stderr(Stdio::inherit())
            .output()
            .expect("tools/image/build.sh runs");
        assert!(out.status.success(), "the image builds");
        let reference = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let tag = reference.rsplit(':').next().expect("tag").to_owned();
        let bundle = dir.path().join("bundle");
        let status = Command::new("umoci")
            .args(["unpack", "--image"])
            .arg(format!("{}:{tag}", oci.display()))
            .arg(&bundle)
            .stdout(Stdio::null())
            .status()
            .expect("umoci unpack");
        assert!(status.success(), "umoci unpack");
        let config: Value =
            serde_json::from_str(&std::fs::read_to_string(bundle.join("config.json")).expect("config.json"))
                .expect("runtime config");
        assert_eq!(config["process"]["user"]["uid"], 65532, "non-root");
        assert_eq!(config["process"]["args"], json!(["/manager"]));
        let rootfs = bundle.join("rootfs");
        assert!(!rootfs.join("bin/sh").exists(), "no shell in the image");
        // The system roots rustls reads: HTTPS requests and tls:// brokers are verified.
        let bundle = std::fs::read_to_string(rootfs.join("etc/ssl/certs/ca-certificates.crt")).unwrap_or_default();
        assert!(bundle.contains("BEGIN CERTIFICATE"), "a CA bundle in the image");
        Image { dir }
    }

    /// Makes the file a kubelet mounts for the container's termination message.
    fn kubelet_termination_log(&self) {
        use std::os::unix::fs::PermissionsExt as _;
        let dev = self.rootfs().join("dev");
        std::fs::create_dir_all(&dev).expect("dev");
        let file = dev.join("termination-log");
        std::fs::write(&file, "").expect("termination log");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("writable");
    }

    fn rootfs(&self) -> PathBuf {
        self.dir.path().join("bundle/rootfs")
    }

    /// Mounts (writes) a ServiceAccount's token, the cluster's CA and the namespace where a
    /// kubelet would.
    fn mount_token(&self, env: &TestEnv, token: &str, namespace: &str) {
        let dir = self.rootfs().join("var/run/secrets/kubernetes.io/serviceaccount");
        std::fs::create_dir_all(&dir).expect("token dir");
        std::fs::write(dir.join("token"), token).expect("written");
        std::fs::write(dir.join("ca.crt"), env.ca_pem().expect("the CA")).expect("written");
        std::fs::write(dir.join("namespace"), namespace).expect("written");
    }
}

/// A module process run from the image's root filesystem, as the installed Deployment says.
struct Pod {
    child: Child,
    log: PathBuf,
    probe: String,
}

impl Pod {
    /// Runs the Deployment's container (command, args, env with the downward API filled in)
    /// chrooted into `image` as user 65532, with in-cluster configuration pointing at `env`.
    fn start(env: &TestEnv, image: &Image, deployment: &Deployment, pod_name: &str, args: Option<Vec<String>>) -> Pod {
        let spec = deployment
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("pod spec");
        let namespace = deployment.namespace().expect("namespace");
        Pod::of_spec(env, image, spec, &namespace, pod_name, args)
    }

    fn of_spec(
        env: &TestEnv,
        image: &Image,
        spec: &PodSpec,
        namespace: &str,
        pod_name: &str,
        args: Option<Vec<String>>,
    ) -> Pod {
        let container = &spec.containers[0];
        let namespace = namespace.to_owned();
        let mut vars = BTreeMap::new();
        for e in container.env.iter().flatten() {
            let value = match (&e.value, &e.value_from) {
                (Some(v), _) => v.clone(),
                (None, Some(from)) => match from.field_ref.as_ref().map(|f| f.field_path.as_str()) {
                    Some("metadata.name") => pod_name.to_owned(),
                    Some("metadata.namespace") => namespace.clone(),
                    other => panic!("unexpected env source {other:?}"),
                },
                (None, None) => String::new(),
            };
            vars.insert(e.name.clone(), value);
        }
        let expand = |s: &String| {
            let mut s = s.clone();
            for (k, v) in &vars {
                s = s.replace(&format!("$({k})"), v);
            }
            s
        };
        let command: Vec<String> = container.command.iter().flatten().map(expand).collect();
        let args: Vec<String> = args
            .unwrap_or_else(|| container.args.iter().flatten().map(expand).collect())
            .into_iter()
            .map(any_port)
            .collect();
        let url = url_port(env.server_url());
        let log = image.dir.path().join(format!("{pod_name}.log"));
        let mut child = Command::new(chroot())
            .arg("--userspec=65532:65532")
            .arg(image.rootfs())
            .args(&command)
            .args(&args)
            .env_clear()
            .envs(&vars)
            .env("HOSTNAME", pod_name)
            .env("KUBERNETES_SERVICE_HOST", "127.0.0.1")
            .env("KUBERNETES_SERVICE_PORT", url.to_string())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .spawn()
            .expect("chroot runs");
        let mut probe = String::new();
        if args.first().map(String::as_str) == Some("run") {
            let mut line = String::new();
            let _ = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
            probe = line.trim().strip_prefix("probe-addr ").unwrap_or_default().to_owned();
        }
        Pod { child, log, probe }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits for the process to end; its success.
    fn wait(&mut self, timeout: Duration) -> Option<bool> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status.success());
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM, as a kubelet stops a container; whether it exited cleanly.
    fn terminate(&mut self) -> Option<bool> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        self.wait(Duration::from_secs(15))
    }

    fn http_get(&self, path: &str) -> String {
        use std::io::Write as _;
        let mut s = std::net::TcpStream::connect(&self.probe).expect("probe port");
        let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        s.write_all(request.as_bytes()).expect("request");
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `chroot` from this process's PATH (the module's environment is cleared, PATH too).
fn chroot() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join("chroot"))
        .find(|p| p.is_file())
        .expect("chroot (coreutils) is installed")
}

fn url_port(url: &str) -> u16 {
    url.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port in the server URL")
}

/// `arg` with port 0 if it is a bind address of the module's listeners. A Pod has a
/// network namespace of its own, where the chart's fixed ports are free; the module
/// processes here share one with each other and the host, where they may not be. So the
/// process binds port 0 and reports the probe address it got (`probe-addr`): no port is
/// picked for it beforehand, which another process could take first.
fn any_port(arg: String) -> String {
    for flag in ["--grpc-server-bind-address=", "--health-probe-bind-address="] {
        if let Some((host, _port)) = arg.strip_prefix(flag).and_then(|addr| addr.rsplit_once(':')) {
            return format!("{flag}{host}:0");
        }
    }
    arg
}

/// A control plane with the charts installed as the README says, in namespace `ns`.
struct Installed {
    env: TestEnv,
    client: Client,
    ns: String,
    values: PathBuf,
    _dir: tempfile::TempDir,
}

impl Installed {
    /// With `jobs`, the chart's hooks are on and their Jobs run from that image.
    /// `requirements`: what the module declares beyond `hello-module rbac` (exposed ports).
    async fn new(ns: &str, jobs: Option<&Image>, requirements: &Requirements) -> Installed {
        let env = TestEnv::builder()
            // Owner references that block deletion need `update` on the owner's finalizers.
            .apiserver_arg("--enable-admission-plugins=OwnerReferencesPermissionEnforcement")
            .start()
            .await
            .expect("the control plane starts");
        let client = env.client();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(ns.into()),
                labels: Some([("tinysystems.io/managed".to_owned(), "true".to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .expect("namespace");
        let kubeconfig = env.kubeconfig_path().to_str().expect("utf-8").to_owned();
        // What the README says: the CRDs once per cluster, then the module.
        helm(&[
            "install",
            repo("charts/tiny-crds").to_str().expect("utf-8"),
            "tiny-crds",
            "--namespace",
            ns,
            "--kubeconfig",
            &kubeconfig,
        ]);
        let nodes: Api<TinyNode> = Api::namespaced(client.clone(), ns);
        eventually("the CRDs to be served", Duration::from_secs(30), || {
            let nodes = nodes.clone();
            async move { nodes.list(&ListParams::default()).await.ok().map(|_| ()) }
        })
        .await;
        let dir = tempfile::tempdir().expect("tempdir");
        // No kubelet runs hook Jobs here: with `jobs`, the test runs them (helm_running_jobs).
        let values = write(
            dir.path(),
            "values.yaml",
            &format!(
                "module: {{name: {MODULE}, version: {VERSION}}}\nhooks: {{enabled: {}}}\nleaseSeconds: 4\nlogLevel: info\n",
                jobs.is_some(),
            ),
        );
        // `hello-module rbac > rbac.yaml`: the module's RBAC, from its code.
        let rbac = Command::new(env!("CARGO_BIN_EXE_hello-module"))
            .arg("rbac")
            .output()
            .expect("hello-module rbac");
        assert!(rbac.status.success());
        let rbac_values = dir.path().join("rbac.yaml");
        std::fs::write(&rbac_values, &rbac.stdout).expect("rbac.yaml");
        // The rules of a module with `requirements`, as its own `rbac` would print them.
        let declared = write(
            dir.path(),
            "declared.yaml",
            &serde_json::to_string(&json!({ "rbac": { "rules": runtime_rules_for(requirements) } })).expect("JSON"),
        );
        let chart = repo("charts/tiny-module");
        let args = [
            "install",
            chart.to_str().expect("utf-8"),
            RELEASE,
            "--namespace",
            ns,
            "-f",
            rbac_values.to_str().expect("utf-8"),
            "-f",
            declared.to_str().expect("utf-8"),
            "-f",
            values.to_str().expect("utf-8"),
            "--kubeconfig",
            &kubeconfig,
        ];
        match jobs {
            Some(image) => {
                let ran = helm_running_jobs(&env, ns, image, &args).await;
                let names: Vec<&str> = ran.iter().map(|j| j.job.as_str()).collect();
                assert_eq!(
                    names,
                    [format!("{RELEASE}-tiny-module-pre-install")],
                    "the pre-install hook ran"
                );
                assert!(ran[0].succeeded(), "pre-install: {}", ran[0].stderr);
            }
            None => {
                helm(&args);
            }
        }
        Installed {
            env,
            client,
            ns: ns.into(),
            values,
            _dir: dir,
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    async fn deployment(&self) -> Deployment {
        self.api::<Deployment>()
            .get(&format!("{RELEASE}-tiny-module"))
            .await
            .expect("the Deployment")
    }

    /// A token of the chart's ServiceAccount, as the kubelet would mount it.
    async fn token(&self) -> String {
        let sa = format!("{RELEASE}-tiny-module");
        self.env
            .service_account_token(&self.ns, &sa)
            .await
            .expect("the ServiceAccount's token")
    }

    /// A client with the chart ServiceAccount's token (not the admin's).
    async fn sa_client(&self, token: &str) -> Client {
        let mut config = self.env.config().clone();
        config.auth_info = kube::config::AuthInfo {
            token: Some(token.to_owned().into()),
            ..Default::default()
        };
        Client::try_from(config).expect("client")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_install_runs_the_image_with_the_charts_service_account_and_uninstall_leaves_nothing() {
    let image = Image::build();
    let ns = "hello-helm";
    // A module that exposes ports, as `http_server` does: its Role may make Services.
    let it = Installed::new(ns, Some(&image), &Requirements::none().exposes_ports()).await;
    // The chart's objects exist.
    let deployment = it.deployment().await;
    let name = format!("{RELEASE}-tiny-module");
    it.api::<ServiceAccount>().get(&name).await.expect("ServiceAccount");
    it.api::<Role>().get(&name).await.expect("Role");
    it.api::<RoleBinding>().get(&name).await.expect("RoleBinding");
    let service = it.api::<Service>().get(&name).await.expect("the gRPC Service");
    let token = it.token().await;
    image.mount_token(&it.env, &token, ns);

    // The pre-install hook's command: a labelled namespace passes; reserved, missing and
    // unlabelled ones are refused with the reason.
    it.env.create_namespace("plain").await.expect("namespace");
    for (namespace, want) in [
        (ns, None),
        ("default", Some("reserved namespace `default`")),
        ("nowhere", Some("namespace `nowhere` does not exist")),
        (
            "plain",
            Some("`kubectl label namespace plain tinysystems.io/managed=true`"),
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hello-module"))
            .arg("pre-install")
            .env("RELEASE_NAMESPACE", namespace)
            .env("KUBECONFIG", it.env.kubeconfig_path())
            .output()
            .expect("pre-install runs");
        let err = String::from_utf8_lossy(&out.stderr);
        match want {
            None => assert!(out.status.success(), "{namespace}: {err}"),
            Some(want) => assert!(!out.status.success() && err.contains(want), "{namespace}: {err}"),
        }
    }

    let mut pod = Pod::start(&it.env, &image, &deployment, "hello-pod-0", None);
    assert!(!pod.probe.is_empty(), "the module started: {}", pod.log());
    assert!(pod.http_get("/healthz").starts_with("HTTP/1.1 200"), "healthz");
    eventually("/readyz to answer 200", Duration::from_secs(30), || async {
        pod.http_get("/readyz").starts_with("HTTP/1.1 200").then_some(())
    })
    .await;

    // The hello flow: nodes Ready, a signal delivered.
    let flow = create_flow(&it.client, ns, GREET_FLOW).await;
    let nodes: Api<TinyNode> = it.api();
    for n in &flow.nodes {
        eventually(&format!("{} to be Ready", n.name), Duration::from_secs(60), || {
            let nodes = nodes.clone();
            async move { nodes.get(&n.name).await.ok().filter(|n| ready(n) == Some(true)) }
        })
        .await;
    }
    let s = signal(
        &it.client,
        ns,
        "greet-ada",
        "greet.examples-v0.hello-1",
        "input",
        json!({"name": "Ada", "context": {"user": "ada"}}),
    )
    .await;
    let status = s.status.expect("status");
    assert_eq!(
        status.signal_phase(),
        Some(SignalPhase::Delivered),
        "{:?}\n{}",
        status.error,
        pod.log()
    );
    assert_eq!(status.claimed_by.as_deref(), Some("hello-pod-0"));

    // The TinyModule advertises the chart's Service; the Lease is held by this pod.
    let module = module_name();
    let modules: Api<TinyModule> = it.api();
    let published = eventually("the TinyModule to be published", Duration::from_secs(30), || {
        let modules = modules.clone();
        let module = module.clone();
        async move { modules.get(&module).await.ok()?.status.filter(|s| !s.addr.is_empty()) }
    })
    .await;
    let port = service
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .map(|p| p[0].port)
        .expect("port");
    assert_eq!(published.addr, format!("{name}.{ns}.svc.cluster.local:{port}"));
    let leases: Api<Lease> = it.api();
    let lease = leases.get(&format!("{module}-lock")).await.expect("the Lease");
    assert_eq!(
        lease.spec.and_then(|s| s.holder_identity).as_deref(),
        Some("hello-pod-0")
    );

    // A port exposed with the ServiceAccount's rights: a Service owned by the node.
    let sa = it.sa_client(&token).await;
    let exposed = tiny_runtime::resources::KubeResources::new(sa, ns, "greet.examples-v0.hello-1")
        .with_selector([("app.kubernetes.io/name".to_owned(), module.clone())].into())
        .expose_port(ExposePortRequest {
            port: 8080,
            ..ExposePortRequest::default()
        })
        .await
        .expect("exposed with the chart's RBAC");
    assert_eq!(exposed.len(), 1);
    let services: Api<Service> = it.api();
    let managed = ListParams::default().labels("app.kubernetes.io/managed-by=tiny-runtime");
    assert_eq!(services.list(&managed).await.expect("list").items.len(), 1);

    // Another module's malformed node in the namespace (configuration bytes that are not
    // JSON): the cleanup lists past it.
    let raw: Api<kube::api::DynamicObject> =
        Api::namespaced_with(it.client.clone(), ns, &kube::api::ApiResource::erase::<TinyNode>(&()));
    let malformed: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "operator.tinysystems.io/v1alpha1",
        "kind": "TinyNode",
        "metadata": { "name": "x.other-v0.thing-1" },
        "spec": { "module": "other-v0", "component": "thing",
                  "ports": [{ "port": "in", "configuration": "bm90IGpzb24=" }] }
    }))
    .expect("an object");
    raw.create(&PostParams::default(), &malformed).await.expect("created");

    // Uninstall: Helm deletes the release, the kubelet stops the pod, then the cleanup hook
    // (post-delete) waits for the Lease to lapse and removes what the module left.
    let kubeconfig = it.env.kubeconfig_path().to_str().expect("utf-8").to_owned();
    assert_eq!(pod.terminate(), Some(true), "a clean stop on SIGTERM: {}", pod.log());
    let ran = helm_running_jobs(
        &it.env,
        ns,
        &image,
        &["uninstall", RELEASE, "--namespace", ns, "--kubeconfig", &kubeconfig],
    )
    .await;
    let names: Vec<&str> = ran.iter().map(|j| j.job.as_str()).collect();
    assert_eq!(
        names,
        [format!("{RELEASE}-tiny-module-cleanup")],
        "the cleanup hook ran"
    );
    assert!(
        ran[0].succeeded() && ran[0].stderr.contains("cleaned up"),
        "cleanup: {}",
        ran[0].stderr
    );

    assert!(it.api::<Deployment>().get_opt(&name).await.expect("get").is_none());
    assert!(
        services.get_opt(&name).await.expect("get").is_none(),
        "the gRPC Service is gone"
    );
    assert!(
        services.list(&managed).await.expect("list").items.is_empty(),
        "no exposed Service left"
    );
    assert!(
        leases.get_opt(&format!("{module}-lock")).await.expect("get").is_none(),
        "no Lease left"
    );
    assert!(
        modules.get_opt(&module).await.expect("get").is_none(),
        "no TinyModule left"
    );
    raw.delete("x.other-v0.thing-1", &Default::default())
        .await
        .expect("the malformed node deleted");
    for n in nodes.list(&ListParams::default()).await.expect("list").items {
        assert!(
            !n.finalizers().iter().any(|f| f == NODE_FINALIZER),
            "{} keeps the finalizer",
            n.name_any()
        );
    }
    // And the nodes can be deleted with no module running.
    for n in &flow.nodes {
        nodes.delete(&n.name, &Default::default()).await.expect("deleted");
    }
    eventually("the nodes to be gone", Duration::from_secs(30), || {
        let nodes = nodes.clone();
        async move {
            nodes
                .list(&ListParams::default())
                .await
                .ok()?
                .items
                .is_empty()
                .then_some(())
        }
    })
    .await;
    let _ = &it.values;
}

/// Runs `helm args` and meanwhile acts as the kubelet for the Jobs Helm creates in `ns` (its
/// hooks, which Helm waits for; `common::helm::helm_running_jobs`): each Pod the job
/// controller makes for a Job runs from `image`, chrooted as user 65532, with its
/// ServiceAccount's token, and its exit code becomes the Pod's phase. Helm must succeed.
async fn helm_running_jobs(env: &TestEnv, ns: &str, image: &Image, args: &[&str]) -> Vec<RanJob> {
    let owned = args.iter().map(|a| (*a).to_owned()).collect();
    let ((ok, stdout, stderr), ran) = common::helm::helm_running_jobs(env, ns, owned, |job: JobPod| async move {
        image.mount_token(env, &job.token, &job.namespace);
        let mut process = Pod::of_spec(env, image, &job.spec, &job.namespace, &job.name, None);
        let (succeeded, log) = tokio::task::spawn_blocking(move || {
            let ok = process.wait(Duration::from_secs(90)) == Some(true);
            (ok, process.log())
        })
        .await
        .expect("the Job's process");
        Exit {
            code: Some(if succeeded { 0 } else { 1 }),
            stdout: String::new(),
            stderr: log,
        }
    })
    .await;
    assert!(ok, "helm {args:?} failed:\n{stdout}\n{stderr}");
    ran
}

/// The module's rules as the chart renders them for the installed module.
fn installed_rules(it: &Installed) -> Vec<Rule> {
    runtime_rules()
        .into_iter()
        .map(|r| r.for_module(&module_name(), &it.ns))
        .collect()
}

/// The Role with `resource`'s rules removed.
async fn without_rule(it: &Installed, resource: &str) {
    let roles: Api<Role> = it.api();
    let all = installed_rules(it);
    let rules: Vec<Rule> = all
        .iter()
        .filter(|r| r.resources != [resource.to_owned()])
        .cloned()
        .collect();
    let removed: Vec<Rule> = all
        .iter()
        .filter(|r| r.resources == [resource.to_owned()])
        .cloned()
        .collect();
    assert!(rules.len() < all.len(), "{resource} is a rule");
    roles
        .patch(
            &format!("{RELEASE}-tiny-module"),
            &PatchParams::default(),
            &Patch::Merge(json!({ "rules": rules })),
        )
        .await
        .expect("Role patched");
    // The authorizer follows Roles through a watch: the patch is in force once it
    // refuses the module a removed verb (the whole Role changes at once, so the rule
    // the last call removed is back by then too).
    eventually(
        &format!("the authorizer to refuse {resource}"),
        Duration::from_secs(30),
        || async {
            for rule in &removed {
                for verb in &rule.verbs {
                    if allowed(it, rule, verb).await == Some(false) {
                        return Some(());
                    }
                }
            }
            None
        },
    )
    .await;
}

/// Whether the API server's authorizer lets the module's ServiceAccount do `verb` on
/// `rule`'s first group, resource and name in the release's namespace (a
/// SubjectAccessReview); `None` when the review cannot be made now.
async fn allowed(it: &Installed, rule: &Rule, verb: &str) -> Option<bool> {
    let (resource, subresource) = match rule.resources.first()?.split_once('/') {
        Some((r, sub)) => (r.to_owned(), Some(sub.to_owned())),
        None => (rule.resources.first()?.clone(), None),
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(format!("system:serviceaccount:{}:{RELEASE}-tiny-module", it.ns)),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{}", it.ns),
                "system:authenticated".into(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                namespace: Some(it.ns.clone()),
                verb: Some(verb.to_owned()),
                group: rule.api_groups.first().cloned(),
                resource: Some(resource),
                subresource,
                name: rule.resource_names.first().cloned(),
                ..ResourceAttributes::default()
            }),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let reviews: Api<SubjectAccessReview> = Api::all(it.client.clone());
    let review = reviews.create(&PostParams::default(), &review).await.ok()?;
    review.status.map(|s| s.allowed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_any_one_of_these_rules_fails_a_named_operation_with_forbidden() {
    let image = Image::build();
    let ns = "hello-rbac";
    let it = Installed::new(ns, None, &Requirements::none()).await;
    let deployment = it.deployment().await;
    image.mount_token(&it.env, &it.token().await, ns);
    let user = format!("system:serviceaccount:{ns}:{RELEASE}-tiny-module");

    // Start-up needs the TinyModule and the Lease: without them the module exits, saying
    // why in its log and in the termination message the kubelet puts in the Pod's status.
    let termination_log = image.rootfs().join("dev/termination-log");
    for (resource, verb, operation) in [
        ("tinymodules", "create", "registering the TinyModule"),
        ("leases", "get", "leader election"),
    ] {
        without_rule(&it, resource).await;
        image.kubelet_termination_log();
        let mut pod = Pod::start(&it.env, &image, &deployment, &format!("no-{resource}"), None);
        assert_eq!(pod.wait(Duration::from_secs(30)), Some(false), "exits with failure");
        let (log, message) = (
            pod.log(),
            std::fs::read_to_string(&termination_log).expect("termination log"),
        );
        for want in [
            operation,
            "forbidden",
            &format!("cannot {verb} resource \"{resource}\""),
            &user,
        ] {
            assert!(log.contains(want), "without {resource}: no {want:?} in\n{log}");
            assert!(
                message.contains(want),
                "without {resource}: no {want:?} in the termination message {message:?}"
            );
        }
    }

    // Node status and Events: the module runs, and says what it may not do.
    create_flow(
        &it.client,
        ns,
        "kind: TinyNode\nmetadata: { name: r.examples-v0.hello-1 }\nspec: { module: examples-v0, component: hello }\n",
    )
    .await;
    // While it runs: the log says it, and the TinyModule's `Permitted` condition says
    // which operation is refused until it works again.
    for (resource, verb, operation) in [
        ("tinynodes/status", "patch", "writing TinyNode status"),
        ("events", "create", "publishing an Event"),
        ("tinysignals/status", "patch", "writing TinySignal status"),
    ] {
        without_rule(&it, resource).await;
        let pod = Pod::start(
            &it.env,
            &image,
            &deployment,
            &format!("no-{}", resource.replace('/', "-")),
            None,
        );
        assert!(!pod.probe.is_empty(), "started: {}", pod.log());
        match resource {
            // A node error is published as an Event.
            "events" => {
                create_flow(
                    &it.client,
                    ns,
                    "kind: TinyNode\nmetadata: { name: r.examples-v0.nosuch-1 }\nspec: { module: examples-v0, component: nosuch }\n",
                )
                .await;
            }
            // A signal is claimed by writing its status.
            "tinysignals/status" => {
                let signals: Api<TinySignal> = it.api();
                let spec = TinySignalSpec {
                    node: "r.examples-v0.hello-1".into(),
                    port: "input".into(),
                    data: Some(RawJson(json!({ "name": "ada" }))),
                    ..Default::default()
                };
                signals
                    .create(&PostParams::default(), &TinySignal::new("unclaimable", spec))
                    .await
                    .expect("signal created");
            }
            _ => {}
        }
        let want = format!("cannot {verb} resource \"{resource}\"");
        let log = eventually(
            &format!("a Forbidden on {resource} in the log"),
            Duration::from_secs(45),
            || async {
                let log = pod.log();
                log.contains(&want).then_some(log)
            },
        )
        .await;
        assert!(
            log.contains(operation) && log.contains(&user),
            "without {resource}:\n{log}"
        );
        let modules: Api<TinyModule> = it.api();
        let condition = eventually(
            &format!("the TinyModule to say {operation} is forbidden"),
            Duration::from_secs(45),
            || async {
                let module = modules.get(&module_name()).await.ok()?;
                let c = module.status?.conditions.into_iter().find(|c| c.type_ == "Permitted")?;
                (c.status == "False" && c.message.contains(operation)).then_some(c)
            },
        )
        .await;
        assert_eq!(condition.reason, "Forbidden");
        assert!(
            condition.message.contains(&want) && condition.message.contains(&user),
            "without {resource}: {}",
            condition.message
        );
        if resource == "tinynodes/status" {
            let node = it.api::<TinyNode>().get("r.examples-v0.hello-1").await.expect("node");
            assert_ne!(ready(&node), Some(true), "no Ready without tinynodes/status");
        }
        drop(pod);
    }

    // With every rule back, the next leader says so.
    let roles: Api<Role> = it.api();
    roles
        .patch(
            &format!("{RELEASE}-tiny-module"),
            &PatchParams::default(),
            &Patch::Merge(json!({ "rules": installed_rules(&it) })),
        )
        .await
        .expect("Role restored");
    let _pod = Pod::start(&it.env, &image, &deployment, "all-rules", None);
    let modules: Api<TinyModule> = it.api();
    eventually(
        "the TinyModule to say all is permitted",
        Duration::from_secs(45),
        || async {
            let module = modules.get(&module_name()).await.ok()?;
            let c = module.status?.conditions.into_iter().find(|c| c.type_ == "Permitted")?;
            (c.status == "True").then_some(())
        },
    )
    .await;
}

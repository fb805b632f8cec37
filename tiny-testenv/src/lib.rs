//! A real, local Kubernetes control plane for tests.
//!
//! [`TestEnv::start`] runs `etcd`, `kube-apiserver` and `kube-controller-manager` (Kubernetes
//! 1.35.4 built from Go modules by `tools/control-plane/build.sh`, or with
//! `TINY_K8S_VERSION=1.20` the oldest version tiny supports, 1.20.2, built from Debian's
//! source package) on free loopback ports in a temporary folder, and hands out an admin [`kube::Client`]. Everything
//! is stopped and removed when the [`TestEnv`] is dropped; the children also die with the
//! test process if it aborts or is killed.
//!
//! ```no_run
//! # async fn f() -> Result<(), tiny_testenv::Error> {
//! let env = tiny_testenv::TestEnv::builder()
//!     .crds_dir("tests/fixtures")
//!     .start()
//!     .await?;
//! let client = env.client();
//! # let _ = client; Ok(()) }
//! ```
//!
//! There is no kubelet: Pods never run. A module under test runs as a process (or in the
//! test) against this API server, with [`TestEnv::kubeconfig_path`] as its `KUBECONFIG`.
//!
//! The binaries come from `TINY_CONTROL_PLANE_BIN` (a folder) if set, else from the per-user
//! cache, which is built on first use (on 2 cores: about 7 minutes for 1.35, 8 for 1.20).
//!
//! Set `TINY_TESTENV_KEEP=1` to keep the temporary folder (logs, kubeconfig) after the end.
//! A test process that is killed (SIGKILL, abort) takes its control plane with it, through
//! the kernel's parent-death signal, but leaves the temporary folder behind.
//!
//! [`NatsServer`] starts a real `nats-server` the same way (loopback, a free port, token
//! auth as the TinySystems NATS chart configures it), and [`RawNats`] speaks the NATS
//! protocol by hand, for tests that check bytes on the wire.
//!
//! Like every library on `k8s-openapi`, this crate picks no Kubernetes version feature: the
//! crate that uses it (its dev-dependencies, or a binary) enables one, e.g. `v1_35`.

#![warn(missing_docs)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

mod binaries;
mod error;
mod nats;
mod process;
mod token;

pub use binaries::{
    BIN_ENV, Binaries, KUBERNETES_VERSION, OLDEST_KUBERNETES_VERSION, VERSION_ENV, cache_bin_dir, kubectl,
    kubernetes_version,
};
pub use error::Error;
use error::io_err;
pub use nats::{NATS_SERVER_ENV, NatsServer, RawMessage, RawNats, nats_server_binary};
use process::{Proc, bind_failed, not_ready, wait_for_listening_port};
pub use process::{listening_ports, random_port, refusing_port};
use token::random_token;

/// Field manager used for server-side apply by this crate.
pub const FIELD_MANAGER: &str = "tiny-testenv";

/// How many ports [`TestEnvBuilder::start`] tries for kube-apiserver before it gives up
/// with [`Error::PortTaken`]: each is random among some 20 000, so a second collision
/// means something holds ports wholesale.
pub const API_SERVER_PORT_TRIES: u32 = 5;

const ADMIN_USER: &str = "tiny-testenv-admin";
const CONTEXT: &str = "tiny-testenv";

/// Options for starting a [`TestEnv`]; made by [`TestEnv::builder`].
#[derive(Debug, Clone)]
pub struct TestEnvBuilder {
    controller_manager: bool,
    crds_dirs: Vec<PathBuf>,
    binaries_dir: Option<PathBuf>,
    ready_timeout: Duration,
    keep_dir: bool,
    apiserver_args: Vec<String>,
    /// The API server's first port, instead of a random one: a test takes it first to
    /// see the next try go elsewhere.
    first_api_port: Option<u16>,
}

impl Default for TestEnvBuilder {
    fn default() -> Self {
        Self {
            controller_manager: true,
            crds_dirs: Vec::new(),
            binaries_dir: None,
            ready_timeout: Duration::from_secs(60),
            keep_dir: std::env::var_os("TINY_TESTENV_KEEP").is_some_and(|v| !v.is_empty() && v != "0"),
            apiserver_args: Vec::new(),
            first_api_port: None,
        }
    }
}

impl TestEnvBuilder {
    /// Whether to run `kube-controller-manager` (garbage collection of owned objects,
    /// ServiceAccount tokens, namespace deletion). Default: yes.
    #[must_use]
    pub fn controller_manager(mut self, run: bool) -> Self {
        self.controller_manager = run;
        self
    }

    /// Applies the CRDs of every `*.yaml` / `*.yml` file in `dir` once the API server is
    /// ready (see [`TestEnv::apply_crds_from_dir`]). May be given several times.
    #[must_use]
    pub fn crds_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.crds_dirs.push(dir.into());
        self
    }

    /// Uses the binaries in `dir` instead of locating (or building) them.
    #[must_use]
    pub fn binaries_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.binaries_dir = Some(dir.into());
        self
    }

    /// How long each process may take to become ready. Default: 60 s.
    #[must_use]
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Keeps the temporary folder (logs, kubeconfig, etcd data) when the env is dropped.
    /// Default: only if `TINY_TESTENV_KEEP` is set.
    #[must_use]
    pub fn keep_dir(mut self, keep: bool) -> Self {
        self.keep_dir = keep;
        self
    }

    /// An extra `kube-apiserver` flag, such as `--feature-gates=...`.
    #[must_use]
    pub fn apiserver_arg(mut self, arg: impl Into<String>) -> Self {
        self.apiserver_args.push(arg.into());
        self
    }

    /// Starts the control plane.
    ///
    /// No port is reserved by binding and releasing it. etcd binds port 0 itself (its
    /// peer listener is a unix socket) and the port it got is read from the kernel;
    /// kube-controller-manager serves no port. kube-apiserver cannot choose its own
    /// port: it starts on a random one below the kernel's ephemeral range, and if that
    /// is taken ([`Error::PortTaken`]) on another, [`API_SERVER_PORT_TRIES`] times in all.
    pub async fn start(self) -> Result<TestEnv, Error> {
        let bins = match &self.binaries_dir {
            Some(dir) => Binaries::in_dir(dir)?,
            None => Binaries::locate_or_build().await?,
        };
        self.start_once(&bins).await
    }

    async fn start_once(&self, bins: &Binaries) -> Result<TestEnv, Error> {
        let mut dir = tempfile::Builder::new()
            .prefix("tiny-testenv-")
            .tempdir()
            .map_err(io_err("creating a temporary folder"))?;
        dir.disable_cleanup(self.keep_dir);
        let root = dir.path().to_path_buf();
        // Before 1.24 both servers also listen on an insecure port unless told not to; from
        // 1.24 on the flags that say so are gone and would stop them.
        let insecure_port_flags = bins.apiserver_minor().await? < 24;

        // --- etcd -------------------------------------------------------------------
        let mut etcd_cmd = Command::new(&bins.etcd);
        // Port 0: etcd binds a port itself, read from the kernel below. (Its gRPC gateway
        // dials the advertised `:0` and logs that it cannot; the API server speaks gRPC to
        // the real port.) The peer listener, never dialled in a one-member cluster, is a
        // unix socket named `peer:1` in the folder, so that etcd listens on one TCP port.
        let (any_port, peer_url) = ("http://127.0.0.1:0", "unix://peer:1");
        etcd_cmd
            .arg("--name=default")
            .arg(format!("--data-dir={}", root.join("etcd").display()))
            .arg(format!("--listen-client-urls={any_port}"))
            .arg(format!("--advertise-client-urls={any_port}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=default={peer_url}"))
            .arg("--log-level=warn")
            .current_dir(&root);
        let mut etcd = Proc::spawn("etcd", etcd_cmd, root.join("etcd.log"))?;
        let etcd_port = wait_for_listening_port(&mut etcd, self.ready_timeout).await?;
        // A restart binds port 0 again (`restart_etcd_and_apiserver`): the port it got is
        // in the ephemeral range, where an outgoing connection may take it meanwhile.
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");

        // --- kube-apiserver -----------------------------------------------------------
        let token = random_token()?;
        let certs = root.join("certs");
        std::fs::create_dir_all(&certs).map_err(io_err(format!("creating {}", certs.display())))?;
        let sa_key = root.join("sa.key");
        let sa_pub = root.join("sa.pub");
        make_service_account_keys(&sa_key, &sa_pub).await?;
        let tokens = root.join("tokens.csv");
        std::fs::write(
            &tokens,
            format!("{token},{ADMIN_USER},{ADMIN_USER},\"system:masters\"\n"),
        )
        .map_err(io_err(format!("writing {}", tokens.display())))?;

        let mut api_cmd = Command::new(&bins.kube_apiserver);
        api_cmd
            .arg(format!("--etcd-servers={etcd_url}"))
            .arg("--bind-address=127.0.0.1")
            .arg("--advertise-address=127.0.0.1")
            .arg(format!("--cert-dir={}", certs.display()))
            .arg("--service-account-issuer=https://kubernetes.default.svc")
            .arg(format!("--service-account-key-file={}", sa_pub.display()))
            .arg(format!("--service-account-signing-key-file={}", sa_key.display()))
            .arg(format!("--token-auth-file={}", tokens.display()))
            .arg("--authorization-mode=RBAC")
            .arg("--service-cluster-ip-range=10.0.0.0/24")
            .args(insecure_port_flags.then_some("--insecure-port=0"))
            .args(&self.apiserver_args)
            .current_dir(&root);
        let ca_file = certs.join("apiserver.crt");
        // kube-apiserver refuses `--secure-port=0`: it starts on a chosen port, and on
        // another if that one is taken, a bounded number of times.
        let mut tries = 0;
        let (apiserver, server, (kubeconfig, config, client)) = loop {
            tries += 1;
            let api_port = match (tries, self.first_api_port) {
                (1, Some(port)) => port,
                _ => random_port()?,
            };
            let mut cmd = Command::new(&bins.kube_apiserver);
            cmd.args(api_cmd.get_args())
                .arg(format!("--secure-port={api_port}"))
                .current_dir(&root);
            let log = root.join("kube-apiserver.log");
            let mut apiserver = if tries == 1 {
                Proc::spawn("kube-apiserver", cmd, log)?
            } else {
                Proc::spawn_appending("kube-apiserver", cmd, log)?
            };
            let server = format!("https://127.0.0.1:{api_port}");
            match wait_for_apiserver(&mut apiserver, &server, &ca_file, &token, self.ready_timeout).await {
                Ok(ready) => break (apiserver, server, ready),
                Err(_) if bind_failed(&mut apiserver, api_port) && tries < API_SERVER_PORT_TRIES => {}
                Err(_) if bind_failed(&mut apiserver, api_port) => {
                    return Err(Error::PortTaken {
                        component: apiserver.name,
                        port: api_port,
                        tries,
                    });
                }
                Err(e) => return Err(e),
            }
        };
        let kubeconfig_path = root.join("kubeconfig");
        let kubeconfig_text =
            serde_yaml::to_string(&kubeconfig_json(&server, &ca_file, &token)?).map_err(|e| Error::Io {
                context: "serialising the kubeconfig".into(),
                source: std::io::Error::other(e),
            })?;
        std::fs::write(&kubeconfig_path, kubeconfig_text)
            .map_err(io_err(format!("writing {}", kubeconfig_path.display())))?;

        // --- kube-controller-manager ----------------------------------------------------
        let controller_manager = if self.controller_manager {
            let mut kcm_cmd = Command::new(&bins.kube_controller_manager);
            kcm_cmd
                .arg(format!("--kubeconfig={}", kubeconfig_path.display()))
                .arg(format!("--service-account-private-key-file={}", sa_key.display()))
                .arg(format!("--root-ca-file={}", ca_file.display()))
                .arg("--controllers=*")
                .arg("--leader-elect=false")
                // No port (0 turns it off; it cannot choose its own): nothing here calls
                // it. Ready is read from what it does.
                .arg("--secure-port=0")
                .args(insecure_port_flags.then_some("--port=0"))
                .arg(format!("--cert-dir={}", root.join("kcm-certs").display()))
                .current_dir(&root);
            let mut kcm = Proc::spawn(
                "kube-controller-manager",
                kcm_cmd,
                root.join("kube-controller-manager.log"),
            )?;
            wait_for_controller_manager(&mut kcm, &client, self.ready_timeout).await?;
            Some(kcm)
        } else {
            None
        };

        let env = TestEnv {
            controller_manager,
            apiserver,
            etcd,
            etcd_port,
            ready_timeout: self.ready_timeout,
            ca_file,
            client,
            config,
            kubeconfig,
            kubeconfig_path,
            server,
            dir,
        };
        for crds in &self.crds_dirs {
            env.apply_crds_from_dir(crds).await?;
        }
        Ok(env)
    }
}

/// A process of the control plane, for [`TestEnv::pause`] and [`TestEnv::resume`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// etcd.
    Etcd,
    /// kube-apiserver.
    ApiServer,
    /// kube-controller-manager.
    ControllerManager,
}

/// A running control plane: `etcd`, `kube-apiserver` and (unless disabled)
/// `kube-controller-manager`, each with its own log in [`TestEnv::dir`]. Dropping it kills
/// the processes and removes the folder.
pub struct TestEnv {
    // Stopped in this order by `Drop`.
    controller_manager: Option<Proc>,
    apiserver: Proc,
    etcd: Proc,
    etcd_port: u16,
    ready_timeout: Duration,
    ca_file: PathBuf,
    client: kube::Client,
    config: kube::Config,
    kubeconfig: Kubeconfig,
    kubeconfig_path: PathBuf,
    server: String,
    dir: tempfile::TempDir,
}

impl fmt::Debug for TestEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestEnv")
            .field("server", &self.server)
            .field("dir", &self.dir.path())
            .field("controller_manager", &self.controller_manager.is_some())
            .finish_non_exhaustive()
    }
}

impl TestEnv {
    /// Starts a control plane with the defaults (controller manager on, no CRDs).
    pub async fn start() -> Result<Self, Error> {
        Self::builder().start().await
    }

    /// Options for starting a control plane.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// A client with cluster-admin rights (`system:masters`).
    ///
    /// It was made on the tokio runtime that ran [`TestEnvBuilder::start`] and works while
    /// that runtime lives (the usual case: one env per `#[tokio::test]`). To use the env from
    /// another runtime, make a client there with [`TestEnv::new_client`].
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// A new admin client bound to the current tokio runtime.
    pub fn new_client(&self) -> Result<kube::Client, Error> {
        Ok(kube::Client::try_from(self.config.clone())?)
    }

    /// The client configuration (admin token, the API server's CA).
    pub fn config(&self) -> &kube::Config {
        &self.config
    }

    /// A kubeconfig file for other processes (`KUBECONFIG=...`); it embeds the CA and token,
    /// so a copy keeps working while the env runs.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// The kubeconfig of [`TestEnv::kubeconfig_path`].
    pub fn kubeconfig(&self) -> Kubeconfig {
        self.kubeconfig.clone()
    }

    /// The API server's URL, `https://127.0.0.1:PORT`.
    pub fn server_url(&self) -> &str {
        &self.server
    }

    /// The CA certificate (PEM) that signs the API server's serving certificate: what a Pod
    /// finds as `ca.crt` beside its ServiceAccount token.
    pub fn ca_pem(&self) -> Result<Vec<u8>, Error> {
        std::fs::read(&self.ca_file).map_err(io_err(format!("reading {}", self.ca_file.display())))
    }

    /// A bearer token of ServiceAccount `name` in `namespace`, valid for an hour, from the
    /// TokenRequest API: what the kubelet mounts into a Pod. (From Kubernetes 1.24 on,
    /// kube-controller-manager no longer makes a token Secret for each ServiceAccount.)
    /// Waits up to 30 s for the ServiceAccount to exist, as a Pod waits for it.
    pub async fn service_account_token(&self, namespace: &str, name: &str) -> Result<String, Error> {
        let api: Api<ServiceAccount> = Api::namespaced(self.client(), namespace);
        let request = TokenRequest {
            spec: TokenRequestSpec {
                expiration_seconds: Some(3600),
                ..TokenRequestSpec::default()
            },
            ..TokenRequest::default()
        };
        let timeout = Duration::from_secs(30);
        let deadline = Instant::now() + timeout;
        loop {
            match api.create_token_request(name, &PostParams::default(), &request).await {
                Ok(answer) => {
                    return answer.status.map(|s| s.token).ok_or_else(|| Error::Io {
                        context: format!("the token of ServiceAccount {namespace}/{name}"),
                        source: std::io::Error::other("the TokenRequest came back without a status"),
                    });
                }
                Err(kube::Error::Api(status)) if status.is_not_found() && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(kube::Error::Api(status)) if status.is_not_found() => {
                    return Err(Error::Timeout {
                        what: format!("ServiceAccount {namespace}/{name} to exist"),
                        after: timeout,
                    });
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The temporary folder: logs (`etcd.log`, `kube-apiserver.log`,
    /// `kube-controller-manager.log`), certificates, the kubeconfig, etcd's data.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Whether `kube-controller-manager` runs.
    pub fn has_controller_manager(&self) -> bool {
        self.controller_manager.is_some()
    }

    /// Kills the API server and starts it again on the same address with the same
    /// certificate, so that clients made before reconnect; returns once it is ready.
    pub async fn restart_apiserver(&mut self) -> Result<(), Error> {
        self.apiserver.restart()?;
        self.wait_apiserver_ready().await
    }

    /// Kills etcd and the API server, starts etcd again on its data, then the API
    /// server; returns once it is ready. Watches see their streams end. etcd may listen
    /// on another port than before (it binds port 0 again, as the old one, an ephemeral
    /// port, may be taken); the API server is told the new one, and keeps its own.
    pub async fn restart_etcd_and_apiserver(&mut self) -> Result<(), Error> {
        self.apiserver.kill();
        self.etcd.restart()?;
        let port = wait_for_listening_port(&mut self.etcd, self.ready_timeout).await?;
        self.apiserver.replace_arg(
            &format!("--etcd-servers=http://127.0.0.1:{}", self.etcd_port),
            &format!("--etcd-servers=http://127.0.0.1:{port}"),
        );
        self.etcd_port = port;
        self.restart_apiserver().await
    }

    /// Freezes a component (`SIGSTOP`): it keeps its connections but answers nothing,
    /// as a hung peer does. [`resume`](Self::resume) thaws it.
    pub fn pause(&self, component: Component) -> Result<(), Error> {
        self.proc(component)?.pause()
    }

    /// Thaws a component frozen by [`pause`](Self::pause).
    pub fn resume(&self, component: Component) -> Result<(), Error> {
        self.proc(component)?.resume()
    }

    fn proc(&self, component: Component) -> Result<&Proc, Error> {
        match component {
            Component::Etcd => Ok(&self.etcd),
            Component::ApiServer => Ok(&self.apiserver),
            Component::ControllerManager => self.controller_manager.as_ref().ok_or_else(|| Error::Io {
                context: "kube-controller-manager".into(),
                source: std::io::Error::other("this control plane runs without it"),
            }),
        }
    }

    async fn wait_apiserver_ready(&mut self) -> Result<(), Error> {
        let deadline = Instant::now() + self.ready_timeout;
        loop {
            if let Some(status) = self.apiserver.exited() {
                return Err(not_ready(&self.apiserver, format!("exited with {status}")));
            }
            let last = match readyz(&self.client).await {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) => format!("/readyz answered {body:?}"),
                Err(e) => format!("/readyz: {e}"),
            };
            if Instant::now() >= deadline {
                return Err(not_ready(
                    &self.apiserver,
                    format!("not ready after {:?}; last: {last}", self.ready_timeout),
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The last `lines` lines of a component's log (`etcd`, `kube-apiserver`,
    /// `kube-controller-manager`), for assertions and failure messages.
    pub fn log_tail(&self, component: &str, lines: usize) -> String {
        process::log_tail(&self.dir.path().join(format!("{component}.log")), lines)
    }

    /// Applies (server-side, forced, field manager [`FIELD_MANAGER`]) every
    /// `CustomResourceDefinition` in the `*.yaml` / `*.yml` files of `dir` (several documents
    /// per file allowed), then waits until each is `Established`. A document of another kind
    /// is an error.
    pub async fn apply_crds_from_dir(&self, dir: &Path) -> Result<(), Error> {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io_err(format!("reading {}", dir.display())))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        let mut crds = Vec::new();
        for file in &files {
            crds.extend(read_crds(file)?);
        }
        self.apply_crds(&crds).await
    }

    /// Applies CRDs given as JSON values (server-side apply), then waits until each is
    /// `Established`.
    pub async fn apply_crds(&self, crds: &[serde_json::Value]) -> Result<(), Error> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let mut names = Vec::with_capacity(crds.len());
        for crd in crds {
            let name = crd
                .pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
                .ok_or_else(|| Error::Manifest {
                    path: PathBuf::from("<crd>"),
                    message: "a CustomResourceDefinition without metadata.name".into(),
                })?;
            api.patch(name, &params, &Patch::Apply(crd)).await?;
            names.push(name.to_owned());
        }
        let timeout = Duration::from_secs(30);
        for name in names {
            let established = kube::runtime::wait::await_condition(
                api.clone(),
                &name,
                kube::runtime::wait::conditions::is_crd_established(),
            );
            match tokio::time::timeout(timeout, established).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => {
                    return Err(Error::Timeout {
                        what: format!("CRD {name} to be Established ({e})"),
                        after: timeout,
                    });
                }
                Err(_) => {
                    return Err(Error::Timeout {
                        what: format!("CRD {name} to be Established"),
                        after: timeout,
                    });
                }
            }
        }
        Ok(())
    }

    /// Creates a namespace; one that already exists is fine.
    pub async fn create_namespace(&self, name: &str) -> Result<(), Error> {
        let api: Api<Namespace> = Api::all(self.client());
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.is_already_exists() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Stops the processes (as dropping does), keeping the temporary folder if asked.
    fn stop(&mut self) {
        if let Some(kcm) = &mut self.controller_manager {
            kcm.kill();
        }
        self.apiserver.kill();
        self.etcd.kill();
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        self.stop();
        // `dir` is removed (unless kept) when the fields drop, after the processes are gone.
    }
}

/// Reads the CRD documents of one YAML file.
fn read_crds(path: &Path) -> Result<Vec<serde_json::Value>, Error> {
    use serde::Deserialize as _;
    let text = std::fs::read_to_string(path).map_err(io_err(format!("reading {}", path.display())))?;
    let manifest_err = |message: String| Error::Manifest {
        path: path.to_path_buf(),
        message,
    };
    let mut crds = Vec::new();
    for (index, doc) in serde_yaml::Deserializer::from_str(&text).enumerate() {
        let value =
            serde_json::Value::deserialize(doc).map_err(|e| manifest_err(format!("document {}: {e}", index + 1)))?;
        if value.is_null() {
            continue; // an empty document, e.g. after a trailing `---`
        }
        let kind = value.get("kind").and_then(serde_json::Value::as_str);
        if kind != Some("CustomResourceDefinition") {
            return Err(manifest_err(format!(
                "document {} is a {}, not a CustomResourceDefinition",
                index + 1,
                kind.unwrap_or("document without kind")
            )));
        }
        crds.push(value);
    }
    Ok(crds)
}

/// Waits until kube-controller-manager runs its controllers: its ServiceAccount controller
/// has made the `default` ServiceAccount of namespace `default`. It serves no port to
/// probe, and this is what the tests count on it for.
async fn wait_for_controller_manager(kcm: &mut Proc, client: &kube::Client, timeout: Duration) -> Result<(), Error> {
    let api: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = kcm.exited() {
            return Err(not_ready(kcm, format!("exited with {status}")));
        }
        let last = match api.get_opt("default").await {
            Ok(Some(_)) => return Ok(()),
            Ok(None) => "no ServiceAccount default/default yet".to_owned(),
            Err(e) => format!("reading ServiceAccount default/default: {e}"),
        };
        if Instant::now() >= deadline {
            return Err(not_ready(kcm, format!("not ready after {timeout:?}; last: {last}")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the API server wrote its serving certificate and answers `/readyz` with `ok`.
async fn wait_for_apiserver(
    proc: &mut Proc,
    server: &str,
    ca_file: &Path,
    token: &str,
    timeout: Duration,
) -> Result<(Kubeconfig, kube::Config, kube::Client), Error> {
    let deadline = Instant::now() + timeout;
    let mut client: Option<(Kubeconfig, kube::Config, kube::Client)> = None;
    let mut last = String::from("no answer yet");
    loop {
        if let Some(status) = proc.exited() {
            return Err(not_ready(proc, format!("exited with {status}")));
        }
        if client.is_none() && ca_file.is_file() && ca_file.with_extension("key").is_file() {
            // The certificate is written before the key: once the key is there, it is whole.
            match make_client(server, ca_file, token).await {
                Ok(c) => client = Some(c),
                Err(e) => last = format!("loading the serving certificate: {e}"),
            }
        }
        if let Some((_, _, c)) = &client {
            match readyz(c).await {
                Ok(body) if body.trim() == "ok" => break,
                Ok(body) => last = format!("/readyz answered {body:?}"),
                Err(e) => last = format!("/readyz: {e}"),
            }
        }
        if Instant::now() >= deadline {
            return Err(not_ready(proc, format!("not ready after {timeout:?}; last: {last}")));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    client.ok_or_else(|| not_ready(proc, "no client".into()))
}

async fn readyz(client: &kube::Client) -> Result<String, String> {
    let request = http::Request::get("/readyz")
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    match tokio::time::timeout(Duration::from_secs(5), client.request_text(request)).await {
        Ok(Ok(body)) => Ok(body),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer within 5 s".into()),
    }
}

fn kubeconfig_json(server: &str, ca_file: &Path, token: &str) -> Result<serde_json::Value, Error> {
    use base64::Engine as _;
    let ca = std::fs::read(ca_file).map_err(io_err(format!("reading {}", ca_file.display())))?;
    Ok(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": CONTEXT,
            "cluster": {
                "server": server,
                "certificate-authority-data": base64::engine::general_purpose::STANDARD.encode(ca),
            },
        }],
        "users": [{ "name": ADMIN_USER, "user": { "token": token } }],
        "contexts": [{
            "name": CONTEXT,
            "context": { "cluster": CONTEXT, "user": ADMIN_USER, "namespace": "default" },
        }],
        "current-context": CONTEXT,
        "preferences": {},
    }))
}

async fn make_client(
    server: &str,
    ca_file: &Path,
    token: &str,
) -> Result<(Kubeconfig, kube::Config, kube::Client), Error> {
    let json = kubeconfig_json(server, ca_file, token)?;
    let kubeconfig: Kubeconfig = serde_json::from_value(json).map_err(|e| Error::Io {
        context: "building the kubeconfig".into(),
        source: std::io::Error::other(e),
    })?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &KubeConfigOptions::default()).await?;
    let client = kube::Client::try_from(config.clone())?;
    Ok((kubeconfig, config, client))
}

/// An RSA key pair for signing ServiceAccount tokens, made with `openssl`.
async fn make_service_account_keys(key: &Path, public: &Path) -> Result<(), Error> {
    let run = |args: Vec<std::ffi::OsString>| async move {
        let out = tokio::process::Command::new("openssl")
            .args(&args)
            .output()
            .await
            .map_err(io_err("running openssl (is it installed?)"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(Error::Io {
                context: format!("openssl {args:?}"),
                source: std::io::Error::other(String::from_utf8_lossy(&out.stderr).into_owned()),
            })
        }
    };
    run(vec!["genrsa".into(), "-out".into(), key.into(), "2048".into()]).await?;
    run(vec![
        "rsa".into(),
        "-in".into(),
        key.into(),
        "-pubout".into(),
        "-out".into(),
        public.into(),
    ])
    .await
}

/// Polls `f` every 100 ms until it gives a value, and returns it; panics, naming
/// `what`, when `timeout` passes first. What the cluster tests wait with: an object
/// that reaches a state, a node that loads, a port that closes.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn reads_every_crd_document_and_skips_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "two.yaml",
            "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.example.com}\n---\n# only a comment\n---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: b.example.com}\n---\n",
        );
        let crds = read_crds(&path).unwrap();
        let names: Vec<&str> = crds.iter().map(|c| c["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a.example.com", "b.example.com"]);
    }

    #[test]
    fn a_document_of_another_kind_is_an_error_naming_file_and_document() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "mixed.yaml",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.example.com}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        );
        let err = read_crds(&path).unwrap_err().to_string();
        assert!(err.contains("mixed.yaml"), "{err}");
        assert!(err.contains("document 2 is a ConfigMap"), "{err}");
    }

    #[test]
    fn invalid_yaml_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "bad.yaml", "kind: [unclosed\n");
        let err = read_crds(&path).unwrap_err().to_string();
        assert!(err.contains("bad.yaml") && err.contains("document 1"), "{err}");
    }

    #[test]
    fn missing_binaries_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = Binaries::in_dir(dir.path()).unwrap_err().to_string();
        for name in ["etcd", "kube-apiserver", "kube-controller-manager"] {
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn the_kubeconfig_embeds_server_ca_and_token() {
        let dir = tempfile::tempdir().unwrap();
        let ca = write(dir.path(), "ca.crt", "-----BEGIN CERTIFICATE-----\n");
        let json = kubeconfig_json("https://127.0.0.1:1234", &ca, "secret").unwrap();
        let kc: Kubeconfig = serde_json::from_value(json).unwrap();
        assert_eq!(kc.current_context.as_deref(), Some(CONTEXT));
        let cluster = kc.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:1234"));
        assert!(cluster.certificate_authority_data.is_some());
    }

    /// The retry of a taken API server port, with the real binaries: the test holds
    /// the first port the API server is started on.
    #[tokio::test]
    async fn a_taken_api_server_port_is_given_up_for_another() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = held.local_addr().unwrap().port();
        let mut builder = TestEnv::builder().controller_manager(false);
        builder.first_api_port = Some(taken);
        let env = builder.start().await.unwrap();
        assert_ne!(env.server_url(), format!("https://127.0.0.1:{taken}"));
        // The first try did meet the held port (the log is appended to on each try).
        let log = std::fs::read_to_string(env.dir().join("kube-apiserver.log")).unwrap();
        assert!(process::says_address_in_use(&log, taken), "{log}");
        env.client().apiserver_version().await.unwrap();
    }
}

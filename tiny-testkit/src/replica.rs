//! A module binary run as a process against a test's control plane.

use std::{
    collections::BTreeMap,
    io::{BufRead as _, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
};

use tiny_testenv::TestEnv;

/// A `<module> run` process. Dropping it kills it (SIGKILL): a replica that dies
/// without a word, as a pod whose node is lost.
#[derive(Debug)]
pub struct Replica {
    child: Child,
    probe: String,
    /// The `--identity` it runs with.
    pub identity: String,
}

/// How to start a [`Replica`]; from [`Replica::builder`].
#[derive(Debug)]
pub struct ReplicaBuilder {
    bin: PathBuf,
    kubeconfig: PathBuf,
    namespace: String,
    identity: String,
    module: String,
    version: String,
    lease_seconds: u64,
    grpc: String,
    args: Vec<String>,
    vars: Vec<(String, String)>,
    logs: Option<PathBuf>,
}

impl Replica {
    /// A process of `bin` (a module binary, `env!("CARGO_BIN_EXE_<name>")`) running
    /// module `module` (`--name`, version 0.1.0) in `namespace` of `env`'s control plane
    /// as `identity`, with a 4 s lease and gRPC on a free loopback port.
    pub fn builder(bin: &str, env: &TestEnv, namespace: &str, identity: &str, module: &str) -> ReplicaBuilder {
        ReplicaBuilder {
            bin: bin.into(),
            kubeconfig: env.kubeconfig_path().to_path_buf(),
            namespace: namespace.into(),
            identity: identity.into(),
            module: module.into(),
            version: "0.1.0".into(),
            lease_seconds: 4,
            grpc: "127.0.0.1:0".into(),
            args: Vec::new(),
            vars: Vec::new(),
            logs: None,
        }
    }

    /// Whether the process still runs (it has not exited nor been restarted).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Where its probes and metrics answer.
    pub fn probe_addr(&self) -> &str {
        &self.probe
    }

    /// `GET path` on its probe address: the status code and the body.
    pub async fn probe(&self, path: &str) -> Option<(u16, String)> {
        let request = format!("GET {path} HTTP/1.1\r\nhost: x\r\n\r\n");
        let addr = self.probe.clone();
        let response = tokio::task::spawn_blocking(move || {
            use std::io::{Read as _, Write as _};
            let mut s = std::net::TcpStream::connect(&addr).ok()?;
            s.write_all(request.as_bytes()).ok()?;
            let mut out = String::new();
            s.read_to_string(&mut out).ok()?;
            Some(out)
        })
        .await
        .ok()??;
        let code = response.split_whitespace().nth(1)?.parse().ok()?;
        let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())?;
        Some((code, body))
    }

    /// A counter or gauge of its `/metrics`, by its whole series name (labels
    /// included: `tiny_nats_server_calls_total{outcome="OK"}`).
    pub async fn metric(&self, series: &str) -> Option<u64> {
        let (_, body) = self.probe("/metrics").await?;
        let values: BTreeMap<&str, u64> = body
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.rsplit_once(' '))
            .filter_map(|(k, v)| Some((k, v.trim().parse().ok()?)))
            .collect();
        values.get(series).copied()
    }

    /// Whether it leads (its `tiny_leader` gauge).
    pub async fn leads(&self) -> bool {
        self.metric("tiny_leader").await == Some(1)
    }
}

/// Waits (up to 60 s) until exactly one of `replicas` leads; its index.
pub async fn the_leader(replicas: &[Replica]) -> usize {
    tiny_testenv::eventually("exactly one leader", std::time::Duration::from_secs(60), || async {
        let mut leaders = Vec::new();
        for (i, r) in replicas.iter().enumerate() {
            if r.leads().await {
                leaders.push(i);
            }
        }
        (leaders.len() == 1).then(|| leaders[0])
    })
    .await
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl ReplicaBuilder {
    /// `--version`.
    #[must_use]
    pub fn version(mut self, version: &str) -> Self {
        self.version = version.into();
        self
    }

    /// `--lease-seconds`.
    #[must_use]
    pub fn lease_seconds(mut self, seconds: u64) -> Self {
        self.lease_seconds = seconds;
        self
    }

    /// `--grpc-server-bind-address` (default `127.0.0.1:0`).
    #[must_use]
    pub fn grpc(mut self, addr: &str) -> Self {
        self.grpc = addr.into();
        self
    }

    /// `--nats-url`: the module on NATS.
    #[must_use]
    pub fn nats(self, url: &str) -> Self {
        self.args(["--nats-url", url])
    }

    /// More arguments of `run`.
    #[must_use]
    pub fn args<'a>(mut self, args: impl IntoIterator<Item = &'a str>) -> Self {
        self.args.extend(args.into_iter().map(str::to_owned));
        self
    }

    /// An environment variable.
    #[must_use]
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.vars.push((key.into(), value.into()));
        self
    }

    /// Environment variables.
    #[must_use]
    pub fn envs<'a>(mut self, vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        self.vars
            .extend(vars.into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())));
        self
    }

    /// Its stderr (the logs) into `path` instead of the test's.
    #[must_use]
    pub fn logs(mut self, path: impl Into<PathBuf>) -> Self {
        self.logs = Some(path.into());
        self
    }

    /// Starts it and waits for its first line, which names its probe address.
    pub fn start(self) -> Replica {
        let stderr = match &self.logs {
            Some(path) => Stdio::from(std::fs::File::create(path).expect("log file")),
            None => Stdio::inherit(),
        };
        let lease = self.lease_seconds.to_string();
        let mut child = Command::new(&self.bin)
            .args(["run", "--name", &self.module, "--version", &self.version])
            .args(["--namespace", &self.namespace, "--lease-seconds", &lease])
            .args(["--identity", &self.identity, "--grpc-server-bind-address", &self.grpc])
            .args(&self.args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("RUST_LOG", "warn")
            .envs(self.vars.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("{} starts: {e}", self.bin.display()));
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let probe = line
            .trim()
            .strip_prefix("probe-addr ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Replica {
            child,
            probe,
            identity: self.identity,
        }
    }
}

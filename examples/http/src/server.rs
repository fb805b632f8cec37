//! `http_server`: a flow that answers HTTP requests.
//!
//! A message on `start` opens the listener (node work, on every replica that runs the
//! node, as Go's does: the Service spreads requests over them). Each HTTP request is
//! emitted on `request` and waits: the answer is what comes back up the chain,
//! typically from a node wired back into this server's `response` port, whose handler
//! returns the response. No request ids: the blocking emit is the correlation.
//!
//! The node keeps the start message and the port where Go's http_server keeps them,
//! in the TinyNode's `status.metadata`: `http-start` (the start message as JSON
//! text, removed by Stop) and `port` (the port in decimal, kept across Stop). So a
//! restarted module, another replica, or this module taking over a node the Go
//! module ran, listens again on the same port. Nodes this module ran before it used
//! Go's keys have `_state/start` and `_state/port`: read when Go's are absent,
//! removed when Go's are written.

use std::{convert::Infallible, sync::Arc, task::Poll, time::Duration};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited, combinators::BoxBody};
use hyper::{Request as HttpReq, Response as HttpResp, StatusCode, body::Incoming, header, service::service_fn};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{Value, json};
use tiny_sdk::{Msg, PortShape, client::ExposePortRequest, flow::Node, message::Reply, prelude::*};

use crate::headers::Header;

mod arrived;
mod request;

use arrived::{Arrived, Http};
pub use request::Request;

/// Settings, as Go's server, and two limits of tiny's.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct ServerSettings {
    /// The status port tells when the server goes up or down.
    #[tiny(title = "Enable status port")]
    #[serde(default)]
    pub enable_status_port: bool,
    /// The stop port stops the running server on any message.
    #[tiny(title = "Enable stop port")]
    #[serde(default)]
    pub enable_stop_port: bool,
    /// The largest request body, in MB; 0 means 10 MB. A larger body is answered with
    /// `413 Payload Too Large`. A request that crosses to another module must also fit
    /// the wire: the NATS broker's `max_payload` (1 MB on a default broker) or gRPC's
    /// 4 MB; a larger one is answered `413` too (`MESSAGE_TOO_LARGE`).
    #[tiny(title = "Max Body Size (MB)")]
    #[serde(default)]
    pub max_body_size: i64,
    /// Connections served at once (tiny's; Go has no cap). One past the cap is answered
    /// `503 Service Unavailable` and closed (over HTTPS, closed). 0 or less means 1024.
    #[tiny(title = "Max Connections")]
    #[serde(default = "default_max_connections")]
    pub max_connections: i64,
    /// Seconds a kept-alive connection may sit idle between requests before it is
    /// closed (tiny's; Go keeps it open). 0 or less means 120.
    #[tiny(title = "Idle Timeout (seconds)")]
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: i64,
}

/// The connection cap when the settings give none.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// The idle timeout when the settings give none.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

fn default_max_connections() -> i64 {
    DEFAULT_MAX_CONNECTIONS as i64
}

fn default_idle_timeout() -> i64 {
    DEFAULT_IDLE_TIMEOUT.as_secs() as i64
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            enable_status_port: false,
            enable_stop_port: false,
            max_body_size: 0,
            max_connections: default_max_connections(),
            idle_timeout: default_idle_timeout(),
        }
    }
}

/// What `start` takes: how to listen. Fields left out keep the port's defaults
/// (60 s to read, 10 s to answer), on purpose: Go decodes into zero values, no limits.
/// (The editor fills every field from the port's default.)
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct Start {
    /// Start context: every request carries it.
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Use the cluster's automatic subdomain, if it has one.
    #[tiny(title = "Automatically generate hostname")]
    pub auto_host_name: bool,
    /// Virtual hosts this server answers for (an Ingress rule each).
    #[tiny(title = "Hostnames")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hostnames: Vec<String>,
    /// Seconds to read a request, its body included (then `408`); 0 or less: no limit.
    #[tiny(title = "Read Timeout")]
    pub read_timeout: i64,
    /// Seconds the flow has to answer; then `504 Gateway Timeout`. 0 or less: no limit.
    #[tiny(title = "Write Timeout")]
    pub write_timeout: i64,
    /// PEM or base64-encoded PEM certificate (chain) for HTTPS; empty: plain HTTP.
    #[tiny(title = "TLS Certificate", format = "textarea")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tls_cert: String,
    /// PEM or base64-encoded PEM private key of the certificate.
    #[tiny(title = "TLS Private Key", format = "textarea", secret)]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tls_key: String,
}

impl Default for Start {
    fn default() -> Self {
        Self {
            context: Value::Null,
            auto_host_name: true,
            hostnames: Vec::new(),
            read_timeout: 60,
            write_timeout: 10,
            tls_cert: String::new(),
            tls_key: String::new(),
        }
    }
}

/// The TLS side of a server started with `tlsCert` and `tlsKey` (both given, as Go's),
/// each PEM or base64 of PEM; `None` for plain HTTP. A certificate or key that does not
/// read is an error naming the field.
fn tls(start: &Start) -> Result<Option<tokio_rustls::TlsAcceptor>> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject as _};
    if start.tls_cert.trim().is_empty() || start.tls_key.trim().is_empty() {
        return Ok(None);
    }
    let certs = CertificateDer::pem_slice_iter(pem_text(&start.tls_cert).as_bytes())
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::permanent(format!("tlsCert is not a PEM certificate: {e}")))?;
    if certs.is_empty() {
        return Err(Error::permanent("tlsCert holds no certificate"));
    }
    let key = PrivateKeyDer::from_pem_slice(pem_text(&start.tls_key).as_bytes())
        .map_err(|e| Error::permanent(format!("tlsKey is not a PEM private key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::permanent(format!("TLS setup: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::permanent(format!("tlsCert and tlsKey do not make a server: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
}

/// PEM as given, or decoded from base64 when it is not PEM (Go's rule: a certificate
/// passes through an edge configuration without its newlines that way).
fn pem_text(s: &str) -> std::borrow::Cow<'_, str> {
    use base64::Engine as _;
    let t = s.trim();
    if t.starts_with("-----BEGIN") {
        return std::borrow::Cow::Borrowed(s);
    }
    base64::engine::general_purpose::STANDARD
        .decode(t)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .map_or(std::borrow::Cow::Borrowed(s), std::borrow::Cow::Owned)
}

/// What `stop` takes: anything.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Stop {
    /// Ignored: any message stops the server.
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
}

/// The answer to an HTTP request. Fields left out keep their defaults (status 200).
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct Response {
    /// HTTP status code for response.
    #[tiny(title = "Status Code")]
    pub status_code: u16,
    /// Content type of the response.
    #[tiny(
        title = "Content Type",
        enum(
            "application/json",
            "application/xml",
            "text/xml",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "text/html",
            "text/plain"
        )
    )]
    pub content_type: String,
    #[tiny(title = "Response headers")]
    // The field's own default: an answer without headers survives the JSON trip, so a
    // typed one is handed over as it is (see `Reply::take`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    #[tiny(title = "Response body", format = "textarea")]
    pub body: String,
}

impl Default for Response {
    fn default() -> Self {
        Self {
            status_code: 200,
            content_type: String::new(),
            headers: Vec::new(),
            body: String::new(),
        }
    }
}

/// The dashboard: running or not, and where.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct Control {
    #[tiny(title = "Status", readonly)]
    pub status: String,
    /// Where the server answers; `null` while it does not run, as Go shows it.
    #[tiny(title = "Listen Address", readonly)]
    #[serde(default, serialize_with = "null_when_empty", deserialize_with = "empty_when_null")]
    pub listen_addr: Vec<String>,
}

fn null_when_empty<S: serde::Serializer>(list: &[String], s: S) -> std::result::Result<S::Ok, S::Error> {
    if list.is_empty() {
        s.serialize_none()
    } else {
        s.collect_seq(list)
    }
}

fn empty_when_null<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

/// What `status` sends when the server goes up or down.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    #[tiny(title = "Context")]
    #[serde(default)]
    pub context: Value,
    #[tiny(title = "Listen Address")]
    #[serde(default)]
    pub listen_addr: Vec<String>,
    #[tiny(title = "Is running")]
    pub is_running: bool,
}

/// HTTP server: listens once a message reaches Start; emits each request on Request
/// and answers with what the flow returns (wire the answer back to Response).
#[derive(Component, Default, Debug)]
#[component(name = "http_server", description = "HTTP Server", tags("HTTP", "Server"), settings = ServerSettings, control = Control, hooks)]
pub struct HttpServer {
    /// Each HTTP request; the flow's answer is the HTTP response.
    #[port(position = Right)]
    request: Output<Request, Response>,
    /// Wire the flow's answer here: it becomes the HTTP response.
    #[port(position = Right)]
    response: Input<Response>,
    /// Opens the listener.
    #[port(position = Left)]
    start: Input<Start>,
    /// Closes the listener (while the settings enable it).
    #[port(position = Left, enabled_by = enable_stop_port)]
    stop: Input<Stop>,
    /// Up and down, while the settings enable it.
    #[port(position = Bottom, enabled_by = enable_status_port)]
    status: Output<Status>,
    /// Where the running server is reachable, for the view.
    listening: Arc<std::sync::Mutex<Vec<String>>>,
    /// The start message's context, which every request carries: read once per
    /// start, not from node state per request.
    context: Arc<std::sync::RwLock<Value>>,
}

/// Go's metadata keys (http-module `components/server/server.go`).
const START: &str = "http-start";
const PORT: &str = "port";
/// Node state keys this module used before it used Go's (read as a fallback).
const OLD_START: &str = "start";
const OLD_PORT: &str = "port";
const WORK: &str = "server";

/// The start message the node keeps, if any: Go's `http-start`, else this module's
/// old state.
fn saved_start(ctx: &Ctx<HttpServer>) -> Result<Option<Start>> {
    if let Some(raw) = ctx.metadata().get(START) {
        match serde_json::from_str::<Start>(&raw) {
            // As Go: a start with neither timeout is not one it wrote.
            Ok(s) if s.read_timeout != 0 || s.write_timeout != 0 => return Ok(Some(s)),
            Ok(_) => {}
            Err(e) => tracing::warn!(node = ctx.node_name(), error = %e, "`{START}` does not decode; not restored"),
        }
        return Ok(None);
    }
    ctx.state().get(OLD_START)
}

/// The port the node keeps (0: none yet): Go's `port`, else this module's old state.
fn saved_port(ctx: &Ctx<HttpServer>) -> Result<u16> {
    if let Some(port) = ctx.metadata().get(PORT).and_then(|p| p.trim().parse::<u16>().ok()) {
        return Ok(port);
    }
    Ok(ctx.state().get(OLD_PORT)?.unwrap_or(0))
}

#[handlers]
impl HttpServer {
    async fn on_response(&self, _: &Ctx<Self>, response: Response) -> Result<Reply> {
        // The handler's value is the answer: it travels back up to the request's emit.
        Ok(Reply::msg(Msg::new(response)))
    }

    async fn on_start(&self, ctx: &Ctx<Self>, start: Start) -> Result<()> {
        // A certificate that does not read fails the start, before anything is kept.
        tls(&start)?;
        ctx.metadata().set(START, &serde_json::to_string(&start)?).await?;
        ctx.state().delete(OLD_START).await?;
        if let Ok(mut c) = self.context.write() {
            c.clone_from(&start.context);
        }
        // A running server keeps its socket; later requests carry the new context.
        if !ctx.work_running(WORK) {
            self.listen(ctx);
        }
        Ok(())
    }

    async fn on_stop(&self, ctx: &Ctx<Self>, _: Stop) -> Result<()> {
        ctx.metadata().delete(START).await?;
        ctx.state().delete(OLD_START).await?;
        if ctx.work_running(WORK) {
            ctx.stop_work(WORK);
            self.went_down(ctx);
        }
        Ok(())
    }

    /// Shows the view. Under the `listening` lock, as the listener shows its own
    /// changes: a view drawn from old addresses never lands after a newer one.
    fn show(&self, ctx: &Ctx<Self>) {
        let listening = self.listening.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let running = ctx.work_running(WORK);
        ctx.show_control(&Control {
            status: if running { "Running" } else { "Not running" }.into(),
            listen_addr: if running { listening.clone() } else { Vec::new() },
        });
    }

    fn went_down(&self, ctx: &Ctx<Self>) {
        if let Ok(mut l) = self.listening.lock() {
            l.clear();
        }
        self.show(ctx);
        if ctx.settings().enable_status_port {
            let status = self.status;
            ctx.detach(move |ctx| async move {
                status
                    .emit(
                        &ctx,
                        Status {
                            is_running: false,
                            ..Status::default()
                        },
                    )
                    .await
                    .map(drop)
            });
        }
    }

    /// Starts the listener as node work.
    fn listen(&self, ctx: &Ctx<Self>) {
        let (request, status, listening, context) =
            (self.request, self.status, self.listening.clone(), self.context.clone());
        ctx.spawn(WORK, move |ctx| async move {
            let result = serve(&ctx, request, status, &listening, context).await;
            let mut l = listening.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            l.clear();
            ctx.show_control(&Control {
                status: match &result {
                    Ok(()) => "Not running".into(),
                    Err(e) => format!("Not running: {e}"),
                },
                listen_addr: Vec::new(),
            });
            drop(l);
            result
        });
        self.show(ctx);
    }
}

impl Hooks for HttpServer {
    async fn on_reconcile(&self, ctx: &Ctx<Self>, _: &Node) -> Result<()> {
        // A restarted module, or another replica, listens again on the saved port.
        let started = saved_start(ctx)?.is_some();
        if started && !ctx.work_running(WORK) {
            self.listen(ctx);
        } else if !started && ctx.work_running(WORK) {
            // Stopped on another replica.
            ctx.stop_work(WORK);
            self.went_down(ctx);
        } else {
            self.show(ctx);
        }
        Ok(())
    }

    async fn on_destroy(&self, ctx: &Ctx<Self>) -> Result<()> {
        ctx.stop_work(WORK);
        Ok(())
    }

    fn shape_port(&self, _: &ServerSettings, port: &mut PortShape) {
        if port.name == tiny_sdk::contract::port::CONTROL {
            port.label = "Dashboard".into();
        }
    }
}

/// How long a saved port that is still in use is tried again: the server this one
/// replaces (the node restarted, or the process before this one) may not have let go
/// of it yet.
const PORT_RELEASE: std::time::Duration = std::time::Duration::from_secs(3);

/// Listens on `port` (0: any), trying a port still held for up to [`PORT_RELEASE`].
async fn bind(port: u16) -> std::io::Result<tokio::net::TcpListener> {
    let deadline = tokio::time::Instant::now() + PORT_RELEASE;
    loop {
        match tokio::net::TcpListener::bind(("0.0.0.0", port)).await {
            Err(e)
                if port != 0 && e.kind() == std::io::ErrorKind::AddrInUse && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

/// The listener's life: bind (on the saved port), expose, serve until stopped.
async fn serve(
    ctx: &Ctx<HttpServer>,
    request: Output<Request, Response>,
    status: Output<Status>,
    listening: &std::sync::Mutex<Vec<String>>,
    context: Arc<std::sync::RwLock<Value>>,
) -> Result<()> {
    let start: Start = saved_start(ctx)?.unwrap_or_default();
    if let Ok(mut c) = context.write() {
        c.clone_from(&start.context);
    }
    let tls = tls(&start)?;
    let saved = saved_port(ctx)?;
    let listener = bind(saved)
        .await
        .map_err(|e| Error::transient(format!("cannot listen on port {saved}: {e}")))?;
    let port = listener.local_addr()?.port();
    // As Go: the port in decimal, kept across Stop so the next Start reuses it.
    ctx.metadata().set(PORT, &port.to_string()).await?;
    ctx.state().delete(OLD_PORT).await?;
    let addresses = expose(ctx, &start, port, tls.is_some()).await;
    {
        let mut l = listening.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        l.clone_from(&addresses);
        ctx.show_control(&Control {
            status: "Running".into(),
            listen_addr: addresses.clone(),
        });
    }
    if ctx.settings().enable_status_port {
        let up = Status {
            context: start.context.clone(),
            listen_addr: addresses,
            is_running: true,
        };
        ctx.detach(move |ctx| async move { status.emit(&ctx, up).await.map(drop) });
    }
    tracing::info!(node = ctx.node_name(), port, "http_server listening");
    let limit = body_limit(ctx.settings());
    warn_over_wire(ctx.node_name(), limit);
    let serving = Arc::new(Serving {
        context,
        ctx: ctx.clone(),
        request,
        limit,
        write_timeout: seconds(start.write_timeout),
        read_timeout: seconds(start.read_timeout),
        tls: tls.is_some(),
        pod: std::env::var("HOSTNAME").unwrap_or_default().into(),
    });
    let read_timeout = seconds(start.read_timeout);
    let cap = usize::try_from(ctx.settings().max_connections)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_CONNECTIONS);
    let open = Arc::new(tokio::sync::Semaphore::new(cap));
    let idle = seconds(ctx.settings().idle_timeout).unwrap_or(DEFAULT_IDLE_TIMEOUT);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::debug!(error = %e, "accept failed");
                    continue;
                }
            },
            () = ctx.cancelled() => return Ok(()),
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            over_cap(stream, tls.is_some(), cap);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let serving = serving.clone();
        let stop = ctx.hop().cancel.clone();
        let tls = tls.clone();
        let limits = Limits { read_timeout, idle };
        tokio::spawn(async move {
            // Held while the connection is served.
            let _permit = permit;
            let Some(tls) = tls else {
                return connection(stream, peer, serving, limits, stop).await;
            };
            // The handshake within the read timeout (10 s without one): a client that
            // connects and says nothing does not hold a task.
            let limit = read_timeout.unwrap_or(Duration::from_secs(10));
            match tokio::time::timeout(limit, tls.accept(stream)).await {
                Ok(Ok(stream)) => connection(stream, peer, serving, limits, stop).await,
                Ok(Err(e)) => tracing::debug!(error = %e, %peer, "TLS handshake failed"),
                Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
            }
        });
    }
}

/// A connection past the cap: answered `503` and closed, without a task. Over TLS
/// there is no answer before a handshake, so it is only closed.
fn over_cap(stream: tokio::net::TcpStream, tls: bool, cap: usize) {
    tracing::debug!(cap, "http_server at its connection cap: a connection refused");
    if !tls {
        // A new connection's send buffer is empty: the whole answer fits at once.
        let _ = stream.try_write(
            b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\nRetry-After: 1\r\n\r\n",
        );
    }
}

/// How long one connection may take to send a request, and stay idle between them.
#[derive(Clone, Copy)]
struct Limits {
    read_timeout: Option<Duration>,
    idle: Duration,
}

/// Requests of one connection under way, and when the last one ended: what tells an
/// idle connection.
struct Activity {
    busy: std::sync::atomic::AtomicUsize,
    since: std::sync::Mutex<tokio::time::Instant>,
}

impl Activity {
    /// When the connection became idle, if it is.
    fn idle_since(&self) -> Option<tokio::time::Instant> {
        let since = *self.since.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (self.busy.load(std::sync::atomic::Ordering::SeqCst) == 0).then_some(since)
    }
}

/// One request under way on a connection; its end restarts the idle clock.
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: &Arc<Activity>) -> Self {
        activity.busy.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(activity.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.since.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = tokio::time::Instant::now();
        self.0.busy.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Serves one connection (plain or TLS) until it closes, sits idle past
/// `limits.idle`, or the listener stops.
async fn connection<IO>(
    io: IO,
    peer: std::net::SocketAddr,
    serving: Arc<Serving>,
    limits: Limits,
    stop: tiny_sdk::context::Cancel,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new());
    if let Some(t) = limits.read_timeout {
        http.header_read_timeout(t);
    }
    let activity = Arc::new(Activity {
        busy: std::sync::atomic::AtomicUsize::new(0),
        since: std::sync::Mutex::new(tokio::time::Instant::now()),
    });
    let seen = activity.clone();
    let service = service_fn(move |req| {
        let serving = serving.clone();
        let busy = Busy::new(&seen);
        async move {
            let answer = serving.answer(req, peer).await;
            drop(busy);
            Ok::<_, Infallible>(answer)
        }
    });
    let mut conn = std::pin::pin!(http.serve_connection(TokioIo::new(io), service));
    // The listener's stop and the idle clock are watched by a task of their own, which
    // tells this one when either comes: polled here beside the connection, they cost
    // a few hundred instructions at every wake-up, that is at every request.
    let watch = Arc::new(Watch::default());
    let _watcher = Aborting(tokio::spawn(watch_connection(
        watch.clone(),
        activity,
        limits.idle,
        stop,
    )));
    let mut closing = false;
    std::future::poll_fn(|cx| {
        // Registered before the look: a word said after it wakes this task again.
        watch.register(cx.waker());
        match watch.said.load(std::sync::atomic::Ordering::Acquire) {
            // Connections end with the listener's work.
            Watch::STOP => return Poll::Ready(()),
            Watch::IDLE if !closing => {
                // Between requests: closed at once.
                conn.as_mut().graceful_shutdown();
                closing = true;
            }
            _ => {}
        }
        conn.as_mut().poll(cx).map(drop)
    })
    .await;
}

/// What a connection's watcher says to it: nothing yet, idle, or stop.
#[derive(Default)]
struct Watch {
    said: std::sync::atomic::AtomicU8,
    /// The connection's task, to wake when something is said.
    task: std::sync::Mutex<Option<std::task::Waker>>,
}

impl Watch {
    const IDLE: u8 = 1;
    const STOP: u8 = 2;

    fn register(&self, waker: &std::task::Waker) {
        let mut task = self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match task.as_mut() {
            Some(w) if w.will_wake(waker) => {}
            _ => *task = Some(waker.clone()),
        }
    }

    fn say(&self, what: u8) {
        self.said.store(what, std::sync::atomic::Ordering::Release);
        let task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            task.wake();
        }
    }
}

/// Says `IDLE` once the connection has sat idle for `idle`, and `STOP` when the
/// listener stops.
async fn watch_connection(watch: Arc<Watch>, activity: Arc<Activity>, idle: Duration, stop: tiny_sdk::context::Cancel) {
    let idle_said = async {
        loop {
            // Checked again at the end of the idle time counted from the last request.
            let wake = activity.idle_since().unwrap_or_else(tokio::time::Instant::now) + idle;
            tokio::time::sleep_until(wake).await;
            if activity
                .idle_since()
                .is_some_and(|since| since + idle <= tokio::time::Instant::now())
            {
                watch.say(Watch::IDLE);
                return;
            }
        }
    };
    tokio::select! {
        () = stop.cancelled() => return watch.say(Watch::STOP),
        () = idle_said => {}
    }
    stop.cancelled().await;
    watch.say(Watch::STOP);
}

/// A task aborted when its handle is dropped: a connection's watcher ends with it.
struct Aborting(tokio::task::JoinHandle<()>);

impl Drop for Aborting {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Exposes `port` through the resource manager; without one, or when it fails, the
/// server is reachable on the pod only, as Go reports it.
async fn expose(ctx: &Ctx<HttpServer>, start: &Start, port: u16, tls: bool) -> Vec<String> {
    let scheme = if tls { "https" } else { "http" };
    let local = vec![format!("{scheme}://localhost:{port}")];
    let Some(client) = ctx.client() else {
        return local;
    };
    let auto = (start.auto_host_name || start.hostnames.is_empty())
        .then(|| ctx.node_name().rsplit('.').next().unwrap_or_default().to_owned());
    let req = ExposePortRequest {
        port,
        hostnames: start.hostnames.clone(),
        auto_hostname: auto,
        ..ExposePortRequest::default()
    };
    let mut result = client.expose_port(req.clone()).await;
    if result.is_err() && req.auto_hostname.is_some() && req.hostnames.is_empty() {
        // As Go: a cluster without automatic hostnames still gets the Service.
        result = client
            .expose_port(ExposePortRequest {
                auto_hostname: None,
                ..req
            })
            .await;
    }
    match result {
        Ok(mut urls) if !urls.is_empty() => {
            // Run outside a pod (on a developer's machine), the Service's name does not
            // resolve here: show the address that answers here too.
            if std::env::var_os("KUBERNETES_SERVICE_HOST").is_none() {
                urls.extend(local);
            }
            urls
        }
        Ok(_) => local,
        Err(e) => {
            tracing::warn!(node = ctx.node_name(), port, error = %e, "could not expose the port; reachable on the pod only");
            local
        }
    }
}

fn seconds(s: i64) -> Option<Duration> {
    u64::try_from(s).ok().filter(|s| *s > 0).map(Duration::from_secs)
}

/// Says once per node and limit when bodies this server takes would not fit the wire
/// to another module: a request carrying one fails with `413` and `MESSAGE_TOO_LARGE`.
fn warn_over_wire(node: &str, limit: usize) {
    static WARNED: std::sync::Mutex<Vec<(String, usize)>> = std::sync::Mutex::new(Vec::new());
    let Some(max) = tiny_sdk::limits::wire_max().filter(|max| limit > *max) else {
        return;
    };
    let mut warned = WARNED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if warned.iter().any(|(n, l)| n == node && *l == limit) {
        return;
    }
    warned.push((node.to_owned(), limit));
    tracing::warn!(
        node,
        max_body_size = limit,
        wire_max = max,
        "maxBodySize is larger than the wire to other modules carries (the NATS broker's max_payload, or gRPC's \
         4 MiB): a larger body crossing modules is answered 413 (MESSAGE_TOO_LARGE); raise the broker's \
         max_payload or lower maxBodySize"
    );
}

fn body_limit(settings: &ServerSettings) -> usize {
    let mb = usize::try_from(settings.max_body_size)
        .ok()
        .filter(|m| *m > 0)
        .unwrap_or(10);
    mb.saturating_mul(1024 * 1024)
}

type Body = BoxBody<Bytes, Infallible>;

/// What every connection of one listener shares.
struct Serving {
    context: Arc<std::sync::RwLock<Value>>,
    ctx: Ctx<HttpServer>,
    request: Output<Request, Response>,
    limit: usize,
    write_timeout: Option<Duration>,
    /// As Go's `ReadTimeout`, which covers the body too: hyper's header timeout
    /// covers the head, this the body.
    read_timeout: Option<Duration>,
    /// The listener speaks HTTPS: every request's `scheme` is `https`, as Echo says.
    tls: bool,
    pod: Arc<str>,
}

/// `work`'s output, or `None` when `limit` passed first. The deadline counts from now,
/// but its timer is armed only when the work is not done at its first poll: most
/// requests' are (a body all there, a flow that answers at once), and a timer costs an
/// entry put in tokio's timer wheel and taken out again.
async fn within<F: Future>(limit: Option<Duration>, work: F) -> Option<F::Output> {
    let Some(limit) = limit else {
        return Some(work.await);
    };
    let deadline = tokio::time::Instant::now() + limit;
    let mut work = std::pin::pin!(work);
    match std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await {
        Poll::Ready(r) => Some(r),
        Poll::Pending => tokio::time::timeout_at(deadline, work).await.ok(),
    }
}

impl Serving {
    /// One HTTP request through the flow.
    async fn answer(&self, req: HttpReq<Incoming>, peer: std::net::SocketAddr) -> HttpResp<Body> {
        let (parts, body) = req.into_parts();
        let collect = Limited::new(body, self.limit).collect();
        let Some(collected) = within(self.read_timeout, collect).await else {
            return plain(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "request body not read within the read timeout ({:?})",
                    self.read_timeout.unwrap_or_default()
                ),
            );
        };
        let body = match collected {
            Ok(b) => b.to_bytes(),
            Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("request body over {} bytes", self.limit),
                );
            }
            Err(_) => return plain(StatusCode::BAD_REQUEST, "could not read request body".into()),
        };
        let context = self.context.read().map(|c| c.clone()).unwrap_or_default();
        // Its fields are made only when read (see `arrived`).
        let msg = Msg::new(Arrived::Http(Box::new(Http {
            parts,
            body,
            peer,
            tls: self.tls,
            context,
            pod: self.pod.clone(),
        })));
        // Each request its own cancellation: a timeout or a client that went away
        // stops this chain (in this module and across gRPC), nothing else.
        let (ctx, cancel) = self.ctx.scoped();
        let _abandon = cancel.drop_guard();
        let emit = ctx.emit_msg(self.request.name(), msg);
        let Some(reply) = within(self.write_timeout, emit).await else {
            return json_status(StatusCode::GATEWAY_TIMEOUT, "Gateway Timeout");
        };
        let response = match reply.and_then(|r| {
            if r.is_empty() {
                Ok(None)
            } else {
                r.take::<Response>().map(Some)
            }
        }) {
            Ok(Some(r)) => r,
            Ok(None) => {
                tracing::warn!(
                    node = self.ctx.node_name(),
                    "the flow answered nothing: wire an answer to `response`"
                );
                return json_status(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
            }
            Err(e) => {
                tracing::warn!(node = self.ctx.node_name(), error = %e, "the flow failed the request");
                return failure_status(&e);
            }
        };
        to_http(response)
    }
}

/// The flow's answer as HTTP: headers set (the last value of a repeated name wins),
/// `contentType` over any `Content-Type` header, status 0 read as 200.
fn to_http(r: Response) -> HttpResp<Body> {
    let code = if r.status_code == 0 { 200 } else { r.status_code };
    let Ok(status) = StatusCode::from_u16(code) else {
        tracing::warn!(code, "the flow answered an invalid status code");
        return json_status(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error");
    };
    let mut out = HttpResp::new(Full::new(Bytes::from(r.body)).boxed());
    *out.status_mut() = status;
    let headers = out.headers_mut();
    for h in &r.headers {
        match (
            header::HeaderName::from_bytes(h.key.as_bytes()),
            header::HeaderValue::from_str(&h.value),
        ) {
            (Ok(k), Ok(v)) => {
                headers.insert(k, v);
            }
            _ => tracing::debug!(key = %h.key, "skipped a response header that HTTP cannot carry"),
        }
    }
    if let Ok(ct) = header::HeaderValue::from_str(&r.content_type)
        && !r.content_type.is_empty()
    {
        headers.insert(header::CONTENT_TYPE, ct);
    }
    if !headers.contains_key(header::CONTENT_TYPE) {
        headers.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; charset=UTF-8"),
        );
    }
    out
}

fn plain(status: StatusCode, text: String) -> HttpResp<Body> {
    let mut out = HttpResp::new(Full::new(Bytes::from(text)).boxed());
    *out.status_mut() = status;
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    out
}

/// The answer to a flow that failed: a status that fits the error's code (413 for a
/// message too large for the wire, 504 for a module that did not answer in time, 502
/// for one that cannot be reached), 500 otherwise; the body names the code, never the
/// error's text (it may hold internals).
fn failure_status(e: &tiny_sdk::Error) -> HttpResp<Body> {
    use tiny_sdk::error::code;
    let status = match e.code() {
        Some(code::MESSAGE_TOO_LARGE) => StatusCode::PAYLOAD_TOO_LARGE,
        Some(code::TIMEOUT) => StatusCode::GATEWAY_TIMEOUT,
        Some(code::UNREACHABLE | code::MODULE_UNKNOWN) => StatusCode::BAD_GATEWAY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    let reason = status.canonical_reason().unwrap_or("Error");
    let mut out = json_status(status, reason);
    if let Some(c) = e.code() {
        let body = json!({ "message": reason, "code": c }).to_string();
        *out.body_mut() = Full::new(Bytes::from(body)).boxed();
    }
    out
}

/// Go's (echo's) error body: `{"message": "..."}`.
fn json_status(status: StatusCode, message: &str) -> HttpResp<Body> {
    let mut out = HttpResp::new(Full::new(Bytes::from(json!({ "message": message }).to_string())).boxed());
    *out.status_mut() = status;
    out.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    out
}

//! The gRPC server: other modules' messages into this module's [`Engine`].
//!
//! Serves `module.ModuleService` (the Go SDK's service, so Go modules can call it)
//! and the standard `grpc.health.v1.Health` service, which reports SERVING.

use std::{fmt, future::Future, net::SocketAddr, time::Duration};

use tiny_sdk::{Error, engine::Engine};
use tokio::{net::TcpListener, task::JoinHandle};
use tokio_util::sync::CancellationToken;
use tonic::{
    Code, Request, Response, Status,
    transport::{Server, server::TcpIncoming},
};

use crate::inbound::{self, Envelope, Inbound, Refusal};

use super::{
    proto::{
        MessageRequest, MessageResponse,
        module_service_server::{ModuleService, ModuleServiceServer},
    },
    wire,
};
pub use crate::remote::LeaderFn;

/// How the server runs.
#[derive(Clone)]
pub struct ServerOptions {
    /// The largest message taken or reply sent, encoded (default
    /// [`wire::DEFAULT_MAX_MESSAGE_SIZE`], 4 MiB). A bigger request is refused by
    /// the transport with `OutOfRange`/`ResourceExhausted`; a bigger reply becomes a
    /// permanent error that names the limit.
    pub max_message_size: usize,
    /// HTTP/2 ping interval on idle connections (default 10 s, as the Go server).
    pub keepalive_interval: Duration,
    /// How long a ping may go unanswered before the connection is closed (default 3 s).
    pub keepalive_timeout: Duration,
    /// Whether this replica leads, read per message (default: never).
    pub leader: Option<LeaderFn>,
    /// The most requests one connection has in flight (default 256); past it the
    /// connection's next stream waits.
    /// All connections together are held to the engine's
    /// [`max_in_flight`](tiny_sdk::engine::EngineBuilder::max_in_flight).
    pub concurrency_per_connection: usize,
}

/// How many requests one connection may have in flight, by default.
pub const CONCURRENCY_PER_CONNECTION: usize = 256;

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_message_size: wire::DEFAULT_MAX_MESSAGE_SIZE,
            keepalive_interval: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(3),
            leader: None,
            concurrency_per_connection: CONCURRENCY_PER_CONNECTION,
        }
    }
}

impl fmt::Debug for ServerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerOptions")
            .field("max_message_size", &self.max_message_size)
            .field("keepalive_interval", &self.keepalive_interval)
            .field("keepalive_timeout", &self.keepalive_timeout)
            .field("leader", &self.leader.is_some())
            .field("concurrency_per_connection", &self.concurrency_per_connection)
            .finish()
    }
}

/// `module.ModuleService` over an [`Engine`].
struct Handler {
    engine: Engine,
    max_message_size: usize,
    leader: Option<LeaderFn>,
    /// Cancelled when the server shuts down: in-flight hops see it (as the Go server,
    /// which merges the request context with the server's).
    stopping: CancellationToken,
}

impl Handler {
    async fn handle(&self, request: Request<MessageRequest>) -> Result<MessageResponse, (Error, Code)> {
        let depth = wire::read_depth(request.metadata()).map_err(|e| (e, Code::InvalidArgument))?;
        let (hops, deadline_unix_ms) = wire::read_limits(request.metadata()).map_err(|e| (e, Code::InvalidArgument))?;
        let attempt = wire::read_attempt(request.metadata());
        // The module's turn, held until the answer is made: tonic has started this
        // stream's task already, but no handler runs past the module's cap.
        let _turn = self.engine.admit().await;
        let mut msg = request.into_inner();
        // Cancelled when the caller goes away (this future is dropped) or the server stops.
        let cancel = self.stopping.child_token();
        let _cancel_on_drop = cancel.clone().drop_guard();
        let inbound = Inbound {
            envelope: Envelope {
                to: &msg.to,
                from: &msg.from,
                edge_id: &msg.edge_id,
                depth,
                attempt,
                hops,
                deadline_unix_ms,
            },
            payload: std::mem::take(&mut msg.payload),
            cancel,
            leader: self.leader.as_ref().is_some_and(|f| f()),
            run: None,
            on_system_subject: None,
        };
        let reply = inbound::deliver(&self.engine, inbound).await.map_err(|(e, refusal)| {
            let code = match refusal {
                Refusal::Invalid => Code::InvalidArgument,
                Refusal::Cycle => Code::FailedPrecondition,
                Refusal::Expired => Code::DeadlineExceeded,
                Refusal::NotHere => Code::NotFound,
                Refusal::Forbidden => Code::PermissionDenied,
                Refusal::Failed => wire::default_code(&e),
            };
            (e, code)
        })?;
        let data = wire::encode_reply(&reply).map_err(|e| (e, Code::Internal))?;
        wire::check_size(
            format_args!("the reply of `{}`", msg.to),
            data.len(),
            self.max_message_size,
        )
        .map_err(|e| (e, Code::ResourceExhausted))?;
        Ok(MessageResponse { data })
    }
}

#[tonic::async_trait]
impl ModuleService for Handler {
    async fn message(&self, request: Request<MessageRequest>) -> Result<Response<MessageResponse>, Status> {
        let result = if crate::telemetry::tracing_enabled() {
            // The receiving hop's span continues the sender's trace: its parent is the
            // sender's call span, from the `traceparent` metadata.
            use opentelemetry::context::FutureExt as _;
            let parent = crate::telemetry::extract(request.metadata());
            self.handle(request).with_context(parent).await
        } else {
            self.handle(request).await
        };
        let code = result.as_ref().err().map(|(_, code)| *code);
        crate::metrics::grpc().server_call(crate::metrics::outcome(code));
        match result {
            Ok(response) => Ok(Response::new(response)),
            Err((err, code)) => Err(wire::error_to_status(&err, code)),
        }
    }
}

/// The `module.ModuleService` that [`serve`] runs, without a transport: the fuzz
/// targets call it in-process with raw HTTP/2 requests. `stopping` cancels in-flight hops.
#[doc(hidden)]
pub fn module_service(
    engine: Engine,
    opts: &ServerOptions,
    stopping: CancellationToken,
) -> ModuleServiceServer<impl ModuleService> {
    let handler = Handler {
        engine,
        max_message_size: opts.max_message_size,
        leader: opts.leader.clone(),
        stopping,
    };
    ModuleServiceServer::new(handler)
        .max_decoding_message_size(opts.max_message_size)
        .max_encoding_message_size(opts.max_message_size)
}

/// Serves `engine` on `listener` until `shutdown` resolves, then stops taking
/// connections, cancels in-flight hops and waits for them to answer.
pub async fn serve(
    engine: Engine,
    listener: TcpListener,
    opts: ServerOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error> {
    let stopping = CancellationToken::new();
    let service = module_service(engine, &opts, stopping.clone());
    // The reporter starts with the whole server SERVING and is never changed.
    let (_reporter, health) = tonic_health::server::health_reporter();
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let signal = async move {
        shutdown.await;
        stopping.cancel();
    };
    Server::builder()
        .concurrency_limit_per_connection(opts.concurrency_per_connection.max(1))
        .http2_keepalive_interval(Some(opts.keepalive_interval))
        .http2_keepalive_timeout(Some(opts.keepalive_timeout))
        .add_service(health)
        .add_service(service)
        .serve_with_incoming_shutdown(incoming, signal)
        .await
}

/// A server running on its own task, from [`spawn`].
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<Result<(), tonic::transport::Error>>,
}

impl ServerHandle {
    /// The address the server listens on (with the port the system chose for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops the server (as [`serve`] does on shutdown) and waits until it has stopped.
    pub async fn stop(self) -> Result<(), tonic::transport::Error> {
        self.stop.cancel();
        self.join().await
    }

    /// Waits until the server stops by itself (it only does on an error).
    pub async fn join(self) -> Result<(), tonic::transport::Error> {
        match self.task.await {
            Ok(result) => result,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Aborted: the runtime is shutting down.
            Err(_) => Ok(()),
        }
    }
}

/// Binds `addr` (port 0 picks a free port) and serves `engine` there on a new task.
pub async fn spawn(engine: Engine, addr: SocketAddr, opts: ServerOptions) -> std::io::Result<ServerHandle> {
    spawn_on(engine, TcpListener::bind(addr).await?, opts)
}

/// Serves `engine` on an already bound `listener` on a new task.
pub fn spawn_on(engine: Engine, listener: TcpListener, opts: ServerOptions) -> std::io::Result<ServerHandle> {
    let addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let signal = stop.clone();
    let task = tokio::spawn(async move { serve(engine, listener, opts, signal.cancelled_owned()).await });
    Ok(ServerHandle { addr, stop, task })
}

//! The client side: one gRPC channel per address, chosen by module name, carrying
//! the engine's messages for nodes of other modules ([`RemoteRouter`]).

use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, RwLock},
    time::Duration,
};

use futures::future::BoxFuture;
use tiny_sdk::{
    Error, Hop, Msg, Reply, Result,
    engine::{Delivery, RemoteRouter, Source},
    flow::PortAddress,
};
use tonic::{
    Request,
    transport::{Channel, Endpoint},
};
use tracing::{Instrument as _, field::Empty};

use super::{
    proto::{MessageRequest, module_service_client::ModuleServiceClient},
    wire,
};

/// How the pool connects and sends.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// How long one hop may take, the whole downstream chain included, unless the
    /// edge's retry policy sets a shorter per-attempt timeout. Default
    /// [`DEFAULT_TIMEOUT`], 60 s. Past it the hop fails with a transient error and
    /// the remote handler is cancelled.
    pub timeout: Duration,
    /// How long connecting may take. Default 5 s.
    pub connect_timeout: Duration,
    /// The largest message sent or reply taken, encoded (default
    /// [`wire::DEFAULT_MAX_MESSAGE_SIZE`], 4 MiB). A bigger message fails before it
    /// is sent, with a permanent error that names the limit and the size.
    pub max_message_size: usize,
    /// HTTP/2 ping interval, also while idle (default 10 s, as the Go client).
    pub keepalive_interval: Duration,
    /// How long a ping may go unanswered before the connection is dropped (default 3 s).
    pub keepalive_timeout: Duration,
    /// Connect as soon as a module is registered, so that its first message does not
    /// pay for the connection (the Go client does). Default on.
    pub prewarm: bool,
}

/// The default [`PoolOptions::timeout`]: 60 s. Longer than a receiving engine waits
/// for a node that has not loaded yet ([`NODE_WAIT`](tiny_sdk::engine::NODE_WAIT),
/// 30 s), so that its answer arrives rather than a timeout; shorter than the Go SDK's
/// 5 min, as a hop that long is better modelled as a durable one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for PoolOptions {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: Duration::from_secs(5),
            max_message_size: wire::DEFAULT_MAX_MESSAGE_SIZE,
            keepalive_interval: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(3),
            prewarm: true,
        }
    }
}

/// One address and its channel (tonic channels reconnect by themselves).
#[derive(Clone)]
struct Peer {
    addr: Arc<str>,
    channel: Channel,
}

#[derive(Default)]
struct State {
    /// Module name -> its address.
    modules: HashMap<String, Arc<str>>,
    /// Address -> channel, shared by the modules at that address.
    channels: HashMap<Arc<str>, Channel>,
}

/// gRPC connections to other modules, keyed by module name.
///
/// The runtime registers every other module's TinyModule address; the engine sends
/// messages for their nodes through [`RemoteRouter::route`]. Errors come back with
/// the remote error's kind and code, so the sender's edge retry policy applies to
/// cross-module hops as to local ones.
pub struct Pool {
    opts: PoolOptions,
    state: RwLock<State>,
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.read();
        f.debug_struct("Pool")
            .field("modules", &state.modules)
            .field("opts", &self.opts)
            .finish()
    }
}

impl Default for Pool {
    fn default() -> Self {
        Self::new(PoolOptions::default())
    }
}

impl Pool {
    /// An empty pool.
    pub fn new(opts: PoolOptions) -> Self {
        Self {
            opts,
            state: RwLock::new(State::default()),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &PoolOptions {
        &self.opts
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `module` is served at `addr` (`host:port`, or a `http://` URI). Modules at the
    /// same address share one connection; registering a module again with another
    /// address moves it (and drops the old connection if nothing else uses it).
    pub fn register(&self, module: &str, addr: &str) -> Result<()> {
        let addr = addr.trim();
        let mut state = self.write();
        if state.modules.get(module).is_some_and(|a| **a == *addr) {
            return Ok(());
        }
        let (addr, fresh) = match state.channels.get_key_value(addr) {
            Some((key, _)) => (key.clone(), None),
            None => {
                let channel = self.endpoint(addr)?.connect_lazy();
                let key: Arc<str> = addr.into();
                state.channels.insert(key.clone(), channel.clone());
                (key, Some(channel))
            }
        };
        let previous = state.modules.insert(module.to_owned(), addr.clone());
        if let Some(previous) = previous {
            drop_unused(&mut state, &previous);
        }
        drop(state);
        tracing::debug!(module, %addr, "module registered");
        if let Some(channel) = fresh.filter(|_| self.opts.prewarm) {
            prewarm(channel, addr, self.opts.connect_timeout);
        }
        Ok(())
    }

    /// `module` went away: it is unknown from now on, and its connection is closed
    /// unless another module shares it (messages in flight finish first).
    pub fn deregister(&self, module: &str) {
        let mut state = self.write();
        if let Some(addr) = state.modules.remove(module) {
            drop_unused(&mut state, &addr);
            tracing::debug!(module, %addr, "module deregistered");
        }
    }

    /// The address `module` is registered at.
    pub fn address(&self, module: &str) -> Option<String> {
        self.read().modules.get(module).map(|a| a.to_string())
    }

    /// Whether `module` (or a name [`module_matches`](tiny_sdk::flow::module_matches)
    /// takes for it) is registered.
    pub fn knows(&self, module: &str) -> bool {
        self.peer(module).is_some()
    }

    /// How many connections the pool holds (one per distinct address).
    pub fn connections(&self) -> usize {
        self.read().channels.len()
    }

    fn endpoint(&self, addr: &str) -> Result<Endpoint> {
        let uri = if addr.contains("://") {
            addr.to_owned()
        } else {
            format!("http://{addr}")
        };
        let endpoint = Endpoint::from_shared(uri)
            .map_err(|e| Error::permanent(format!("module address `{addr}` is not host:port: {e}")))?;
        Ok(endpoint
            .connect_timeout(self.opts.connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(self.opts.keepalive_interval)
            .keep_alive_timeout(self.opts.keepalive_timeout)
            .keep_alive_while_idle(true))
    }

    fn peer(&self, module: &str) -> Option<Peer> {
        let state = self.read();
        // Exactly first; then as the Go SDK's `NameMatches`, so a node name with a
        // publisher prefix reaches the module announced without one (and back).
        let addr = state.modules.get(module).or_else(|| {
            state
                .modules
                .iter()
                .find(|(name, _)| tiny_sdk::flow::module_matches(module, name))
                .map(|(_, addr)| addr)
        })?;
        let channel = state.channels.get(addr)?.clone();
        Some(Peer {
            addr: addr.clone(),
            channel,
        })
    }

    /// Sends one message to `to` (`node:port`) in `module` and waits for the reply of
    /// the chain behind it.
    pub async fn send(
        &self,
        module: &str,
        to: &PortAddress,
        source: Source<'_>,
        data: &serde_json::Value,
        hop: Hop,
    ) -> Result<Reply> {
        self.send_msg(module, to, source, &Msg::from_json(data.clone()), hop)
            .await
    }

    /// [`send`](Self::send) for a message that may be typed: it is written to the
    /// wire straight from its value.
    pub async fn send_msg(
        &self,
        module: &str,
        to: &PortAddress,
        source: Source<'_>,
        data: &Msg,
        hop: Hop,
    ) -> Result<Reply> {
        self.prepare(module, to, source, data, &hop, 1)?.run(hop).await
    }

    /// Everything that can fail before the network: the module's address, the
    /// payload's encoding and size.
    fn prepare(
        &self,
        module: &str,
        to: &PortAddress,
        source: Source<'_>,
        data: &Msg,
        hop: &Hop,
        attempt: u32,
    ) -> Result<Call> {
        let Some(peer) = self.peer(module) else {
            // The module may still be starting: worth another attempt.
            return Err(Error::transient(format!(
                "no TinyModule announces module `{module}` (message for `{to}`)"
            ))
            .with_code(tiny_sdk::error::code::MODULE_UNKNOWN));
        };
        let (from, edge_id) = wire::source_to_wire(&source);
        let message = MessageRequest {
            id: String::new(),
            from,
            to: to.to_string(),
            // Straight from the typed value to bytes: no JSON tree on the way.
            payload: data.to_json_bytes()?,
            edge_id,
        };
        let size = prost::Message::encoded_len(&message);
        wire::check_size(
            format_args!("the message for `{to}` (module `{module}`)"),
            size,
            self.opts.max_message_size,
        )?;
        let mut request = Request::new(message);
        wire::write_depth(request.metadata_mut(), hop.depth);
        wire::write_attempt(request.metadata_mut(), attempt);
        wire::write_limits(request.metadata_mut(), hop);
        // The call's span, child of the sending hop's; the receiving hop continues
        // from it (W3C trace context in the metadata, as the Go SDK's otelgrpc).
        let span = tracing::info_span!(
            target: tiny_sdk::engine::TRACE_TARGET,
            "grpc.client",
            otel.name = "module.ModuleService/Message",
            otel.kind = "client",
            rpc.system = "grpc",
            rpc.service = "module.ModuleService",
            rpc.method = "Message",
            server.address = &*peer.addr,
            to = %to,
            from = request.get_ref().from.as_str(),
            edgeID = request.get_ref().edge_id.as_str(),
            tiny.module = module,
            tiny.depth = hop.depth,
            tiny.attempt = attempt,
            rpc.grpc.status_code = Empty,
            tiny.outcome = Empty,
            otel.status_code = Empty,
            otel.status_description = Empty,
        );
        crate::telemetry::under_hop(&span);
        crate::telemetry::inject(&span, request.metadata_mut());
        Ok(Call {
            module: module.to_owned(),
            peer,
            request,
            timeout: self.opts.timeout,
            max_message_size: self.opts.max_message_size,
            span,
        })
    }
}

/// One prepared request.
struct Call {
    module: String,
    peer: Peer,
    request: Request<MessageRequest>,
    timeout: Duration,
    max_message_size: usize,
    span: tracing::Span,
}

impl Call {
    /// Sends the request, in its span, and counts the outcome.
    async fn run(self, hop: Hop) -> Result<Reply> {
        let span = self.span.clone();
        let module = self.module.clone();
        let (result, code) = self.exchange(hop).instrument(span.clone()).await;
        let outcome = crate::metrics::outcome(code);
        crate::metrics::grpc().client_call(&module, outcome);
        span.record("rpc.grpc.status_code", code.map_or(0, |c| c as i32));
        tiny_sdk::engine::record_outcome(&span, &result);
        result
    }

    /// The call itself: the reply, and the gRPC code it ended with (`None` for OK).
    async fn exchange(self, hop: Hop) -> (Result<Reply>, Option<tonic::Code>) {
        let Call {
            module,
            peer,
            request,
            timeout,
            max_message_size,
            span: _,
        } = self;
        let mut client = ModuleServiceClient::new(peer.channel)
            .max_decoding_message_size(max_message_size)
            .max_encoding_message_size(max_message_size);
        // The deadline is kept here, not sent as `grpc-timeout`: a call given up (the
        // deadline, the edge's timeout, a cancelled hop) resets its stream, which drops
        // the remote handler at once, and no timer runs per call on the other side.
        let call = tokio::time::timeout(timeout, client.message(request));
        let result = tokio::select! {
            r = call => r,
            () = hop.cancel.cancelled() => {
                let e = Error::permanent(format!("cancelled while waiting for module `{module}`"));
                return (Err(e), Some(tonic::Code::Cancelled));
            }
        };
        match result {
            Ok(Ok(response)) => (
                wire::decode_reply_owned(response.into_inner().data)
                    .map_err(|e| e.context(format_args!("module `{module}` at {}", peer.addr))),
                None,
            ),
            Ok(Err(status)) => {
                let e = wire::status_to_error(&status, || {
                    if is_transport_failure(&status) {
                        format!("module `{module}` at {} is unreachable", peer.addr)
                    } else {
                        format!("module `{module}` at {}", peer.addr)
                    }
                });
                (Err(e), Some(status.code()))
            }
            Err(_) => (
                Err(Error::transient(format!(
                    "module `{module}` at {} did not answer within {} s",
                    peer.addr,
                    timeout.as_secs_f64()
                ))
                .with_code(tiny_sdk::error::code::TIMEOUT)),
                Some(tonic::Code::DeadlineExceeded),
            ),
        }
    }
}

/// `Unavailable` without tiny's metadata: the connection failed, not the handler.
fn is_transport_failure(status: &tonic::Status) -> bool {
    status.code() == tonic::Code::Unavailable && status.metadata().get(wire::ERROR_KIND_KEY).is_none()
}

/// Drops `addr`'s channel when no module uses it any more.
fn drop_unused(state: &mut State, addr: &Arc<str>) {
    if !state.modules.values().any(|a| a == addr) {
        state.channels.remove(addr);
    }
}

/// Connects in the background (a health check), when there is a runtime to do it on.
fn prewarm(channel: Channel, addr: Arc<str>, limit: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        let check = health.check(tonic_health::pb::HealthCheckRequest { service: String::new() });
        match tokio::time::timeout(limit, check).await {
            Ok(Ok(_)) => tracing::debug!(%addr, "connected"),
            Ok(Err(status)) => tracing::debug!(%addr, %status, "not reachable yet"),
            Err(_) => tracing::debug!(%addr, "not reachable yet: connecting timed out"),
        }
    });
}

impl RemoteRouter for Pool {
    fn route(&self, module: &str, d: Delivery<'_>) -> BoxFuture<'static, Result<Reply>> {
        match self.prepare(module, &d.address(), d.source, &d.msg, &d.hop, d.attempt) {
            Ok(call) => Box::pin(call.run(d.hop)),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}

impl crate::discovery::Discovery for Pool {
    fn register(&self, module: &str, addr: &str) {
        if let Err(e) = Pool::register(self, module, addr) {
            tracing::warn!(module, addr, error = %e, "cannot reach module");
        }
    }

    fn deregister(&self, module: &str) {
        Pool::deregister(self, module);
    }
}

impl crate::carrier::Carrier for Pool {
    fn name(&self) -> &'static str {
        "grpc"
    }

    /// `host:port`, or an `http://`/`https://` URI: what [`Pool::register`] takes.
    fn listens_at(&self, addr: &str) -> bool {
        let addr = addr.trim_start();
        !addr.contains("://") || addr.starts_with("http://") || addr.starts_with("https://")
    }

    fn reaches(&self, module: &str) -> bool {
        self.knows(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hop_outlasts_the_receivers_wait_for_a_loading_node() {
        assert!(DEFAULT_TIMEOUT > tiny_sdk::engine::NODE_WAIT);
    }
}

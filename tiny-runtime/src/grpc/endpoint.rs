//! This module's gRPC side in one value: the bound listener, the server options and
//! the pool, as the module binary wires them.

use std::{future::Future, net::SocketAddr, sync::Arc};

use futures::future::BoxFuture;
use tiny_sdk::engine::Engine;
use tokio::net::TcpListener;

use super::{
    pool::{Pool, PoolOptions},
    server::{self, LeaderFn, ServerOptions},
};
use crate::{
    carrier::{Carrier, Listen, Serving, Transceiver},
    leader::Leadership,
};

/// A bound gRPC listener and the pool to other modules.
///
/// Binding comes first so that the address can be announced in the TinyModule and
/// the pool handed to the engine before the engine exists; [`serve`](Self::serve)
/// then takes the engine.
#[derive(Debug)]
pub struct Grpc {
    listener: TcpListener,
    addr: SocketAddr,
    server: ServerOptions,
    pool: Arc<Pool>,
}

impl Grpc {
    /// Binds `addr` (port 0 picks a free port) with default options.
    pub async fn bind(addr: SocketAddr) -> std::io::Result<Self> {
        Self::bind_with(addr, ServerOptions::default(), PoolOptions::default()).await
    }

    /// Binds `addr` with the given options.
    pub async fn bind_with(addr: SocketAddr, server: ServerOptions, pool: PoolOptions) -> std::io::Result<Self> {
        let listener = crate::listen::bind(addr).await?;
        let addr = listener.local_addr()?;
        Ok(Self {
            listener,
            addr,
            server,
            pool: Arc::new(Pool::new(pool)),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The pool to other modules: the engine's [`RemoteRouter`](tiny_sdk::engine::RemoteRouter)
    /// and the runtime's discovery target.
    pub fn pool(&self) -> Arc<Pool> {
        self.pool.clone()
    }

    /// Tells handlers whether this replica leads ([`tiny_sdk::Hop::leader`]), once
    /// leader election runs (it starts after the pool is handed out).
    #[must_use]
    pub fn with_leader(mut self, leader: LeaderFn) -> Self {
        self.server.leader = Some(leader);
        self
    }

    /// Serves `engine` until an error (or until the returned future is dropped).
    pub async fn serve(self, engine: Engine) -> Result<(), tonic::transport::Error> {
        self.serve_with_shutdown(engine, std::future::pending()).await
    }

    /// Serves `engine` until `shutdown` resolves (see [`server::serve`]).
    pub async fn serve_with_shutdown(
        self,
        engine: Engine,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), tonic::transport::Error> {
        server::serve(engine, self.listener, self.server, shutdown).await
    }
}

/// The server is the serving future itself: dropping it stops it at once, in-flight
/// calls with it.
impl Listen for Grpc {
    fn name(&self) -> &'static str {
        "grpc"
    }

    fn listen(
        self: Box<Self>,
        engine: Engine,
        leadership: Leadership,
    ) -> BoxFuture<'static, Result<Serving, crate::Error>> {
        let server = self
            .with_leader(std::sync::Arc::new(move || leadership.is_leader()))
            .serve(engine);
        let serve = async move { server.await.map_err(crate::Error::Serve) };
        Box::pin(std::future::ready(Ok(Serving::future("grpc", serve))))
    }
}

/// gRPC sends through its pool: to the modules that advertise an address.
impl Transceiver for Grpc {
    fn carrier(&self) -> Arc<dyn Carrier> {
        self.pool.clone()
    }
}

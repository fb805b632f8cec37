//! Core NATS as a [`Listen`]er, beside gRPC and JetStream.

use async_nats::Client;
use futures::future::BoxFuture;
use tiny_sdk::engine::Engine;

use crate::{
    carrier::{Listen, Serving},
    leader::Leadership,
};

/// The module's two subjects on a connection ([`listen`](super::listen)): what the
/// module binary starts when it is on core NATS.
#[derive(Debug)]
pub struct Subscriptions {
    client: Client,
}

impl Subscriptions {
    /// Subscriptions to be made on `client` once listening starts.
    pub fn new(client: Client) -> Self {
        Self { client }
    }
}

impl Listen for Subscriptions {
    fn name(&self) -> &'static str {
        "nats"
    }

    fn listen(
        self: Box<Self>,
        engine: Engine,
        leadership: Leadership,
    ) -> BoxFuture<'static, Result<Serving, crate::Error>> {
        Box::pin(async move {
            let leader = std::sync::Arc::new(move || leadership.is_leader());
            let receiver = super::listen(self.client, engine, Some(leader))
                .await
                .map_err(crate::Error::Nats)?;
            Ok(Serving::tasks("nats", receiver.stop()))
        })
    }
}

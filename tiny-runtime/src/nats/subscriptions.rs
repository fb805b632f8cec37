//! Core NATS as a [`Transceiver`], beside gRPC and JetStream.

use std::sync::Arc;

use futures::future::BoxFuture;
use tiny_sdk::engine::Engine;

use super::{Link, NatsRouter};
use crate::{
    carrier::{Carrier, Listen, Serving, Transceiver},
    leader::Leadership,
};

/// The module's two subjects on a connection ([`listen`](super::listen)), and the
/// router that sends on it: what the module binary runs when it is on core NATS.
#[derive(Debug)]
pub struct Subscriptions {
    link: Link,
}

impl Subscriptions {
    /// Subscriptions to be made on `link` once listening starts.
    pub fn new(link: Link) -> Self {
        Self { link }
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
            let leader = Arc::new(move || leadership.is_leader());
            let receiver = super::listen(self.link.client().clone(), engine, Some(leader))
                .await
                .map_err(crate::Error::Nats)?;
            Ok(Serving::tasks("nats", receiver.stop()))
        })
    }
}

/// Core NATS sends by request and reply on the same connection.
impl Transceiver for Subscriptions {
    fn carrier(&self) -> Arc<dyn Carrier> {
        Arc::new(NatsRouter::new(self.link.clone()))
    }
}

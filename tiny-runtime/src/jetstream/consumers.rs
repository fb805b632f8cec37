//! JetStream as a [`Listen`]er, beside gRPC and core NATS: the consumers, and the
//! leader's pass over stuck runs that comes with them.

use std::sync::Arc;

use futures::future::BoxFuture;
use tiny_sdk::{
    engine::Engine,
    run::{AnswerInbox, ReconcileSettings, RunStore},
};

use super::{JetStream, JetStreamRouter};
use crate::{
    carrier::{Carrier, Listen, Serving, Transceiver},
    leader::Leadership,
};

/// The module's consumers ([`listen`](super::listen)) and its run
/// [`reconciler`](super::reconciler): what the module binary starts when it is on
/// JetStream.
#[derive(Debug)]
pub struct Consumers {
    js: Arc<JetStream>,
    reconcile: ReconcileSettings,
}

impl Consumers {
    /// Consumers on `js`, bound once listening starts; the reconciler passes over
    /// the runs as `reconcile` says.
    pub fn new(js: Arc<JetStream>, reconcile: ReconcileSettings) -> Self {
        Self { js, reconcile }
    }
}

impl Listen for Consumers {
    fn name(&self) -> &'static str {
        "jetstream"
    }

    fn listen(
        self: Box<Self>,
        engine: Engine,
        leadership: Leadership,
    ) -> BoxFuture<'static, Result<Serving, crate::Error>> {
        let Self { js, reconcile } = *self;
        let leads = leadership.clone();
        let receiver = super::listen(js.clone(), engine, Some(Arc::new(move || leads.is_leader())));
        let reconciler = super::reconciler::spawn(js, leadership, reconcile);
        let stop = async move {
            reconciler.abort();
            receiver.stop().await;
        };
        Box::pin(std::future::ready(Ok(Serving::tasks("jetstream", stop))))
    }
}

/// JetStream sends through its streams, and keeps the runs: its run ledger and its
/// inboxes are the module's.
impl Transceiver for Consumers {
    fn carrier(&self) -> Arc<dyn Carrier> {
        Arc::new(JetStreamRouter::new(self.js.clone()))
    }

    fn runs(&self) -> Option<Arc<dyn RunStore>> {
        Some(self.js.clone())
    }

    fn answers(&self) -> Option<Arc<dyn AnswerInbox>> {
        Some(self.js.clone())
    }
}

//! Which transports a module runs, chosen from its settings in this one place: gRPC
//! always, and beside it, when a broker is configured, core NATS or JetStream. Each
//! comes back as a [`Transceiver`] (it listens, it carries, and JetStream keeps the
//! runs); the module binary starts the listeners and hands the rest to the runtime
//! without naming a transport, so a later one (an agent-tool RPC) is one more
//! `Transceiver` pushed here, whose carrier joins [`Routes`]'s list, and touches no
//! other.

use std::sync::Arc;

use tiny_sdk::run::{AnswerInbox, ReconcileSettings, RunStore};

use crate::{
    carrier::{Carrier, Listen, Transceiver},
    grpc::Grpc,
    jetstream::{self, Consumers, JetStream, config::JetStreamLimits},
    nats::{Broker, Credentials, LinkError, Subscriptions},
    transport::{Routes, Transport},
};

/// `TINY_NATS_TRANSPORT`: how modules talk over the broker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum NatsMode {
    /// Core NATS request/reply.
    #[default]
    Core,
    /// JetStream streams, and durable runs.
    #[value(name = "jetstream")]
    JetStream,
}

/// What a module's settings say of its transports.
pub(crate) struct Settings {
    /// The gRPC listener, bound.
    pub grpc: Grpc,
    /// Where other modules reach that listener: what the TinyModule advertises while
    /// the module is not on a broker.
    pub grpc_addr: String,
    /// The broker (`TINY_NATS_URL`, with its user), if there is one.
    pub nats_url: Option<String>,
    /// How the module proves who it is to the broker.
    pub credentials: Result<Credentials, LinkError>,
    /// Core NATS or JetStream on the broker.
    pub nats_mode: NatsMode,
    /// JetStream: the streams' and the run ledger's limits.
    pub jetstream_limits: JetStreamLimits,
    /// JetStream: the leader's passes over stuck and finished runs.
    pub reconcile: ReconcileSettings,
}

/// The transports chosen, known from here on only by their trait.
pub(crate) struct Transports {
    /// gRPC first, then the broker's, when there is one: started in this order.
    chosen: Vec<Box<dyn Transceiver>>,
    /// Their carriers as one, advertising `own`.
    routes: Arc<Routes>,
    own: Arc<Transport>,
}

impl Transports {
    /// Connects to the broker when there is one (a broker that does not answer yet
    /// leaves the module on gRPC meanwhile, see [`Broker::connect`]) and chooses the
    /// transports `settings` name for `module` (replica `identity`). Core NATS on a
    /// broker whose streams JetStream modules use is refused.
    pub async fn choose(module: &str, identity: &str, settings: Settings) -> Result<Self, crate::Error> {
        let Settings {
            grpc,
            grpc_addr,
            nats_url,
            credentials,
            nats_mode,
            jetstream_limits,
            reconcile,
        } = settings;
        let broker = match nats_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
            Some(url) => Some(Arc::new(Broker::connect(module, url, credentials).await)),
            None => None,
        };
        let own = Arc::new(match &broker {
            Some(broker) => Transport::beside(&grpc_addr, broker.clone()),
            None => Transport::grpc(&grpc_addr),
        });
        // In the order a hop picks its carrier (see `Routes`): gRPC first, for the
        // modules that advertise `host:port`; then the broker's, which takes every
        // other module and the hops it claims. A later transport is one more line.
        let mut chosen: Vec<Box<dyn Transceiver>> = vec![Box::new(grpc)];
        match (broker.as_ref().and_then(|b| b.link()), nats_mode) {
            (Some(link), NatsMode::JetStream) => {
                let js = JetStream::with_limits(link.clone(), module, identity, jetstream_limits);
                chosen.push(Box::new(Consumers::new(js, reconcile)));
            }
            (Some(link), NatsMode::Core) => {
                jetstream::refuse_core_beside_jetstream(link, module).await?;
                chosen.push(Box::new(Subscriptions::new(link.clone())));
            }
            (None, _) => {}
        }
        let routes = Routes::over(chosen.iter().map(|t| t.carrier())).advertising(own.clone());
        Ok(Self {
            chosen,
            routes: Arc::new(routes),
            own,
        })
    }

    /// `nats` while messages come over the broker, else `grpc` (for logs).
    pub fn current(&self) -> &'static str {
        self.own.current()
    }

    /// How the module reaches other modules: every transport's carrier as one.
    pub fn carrier(&self) -> Arc<dyn Carrier> {
        self.routes.clone()
    }

    /// Where durable runs are recorded, when a transport keeps them.
    pub fn runs(&self) -> Option<Arc<dyn RunStore>> {
        self.chosen.iter().find_map(|t| t.runs())
    }

    /// Where a component that begins a run awaits its answer, when a transport keeps
    /// runs.
    pub fn answers(&self) -> Option<Arc<dyn AnswerInbox>> {
        self.chosen.iter().find_map(|t| t.answers())
    }

    /// The receiving halves, in the order they start
    /// ([`listen_all`](crate::carrier::listen_all)).
    pub fn listeners(self) -> Vec<Box<dyn Listen>> {
        self.chosen.into_iter().map(|t| t as Box<dyn Listen>).collect()
    }
}

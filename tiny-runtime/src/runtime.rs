//! Puts a module together: engine, leader election, controllers, probes.

use std::{
    net::SocketAddr,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use tiny_sdk::engine::{Engine, Registry};
use tokio_util::sync::CancellationToken;

use crate::{
    carrier::Carrier,
    config::ModuleConfig,
    controller::{self, Reconciling},
    leader::{self, Leadership},
    metrics::Metrics,
};

pub use crate::discovery::Discovery;

/// How long a lease lasts: a dead leader is replaced within about this long.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);

/// A running module.
#[derive(Debug)]
pub struct Runtime {
    shared: Arc<Reconciling>,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The election, which releases the Lease when `stop` fires.
    election: Option<tokio::task::JoinHandle<()>>,
    /// Where probes and metrics are served, if they are.
    pub probe_addr: Option<SocketAddr>,
}

/// Options of [`Runtime::start`].
pub struct Options {
    /// Who we are.
    pub config: ModuleConfig,
    /// Our components.
    pub registry: Registry,
    /// Elect a leader (`None`: this replica always leads).
    pub lease_duration: Option<Duration>,
    /// Address for `/healthz`, `/readyz` and `/metrics`.
    pub probe_addr: Option<SocketAddr>,
    /// How this module reaches other modules: the engine sends their hops through
    /// it, the controllers tell it where each module is, and the TinyModule's address,
    /// `Transport` condition and part of `/readyz` come from it (a module binary's is
    /// [`Routes`](crate::transport::Routes), [advertising](crate::transport::Routes::advertising)
    /// its `Transport`). `None`: no other module is reachable, and the module
    /// advertises `config.grpc_addr`.
    pub carrier: Option<Arc<dyn Carrier>>,
    /// Where durable runs are recorded (the JetStream transport's `TINY_EXEC`):
    /// with it, the engine's runs are durable. `None`: a run's hops are classic ones.
    pub runs: Option<Arc<dyn tiny_sdk::run::RunStore>>,
    /// Where a component that begins a run awaits its answer (the JetStream
    /// transport's inboxes).
    pub answers: Option<Arc<dyn tiny_sdk::run::AnswerInbox>>,
}

impl Options {
    /// The module `config` with the components of `registry`, and nothing else: this
    /// replica always leads, no probes, gRPC at `config.grpc_addr`, no durable runs.
    /// Set the other fields by name: `Options { probe_addr, ..Options::new(c, r) }`.
    pub fn new(config: ModuleConfig, registry: Registry) -> Self {
        Self {
            config,
            registry,
            lease_duration: None,
            probe_addr: None,
            carrier: None,
            runs: None,
            answers: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Starts the module: registers its TinyModule, elects a leader, runs the
    /// controllers. Returns once everything is started.
    pub async fn start(client: kube::Client, opts: Options) -> Result<Runtime, crate::Error> {
        let metrics = Arc::new(Metrics::default());
        let stop = CancellationToken::new();
        let mut tasks = Vec::new();
        let mut election = None;
        let leadership = match opts.lease_duration {
            Some(d) => {
                let (l, task) = leader::elect(
                    client.clone(),
                    &opts.config.namespace,
                    &opts.config.lease_name(),
                    &opts.config.identity,
                    d,
                    stop.child_token(),
                )
                .await
                .map_err(crate::Error::LeaderElection)?;
                election = Some(task);
                l
            }
            None => Leadership::fixed(true),
        };
        let (node_client, cfg) = (client.clone(), opts.config.clone());
        // Nodes whose `_control` view changed; their status is rewritten by the leader.
        let (changes, changed) = tokio::sync::mpsc::unbounded_channel::<String>();
        let directory = Arc::new(controller::Directory::new(&opts.config.namespace, client.clone()));
        let secrets = crate::secrets::KubeSecrets::new(
            client.clone(),
            &opts.config.namespace,
            opts.config.secrets.clone(),
            opts.config.secret_ttl,
        );
        let mut engine = Engine::builder()
            .secrets(Arc::new(secrets))
            .directory(directory.clone())
            .on_change(move |node: &str| {
                let _ = changes.send(node.to_owned());
            })
            .module(opts.config.name.clone())
            .strict_expressions(opts.config.strict_expressions)
            .max_in_flight(opts.config.max_in_flight)
            .hop_budget(opts.config.hop_budget)
            .registry(opts.registry)
            .client_factory(Arc::new(
                move |id: &tiny_sdk::NodeIdentity| -> Arc<dyn tiny_sdk::ResourceManager> {
                    let resources = crate::resources::KubeResources::new(
                        node_client.clone(),
                        cfg.namespace.clone(),
                        id.node_name.clone(),
                    )
                    .with_selector(cfg.pod_selector.clone())
                    .with_ingress(cfg.ingress_class.clone(), cfg.hostname_suffix.clone());
                    Arc::new(resources)
                },
            ));
        if let Some(carrier) = opts.carrier.clone() {
            engine = engine.router(carrier);
        }
        if let Some(runs) = opts.runs.clone() {
            engine = engine.runs(runs);
        }
        if let Some(answers) = opts.answers.clone() {
            engine = engine.answers(answers);
        }
        if opts.lease_duration.is_some() {
            // Leads once the election says so (the task below).
            engine = engine.follower();
        }
        let tracking = Arc::new(controller::Tracking::default());
        let engine = engine
            .observer(Arc::new(crate::metrics::HopMetrics(metrics.clone())))
            .observer(tracking.clone())
            .build();
        let mut shared = Reconciling::new(
            client,
            opts.config,
            engine,
            leadership.clone(),
            metrics.clone(),
            opts.carrier,
            tracking.clone(),
        );
        shared.directory = directory;
        if let Some(carrier) = &shared.carrier {
            shared.readiness.watch_carrier(carrier.clone());
        }
        let shared = Arc::new(shared);
        let module = Arc::downgrade(&shared);
        metrics.count_nodes_with(move || module.upgrade().map(|m| m.engine.node_counts()));
        controller::module::register(&shared)
            .await
            .map_err(crate::Error::Register)?;
        let mut probe_addr = None;
        if let Some(addr) = opts.probe_addr {
            let listener = crate::listen::bind(addr).await.map_err(|source| crate::Error::Bind {
                what: "probe",
                addr,
                source,
            })?;
            probe_addr = listener.local_addr().ok();
            tasks.push(tokio::spawn(crate::health::serve(
                listener,
                shared.readiness.clone(),
                metrics.clone(),
            )));
        }
        {
            let (metrics, mut l, engine) = (metrics.clone(), leadership.clone(), shared.engine.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let leads = l.is_leader();
                    metrics.leader.store(u64::from(leads), Ordering::Relaxed);
                    // Losing the lease stops leader-only work at once; gaining it
                    // lets components restart theirs from node state.
                    engine.set_leader(leads).await;
                    l.changed().await;
                }
            }));
        }
        let cancelled = |t: &CancellationToken| {
            let t = t.clone();
            async move { t.cancelled().await }
        };
        // Not ready until both have listed: registered before anything can ask.
        shared.readiness.listing(controller::node::WATCH);
        shared.readiness.listing(controller::signal::WATCH);
        tasks.push(tokio::spawn(controller::node::run(shared.clone(), cancelled(&stop))));
        tasks.push(tokio::spawn(controller::signal::run(shared.clone(), cancelled(&stop))));
        tasks.push(tokio::spawn(controller::module::run(shared.clone(), cancelled(&stop))));
        tasks.push(tokio::spawn(controller::node::write_changes(
            shared.clone(),
            changed,
            cancelled(&stop),
        )));
        tasks.push(tokio::spawn(controller::tracker::run(
            shared.clone(),
            tracking,
            Duration::from_millis(500),
            cancelled(&stop),
        )));
        // Only a module that serves a runtime follows definitions (`Registry::runtime`).
        if !shared.engine.registry().runtimes().is_empty() {
            tasks.push(tokio::spawn(controller::component::run(
                shared.clone(),
                cancelled(&stop),
            )));
        }
        shared.readiness.set_started(true);
        Ok(Runtime {
            shared,
            stop,
            tasks,
            election,
            probe_addr,
        })
    }

    /// The flow engine.
    pub fn engine(&self) -> &Engine {
        &self.shared.engine
    }

    /// The counters.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// `Ok` when the module is ready (what `/readyz` answers), else why not.
    pub fn readiness(&self) -> Result<(), String> {
        self.shared.readiness.check()
    }

    /// Whether this replica leads.
    pub fn is_leader(&self) -> bool {
        self.shared.leadership.is_leader()
    }

    /// A handle that tells whether this replica leads, for other parts (the gRPC server).
    pub fn leadership(&self) -> Leadership {
        self.shared.leadership.clone()
    }

    /// Stops the controllers (nodes are not destroyed: another replica runs them).
    pub async fn stop(self) {
        self.shared.readiness.set_started(false);
        // Node work (loops, listeners) ends here; the nodes' state, written out first,
        // lets the next leader pick it up.
        self.shared.engine.shutdown();
        self.shared.engine.flush_state().await;
        self.stop.cancel();
        // The Lease given up, so that the next leader need not wait out its duration.
        if let Some(election) = self.election {
            let _ = tokio::time::timeout(Duration::from_secs(3), election).await;
        }
        for t in self.tasks {
            t.abort();
        }
    }
}

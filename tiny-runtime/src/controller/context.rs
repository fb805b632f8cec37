//! The context of every reconcile.

use std::{collections::HashMap, sync::Arc, sync::Mutex};

use kube::runtime::events::{Recorder, Reporter};
use tiny_sdk::engine::Engine;

use crate::{carrier::Carrier, config::ModuleConfig, leader::Leadership, metrics::Metrics};

/// What every reconcile needs: the context each controller's loop hands its
/// reconcile function (kube-rs's `Context`).
pub(crate) struct Reconciling {
    /// Kubernetes.
    pub(crate) client: kube::Client,
    /// Who we are.
    pub(crate) config: ModuleConfig,
    /// The flow engine.
    pub(crate) engine: Engine,
    /// Whether we lead.
    pub(crate) leadership: Leadership,
    /// Counters.
    pub(crate) metrics: Arc<Metrics>,
    /// Events on TinyNodes.
    pub(crate) recorder: Recorder,
    /// The way to other modules, whatever the wire: their addresses go here, and
    /// what the TinyModule advertises comes from it (else the config's gRPC address).
    pub(crate) carrier: Option<Arc<dyn Carrier>>,
    /// Hops of tracked flows.
    pub(crate) tracking: Arc<super::tracking::Tracking>,
    /// The last error published as an Event, per node, so it is published once.
    pub(crate) published: Mutex<HashMap<String, String>>,
    /// Uids of the signals this process claimed, with how their delivery ended once it
    /// has (kept until the signal's status says so).
    pub(crate) claimed: Mutex<HashMap<String, Option<Outcome>>>,
    /// What `/readyz` answers: the watches report whether they could list.
    pub(crate) readiness: Arc<crate::health::Readiness>,
    /// The operations the API server refuses now, shown in the TinyModule's status.
    pub(crate) permissions: Arc<crate::permissions::Permissions>,
    /// Which TinyNodes exist (the node watch's store).
    pub(crate) directory: Arc<super::directory::Directory>,
    /// Failed reconciles, for their backoff.
    pub(crate) retries: super::retries::Retries,
    /// Told when a definition is installed or uninstalled: the TinyModule's
    /// components are published again.
    pub(crate) catalogue: Arc<tokio::sync::Notify>,
}

impl Reconciling {
    /// Builds the shared context.
    pub(crate) fn new(
        client: kube::Client,
        config: ModuleConfig,
        engine: Engine,
        leadership: Leadership,
        metrics: Arc<Metrics>,
        carrier: Option<Arc<dyn Carrier>>,
        tracking: Arc<super::tracking::Tracking>,
    ) -> Self {
        let reporter = Reporter {
            controller: format!("tiny-{}", config.name),
            instance: Some(config.identity.clone()),
        };
        let recorder = Recorder::new(client.clone(), reporter);
        Self {
            client,
            config,
            engine,
            leadership,
            metrics,
            recorder,
            carrier,
            tracking,
            published: Mutex::new(HashMap::new()),
            claimed: Mutex::new(HashMap::new()),
            readiness: Arc::default(),
            permissions: Arc::default(),
            directory: Arc::default(),
            retries: super::retries::Retries::default(),
            catalogue: Arc::default(),
        }
    }
}

impl Reconciling {
    /// The API of `K` in this module's namespace.
    pub(crate) fn api<K>(&self) -> kube::Api<K>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
    {
        kube::Api::namespaced(self.client.clone(), &self.config.namespace)
    }
}

impl std::fmt::Debug for Reconciling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconciling")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A reconcile failure: retried with a short backoff.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    /// A call to the API server failed.
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// Adding or removing the node finalizer, or the work behind it, failed.
    #[error(transparent)]
    Finalizer(Box<kube::runtime::finalizer::Error<ReconcileError>>),
    /// A signal is for a node of this module that has not loaded yet.
    #[error("node `{0}` is not loaded yet")]
    NodeNotLoaded(String),
}

/// How a delivery ended, as the signal's status will say.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(super) phase: &'static str,
    pub(super) error: Option<String>,
    pub(super) reply: Option<serde_json::Value>,
}

//! The resource manager a component receives on `_client`: what it may ask of the
//! cluster. The runtime implements it against Kubernetes; tests may provide their own.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{error::Result, flow::Node};

/// How to expose a port of the node's module outside the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExposePortRequest {
    /// The container port to expose.
    pub port: u16,
    /// Extra DNS names for the Ingress.
    #[serde(default)]
    pub hostnames: Vec<String>,
    /// A generated hostname prefix (`<prefix>-<suffix>`), when set.
    #[serde(default)]
    pub auto_hostname: Option<String>,
    /// Terminate TLS at the Ingress.
    #[serde(default)]
    pub tls: bool,
    /// `ClusterIP` (default), `NodePort` or `LoadBalancer`.
    #[serde(default)]
    pub service_type: Option<String>,
}

/// A new node to create in a flow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateNodeRequest {
    /// Name prefix; the server appends a suffix.
    pub name: String,
    /// The flow the node belongs to.
    pub flow: String,
    /// Module and component to run.
    pub module: String,
    /// Component name within the module.
    pub component: String,
    /// Settings JSON for `_settings`.
    #[serde(default)]
    pub settings: Option<Value>,
}

/// What components may ask of the cluster (`_client`). Every call is idempotent and
/// retries write conflicts itself.
pub trait ResourceManager: Send + Sync + 'static {
    /// Exposes `port` through a Service and an Ingress owned by the calling node;
    /// returns the URLs it is reachable at.
    fn expose_port(&self, req: ExposePortRequest) -> BoxFuture<'_, Result<Vec<String>>>;
    /// Removes what `expose_port` created for `port`.
    fn unexpose_port(&self, port: u16) -> BoxFuture<'_, Result<()>>;
    /// Merges `metadata` into the calling node's `status.metadata`; a `None` value
    /// removes its key. (Node state goes through here: see [`NodeState`](crate::state::NodeState).)
    fn update_metadata(&self, metadata: Vec<(String, Option<String>)>) -> BoxFuture<'_, Result<()>>;
    /// Sends `data` to `node:port` through a TinySignal.
    fn create_signal(&self, node: &str, port: &str, data: Value) -> BoxFuture<'_, Result<String>>;
    /// Creates a node; returns its name.
    fn create_node(&self, req: CreateNodeRequest) -> BoxFuture<'_, Result<String>>;
    /// Reads a node of this namespace.
    fn get_node(&self, name: &str) -> BoxFuture<'_, Result<Node>>;
    /// Creates a flow in `project`; returns its name.
    fn create_flow(&self, project: &str, name: &str) -> BoxFuture<'_, Result<String>>;

    /// The namespace the module runs in (and its nodes live in).
    fn namespace(&self) -> &str {
        ""
    }

    /// The runtime's own Kubernetes client, for components that watch or manage
    /// Kubernetes objects themselves (Go's raw controller-runtime client). `None`
    /// in-process. The module's RBAC must allow what the component does with it.
    #[cfg(feature = "kube")]
    fn kube_client(&self) -> Option<kube::Client> {
        None
    }
}

/// A resource manager for the SDK's unit tests of pure logic: it records each
/// metadata patch and fails them while `fail` is set; everything else answers empty.
#[cfg(test)]
pub(crate) mod fake {
    use std::{
        sync::{
            Mutex,
            atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst},
        },
        time::Duration,
    };

    use futures::future::BoxFuture;
    use serde_json::Value;

    use super::{CreateNodeRequest, ExposePortRequest, ResourceManager};
    use crate::{
        error::{Error, Result},
        flow::Node,
    };

    /// One `update_metadata` call's entries.
    pub(crate) type Patch = Vec<(String, Option<String>)>;

    /// Records each metadata patch; fails them while `fail` is set, and the next
    /// `fail_next` ones (for good with `refuse`, else for a passing reason). Each
    /// patch takes `slow_ms` milliseconds; `in_flight` are on their way now,
    /// `most_at_once` is the most that ever were together.
    #[derive(Default)]
    pub(crate) struct Patches {
        pub seen: Mutex<Vec<Patch>>,
        pub fail: AtomicBool,
        pub fail_next: AtomicUsize,
        pub refuse: AtomicBool,
        pub slow_ms: AtomicU64,
        pub in_flight: AtomicUsize,
        pub most_at_once: AtomicUsize,
    }

    impl ResourceManager for Patches {
        fn expose_port(&self, _: ExposePortRequest) -> BoxFuture<'_, Result<Vec<String>>> {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn unexpose_port(&self, _: u16) -> BoxFuture<'_, Result<()>> {
            Box::pin(async { Ok(()) })
        }
        fn update_metadata(&self, metadata: Vec<(String, Option<String>)>) -> BoxFuture<'_, Result<()>> {
            Box::pin(async move {
                let now = self.in_flight.fetch_add(1, SeqCst) + 1;
                self.most_at_once.fetch_max(now, SeqCst);
                let fail = self.fail.load(SeqCst)
                    || self
                        .fail_next
                        .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                        .is_ok();
                tokio::time::sleep(Duration::from_millis(self.slow_ms.load(SeqCst))).await;
                self.in_flight.fetch_sub(1, SeqCst);
                if fail && self.refuse.load(SeqCst) {
                    return Err(Error::permanent("forbidden"));
                }
                if fail {
                    return Err(Error::transient("the API server is away"));
                }
                self.seen.lock().map(|mut s| s.push(metadata)).ok();
                Ok(())
            })
        }
        fn create_signal(&self, _: &str, _: &str, _: Value) -> BoxFuture<'_, Result<String>> {
            Box::pin(async { Ok(String::new()) })
        }
        fn create_node(&self, _: CreateNodeRequest) -> BoxFuture<'_, Result<String>> {
            Box::pin(async { Ok(String::new()) })
        }
        fn get_node(&self, _: &str) -> BoxFuture<'_, Result<Node>> {
            Box::pin(async { Ok(Node::default()) })
        }
        fn create_flow(&self, _: &str, _: &str) -> BoxFuture<'_, Result<String>> {
            Box::pin(async { Ok(String::new()) })
        }
    }
}

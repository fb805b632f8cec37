//! [`KubeSecrets`]: where `[[secret:<name>/<key>]]` placeholders get their values in a
//! cluster (see [`tiny_sdk::secret`]).
//!
//! Secrets are read with the module's own client (its ServiceAccount), in its
//! namespace, and only those the module declares in its
//! [`Requirements`](crate::rbac::Requirements) (the chart grants `get` on exactly
//! those). A Secret read is kept for the TTL (`run --secret-ttl`, Go's 60 s
//! `secretResolveTTL`), missing ones too, so that nodes re-applied every TTL cost one
//! read per Secret and TTL; a rotated or newly created Secret is seen within it. A
//! failed call (the API server away) is not kept: the next resolution asks again.
//!
//! A Secret's owner may limit it to named flows or nodes with the annotations
//! `tinysystems.io/allowed-flows` and `tinysystems.io/allowed-nodes` (comma-separated
//! names). Without them any node of the module may use it, as in the Go SDK; with one,
//! a node outside its list is refused ([`SecretError::NotAllowed`]); with both, a node
//! must be in both lists. An annotation that names nothing allows no node.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use k8s_openapi::{ByteString, api::core::v1::Secret};
use kube::Api;
use tiny_sdk::{
    contract::annotation::{SECRET_ALLOWED_FLOWS, SECRET_ALLOWED_NODES},
    secret::{Requester, SecretError, SecretSource, key_list},
};

/// The Go SDK's `secretResolveTTL`: how long a read Secret is trusted.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60);

/// A Secret as read: its data and limits, or that it does not exist.
type Read = Option<Arc<Stored>>;

/// What is kept of a read Secret.
struct Stored {
    data: BTreeMap<String, ByteString>,
    /// `tinysystems.io/allowed-flows`, split; `None` without the annotation.
    flows: Option<Vec<String>>,
    /// `tinysystems.io/allowed-nodes`, split; `None` without the annotation.
    nodes: Option<Vec<String>>,
}

impl Stored {
    fn of(secret: Secret) -> Self {
        let annotations = secret.metadata.annotations.unwrap_or_default();
        let list = |key: &str| {
            annotations.get(key).map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
        };
        Self {
            flows: list(SECRET_ALLOWED_FLOWS),
            nodes: list(SECRET_ALLOWED_NODES),
            data: secret.data.unwrap_or_default(),
        }
    }

    /// `Err` when a limit of the Secret `name` leaves `who` out.
    fn admits(&self, name: &str, who: Requester<'_>) -> Result<(), SecretError> {
        let flow = who.flow.unwrap_or("");
        let limits = [
            (SECRET_ALLOWED_FLOWS, &self.flows, "flows", flow),
            (SECRET_ALLOWED_NODES, &self.nodes, "nodes", who.node),
        ];
        for (annotation, allowed, what, asking) in limits {
            let Some(allowed) = allowed else { continue };
            // An empty name (no flow, no node given) is never on a list.
            if asking.is_empty() || !allowed.iter().any(|a| a == asking) {
                return Err(SecretError::NotAllowed {
                    name: name.to_owned(),
                    annotation: annotation.to_owned(),
                    allowed: format!("{what} {}", key_list(allowed.iter())),
                    node: who.node.to_owned(),
                    flow: flow.to_owned(),
                });
            }
        }
        Ok(())
    }
}

/// Reads declared Secrets of one namespace, each at most once per TTL.
pub struct KubeSecrets {
    api: Api<Secret>,
    namespace: String,
    declared: Vec<String>,
    cache: Trusted<Read>,
}

/// Values kept by name, each trusted for a TTL from when it was kept. On tokio's
/// clock, so that a paused test clock proves the rule to the millisecond.
struct Trusted<T> {
    ttl: Duration,
    kept: Mutex<HashMap<String, (tokio::time::Instant, T)>>,
}

impl<T: Clone> Trusted<T> {
    fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            kept: Mutex::default(),
        }
    }

    /// The value kept for `name`, while its TTL runs.
    fn get(&self, name: &str) -> Option<T> {
        let kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.get(name)
            .filter(|(at, _)| at.elapsed() < self.ttl)
            .map(|(_, value)| value.clone())
    }

    /// Keeps `value` for `name`, trusted from now.
    fn keep(&self, name: &str, value: T) {
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.insert(name.to_owned(), (tokio::time::Instant::now(), value));
    }
}

impl std::fmt::Debug for KubeSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeSecrets")
            .field("namespace", &self.namespace)
            .field("declared", &self.declared)
            .field("ttl", &self.cache.ttl)
            .finish_non_exhaustive()
    }
}

impl KubeSecrets {
    /// Reads the `declared` Secrets of `namespace` with `client`, trusting a read for `ttl`.
    pub fn new(client: kube::Client, namespace: &str, declared: Vec<String>, ttl: Duration) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            declared,
            cache: Trusted::new(ttl),
        }
    }

    async fn read(&self, name: &str) -> Result<Read, SecretError> {
        if let Some(read) = self.cache.get(name) {
            return Ok(read);
        }
        let read = match self.api.get_opt(name).await {
            Ok(secret) => secret.map(|s| Arc::new(Stored::of(s))),
            Err(kube::Error::Api(status)) if status.code == 403 => {
                return Err(SecretError::Forbidden { name: name.to_owned() });
            }
            Err(e) => {
                return Err(SecretError::Unavailable {
                    name: name.to_owned(),
                    reason: e.to_string(),
                });
            }
        };
        self.cache.keep(name, read.clone());
        Ok(read)
    }

    async fn value(&self, who: Requester<'_>, name: &str, key: &str) -> Result<String, SecretError> {
        if !self.declared.iter().any(|d| d == name) {
            return Err(SecretError::Undeclared {
                name: name.to_owned(),
                declared: key_list(self.declared.iter()),
            });
        }
        let Some(data) = self.read(name).await? else {
            return Err(SecretError::NotFound {
                name: name.to_owned(),
                namespace: self.namespace.clone(),
            });
        };
        data.admits(name, who)?;
        let Some(bytes) = data.data.get(key) else {
            return Err(SecretError::NoKey {
                name: name.to_owned(),
                key: key.to_owned(),
                keys: key_list(data.data.keys()),
            });
        };
        String::from_utf8(bytes.0.clone()).map_err(|_| SecretError::NotText {
            name: name.to_owned(),
            key: key.to_owned(),
        })
    }
}

impl SecretSource for KubeSecrets {
    /// Without a node to check, a Secret limited to named flows or nodes is refused.
    fn get<'a>(&'a self, name: &'a str, key: &'a str) -> BoxFuture<'a, Result<String, SecretError>> {
        let nobody = Requester { node: "", flow: None };
        Box::pin(self.value(nobody, name, key))
    }

    fn get_for<'a>(
        &'a self,
        who: Requester<'a>,
        name: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<String, SecretError>> {
        Box::pin(self.value(who, name, key))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    /// A Secret's kept limits from `annotations`.
    fn stored(annotations: &[(&str, &str)]) -> Stored {
        Stored::of(Secret {
            metadata: ObjectMeta {
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    /// The rule itself, on a paused clock: trusted until the TTL is over, to the
    /// millisecond, then no more; keeping again trusts from then; names apart.
    #[tokio::test(start_paused = true)]
    async fn a_kept_read_is_trusted_for_the_ttl_and_not_a_moment_longer() {
        let ttl = Duration::from_secs(60);
        let trusted = Trusted::new(ttl);
        assert_eq!(trusted.get("a"), None);
        trusted.keep("a", 1);
        tokio::time::advance(Duration::from_secs(30)).await;
        trusted.keep("b", 2);
        tokio::time::advance(Duration::from_millis(29_999)).await;
        assert_eq!(trusted.get("a"), Some(1), "within the TTL");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(trusted.get("a"), None, "the TTL is over");
        assert_eq!(trusted.get("b"), Some(2), "b was kept later");
        trusted.keep("a", 3);
        tokio::time::advance(ttl - Duration::from_millis(1)).await;
        assert_eq!(trusted.get("a"), Some(3), "kept again: trusted from then");
        assert_eq!(trusted.get("b"), None);
    }

    /// The annotation that refuses `node` of `flow`; None when admitted.
    fn refused_by(s: &Stored, node: &str, flow: Option<&str>) -> Option<String> {
        match s.admits("s", Requester { node, flow }) {
            Ok(()) => None,
            Err(SecretError::NotAllowed { annotation, .. }) => Some(annotation),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn both_lists_must_admit_and_an_empty_list_admits_no_node() {
        let both = stored(&[
            (SECRET_ALLOWED_FLOWS, "flow-a, flow-c"),
            (SECRET_ALLOWED_NODES, "a-sink"),
        ]);
        assert_eq!(refused_by(&both, "a-sink", Some("flow-c")), None);
        assert_eq!(
            refused_by(&both, "a-sink", Some("flow-b")).as_deref(),
            Some(SECRET_ALLOWED_FLOWS)
        );
        assert_eq!(refused_by(&both, "a-sink", None).as_deref(), Some(SECRET_ALLOWED_FLOWS));
        assert_eq!(
            refused_by(&both, "c-sink", Some("flow-a")).as_deref(),
            Some(SECRET_ALLOWED_NODES)
        );

        for empty in ["", " , "] {
            let none = stored(&[(SECRET_ALLOWED_NODES, empty)]);
            assert_eq!(
                refused_by(&none, "a-sink", Some("flow-a")).as_deref(),
                Some(SECRET_ALLOWED_NODES)
            );
        }
        assert_eq!(refused_by(&stored(&[]), "", None), None, "no annotation, no limit");
    }
}

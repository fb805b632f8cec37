//! The runtime's own error: why it could not start, or stopped.

use tiny_sdk::contract::label::MANAGED as MANAGED_LABEL;

use crate::permissions;

/// Why the runtime could not start or stopped. Each variant keeps its cause as the
/// error's `source`; [`Error::is_forbidden`] tells a missing RBAC rule from the rest.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The leader Lease could not be read or created.
    #[error("leader election: {0}")]
    LeaderElection(#[source] kube::Error),
    /// The module's TinyModule could not be created.
    #[error("registering the TinyModule: {0}")]
    Register(#[source] kube::Error),
    /// A listening address could not be bound.
    #[error("binding the {what} address {addr}: {source}")]
    Bind {
        /// What was to listen there (`probe`, `gRPC`).
        what: &'static str,
        /// The address.
        addr: std::net::SocketAddr,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// The gRPC server stopped with an error.
    #[error("gRPC server: {0}")]
    Serve(#[source] tonic::transport::Error),
    /// Kubernetes configuration could not be read or used.
    #[error("kubeconfig{}: {source}", .path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Config {
        /// The kubeconfig file, when one was named.
        path: Option<std::path::PathBuf>,
        /// Why not.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The NATS subjects could not be subscribed to.
    #[error("NATS: {0}")]
    Nats(#[source] tiny_sdk::Error),
    /// A Helm hook (`pre-install`, `pre-delete`) failed.
    #[error(transparent)]
    Hook(#[from] HookError),
}

impl Error {
    /// Whether the API server refused for want of permission (HTTP 403): the module's
    /// Role lacks a rule.
    pub fn is_forbidden(&self) -> bool {
        match self {
            Error::Register(e) => permissions::is_forbidden(e),
            Error::LeaderElection(e) => permissions::is_forbidden(e),
            Error::Hook(e) => e.is_forbidden(),
            _ => false,
        }
    }
}

/// Why a hook failed.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// No namespace was given.
    #[error("pre-install: no namespace (RELEASE_NAMESPACE or --namespace)")]
    NoNamespace,
    /// A reserved namespace.
    #[error(
        "pre-install: refusing to install into the reserved namespace `{0}`; create one for modules: \
         `kubectl create namespace tinysystems && kubectl label namespace tinysystems {MANAGED_LABEL}=true`"
    )]
    Reserved(String),
    /// The namespace does not exist.
    #[error("pre-install: namespace `{0}` does not exist")]
    Missing(String),
    /// The namespace is not dedicated to modules.
    #[error(
        "pre-install: namespace `{0}` is not labelled for tiny modules: `kubectl label namespace {0} {MANAGED_LABEL}=true`"
    )]
    NotManaged(String),
    /// The module still holds its Lease: it is running.
    #[error("pre-delete: the module still runs: `{holder}` holds Lease {lease} after waiting {waited:?}")]
    LeaseHeld {
        /// The Lease.
        lease: String,
        /// Its holder.
        holder: String,
        /// How long it was awaited.
        waited: std::time::Duration,
    },
    /// An API call failed.
    #[error("{hook}: {what}: {source}")]
    Api {
        /// `pre-install` or `pre-delete`.
        hook: &'static str,
        /// The operation.
        what: String,
        /// The API error (a Forbidden one names the missing permission).
        #[source]
        source: kube::Error,
    },
}

impl HookError {
    /// Whether an API call was refused for want of permission.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, HookError::Api { source, .. } if crate::permissions::is_forbidden(source))
    }
}

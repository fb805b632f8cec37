//! The errors of this crate.

use std::path::PathBuf;
use std::time::Duration;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The control-plane binaries could not be found or built.
    #[error("control-plane binaries: {0}")]
    Binaries(String),
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A control-plane process exited or did not become ready in time.
    #[error("{component} did not become ready: {reason}\n--- last lines of {} (TINY_TESTENV_KEEP=1 keeps the whole log) ---\n{log_tail}", log.display())]
    NotReady {
        /// `etcd`, `kube-apiserver` or `kube-controller-manager`.
        component: &'static str,
        /// Why it is considered failed.
        reason: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        log_tail: String,
    },
    /// A server that cannot choose its own port found each port it was started on taken
    /// by another process.
    #[error("{component}: port {port} was in use, as were the others of {tries} tries")]
    PortTaken {
        /// The server, e.g. `kube-apiserver`.
        component: &'static str,
        /// The last port tried.
        port: u16,
        /// How many ports were tried.
        tries: u32,
    },
    /// The generated kubeconfig could not be loaded.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// A request to the API server failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A manifest could not be read or is not what was expected.
    #[error("{}: {message}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Waiting for a condition took too long.
    #[error("timed out after {after:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long it was awaited.
        after: Duration,
    },
}

pub(crate) fn io_err(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}

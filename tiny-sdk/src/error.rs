//! Errors a component returns, and the payload of the conventional `error` port.
//!
//! Every error is either *transient* (marked retryable: worth another attempt under the
//! edge's retry policy) or *permanent* (never retried). As in the Go SDK, an edge retries
//! only what was marked retryable: an error nobody marked (a `?` on an I/O error, a
//! `String`) gets one attempt, because its side effect (a payment, an email, a paid
//! API call) may already have happened. Mark a failure that is safe to try again with
//! [`Error::transient`]:
//!
//! ```
//! # use tiny_sdk::{Error, Result};
//! # async fn call() -> std::io::Result<u32> { Ok(1) }
//! # async fn f() -> Result<u32> {
//! // Retried by the edge (a refused connection is worth another attempt):
//! let n = call().await.map_err(Error::transient)?;
//! // Not retried (the default for every conversion):
//! let m = call().await?;
//! # Ok(n + m) }
//! ```
//!
//! Which failures tiny itself marks retryable is listed in `docs/delivery.md`. The kind
//! crosses the wire between tiny modules (`x-error-kind`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The result type of handlers and hooks.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether an error may succeed when tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// Marked retryable: a retry may succeed, and trying again is safe (a timeout, a
    /// refused connection, a busy peer).
    Transient,
    /// Not retried: a retry repeats the failure (bad input, unknown port, a type
    /// mismatch), or nobody said that trying again is safe (every `From` conversion).
    Permanent,
}

/// An error from a component, a hop or the engine.
///
/// ```
/// use tiny_sdk::{Error, ErrorKind};
/// let e = Error::permanent("name must not be empty").with_code("EMPTY_NAME");
/// assert_eq!(e.kind(), ErrorKind::Permanent);
/// assert_eq!(e.code(), Some("EMPTY_NAME"));
/// assert!(!e.is_retryable());
/// ```
///
/// One pointer wide: every hop's future carries a `Result<Reply>`, so a large error
/// would be paid for by the hops that succeed.
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<Repr>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Repr {
    kind: ErrorKind,
    code: Option<String>,
    message: String,
    /// Where it happened (`node:port`), set once by the engine where it first saw it.
    origin: Option<String>,
    /// It arose further down the chain and a handler passed it up: only the edge into
    /// the node where it arose retries it (see [`Error::at`]).
    relayed: bool,
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Repr {
            kind,
            code,
            message,
            origin,
            relayed,
        } = &*self.0;
        f.debug_struct("Error")
            .field("kind", kind)
            .field("code", code)
            .field("message", message)
            .field("origin", origin)
            .field("relayed", relayed)
            .finish()
    }
}

impl Error {
    /// A transient error, marked retryable: the edge's retry policy may try the hop
    /// again (Go's `module.Retryable`). Mark only failures whose retry is safe.
    pub fn transient(message: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Transient, message)
    }

    /// A permanent error: never retried (also what every `From` conversion makes).
    pub fn permanent(message: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Permanent, message)
    }

    /// Builds an error of the given kind.
    pub fn new(kind: ErrorKind, message: impl fmt::Display) -> Self {
        Self(Box::new(Repr {
            kind,
            code: None,
            message: message.to_string(),
            origin: None,
            relayed: false,
        }))
    }

    /// Attaches a machine-readable code, matched against an edge's `nonRetryableErrorCodes`.
    #[must_use]
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.0.code = Some(code.into());
        self
    }

    /// Prefixes the message with where the error happened, keeping kind and code.
    #[must_use]
    pub fn context(mut self, what: impl fmt::Display) -> Self {
        self.0.message = format!("{what}: {}", self.0.message);
        self
    }

    /// Records where the error happened, unless an earlier hop already did: an error
    /// that travels back up a chain keeps the node that raised it.
    #[must_use]
    pub fn at(mut self, origin: impl FnOnce() -> String) -> Self {
        if self.0.origin.is_none() {
            self.0.origin = Some(origin());
        }
        self
    }

    /// Where it happened, as `node:port`, once the engine has seen it.
    pub fn origin(&self) -> Option<&str> {
        self.0.origin.as_deref()
    }

    /// Whether it arose further down the chain than the node that returned it (a
    /// handler passed a downstream failure up). Only the edge into the node where an
    /// error arose retries it, so that attempts do not multiply up a chain.
    pub fn is_relayed(&self) -> bool {
        self.0.relayed
    }

    /// Marks it as arisen further down the chain (see [`is_relayed`](Self::is_relayed)):
    /// what the gRPC wire does for an error another module's node passed up, and what a
    /// handler does that answers a downstream failure with an error of its own that its
    /// edge should not retry.
    #[must_use]
    pub fn relayed(mut self) -> Self {
        self.0.relayed = true;
        self
    }

    /// Transient or permanent.
    pub fn kind(&self) -> ErrorKind {
        self.0.kind
    }

    /// The code, if one was attached.
    pub fn code(&self) -> Option<&str> {
        self.0.code.as_deref()
    }

    /// The human-readable message.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// `true` for transient errors.
    pub fn is_retryable(&self) -> bool {
        self.0.kind == ErrorKind::Transient
    }

    /// The message, to change in place: how [`redact::scrub_error`](crate::redact::scrub_error)
    /// takes secrets out of it (an error knows nothing of secrets).
    pub(crate) fn message_mut(&mut self) -> &mut String {
        &mut self.0.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(origin) = &self.0.origin {
            write!(f, "{origin}: ")?;
        }
        f.write_str(&self.0.message)?;
        if let Some(code) = &self.0.code {
            write!(f, " [{code}]")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Codes of the errors the engine itself raises, for `nonRetryableErrorCodes` and for
/// code that must tell them apart without reading a message.
pub mod code {
    /// The target node was removed while its handler ran.
    pub const NODE_REMOVED: &str = "NODE_REMOVED";
    /// No node of that name is loaded in the module that should run it.
    pub const NODE_NOT_FOUND: &str = "NODE_NOT_FOUND";
    /// The node exists but does not run: its spec or its name was refused.
    pub const NODE_NOT_RUNNING: &str = "NODE_NOT_RUNNING";
    /// The component has no such port (or the settings switched it off).
    pub const UNKNOWN_PORT: &str = "UNKNOWN_PORT";
    /// The message does not decode into the port's type.
    pub const UNDECODABLE: &str = "UNDECODABLE";
    /// An edge mapping failed to evaluate.
    pub const MAPPING: &str = "MAPPING";
    /// The cycle guard stopped the message.
    pub const CYCLE: &str = "CYCLE";
    /// The message's root had made as many hops as its budget allows (see
    /// [`HOP_BUDGET`](crate::hop::HOP_BUDGET)).
    pub const HOP_BUDGET: &str = "HOP_BUDGET";
    /// A message from another module arrived after its sender's deadline: dropped,
    /// unrun.
    pub const EXPIRED: &str = "EXPIRED";
    /// A component panicked.
    pub const PANIC: &str = "PANIC";
    /// The node's `spec.component` is not a component of the module (or an agent-tool
    /// call names one it does not have).
    pub const UNKNOWN_COMPONENT: &str = "UNKNOWN_COMPONENT";
    /// An agent-tool call (`x-mode: rpc`) names a component that is not a tool.
    pub const NOT_AGENT_TOOL: &str = "NOT_AGENT_TOOL";
    /// The node's spec is wrong (a port, an expression, settings, an edge, a policy).
    pub const INVALID_SPEC: &str = "INVALID_SPEC";
    /// The node's name is not `{flow}.{module}.{component}-{suffix}` for its component.
    pub const INVALID_NAME: &str = "INVALID_NAME";
    /// The object (a TinyNode, a TinySignal) does not decode at all.
    pub const UNDECODABLE_OBJECT: &str = "UNDECODABLE_OBJECT";
    /// An edge leaves a port that the node's settings switched off or removed (a
    /// router's `out_<route>` after the route went): the node runs, the edge does not.
    pub const PORT_REMOVED: &str = "PORT_REMOVED";
    /// A node state value is not what the reader expects (not base64, not that type).
    pub const STATE_UNDECODABLE: &str = "STATE_UNDECODABLE";
    /// A node state write would take the node's state over its cap.
    pub const STATE_TOO_LARGE: &str = "STATE_TOO_LARGE";
    /// A node state key has characters a metadata key cannot hold.
    pub const STATE_KEY: &str = "STATE_KEY";
    /// A node metadata key has characters a metadata key cannot hold, or is under
    /// `_state/` (node state's).
    pub const METADATA_KEY: &str = "METADATA_KEY";
    /// A node metadata write would take the node's raw metadata over its cap.
    pub const METADATA_TOO_LARGE: &str = "METADATA_TOO_LARGE";
    /// A message from another module is malformed: no `<node>:<port>` target, a hop
    /// count that is not a number, a payload that is not JSON.
    pub const INVALID_MESSAGE: &str = "INVALID_MESSAGE";
    /// Another module could not be reached: no replica answers on its subject or
    /// address, or the broker between them is down.
    pub const UNREACHABLE: &str = "UNREACHABLE";
    /// Another module did not answer within the hop's deadline.
    pub const TIMEOUT: &str = "TIMEOUT";
    /// A message or reply is over the limit of the wire between modules.
    pub const MESSAGE_TOO_LARGE: &str = "MESSAGE_TOO_LARGE";
    /// No TinyModule announces the module a message is for.
    pub const MODULE_UNKNOWN: &str = "MODULE_UNKNOWN";
    /// [`ResourceManager`](crate::ResourceManager): the object asked for does not exist.
    pub const NOT_FOUND: &str = "NOT_FOUND";
    /// [`ResourceManager`](crate::ResourceManager): a write lost a race with another
    /// writer (transient: retried calls usually pass).
    pub const CONFLICT: &str = "CONFLICT";
    /// [`ResourceManager`](crate::ResourceManager): the object to create exists already.
    pub const ALREADY_EXISTS: &str = "ALREADY_EXISTS";
    /// [`ResourceManager`](crate::ResourceManager): the API server refused the object as invalid.
    pub const INVALID: &str = "INVALID";
    /// [`ResourceManager`](crate::ResourceManager): the module's RBAC does not allow the call.
    /// Also a message from the wire to a system port (`_settings`, `_control`, ...) from a
    /// sender the receiving module does not take them from (tiny-runtime's
    /// `--system-ports-from`).
    pub const FORBIDDEN: &str = "FORBIDDEN";
    /// A `[[secret:<name>/<key>]]` placeholder of the node has no value (no such
    /// Secret or key, not declared, not readable): see [`crate::secret`].
    pub const SECRET: &str = "SECRET";
    /// The store of durable runs (JetStream KV `TINY_EXEC` in the runtime) failed a
    /// read, write, delete or listing: see [`RunStore`](crate::run::RunStore).
    pub const RUN_STORE: &str = "RUN_STORE";
    /// A durable run's ledger record does not read as a
    /// [`StepRecord`](crate::run::StepRecord), or does not write.
    pub const RUN_RECORD: &str = "RUN_RECORD";
    /// Run-scoped state was asked for outside a durable run, or where runs are not
    /// durable (no JetStream transport).
    pub const NO_RUN: &str = "NO_RUN";
    /// A replay of a captured run met an outside call
    /// ([`Ctx::outside`](crate::Ctx::outside)) the recording has no answer for: it is
    /// not made, so that the replay runs no side effect.
    pub const NOT_RECORDED: &str = "NOT_RECORDED";
    /// The broker refused to store a message: its JetStream stream or bucket is at a
    /// limit (`max_bytes`, `max_msgs`, `max_msg_size`; docs/limits.md). Transient: the
    /// stream drains as its consumers take their messages.
    pub const STREAM_FULL: &str = "STREAM_FULL";
    /// The hop was dropped before it answered (an edge's timeout, a cancellation, its
    /// caller gone): the error its span ends with, so that a trace view tells it from
    /// a handler's failure.
    pub const ABANDONED: &str = "ABANDONED";
}

/// Foreign errors are not retried unless marked: as in the Go SDK, an unmarked failure
/// gets one attempt, since what it did before failing may not be safe to do twice.
/// Wrap a failure that is with [`Error::transient`] (`.map_err(Error::transient)?`).
macro_rules! unmarked_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::permanent(e)
            }
        }
    )*};
}
unmarked_from!(std::io::Error, String, &str, std::fmt::Error);

impl From<serde_json::Error> for Error {
    /// A (de)serialisation failure repeats on retry.
    fn from(e: serde_json::Error) -> Self {
        Error::permanent(e)
    }
}

/// The payload of the conventional `error` port: the failed input's context and the
/// error text. Same JSON shape as the Go SDK's `module.ErrorMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ErrorMessage {
    /// The `context` field of the failed input, or the whole input when it has none.
    #[serde(default)]
    pub context: serde_json::Value,
    /// The error text.
    pub error: String,
    /// Whether a retry could succeed.
    #[serde(default)]
    pub retryable: bool,
    /// The error's code, `null` when it has none (always present, so that an edge
    /// reading `{{$.code}}` does not fail on errors without one).
    #[serde(default)]
    pub code: Option<String>,
}

impl ErrorMessage {
    /// Builds the error-port payload for `err` raised while handling `input`.
    pub fn new(input: &serde_json::Value, err: &Error) -> Self {
        let context = input.get("context").cloned().unwrap_or_else(|| input.clone());
        Self {
            context,
            error: err.message().to_owned(),
            retryable: err.is_retryable(),
            code: err.code().map(str::to_owned),
        }
    }
}

impl schemars::JsonSchema for ErrorMessage {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ErrorMessage".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "title": "Error",
            "properties": {
                "context": { "title": "Context", "configurable": true,
                             "description": "The context of the message that failed" },
                "error": { "type": "string", "title": "Error" },
                "retryable": { "type": "boolean", "title": "Retryable" },
                "code": { "type": ["string", "null"], "title": "Code" }
            },
            "required": ["error"]
        })
    }
}

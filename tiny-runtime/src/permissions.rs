//! What the API server refused this module for want of an RBAC rule.
//!
//! A refused write is logged where it happens, but a log scrolls away: the operations
//! refused *now* are also kept here, and the leader shows them in its TinyModule's
//! `Permitted` condition until each works again. An operator who removed a rule finds
//! which operation it broke with `kubectl get tinymodule <module> -o yaml`.

use std::{collections::BTreeMap, fmt, sync::Mutex};

use k8s_openapi::{
    apimachinery::pkg::apis::meta::v1::{Condition, Time},
    jiff::Timestamp,
};
use tokio::sync::watch;

/// The condition type on the TinyModule's status.
pub const CONDITION: &str = "Permitted";

/// Something the runtime does that the module's Role must allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// Patching `tinynodes/status`.
    WriteNodeStatus,
    /// Adding or removing the TinyNode finalizer (patching `tinynodes`).
    NodeFinalizer,
    /// Creating an Event.
    PublishEvent,
    /// Claiming a TinySignal or recording its outcome (patching `tinysignals/status`).
    WriteSignalStatus,
    /// Reading a TinySignal back after a claim whose answer was lost (`get`).
    ReadSignal,
    /// Patching `tinytrackers/status`.
    WriteTrackerStatus,
    /// Listing and watching the named kind.
    Watch(&'static str),
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::WriteNodeStatus => f.write_str("writing TinyNode status"),
            Operation::NodeFinalizer => f.write_str("updating the TinyNode finalizer"),
            Operation::PublishEvent => f.write_str("publishing an Event"),
            Operation::WriteSignalStatus => f.write_str("writing TinySignal status"),
            Operation::ReadSignal => f.write_str("reading a TinySignal"),
            Operation::WriteTrackerStatus => f.write_str("writing TinyTracker status"),
            Operation::Watch(kind) => write!(f, "watching {kind}"),
        }
    }
}

/// Whether `error` is the API server refusing for want of permission (HTTP 403).
pub fn is_forbidden(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 403)
}

/// The operations refused now, with the API server's words for each.
#[derive(Debug)]
pub struct Permissions {
    denied: Mutex<BTreeMap<Operation, String>>,
    /// Bumped on every change, so the publisher wakes.
    changes: watch::Sender<Time>,
}

impl Default for Permissions {
    fn default() -> Self {
        Self {
            denied: Mutex::default(),
            changes: watch::Sender::new(Time(Timestamp::now())),
        }
    }
}

impl Permissions {
    /// Notes how `operation` ended: a 403 is kept (and logged when it is new), a success
    /// clears it; any other error says nothing about permissions and changes nothing.
    pub fn observe<T>(&self, operation: Operation, result: &Result<T, kube::Error>) {
        match result {
            Ok(_) => self.allowed(operation),
            Err(e) => self.failed(operation, e),
        }
    }

    /// `operation` failed with `error`: kept when it is a 403.
    pub fn failed(&self, operation: Operation, error: &kube::Error) {
        if !is_forbidden(error) {
            return;
        }
        let text = error.to_string();
        let Ok(mut denied) = self.denied.lock() else { return };
        if denied.get(&operation) != Some(&text) {
            tracing::error!(%operation, error = %text, "forbidden: the module's Role lacks a rule");
            denied.insert(operation, text);
            drop(denied);
            self.changed();
        }
    }

    /// `operation` succeeded: no longer refused.
    pub fn allowed(&self, operation: Operation) {
        let Ok(mut denied) = self.denied.lock() else { return };
        if denied.remove(&operation).is_some() {
            drop(denied);
            tracing::info!(%operation, "permitted again");
            self.changed();
        }
    }

    /// The operations refused now.
    pub fn denied(&self) -> Vec<(Operation, String)> {
        self.denied
            .lock()
            .map(|d| d.iter().map(|(o, t)| (*o, t.clone())).collect())
            .unwrap_or_default()
    }

    /// The TinyModule condition: `True` when nothing is refused, else `False` with
    /// reason `Forbidden` and one line per refused operation.
    pub fn condition(&self, observed_generation: Option<i64>) -> Condition {
        let denied = self.denied();
        let (status, reason, message) = if denied.is_empty() {
            ("True", "AllPermitted", String::new())
        } else {
            let lines: Vec<String> = denied.iter().map(|(op, text)| format!("{op}: {text}")).collect();
            ("False", "Forbidden", lines.join("\n"))
        };
        Condition {
            type_: CONDITION.into(),
            status: status.into(),
            reason: reason.into(),
            message,
            last_transition_time: self.changes.borrow().clone(),
            observed_generation,
        }
    }

    /// Waits until the refused operations change.
    pub fn subscribe(&self) -> watch::Receiver<Time> {
        self.changes.subscribe()
    }

    fn changed(&self) {
        self.changes.send_replace(Time(Timestamp::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(
                "tinynodes.operator.tinysystems.io \"n\" is forbidden: cannot patch resource \"tinynodes/status\"",
                "Forbidden",
            )
            .with_code(code)
            .boxed(),
        )
    }

    #[test]
    fn a_403_is_kept_until_the_operation_works_and_other_errors_change_nothing() {
        let p = Permissions::default();
        let mut changes = p.subscribe();
        changes.mark_unchanged();
        assert_eq!(p.condition(None).status, "True");

        p.observe::<()>(Operation::WriteNodeStatus, &Err(refused(500)));
        assert!(p.denied().is_empty(), "a 500 is not a permission problem");
        assert!(!changes.has_changed().unwrap_or(true));

        p.observe::<()>(Operation::WriteNodeStatus, &Err(refused(403)));
        p.observe::<()>(Operation::PublishEvent, &Err(refused(403)));
        let c = p.condition(Some(3));
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "Forbidden"));
        assert!(c.message.starts_with("writing TinyNode status: "), "{}", c.message);
        assert!(c.message.contains("\npublishing an Event: "), "{}", c.message);
        assert!(changes.has_changed().unwrap_or(false));

        p.observe(Operation::WriteNodeStatus, &Ok(()));
        p.observe(Operation::PublishEvent, &Ok(()));
        assert_eq!(p.condition(None).status, "True");
    }
}

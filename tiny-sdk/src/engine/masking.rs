//! What the engine masks: the values nodes resolved from `[[secret:...]]`
//! placeholders, and the texts to keep out of what is said about a hop.

use std::sync::Arc;

use serde_json::Value;

use crate::{
    error::Error,
    msg::Msg,
    port::PortSpec,
    redact::{MIN_SCRUB_LEN, Secrets, scrub_error},
};

/// The values every node of the engine resolved from `[[secret:...]]` placeholders:
/// masked in every node's records, since a component may pass on what it made of one
/// (a greeting built from a token) to nodes downstream.
#[derive(Debug, Default)]
pub struct Known {
    /// Whether there are any: a hop of a module without placeholders pays one load.
    any: std::sync::atomic::AtomicBool,
    values: std::sync::RwLock<Arc<[String]>>,
}

impl Known {
    /// The values, `None` when there are none.
    pub fn get(&self) -> Option<Arc<[String]>> {
        if !self.any.load(std::sync::atomic::Ordering::Acquire) {
            return None;
        }
        Some(
            self.values
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        )
    }

    pub fn set(&self, values: Vec<String>) {
        let any = !values.is_empty();
        *self.values.write().unwrap_or_else(std::sync::PoisonError::into_inner) = values.into();
        self.any.store(any, std::sync::atomic::Ordering::Release);
    }
}

/// `e` without `values` and without those of `input` at `secrets`.
pub fn redact_with(e: Error, secrets: &Secrets, input: Option<&Msg>, values: Vec<String>) -> Error {
    let json = if secrets.is_empty() {
        None
    } else {
        input.and_then(|m| m.json().ok())
    };
    let values = secret_texts(secrets, json, values);
    if values.is_empty() { e } else { scrub_error(e, &values) }
}

/// The texts to mask in what is said about a hop: `values` (the node's), the port's
/// known secret values (long enough to be told apart), and those `input` holds at the
/// port's secret fields.
pub fn secret_texts(secrets: &Secrets, input: Option<&Value>, mut values: Vec<String>) -> Vec<String> {
    for v in secrets.values() {
        if v.chars().count() >= MIN_SCRUB_LEN && !values.contains(v) {
            values.push(v.clone());
        }
    }
    if let Some(json) = input {
        secrets.collect(json, &mut values);
    }
    values
}

/// What a catch port may carry of a failure on `port`: `input` with the port's secret
/// fields masked, and `err` without the values of those fields or of the secret fields
/// of `settings` (an [`ErrorMessage`](crate::ErrorMessage) goes on into the flow, where
/// trackers and traces record it).
pub(crate) fn for_catch_port(
    ports: &[PortSpec],
    port: &str,
    input: &mut Value,
    settings: Option<&Value>,
    err: Error,
) -> Error {
    let secrets_of = |name: &str| {
        ports
            .iter()
            .find(|p| p.name == name)
            .map(|p| Secrets::from_schema(&(p.schema)()))
    };
    let mut values = Vec::new();
    if let Some(secrets) = secrets_of(port) {
        secrets.collect(input, &mut values);
        secrets.mask(input);
    }
    if let (Some(secrets), Some(settings)) = (secrets_of(crate::contract::port::SETTINGS), settings) {
        secrets.collect(settings, &mut values);
    }
    if values.is_empty() {
        err
    } else {
        scrub_error(err, &values)
    }
}

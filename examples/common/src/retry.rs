//! `retry`: the explicit retry supervisor for an error path.
//!
//! Wire a component's error port (`{context, error, retryable}`) into `request`,
//! `retry` back into that component, `failed` to a dead letter. The attempt count
//! rides in the message, so one node supervises many loops without cross-talk.

use std::{
    hash::{BuildHasher, Hasher},
    time::Duration,
};

use serde_json::Value;
use tiny_sdk::prelude::*;

const DEFAULT_MAX_ATTEMPTS: i64 = 5;
const DEFAULT_INITIAL_MS: i64 = 500;
const DEFAULT_MAX_MS: i64 = 30_000;

/// How the wait grows from one attempt to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, Schema)]
#[serde(rename_all = "lowercase")]
pub enum Backoff {
    /// initial × 2ⁿ; also what an unknown or empty name means, as in Go.
    #[default]
    #[tiny(title = "exponential")]
    Exponential,
    /// initial × (n+1).
    #[tiny(title = "linear")]
    Linear,
    /// Always initial.
    #[tiny(title = "constant")]
    Constant,
}

/// Settings, as Go's retry.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct RetrySettings {
    /// Upper bound on attempts, the first one included: 5 = the original + 4 retries.
    #[tiny(title = "Max Attempts", default = 5)]
    #[schemars(range(min = 1))]
    pub max_attempts: i64,
    /// Wait before the first retry.
    #[tiny(title = "Initial Delay (ms)", default = 500)]
    #[schemars(range(min = 0))]
    pub initial_delay_ms: i64,
    /// Upper bound on a single wait.
    #[tiny(title = "Max Delay (ms)", default = 30000)]
    #[schemars(range(min = 0))]
    pub max_delay_ms: i64,
    #[tiny(title = "Backoff", default = "exponential")]
    #[serde(deserialize_with = "lenient_backoff")]
    #[schemars(with = "Backoff")]
    pub backoff: Backoff,
    /// Randomise each delay by ±25%, so that many flows retrying one upstream do not
    /// come back at once.
    #[tiny(title = "Jitter")]
    pub jitter: bool,
}

impl Default for RetrySettings {
    fn default() -> Self {
        Self {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            initial_delay_ms: DEFAULT_INITIAL_MS,
            max_delay_ms: DEFAULT_MAX_MS,
            backoff: Backoff::Exponential,
            jitter: true,
        }
    }
}

/// A backoff by name; an unknown or empty name is exponential, as Go reads it.
fn lenient_backoff<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Backoff, D::Error> {
    let name = String::deserialize(d)?;
    Ok(match name.as_str() {
        "linear" => Backoff::Linear,
        "constant" => Backoff::Constant,
        _ => Backoff::Exponential,
    })
}

/// What `request` takes: an error port's message.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
pub struct RetryRequest {
    /// The original request, passed through so that the loop can re-invoke it.
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Zero or absent on the first arrival.
    #[tiny(title = "Attempt")]
    pub attempt: i64,
    /// False: straight to Failed, without waiting.
    #[tiny(title = "Retryable")]
    pub retryable: bool,
    /// The last error, forwarded to Failed.
    #[tiny(title = "Last Error")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// What `retry` sends, after the wait.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct RetryOut {
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Incremented before the emit.
    #[tiny(title = "Attempt")]
    pub attempt: i64,
    /// How long the node just waited.
    #[tiny(title = "Slept (ms)")]
    pub next_delay_ms: i64,
}

/// Why the loop gave up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, Schema)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The attempt limit was reached.
    #[default]
    #[tiny(title = "max_attempts")]
    MaxAttempts,
    /// The error was marked not retryable.
    #[tiny(title = "not_retryable")]
    NotRetryable,
}

/// What `failed` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Failed {
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// The attempt count when the loop gave up.
    #[tiny(title = "Attempt")]
    pub attempt: i64,
    #[tiny(title = "Last Error")]
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
    /// `max_attempts` or `not_retryable`.
    #[tiny(title = "Reason")]
    pub reason: Reason,
}

/// Retry supervisor with bounded attempts and a backoff: waits, then emits on
/// Retry; gives up on Failed when the error is not retryable or the attempts are
/// used up.
#[derive(Component, Default, Debug)]
#[component(
    name = "retry",
    description = "Retry",
    info = "Explicit retry supervisor with bounded attempts and configurable backoff, for the error port of any component that emits {context, error, retryable}. Stateless: the attempt count rides in the payload.",
    tags("SDK", "Resilience", "Backoff"),
    settings = RetrySettings
)]
pub struct Retry {
    #[port(label = "Request", position = Left)]
    request: Input<RetryRequest>,
    #[port(label = "Retry", position = Right)]
    retry: Output<RetryOut>,
    #[port(label = "Failed", position = Bottom)]
    failed: Output<Failed>,
}

/// The wait in ms before the attempt after `prev_attempt`, capped at the maximum,
/// with `unit` (in [0, 1)) placing the ±25% jitter when it is on.
pub fn delay_ms(s: &RetrySettings, prev_attempt: i64, unit: f64) -> i64 {
    let initial = if s.initial_delay_ms < 0 {
        DEFAULT_INITIAL_MS
    } else {
        s.initial_delay_ms
    } as f64;
    let max = if s.max_delay_ms <= 0 {
        DEFAULT_MAX_MS
    } else {
        s.max_delay_ms
    } as f64;
    let n = prev_attempt.max(0) as f64;
    let mut raw = match s.backoff {
        Backoff::Exponential => initial * 2f64.powf(n),
        Backoff::Linear => initial * (n + 1.0),
        Backoff::Constant => initial,
    }
    .min(max);
    if s.jitter {
        raw = (raw * (0.75 + unit * 0.5)).min(max);
    }
    raw.max(0.0) as i64
}

/// A number in [0, 1) from the process's randomly keyed hasher: jitter needs
/// spread, not cryptographic quality.
fn unit_random() -> f64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[handlers]
impl Retry {
    async fn on_request(&self, ctx: &Ctx<Self>, req: RetryRequest) -> Result<Reply> {
        let settings = ctx.settings();
        if !req.retryable {
            let out = Failed {
                context: req.context,
                attempt: req.attempt,
                error: req.error,
                reason: Reason::NotRetryable,
            };
            return self.failed.emit(ctx, out).await;
        }
        let max_attempts = if settings.max_attempts <= 0 {
            DEFAULT_MAX_ATTEMPTS
        } else {
            settings.max_attempts
        };
        let next = req.attempt.saturating_add(1);
        if next >= max_attempts {
            let out = Failed {
                context: req.context,
                attempt: next,
                error: req.error,
                reason: Reason::MaxAttempts,
            };
            return self.failed.emit(ctx, out).await;
        }
        let wait = delay_ms(settings, req.attempt, unit_random());
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(wait.unsigned_abs())) => {}
            () = ctx.cancelled() => return Err(Error::permanent("retry: the wait was cancelled by its caller")),
        }
        let out = RetryOut {
            context: req.context,
            attempt: next,
            next_delay_ms: wait,
        };
        self.retry.emit(ctx, out).await
    }
}

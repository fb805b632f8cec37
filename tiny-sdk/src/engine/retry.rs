//! Retry policies: how often and how patiently a failed hop is tried again.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::{
    error::{Error, Result},
    flow::RetryPolicy,
};

/// The shortest wait before a retry, whatever the policy says (`initialDelayMs: 0`
/// included): a failing target is never hammered in a tight loop.
pub const MIN_RETRY_DELAY: Duration = Duration::from_millis(10);

/// A compiled [`RetryPolicy`]: parsed and checked once, when the node loads.
///
/// Defaults, when the edge has no policy: 3 attempts, 1 s doubling up to 30 s, no
/// per-attempt deadline. Permanent errors are never retried.
///
/// [`delay`](Self::delay) is the ceiling of a wait, never below [`MIN_RETRY_DELAY`];
/// the wait itself is drawn at random between the two ("full jitter"), so that the
/// hops a failure hit at once do not all come back at once.
///
/// ```
/// use std::time::Duration;
/// let b = tiny_sdk::engine::Backoff::default();
/// assert_eq!(b.delay(1), Duration::from_secs(1));
/// assert_eq!(b.delay(2), Duration::from_secs(2));
/// assert_eq!(b.delay(10), Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff {
    /// Attempts in all, including the first.
    pub max_attempts: u32,
    /// Delay before the first retry.
    pub initial: Duration,
    /// Growth of the delay per retry.
    pub coefficient: f64,
    /// Cap of the delay.
    pub max_delay: Duration,
    /// Deadline for each attempt.
    pub timeout: Option<Duration>,
    /// Error codes never retried.
    pub non_retryable_codes: Vec<String>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial: Duration::from_secs(1),
            coefficient: 2.0,
            max_delay: Duration::from_secs(30),
            timeout: None,
            non_retryable_codes: Vec::new(),
        }
    }
}

impl Backoff {
    /// Compiles an edge's policy, filling gaps with the defaults.
    pub fn from_policy(policy: Option<&RetryPolicy>) -> Result<Self> {
        let mut b = Backoff::default();
        let Some(p) = policy else { return Ok(b) };
        if let Some(n) = p.max_attempts {
            if !(1..=100).contains(&n) {
                return Err(Error::permanent(format!(
                    "retryPolicy.maxAttempts {n} is not between 1 and 100"
                )));
            }
            b.max_attempts = n;
        }
        if let Some(ms) = p.initial_delay_ms {
            b.initial = Duration::from_millis(ms);
        }
        if let Some(c) = &p.backoff_coefficient {
            b.coefficient = match c.trim().parse::<f64>() {
                Ok(v) if v >= 1.0 && v.is_finite() => v,
                _ => {
                    return Err(Error::permanent(format!(
                        "retryPolicy.backoffCoefficient `{c}` is not a number of at least 1"
                    )));
                }
            };
        }
        if let Some(ms) = p.max_delay_ms {
            b.max_delay = Duration::from_millis(ms);
        }
        b.timeout = p.timeout_ms.filter(|ms| *ms > 0).map(Duration::from_millis);
        b.non_retryable_codes.clone_from(&p.non_retryable_error_codes);
        Ok(b)
    }

    /// The longest wait after failed attempt `attempt` (1-based): the policy's
    /// exponential delay, capped by its `maxDelayMs`, and never below
    /// [`MIN_RETRY_DELAY`].
    pub fn delay(&self, attempt: u32) -> Duration {
        let exp = self.coefficient.powi(attempt.saturating_sub(1).min(64) as i32);
        let secs = (self.initial.as_secs_f64() * exp).min(self.max_delay.as_secs_f64());
        Duration::from_secs_f64(secs.max(0.0)).max(MIN_RETRY_DELAY)
    }

    /// The wait after failed attempt `attempt` for a draw `unit` in `[0, 1]`: that
    /// far from [`MIN_RETRY_DELAY`] to [`delay`](Self::delay) (full jitter with a floor).
    pub fn jittered(&self, attempt: u32, unit: f64) -> Duration {
        let ceiling = self.delay(attempt);
        let spread = (ceiling - MIN_RETRY_DELAY).as_secs_f64() * unit.clamp(0.0, 1.0);
        MIN_RETRY_DELAY + Duration::from_secs_f64(spread)
    }

    /// The wait after failed attempt `attempt`, drawn at random.
    fn wait(&self, attempt: u32) -> Duration {
        self.jittered(attempt, random_unit())
    }

    /// Whether `err`, raised by attempt `attempt`, deserves another one.
    pub fn should_retry(&self, err: &Error, attempt: u32) -> bool {
        attempt < self.max_attempts
            && err.is_retryable()
            && !err.is_relayed()
            && !err
                .code()
                .is_some_and(|c| self.non_retryable_codes.iter().any(|n| n == c))
    }

    /// Runs `attempt` until it succeeds, fails for good, runs out of attempts, or
    /// `cancel` fires (which stops the waiting at once).
    pub async fn run<T, F, Fut>(&self, cancel: &CancellationToken, mut attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let started = tokio::time::Instant::now();
        match self.attempt(1, &mut attempt).await {
            Ok(v) => Ok(v),
            Err(err) => self.retry_after(err, started, cancel, attempt).await,
        }
    }

    /// One attempt, under the per-attempt deadline if there is one.
    async fn attempt<T, F, Fut>(&self, n: u32, attempt: &mut F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        match self.timeout {
            Some(limit) => match tokio::time::timeout(limit, attempt()).await {
                Ok(r) => r,
                Err(_) => Err(Error::transient(format!(
                    "attempt {n} timed out after {} ms",
                    limit.as_millis()
                ))),
            },
            None => attempt().await,
        }
    }

    /// Goes on after the first attempt, started at `started`, failed with `err`: the
    /// slow path, which the engine keeps out of a hop's (inline) future.
    pub(crate) async fn retry_after<T, F, Fut>(
        &self,
        mut err: Error,
        started: tokio::time::Instant,
        cancel: &CancellationToken,
        mut attempt: F,
    ) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut n = 1;
        loop {
            if !self.should_retry(&err, n) {
                if n == 1 {
                    return Err(err);
                }
                // Say what the whole hop cost, not only what the last attempt saw.
                let spent = started.elapsed().as_secs_f64();
                return Err(err.context(format_args!("gave up after {n} attempts in {spent:.1} s")));
            }
            tracing::debug!(attempt = n, error = %err, "retrying hop");
            tokio::select! {
                () = tokio::time::sleep(self.wait(n)) => {}
                () = cancel.cancelled() => {
                    return Err(Error::permanent(format!("cancelled while retrying after: {err}")));
                }
            }
            n += 1;
            match self.attempt(n, &mut attempt).await {
                Ok(v) => return Ok(v),
                Err(e) => err = e,
            }
        }
    }
}

/// A number in `[0, 1]` from the system's generator; `0.5` if it fails (the wait is
/// then the middle of its range, still above the floor).
fn random_unit() -> f64 {
    let mut b = [0u8; 8];
    match getrandom::fill(&mut b) {
        Ok(()) => (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64,
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zero_delay(attempts: u32) -> Backoff {
        let policy = RetryPolicy {
            max_attempts: Some(attempts),
            initial_delay_ms: Some(0),
            max_delay_ms: Some(0),
            ..RetryPolicy::default()
        };
        Backoff::from_policy(Some(&policy)).expect("a valid policy")
    }

    #[test]
    fn the_wait_is_drawn_between_the_floor_and_the_ceiling() {
        let b = Backoff::default();
        assert_eq!(b.jittered(1, 0.0), MIN_RETRY_DELAY);
        assert_eq!(b.jittered(1, 1.0), Duration::from_secs(1));
        assert_eq!(
            b.jittered(3, 0.5),
            MIN_RETRY_DELAY + (Duration::from_secs(4) - MIN_RETRY_DELAY) / 2
        );
        // A policy of no delay still waits the floor.
        assert_eq!(zero_delay(3).delay(1), MIN_RETRY_DELAY);
        assert_eq!(zero_delay(3).jittered(5, 1.0), MIN_RETRY_DELAY);
        let waits: std::collections::HashSet<Duration> = (0..32).map(|_| b.wait(4)).collect();
        assert!(waits.len() > 16, "32 draws gave {} distinct waits", waits.len());
        assert!(
            waits
                .iter()
                .all(|w| (MIN_RETRY_DELAY..=Duration::from_secs(8)).contains(w))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_delay_policy_waits_the_floor_between_attempts() {
        let b = zero_delay(100);
        let start = tokio::time::Instant::now();
        let mut at = Vec::new();
        let result: Result<()> = b
            .run(&CancellationToken::new(), || {
                at.push(start.elapsed());
                async { Err(Error::transient("down")) }
            })
            .await;
        assert!(result.is_err());
        assert_eq!(at.len(), 100);
        for pair in at.windows(2) {
            assert_eq!(pair[1] - pair[0], MIN_RETRY_DELAY, "attempts at {at:?}");
        }
    }
}

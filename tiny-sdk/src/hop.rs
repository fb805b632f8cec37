//! What a message carries from hop to hop: how far it came, its cancellation, the
//! replica's leadership and its durable run step. Plain data, below the author's API
//! and the engine that both pass it on.

use std::sync::{
    Arc,
    atomic::{AtomicU32, Ordering},
};

use tokio_util::sync::CancellationToken;

/// The cycle guard: a message that has made this many hops is refused (the Go SDK's
/// `MaxMessageDepth`).
pub const MAX_DEPTH: u32 = 256;

/// The hops one root message may cause in all, by default: the cycle guard bounds
/// how deep a chain goes, this bounds how wide (a loop with two out-edges makes 2^k
/// hops at depth k). An engine may set its own
/// ([`EngineBuilder::hop_budget`](crate::engine::EngineBuilder::hop_budget)).
pub const HOP_BUDGET: u32 = 100_000;

/// Per-message facts carried from hop to hop.
#[derive(Debug, Clone, Default)]
pub struct Hop {
    /// How many hops the message has made; the engine refuses to go past its limit.
    pub depth: u32,
    /// Cancelled when the caller gave up or the node is being stopped.
    pub cancel: Cancel,
    /// Whether this replica leads (only the leader should do leader-only work).
    pub leader: bool,
    /// The durable run step this hop belongs to, if any (see [`crate::run`]): a hop
    /// with a step travels through the durable transport.
    pub run: Option<Arc<crate::run::RunStep>>,
    /// The hops spent by the message's root so far, shared by every hop it leads to.
    pub budget: Budget,
    /// When the sender stops waiting (Unix ms; Go's `x-reply-deadline`), if it said:
    /// set from an edge's timeout, carried to other modules, which drop the message
    /// once it has passed.
    pub deadline_unix_ms: Option<u64>,
}

/// The hops a root message has caused, counted across every branch and every
/// module it reaches (carried on the wire as `x-message-hops`).
///
/// A message with no count yet (a ticker's, a hook's) starts one at its first hop:
/// each emit of such a context is a root of its own.
///
/// ```
/// use tiny_sdk::Budget;
/// let mut budget = Budget::spent_already(7);
/// let other = budget.clone();
/// assert_eq!(budget.spend(1), 8);
/// assert_eq!(other.spent(), 8);
/// assert_eq!(Budget::default().spent(), 0);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Budget(Option<Arc<AtomicU32>>);

impl Budget {
    /// A count that starts at `spent`: the hops a message made before it came here.
    pub fn spent_already(spent: u32) -> Self {
        Self(Some(Arc::new(AtomicU32::new(spent))))
    }

    /// Whether no count was started yet (a root message before its first hop).
    pub fn is_unset(&self) -> bool {
        self.0.is_none()
    }

    /// The hops spent so far.
    pub fn spent(&self) -> u32 {
        self.0.as_ref().map_or(0, |n| n.load(Ordering::Relaxed))
    }

    /// Spends `hops` hops; the hops spent with them.
    pub fn spend(&mut self, hops: u32) -> u32 {
        match &self.0 {
            // Relaxed: a count, ordering nothing else.
            Some(n) => n.fetch_add(hops, Ordering::Relaxed).saturating_add(hops),
            None => {
                self.0 = Some(Arc::new(AtomicU32::new(hops)));
                hops
            }
        }
    }
}

/// A hop's cancellation: a [`CancellationToken`] (it derefs to one) that every hop
/// of a message shares.
///
/// Copying a `CancellationToken` takes a lock (it counts its handles under the
/// token's mutex), and each hop copies its message's token; a `Cancel` is shared by
/// reference count instead, so a copy is one atomic increment.
///
/// ```
/// use tiny_sdk::context::Cancel;
/// use tokio_util::sync::CancellationToken;
///
/// let token = CancellationToken::new();
/// let cancel = Cancel::from(token.clone());
/// let copy = cancel.clone();
/// token.cancel();
/// assert!(copy.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<CancellationToken>);

impl Cancel {
    /// A fresh cancellation, under none.
    pub fn new() -> Self {
        Self::default()
    }

    /// The token itself (a copy of it: cancelling either cancels both).
    pub fn token(&self) -> CancellationToken {
        (*self.0).clone()
    }
}

impl std::ops::Deref for Cancel {
    type Target = CancellationToken;

    fn deref(&self) -> &CancellationToken {
        &self.0
    }
}

impl From<CancellationToken> for Cancel {
    fn from(token: CancellationToken) -> Self {
        Self(Arc::new(token))
    }
}

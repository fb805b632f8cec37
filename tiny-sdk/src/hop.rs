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
    /// The hops spent by the message's root so far, shared by every hop it leads to,
    /// and the deadline its sender set, if any.
    pub budget: Budget,
}

/// The hops a root message has caused, counted across every branch and every
/// module it reaches (carried on the wire as `x-message-hops`), and when its sender
/// stops waiting, if it said (Go's `x-reply-deadline`, Unix ms: set from an edge's
/// timeout; a module the message reaches after it drops the message).
///
/// A message with no count yet (a ticker's, a hook's) starts one at its first hop:
/// each emit of such a context is a root of its own. The deadline rides in the same
/// shared cell, not in every [`Hop`], so that a hop without one costs nothing more.
///
/// ```
/// use tiny_sdk::Budget;
/// let mut budget = Budget::spent_already(7);
/// let other = budget.clone();
/// assert_eq!(budget.spend(1), 8);
/// assert_eq!(other.spent(), 8);
/// let timed = budget.with_deadline(1_000);
/// assert_eq!((timed.spent(), timed.deadline_unix_ms()), (8, Some(1_000)));
/// assert_eq!(Budget::default().spent(), 0);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Budget(Option<Arc<Count>>);

/// The cell a [`Budget`] shares.
#[derive(Debug)]
struct Count {
    hops: AtomicU32,
    deadline_unix_ms: Option<u64>,
    /// The root's cell, when this one only adds a deadline: hops are counted there.
    root: Option<Arc<Count>>,
}

impl Count {
    fn hops(&self) -> &AtomicU32 {
        &self.root.as_deref().unwrap_or(self).hops
    }
}

impl Budget {
    /// A count that starts at `spent`: the hops a message made before it came here.
    pub fn spent_already(spent: u32) -> Self {
        Self::from_wire(spent, None)
    }

    /// A count that starts at `spent`, with the sender's deadline (Unix ms), as a
    /// message from another module brings them.
    pub fn from_wire(spent: u32, deadline_unix_ms: Option<u64>) -> Self {
        Self(Some(Arc::new(Count {
            hops: AtomicU32::new(spent),
            deadline_unix_ms,
            root: None,
        })))
    }

    /// The same count, with a deadline: `deadline_unix_ms`, or the one it had if that
    /// comes first.
    pub fn with_deadline(&self, deadline_unix_ms: u64) -> Self {
        let deadline = self
            .deadline_unix_ms()
            .map_or(deadline_unix_ms, |d| d.min(deadline_unix_ms));
        self.sharing(Some(deadline))
    }

    /// The same count, without a deadline: for work nobody waits for.
    pub fn without_deadline(&self) -> Self {
        if self.deadline_unix_ms().is_none() {
            return self.clone();
        }
        self.sharing(None)
    }

    /// A cell that counts in this one's root, with `deadline_unix_ms`.
    fn sharing(&self, deadline_unix_ms: Option<u64>) -> Self {
        let root = self.0.as_ref().map(|c| c.root.clone().unwrap_or_else(|| c.clone()));
        Self(Some(Arc::new(Count {
            hops: AtomicU32::new(0),
            deadline_unix_ms,
            root,
        })))
    }

    /// Whether no count was started yet (a root message before its first hop).
    pub fn is_unset(&self) -> bool {
        self.0.is_none()
    }

    /// The hops spent so far.
    pub fn spent(&self) -> u32 {
        self.0.as_ref().map_or(0, |c| c.hops().load(Ordering::Relaxed))
    }

    /// When the sender stops waiting, Unix ms, if it said.
    pub fn deadline_unix_ms(&self) -> Option<u64> {
        self.0.as_ref().and_then(|c| c.deadline_unix_ms)
    }

    /// Spends `hops` hops; the hops spent with them.
    pub fn spend(&mut self, hops: u32) -> u32 {
        match &self.0 {
            // Relaxed: a count, ordering nothing else.
            Some(c) => c.hops().fetch_add(hops, Ordering::Relaxed).saturating_add(hops),
            None => {
                *self = Self::spent_already(hops);
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

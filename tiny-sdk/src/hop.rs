//! What a message carries from hop to hop: how far it came, its cancellation (with
//! its root's hop budget), the replica's leadership and its durable run step. Plain
//! data, below the author's API and the engine that both pass it on.

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
    /// Cancelled when the caller gave up or the node is being stopped. The same
    /// shared cell carries the hops the message's root spent so far and the deadline
    /// its sender set, if any (see [`Cancel`]): a copy of a hop is one atomic
    /// increment.
    pub cancel: Cancel,
    /// Whether this replica leads (only the leader should do leader-only work).
    pub leader: bool,
    /// The durable run step this hop belongs to, if any (see [`crate::run`]): a hop
    /// with a step travels through the durable transport.
    pub run: Option<Arc<crate::run::RunStep>>,
}

/// A hop's cancellation (a [`CancellationToken`]: it derefs to one), and the budget of
/// the message's root: the hops it caused so far, counted across every branch and
/// every module it reaches (carried on the wire as `x-message-hops`), and when its
/// sender stops waiting, if it said (Go's `x-reply-deadline`, Unix ms: set from an
/// edge's timeout; a module the message reaches after it drops the message).
///
/// One cell, shared by reference count by every hop of a message: copying a
/// `CancellationToken` takes a lock (it counts its handles under the token's mutex),
/// and each hop copies its message's; a copy of a `Cancel` is one atomic increment,
/// the count and the deadline included. A cell that changes only the token or the
/// deadline ([`with_token`](Self::with_token), [`with_deadline`](Self::with_deadline))
/// counts in the root's cell.
///
/// A cell with no count yet ([`new`](Self::new), or made from a token: a ticker's, a
/// hook's hop) starts one at its first hop: each emit of such a context is a root of
/// its own.
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
///
/// let mut counted = Cancel::from_wire(CancellationToken::new(), 7, None);
/// let other = counted.clone();
/// assert_eq!(counted.spend(1), 8);
/// assert_eq!(other.spent(), 8);
/// let timed = counted.with_deadline(1_000);
/// assert_eq!((timed.spent(), timed.deadline_unix_ms()), (8, Some(1_000)));
/// assert!(Cancel::new().is_unset());
/// assert_eq!(Cancel::new().spent(), 0);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<Cell>);

/// The cell a [`Cancel`] shares.
#[derive(Debug, Default)]
struct Cell {
    token: CancellationToken,
    /// The hops spent, when this cell counts them (`counted`, no `root`).
    hops: AtomicU32,
    /// Whether a count was started here.
    counted: bool,
    deadline_unix_ms: Option<u64>,
    /// The cell that counts, when this one only has another token or deadline.
    root: Option<Arc<Cell>>,
}

impl Cell {
    /// Where the root's hops are counted, if a count was started.
    fn hops(&self) -> Option<&AtomicU32> {
        match &self.root {
            Some(root) => Some(&root.hops),
            None => self.counted.then_some(&self.hops),
        }
    }
}

impl Cancel {
    /// A fresh cancellation, under none, with no count yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The token itself (a copy of it: cancelling either cancels both).
    pub fn token(&self) -> CancellationToken {
        self.0.token.clone()
    }

    /// `token`, with a count that starts at `spent` (the hops a message made before
    /// it came here) and the sender's deadline (Unix ms), as a message from another
    /// module brings them.
    pub fn from_wire(token: CancellationToken, spent: u32, deadline_unix_ms: Option<u64>) -> Self {
        Self(Arc::new(Cell {
            token,
            hops: AtomicU32::new(spent),
            counted: true,
            deadline_unix_ms,
            root: None,
        }))
    }

    /// The same count and deadline, with `token` (a child of this one's, say: a
    /// request that can be abandoned on its own).
    pub fn with_token(&self, token: CancellationToken) -> Self {
        self.sharing(token, self.0.deadline_unix_ms)
    }

    /// The same token and count, with a deadline: `deadline_unix_ms`, or the one it
    /// had if that comes first.
    pub fn with_deadline(&self, deadline_unix_ms: u64) -> Self {
        let deadline = self
            .deadline_unix_ms()
            .map_or(deadline_unix_ms, |d| d.min(deadline_unix_ms));
        self.sharing(self.token(), Some(deadline))
    }

    /// The same token and count, without a deadline: for work nobody waits for.
    pub fn without_deadline(&self) -> Self {
        if self.deadline_unix_ms().is_none() {
            return self.clone();
        }
        self.sharing(self.token(), None)
    }

    /// A cell with `token` and `deadline_unix_ms` that counts in this one's root.
    fn sharing(&self, token: CancellationToken, deadline_unix_ms: Option<u64>) -> Self {
        let root = match &self.0.root {
            Some(root) => Some(root.clone()),
            None => self.0.counted.then(|| self.0.clone()),
        };
        Self(Arc::new(Cell {
            token,
            hops: AtomicU32::new(0),
            counted: false,
            deadline_unix_ms,
            root,
        }))
    }

    /// Whether no count was started yet (a root message before its first hop).
    pub fn is_unset(&self) -> bool {
        self.0.hops().is_none()
    }

    /// The hops the root spent so far.
    pub fn spent(&self) -> u32 {
        self.0.hops().map_or(0, |h| h.load(Ordering::Relaxed))
    }

    /// When the sender stops waiting, Unix ms, if it said.
    pub fn deadline_unix_ms(&self) -> Option<u64> {
        self.0.deadline_unix_ms
    }

    /// Spends `hops` hops; the hops spent with them. A cell with no count starts one
    /// (in place when nothing else holds it, else in a cell of its own).
    pub fn spend(&mut self, hops: u32) -> u32 {
        if let Some(count) = self.0.hops() {
            // Relaxed: a count, ordering nothing else.
            return count.fetch_add(hops, Ordering::Relaxed).saturating_add(hops);
        }
        self.start_count(hops);
        hops
    }

    /// Starts the count at `hops`. Cold: once per root message.
    #[cold]
    fn start_count(&mut self, hops: u32) {
        if let Some(cell) = Arc::get_mut(&mut self.0) {
            cell.counted = true;
            *cell.hops.get_mut() = hops;
            return;
        }
        *self = Self::from_wire(self.token(), hops, self.0.deadline_unix_ms);
    }
}

impl std::ops::Deref for Cancel {
    type Target = CancellationToken;

    fn deref(&self) -> &CancellationToken {
        &self.0.token
    }
}

impl From<CancellationToken> for Cancel {
    fn from(token: CancellationToken) -> Self {
        Self(Arc::new(Cell {
            token,
            ..Cell::default()
        }))
    }
}

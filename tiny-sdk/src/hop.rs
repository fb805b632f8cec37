//! What a message carries from hop to hop: how far it came, its cancellation, the
//! replica's leadership and its durable run step. Plain data, below the author's API
//! and the engine that both pass it on.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

/// The cycle guard: a message that has made this many hops is refused (the Go SDK's
/// `MaxMessageDepth`).
pub const MAX_DEPTH: u32 = 256;

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

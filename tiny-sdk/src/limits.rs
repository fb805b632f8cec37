//! The largest message the module's wire to other modules carries: the NATS broker's
//! `max_payload` (1 MiB on a default broker), or gRPC's message size (4 MiB). The
//! runtime sets it when it connects; a component whose own limit is larger (an HTTP
//! server's body size) can say so once, as a larger message crossing modules fails
//! with `MESSAGE_TOO_LARGE`.

use std::sync::atomic::{AtomicUsize, Ordering};

static WIRE_MAX: AtomicUsize = AtomicUsize::new(0);

/// Sets the largest message the wire carries, in bytes (the runtime, at connect).
pub fn set_wire_max(bytes: usize) {
    WIRE_MAX.store(bytes, Ordering::Relaxed);
}

/// The largest message the wire carries, in bytes; `None` before a runtime connected
/// (in-process, where nothing crosses a wire).
pub fn wire_max() -> Option<usize> {
    Some(WIRE_MAX.load(Ordering::Relaxed)).filter(|m| *m > 0)
}

//! What test components saw, by node: a handler records it, the test takes it.
//!
//! One record per test binary (each integration test is its own process); tests that
//! run at once keep apart by giving their nodes names of their own.
//!
//! ```
//! tiny_testkit::seen::record("sink-1", "hello".to_owned());
//! assert_eq!(tiny_testkit::seen::take("sink-1"), ["hello"]);
//! assert!(tiny_testkit::seen::take("sink-1").is_empty());
//! ```

use std::{
    collections::HashMap,
    sync::{Mutex, OnceLock},
};

fn seen() -> &'static Mutex<HashMap<String, Vec<String>>> {
    static SEEN: OnceLock<Mutex<HashMap<String, Vec<String>>>> = OnceLock::new();
    SEEN.get_or_init(Mutex::default)
}

/// Adds `what` to what `node` saw.
pub fn record(node: &str, what: String) {
    if let Ok(mut s) = seen().lock() {
        s.entry(node.to_owned()).or_default().push(what);
    }
}

/// What `node` saw since it was last taken, in order; empty if nothing.
pub fn take(node: &str) -> Vec<String> {
    seen().lock().ok().and_then(|mut s| s.remove(node)).unwrap_or_default()
}

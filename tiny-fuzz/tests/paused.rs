//! The fuzz runtime's time is paused (the `paused-time` feature, which this crate's tests
//! and the fuzz targets turn on): an hour's sleep of a fuzzed node costs nothing.

use std::time::Duration;

#[test]
fn an_hours_sleep_passes_at_once() {
    tiny_fuzz::runtime().block_on(async {
        // Read from the clock's state, not a wall-clock ceiling: `resume` panics on a
        // clock that is not frozen, so a runtime whose time runs fails here at once
        // (instead of sleeping the hour).
        tokio::time::resume();
        tokio::time::pause();
        let before = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(before.elapsed() >= Duration::from_secs(3600));
    });
}

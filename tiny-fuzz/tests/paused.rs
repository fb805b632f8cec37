//! The fuzz runtime's time is paused (the `paused-time` feature, which this crate's tests
//! and the fuzz targets turn on): an hour's sleep of a fuzzed node costs nothing.

use std::time::{Duration, Instant};

#[test]
fn an_hours_sleep_passes_at_once() {
    let started = Instant::now();
    tiny_fuzz::runtime().block_on(async { tokio::time::sleep(Duration::from_secs(3600)).await });
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

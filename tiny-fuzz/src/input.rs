//! What every target does with its input: split it, read it as JSON or YAML, and
//! run async code on a runtime of its own.

use serde_json::Value;

/// The part before the first NUL byte, and the part after it (if any).
pub fn split(data: &[u8]) -> (&[u8], Option<&[u8]>) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    }
}

/// The JSON value of `bytes`, or, when they are not JSON, a YAML value, or `None`.
pub fn json_or_yaml(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice(bytes)
        .ok()
        .or_else(|| serde_yaml::from_slice(bytes).ok())
}

/// A single-threaded runtime with paused time: sleeps (retry back-offs, node waits,
/// hop timeouts) complete as soon as nothing else can run, so a fuzzed delay of
/// hours costs nothing while a real busy loop still shows as a hang. Time is paused
/// with the `paused-time` feature only (the fuzz targets and this crate's tests turn it
/// on); without it, sleeps take their real time.
pub fn runtime() -> tokio::runtime::Runtime {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_time();
    #[cfg(feature = "paused-time")]
    builder.start_paused(true);
    match builder.build() {
        Ok(rt) => rt,
        // Only fails when the OS refuses a thread-local timer: nothing to fuzz then.
        Err(e) => panic!("cannot start a tokio runtime: {e}"),
    }
}

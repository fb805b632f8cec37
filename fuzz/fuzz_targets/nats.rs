//! Fuzz target `nats`: see `tiny_fuzz::nats` for the input format.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tiny_fuzz::nats::run(data));

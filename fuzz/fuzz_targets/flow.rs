//! Fuzz target `flow`: see `tiny_fuzz::flow` for the input format.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tiny_fuzz::flow::run(data));

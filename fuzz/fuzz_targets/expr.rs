//! Fuzz target `expr`: see `tiny_fuzz::expr` for the input format.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tiny_fuzz::expr::run(data));

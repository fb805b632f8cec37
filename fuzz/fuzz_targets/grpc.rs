//! Fuzz target `grpc`: see `tiny_fuzz::grpc` for the input format.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tiny_fuzz::grpc::run(data));

//! Fuzz target `schema`: see `tiny_fuzz::schema` for the input format.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tiny_fuzz::schema::run(data));

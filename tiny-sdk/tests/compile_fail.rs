//! Author mistakes that must not compile, each with the error a person should see.
//!
//! The `.stderr` files are checked against the pinned toolchain (rust-toolchain.toml).
//! After changing a diagnostic, regenerate with
//! `TRYBUILD=overwrite cargo test -p tiny-sdk --test compile_fail` and read every
//! changed file: one error, on the author's token, saying what to do.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}

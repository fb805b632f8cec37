//! The shared target folder (docs/testing.md, "The shared target folder"), through real
//! `make` runs: its lock (`tools/target-lock/run.sh`, with a stand-in for cargo): a
//! second `make` waits for the first and names it, a `make` nested in a locked command
//! runs at once; and two checkouts building into it with real cargo, one after the other
//! and at once, each test their own crates and binaries. The scripts use a folder of
//! their own, so they neither wait for nor block the `cargo test` that runs them.

use std::{
    path::Path,
    process::{Command, Output},
};

/// Runs `tools/target-lock/<name>` outside any `make` the test itself runs under.
fn script(name: &str) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tools/target-lock")
        .join(name);
    Command::new("bash")
        .arg(&script)
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .output()
        .expect("bash runs the script")
}

#[test]
fn two_checkouts_test_their_own_crates_one_after_the_other_and_at_once() {
    let out = script("checkouts.sh");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("ok: at once, B's doctest and binary were its own"),
        "{stdout}"
    );
}

#[test]
fn a_second_make_waits_for_the_first_and_a_nested_one_does_not() {
    let out = script("test.sh");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ok: the second make waited for the first"), "{stdout}");
}

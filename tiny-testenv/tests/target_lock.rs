//! The shared target folder's lock (`tools/target-lock/run.sh`, used by every cargo
//! command of the Makefile), through real `make` runs with a stand-in for cargo: a
//! second `make` waits for the first and names it; a `make` nested in a locked command
//! runs at once. The script uses a target folder of its own, so it neither waits for
//! nor blocks the `cargo test` that runs it.

use std::{path::Path, process::Command};

#[test]
fn a_second_make_waits_for_the_first_and_a_nested_one_does_not() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/target-lock/test.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .output()
        .expect("bash runs the script");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("ok: the second make waited for the first"), "{stdout}");
}

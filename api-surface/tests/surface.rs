//! The public API of each library crate, as a snapshot: a change to what an author (or
//! an operator's tooling) can name is a diff in review. Bless an intended change with
//! `INSTA_UPDATE=always cargo test -p api-surface`, and read the diff.

use std::path::Path;

fn surface(dir: &str, krate: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir);
    api_surface::surface(&root, krate)
}

#[test]
fn tiny_sdk() {
    insta::assert_snapshot!(surface("tiny-sdk", "tiny_sdk"));
}

#[test]
fn tiny_runtime() {
    insta::assert_snapshot!(surface("tiny-runtime", "tiny_runtime"));
}

#[test]
fn tiny_expr() {
    insta::assert_snapshot!(surface("tiny-expr", "tiny_expr"));
}

#[test]
fn tiny_macros() {
    insta::assert_snapshot!(surface("tiny-macros", "tiny_macros"));
}

#[test]
fn tiny_testenv() {
    insta::assert_snapshot!(surface("tiny-testenv", "tiny_testenv"));
}

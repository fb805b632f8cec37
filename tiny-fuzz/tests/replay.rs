//! Replays the committed corpus (`fuzz/corpus/<target>/`) and every crash found so far
//! (`fuzz/regressions/<target>/`) through the function each fuzz target calls, so a
//! normal `cargo test` keeps them passing without libFuzzer or a nightly compiler.

use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    path::{Path, PathBuf},
};

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs every input of `target` and names each one that panics.
fn replay(target: &str) {
    let run = tiny_fuzz::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, run)| *run)
        .unwrap_or_else(|| panic!("no fuzz target `{target}`"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let corpus = files(&root.join("corpus").join(target));
    assert!(
        corpus.len() >= 5,
        "the corpus of `{target}` has {} files; `make fuzz` builds it",
        corpus.len()
    );
    let regressions = files(&root.join("regressions").join(target));
    let mut failed = Vec::new();
    for path in corpus.iter().chain(&regressions) {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if catch_unwind(AssertUnwindSafe(|| run(&data))).is_err() {
            failed.push(path.display().to_string());
        }
    }
    assert!(failed.is_empty(), "`{target}` panicked on:\n{}", failed.join("\n"));
    eprintln!(
        "{target}: replayed {} corpus files and {} regressions",
        corpus.len(),
        regressions.len()
    );
}

#[test]
fn expr_corpus_and_regressions() {
    replay("expr");
}

#[test]
fn flow_corpus_and_regressions() {
    replay("flow");
}

#[test]
fn grpc_corpus_and_regressions() {
    replay("grpc");
}

#[test]
fn nats_corpus_and_regressions() {
    replay("nats");
}

#[test]
fn schema_corpus_and_regressions() {
    replay("schema");
}

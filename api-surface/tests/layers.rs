//! The layering the code keeps: no import circle among the engine's files, and the
//! runtime's metrics below its controllers. Read from the sources, as the surface
//! snapshots are, so that a circle shows up in review instead of in a refactor.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::Path,
};

/// The modules named right after `prefix` (`super::` or `crate::`) in `src`: in paths
/// (`super::trace::data`) and at the top level of `use prefix{...}` groups.
fn references(src: &str, prefix: &str, names: &BTreeSet<String>) -> BTreeSet<String> {
    let code = src.split("#[cfg(test)]").next().unwrap_or_default();
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String { s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect() };
    for (i, _) in code.match_indices(prefix) {
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: depth 0 between commas.
            let mut depth = 0;
            let mut start = true;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => start = true,
                    c if c.is_whitespace() => {}
                    _ if start && depth == 0 => {
                        start = false;
                        found.insert(ident(&group[j..]));
                    }
                    _ => {}
                }
            }
        } else {
            found.insert(ident(rest));
        }
    }
    found.retain(|n| names.contains(n));
    found
}

/// Every strongly connected group of more than one module.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(m) = todo.pop() {
            for d in &graph[&m] {
                if seen.insert(d.clone()) {
                    todo.push(d.clone());
                }
            }
        }
        seen
    };
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for m in graph.keys() {
        let group: BTreeSet<String> = reach(m)
            .into_iter()
            .filter(|d| d == m || reach(d).contains(m))
            .chain(std::iter::once(m.clone()))
            .collect();
        if group.len() > 1 && !out.contains(&group) {
            out.push(group);
        }
    }
    out
}

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

#[test]
fn the_engines_files_import_each_other_without_a_circle() {
    let dir = repo("tiny-sdk/src/engine");
    let files: BTreeMap<String, String> = fs::read_dir(&dir)
        .expect("the engine's folder")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().strip_suffix(".rs")?.to_owned();
            (name != "mod").then(|| (name, fs::read_to_string(e.path()).expect("a source file")))
        })
        .collect();
    assert!(files.len() > 10, "the engine's files: {:?}", files.keys());
    let names: BTreeSet<String> = files.keys().cloned().collect();
    let graph: BTreeMap<String, BTreeSet<String>> = files
        .iter()
        .map(|(m, src)| {
            let mut deps = references(src, "super::", &names);
            deps.remove(m);
            (m.clone(), deps)
        })
        .collect();
    // The scan sees what it must: the runner uses the mappings.
    assert!(graph["runner"].contains("mapping"), "{graph:?}");
    assert_eq!(circles(&graph), Vec::<BTreeSet<String>>::new(), "{graph:#?}");
}

#[test]
fn the_runtimes_metrics_do_not_reach_up_into_its_controllers() {
    let src = fs::read_to_string(repo("tiny-runtime/src/metrics.rs")).expect("metrics.rs");
    let names: BTreeSet<String> = ["controller", "runtime", "cli", "transport", "grpc", "nats", "jetstream"]
        .map(String::from)
        .into();
    assert_eq!(references(&src, "crate::", &names), BTreeSet::new());
}

#[test]
fn the_scan_finds_paths_and_use_groups() {
    let names: BTreeSet<String> = ["a", "b", "c", "d"].map(String::from).into();
    let src = "use super::{a::X, b, c::{Y, Z}};\nfn f() { super::d::g(); }\n#[cfg(test)]\nuse super::e;";
    assert_eq!(references(src, "super::", &names), names);
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a".into(), ["b".to_owned()].into()),
        ("b".into(), ["a".to_owned()].into()),
        ("c".into(), BTreeSet::new()),
    ]
    .into();
    assert_eq!(circles(&graph), vec![["a".to_owned(), "b".to_owned()].into()]);
}

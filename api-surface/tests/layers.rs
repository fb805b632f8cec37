//! The house rules, read from the sources: no import circle among the files of any
//! crate, and no arrow from a lower layer of tiny-sdk or tiny-runtime to a higher
//! one (the layers are drawn in `docs/architecture.md`, and listed in [`LAYERS`]).
//!
//! Every file is a node; `A -> B` when `A` names something `B` defines, through a
//! `use`, a `crate::`/`super::`/`self::` path or a child module's name. A name is
//! followed through the `use`s that re-export it (`crate::Error` is `error.rs`, not
//! `lib.rs`). Tests (`#[cfg(test)]` items) are left out: they may reach anywhere.
//! `cargo test -p api-surface --test layers` prints every circle and upward arrow.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

/// The layers of the crates that have them, bottom first; a file belongs to the
/// layer of the longest module prefix that names it (`""` is the crate's root).
/// A file may import from its own layer and the ones below.
const LAYERS: &[(&str, &[&[&str]])] = &[
    (
        "tiny-sdk",
        &[
            // The core: errors, messages, ports as data, the flow model, the contract
            // with the platform, durable runs' pieces. Nothing here knows of a `Ctx`.
            &[
                "error",
                "name",
                "contract",
                "decode",
                "portable",
                "msg",
                "message",
                "hop",
                "port",
                "redact",
                "secret",
                "schema",
                "flow",
                "client",
                "run",
                "fast_alloc",
                "limits",
            ],
            // The author's API, over the `Emit` trait of `node`.
            &[
                "work",
                "overlay",
                "state",
                "metadata",
                "node",
                "author",
                "component",
                "context",
                "handler",
                "__private",
            ],
            // The engine, which implements `Emit`, and the harness over it.
            &["engine", "harness"],
            // The crate's root: re-exports and the derives' docs.
            &[""],
        ],
    ),
    (
        "tiny-runtime",
        &[
            // The ground floor: errors, config, the CRDs, metrics, what every transport
            // shares (`remote`, `inbound`) and the `Discovery` and `Carrier` traits
            // they implement.
            &[
                "error",
                "discovery",
                "carrier",
                "config",
                "crd",
                "metrics",
                "permissions",
                "status",
                "telemetry",
                "listen",
                "leader",
                "rbac",
                "resources",
                "secrets",
                "remote",
                "inbound",
            ],
            // The transports, siblings (see `APART`).
            &["grpc", "nats", "jetstream"],
            // Which transports a module runs (`wiring`), which one a hop takes and
            // what the module reports about it.
            &["transport", "health", "wiring"],
            // The controllers and the Helm hooks.
            &["controller", "hooks"],
            // The runtime that starts them, the CLI, the root.
            &["runtime", "cli", "upgrade", ""],
        ],
    ),
];

/// Module prefixes that must not import one another: the transports are siblings.
/// JetStream runs on the NATS connection, so `jetstream -> nats` is the one arrow
/// between them; neither NATS side ever goes through `grpc`.
const APART: &[(&str, &str, &str)] = &[
    ("tiny-runtime", "grpc", "nats"),
    ("tiny-runtime", "grpc", "jetstream"),
    ("tiny-runtime", "nats", "jetstream"),
];

/// The path an outside crate's name stands for.
const OUTSIDE: &str = "<outside>";

/// The arrows allowed against the rules, each with why: `(crate, from, to)`. Each
/// must still be there (a stale exception fails too). None today: where a lower
/// layer needs a higher one's type (a node's context holds the engine's emitter),
/// it declares a slot the higher one fills (`node::Wired`).
const ALLOWED: &[(&str, &str, &str)] = &[];

/// A module path inside its crate, `engine::runner`; the root is `""`.
type ModPath = String;

/// What the scan keeps of one file.
#[derive(Debug, Default)]
struct Module {
    /// File modules declared in it (`mod x;`), by name.
    children: BTreeSet<String>,
    /// The names it defines (items and inline modules).
    defines: BTreeSet<String>,
    /// The names its `use`s bring in, with the path each stands for (from the root,
    /// or starting with an outside crate's name).
    imports: BTreeMap<String, Vec<String>>,
    /// The paths of its glob `use`s.
    globs: Vec<Vec<String>>,
    /// Every path it names, from the root.
    uses: Vec<Vec<String>>,
}

fn parent(m: &str) -> String {
    m.rsplit_once("::").map_or(String::new(), |(p, _)| p.to_owned())
}

fn join(m: &str, seg: &str) -> String {
    if m.is_empty() {
        seg.to_owned()
    } else {
        format!("{m}::{seg}")
    }
}

/// The source without comments, string and char literals' contents and
/// `#[cfg(test)]` items.
fn strip(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !ident_char(b.get(i.wrapping_sub(1))) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    drop_test_items(&out)
}

fn ident_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// `code` without the items marked `#[cfg(test)]`: up to the item's `;` or its
/// closing brace.
fn drop_test_items(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let mut depth = 0;
        let mut end = item.len();
        for (j, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The byte ranges of the bodies of inline modules (`mod x { .. }`) in `code`.
fn inline_modules(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("mod ") {
        if ident_char(code[..at].chars().last().as_ref()) {
            continue;
        }
        let rest = &code[at + 4..];
        let name = ident(rest);
        if !rest[name.len()..].trim_start().starts_with('{') {
            continue;
        }
        let open = at + 4 + name.len() + rest[name.len()..].find('{').unwrap_or(0);
        let mut depth = 0;
        for (j, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push((open, open + j));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// `path` with the `super`s that leave the inline modules around `at` dropped: what
/// it names from the file's module.
fn from_file(path: &[String], at: usize, inline: &[(usize, usize)]) -> Vec<String> {
    let depth = inline.iter().filter(|(a, b)| *a < at && at < *b).count();
    let supers = path.iter().take_while(|s| *s == "super").count().min(depth);
    if supers == 0 && depth > 0 && path.first().is_some_and(|s| s == "self") {
        return path.to_vec();
    }
    if supers == 0 {
        return path.to_vec();
    }
    let rest = &path[supers..];
    if rest.is_empty() {
        vec!["self".into()]
    } else {
        std::iter::once("self".to_owned()).chain(rest.iter().cloned()).collect()
    }
}

/// The `use` trees of `code`, with where each starts.
fn use_statements(code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("use ") {
        let before = code[..at].trim_end();
        let ok = before.is_empty()
            || before.ends_with([';', '{', '}', ']', ')'])
            || before.ends_with(" pub")
            || before.ends_with("\npub")
            || before == "pub";
        if !ok || ident_char(code[..at].chars().last().as_ref()) {
            continue;
        }
        if let Some(end) = code[at..].find(';') {
            let stmt = code[at + 4..at + end].split_whitespace().collect::<Vec<_>>().join(" ");
            out.push((at, stmt.replace(" as ", "@").replace(' ', "")));
        }
    }
    out
}

/// Expands a use tree (`a::{b,c::d@e,f::*}`: no spaces, `@` for ` as `) into `(path, name)`,
/// `name` `*` for a glob and the last segment (or alias) otherwise.
fn expand(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, String)>) {
    let tree = tree.trim_start_matches("::");
    if let Some(inner) = tree.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let mut depth = 0;
        let mut start = 0;
        for (j, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..j], prefix, out);
                    start = j + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], prefix, out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    if tree == "*" {
        out.push((prefix.to_vec(), "*".into()));
        return;
    }
    let head = ident(tree);
    let rest = &tree[head.len()..];
    if let Some(rest) = rest.strip_prefix("::") {
        let mut p = prefix.to_vec();
        p.push(head.to_owned());
        expand(rest, &p, out);
    } else {
        let mut p = prefix.to_vec();
        let name = rest.strip_prefix('@').map_or(head, ident);
        if head == "self" {
            let name = if name == "self" {
                p.last().cloned().unwrap_or_default()
            } else {
                name.to_owned()
            };
            out.push((p, name));
        } else {
            p.push(head.to_owned());
            out.push((p, name.to_owned()));
        }
    }
}

/// `path` as written in module `m` (starting `crate`, `super`, `self` or a name),
/// from the root; `None` for an outside crate.
fn absolute(m: &str, path: &[String], children: &BTreeSet<String>, local: &BTreeSet<String>) -> Option<Vec<String>> {
    let mut here: Vec<String> = if m.is_empty() {
        vec![]
    } else {
        m.split("::").map(String::from).collect()
    };
    let mut segs = path.iter().peekable();
    match segs.peek().map(|s| s.as_str()) {
        Some("crate") => {
            here.clear();
            segs.next();
        }
        Some("super") => {
            while segs.peek().map(|s| s.as_str()) == Some("super") {
                here.pop();
                segs.next();
            }
        }
        Some("self") => {
            segs.next();
        }
        Some(first) if children.contains(first) || local.contains(first) => {}
        _ => return None,
    }
    here.extend(segs.cloned());
    Some(here)
}

struct Crate {
    name: String,
    modules: BTreeMap<ModPath, Module>,
}

impl Crate {
    fn read(dir: &Path) -> Crate {
        let src = dir.join("src");
        let mut files = Vec::new();
        walk(&src, &mut files);
        let mut texts = BTreeMap::new();
        for f in files {
            let rel = f
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            if rel.starts_with("bin/") {
                continue;
            }
            let rel = rel.strip_suffix(".rs").expect("a .rs file");
            let m = match rel {
                "lib" | "main" => String::new(),
                _ => rel.strip_suffix("/mod").unwrap_or(rel).replace('/', "::"),
            };
            texts.insert(m, strip(&fs::read_to_string(&f).expect("a source file")));
        }
        let all: BTreeSet<String> = texts.keys().cloned().collect();
        let mut modules = BTreeMap::new();
        for (m, code) in &texts {
            let children: BTreeSet<String> = all
                .iter()
                .filter(|c| !c.is_empty() && parent(c) == *m && c.as_str() != m.as_str())
                .map(|c| c.rsplit("::").next().unwrap_or(c).to_owned())
                .collect();
            let mut module = Module {
                children,
                ..Default::default()
            };
            for kw in [
                "fn ",
                "struct ",
                "enum ",
                "trait ",
                "type ",
                "const ",
                "static ",
                "union ",
                "mod ",
                "macro_rules! ",
            ] {
                for (at, _) in code.match_indices(kw) {
                    if !ident_char(code[..at].chars().last().as_ref()) {
                        module.defines.insert(ident(&code[at + kw.len()..]).to_owned());
                    }
                }
            }
            let inline = inline_modules(code);
            let mut trees = Vec::new();
            for (at, stmt) in use_statements(code) {
                let mut tree = Vec::new();
                expand(&stmt, &[], &mut tree);
                trees.extend(
                    tree.into_iter()
                        .map(|(path, name)| (from_file(&path, at, &inline), name)),
                );
            }
            let local: BTreeSet<String> = module.defines.clone();
            for (path, name) in &trees {
                let Some(abs) = absolute(m, path, &module.children, &local) else {
                    if name != "*" {
                        module.imports.insert(name.clone(), vec![OUTSIDE.to_owned()]);
                    }
                    continue;
                };
                let own = m
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .chain([name.clone()]);
                if name == "*" {
                    module.globs.push(abs.clone());
                } else if !abs.iter().cloned().eq(own) {
                    // (A re-export of the crate's own name, as a prelude's, is no import.)
                    module.imports.entry(name.clone()).or_insert_with(|| abs.clone());
                }
                module.uses.push(abs);
            }
            // Paths in the code: `crate::a::b`, `super::x`, `self::y`, `child::z`.
            let heads: Vec<String> = ["crate", "super", "self"]
                .into_iter()
                .map(String::from)
                .chain(module.children.iter().cloned())
                .chain(module.imports.keys().cloned())
                .collect();
            for head in heads {
                let pat = format!("{head}::");
                for (at, _) in code.match_indices(&pat) {
                    let before = code[..at].chars().last();
                    if ident_char(before.as_ref()) || before == Some(':') {
                        continue;
                    }
                    let mut path = vec![head.clone()];
                    let mut rest = &code[at + pat.len()..];
                    loop {
                        while rest.starts_with("super::") && path.iter().all(|s| s == "super") {
                            path.push("super".into());
                            rest = &rest[7..];
                        }
                        let seg = ident(rest);
                        if seg.is_empty() {
                            break;
                        }
                        path.push(seg.to_owned());
                        rest = &rest[seg.len()..];
                        match rest.strip_prefix("::") {
                            Some(r) => rest = r,
                            None => break,
                        }
                    }
                    let path = from_file(&path, at, &inline);
                    if path.len() == 1 {
                        // `crate::{..}`: the `use` above has it.
                        continue;
                    }
                    let abs = if let Some(imported) = module.imports.get(&head) {
                        let mut p = imported.clone();
                        p.extend(path[1..].iter().cloned());
                        Some(p)
                    } else {
                        absolute(m, &path, &module.children, &local)
                    };
                    if let Some(abs) = abs {
                        module.uses.push(abs);
                    }
                }
            }
            modules.insert(m.clone(), module);
        }
        Crate {
            name: dir.file_name().expect("a crate folder").to_string_lossy().into_owned(),
            modules,
        }
    }

    /// The file that defines what `path` (from the root, or starting `crate`) names.
    fn resolve(&self, path: &[String], depth: usize) -> Option<ModPath> {
        if path.first().is_some_and(|s| s == OUTSIDE) {
            return None;
        }
        let mut m = String::new();
        let mut i = 0;
        while i < path.len() && self.modules.get(&m)?.children.contains(&path[i]) {
            m = join(&m, &path[i]);
            i += 1;
        }
        let Some(item) = path.get(i) else { return Some(m) };
        let module = &self.modules[&m];
        if module.defines.contains(item) || depth > 16 {
            return Some(m);
        }
        if let Some(to) = module.imports.get(item) {
            let mut to = to.clone();
            to.extend(path[i + 1..].iter().cloned());
            return self.resolve(&to, depth + 1);
        }
        for glob in &module.globs {
            let mut to = glob.clone();
            to.push(item.clone());
            if let Some(t) = self.resolve(&to, depth + 1)
                && self.modules[&t].defines.contains(item)
            {
                return Some(t);
            }
        }
        Some(m)
    }

    fn graph(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        self.modules
            .iter()
            .map(|(m, module)| {
                let deps = module
                    .uses
                    .iter()
                    .filter_map(|p| self.resolve(p, 0))
                    .filter(|t| t != m)
                    .collect();
                (m.clone(), deps)
            })
            .collect()
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every strongly connected group of more than one module (Tarjan's).
fn circles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct State<'g> {
        graph: &'g BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'g str, (usize, usize)>,
        stack: Vec<&'g str>,
        on: BTreeSet<&'g str>,
        next: usize,
        out: Vec<Vec<ModPath>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        s.index.insert(v, (s.next, s.next));
        s.next += 1;
        s.stack.push(v);
        s.on.insert(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.graph.contains_key(w) {
                continue;
            }
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.index[w].1.min(s.index[v].1);
                s.index.get_mut(v).expect("visited").1 = low;
            } else if s.on.contains(w) {
                let low = s.index[w].0.min(s.index[v].1);
                s.index.get_mut(v).expect("visited").1 = low;
            }
        }
        if s.index[v].0 == s.index[v].1 {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                group.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.out.push(group);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The workspace's crates: every member folder with a `src`.
fn crates() -> Vec<PathBuf> {
    let manifest = fs::read_to_string(repo().join("Cargo.toml")).expect("the workspace manifest");
    let members = manifest
        .split("members = [")
        .nth(1)
        .and_then(|m| m.split(']').next())
        .expect("members");
    members
        .split(',')
        .map(|s| s.trim().trim_matches('"'))
        .filter(|s| !s.is_empty())
        .map(|s| repo().join(s))
        .filter(|p| p.join("src").is_dir())
        .collect()
}

fn layer_of(layers: &[&[&str]], m: &str) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, layer) in layers.iter().enumerate() {
        for prefix in *layer {
            let hit = *prefix == m || (!prefix.is_empty() && m.starts_with(&format!("{prefix}::")));
            if hit && best.is_none_or(|(len, _)| prefix.len() >= len) {
                best = Some((prefix.len(), i));
            }
        }
    }
    best.map(|(_, i)| i)
}

/// What breaks the rules in every crate, one line each.
fn faults() -> Vec<String> {
    let mut out = Vec::new();
    for dir in crates() {
        let krate = Crate::read(&dir);
        let mut graph = krate.graph();
        for (c, from, to) in ALLOWED.iter().filter(|(c, ..)| *c == krate.name) {
            let there = graph.get_mut(*from).is_some_and(|deps| deps.remove(*to));
            if !there {
                out.push(format!(
                    "{c}: the allowed arrow `{from} -> {to}` is gone: drop it from ALLOWED"
                ));
            }
        }
        for group in circles(&graph) {
            let arrows: Vec<String> = group
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|b| group.contains(b))
                        .map(move |b| format!("{a} -> {b}"))
                })
                .collect();
            out.push(format!(
                "{}: a circle of {} files: {}",
                krate.name,
                group.len(),
                arrows.join(", ")
            ));
        }
        let within = |m: &str, prefix: &str| m == prefix || m.starts_with(&format!("{prefix}::"));
        for (c, x, y) in APART.iter().filter(|(c, ..)| *c == krate.name) {
            for (a, deps) in &graph {
                for b in deps {
                    let across = (within(a, x) && within(b, y)) || (within(a, y) && within(b, x));
                    let on_nats_link = *x == "nats" && *y == "jetstream" && within(a, y);
                    if across && !on_nats_link {
                        out.push(format!("{c}: `{a}` imports `{b}`: the transports are siblings"));
                    }
                }
            }
        }
        let Some((_, layers)) = LAYERS.iter().find(|(c, _)| *c == krate.name) else {
            continue;
        };
        for (a, deps) in &graph {
            let Some(la) = layer_of(layers, a) else {
                out.push(format!("{}: `{a}` is in no layer", krate.name));
                continue;
            };
            for b in deps {
                if layer_of(layers, b).is_some_and(|lb| lb > la) {
                    out.push(format!(
                        "{}: `{a}` (layer {la}) imports `{b}`, a higher layer",
                        krate.name
                    ));
                }
            }
        }
    }
    out
}

#[test]
#[ignore]
fn debug() {
    let krate = Crate::read(&repo().join(std::env::var("CRATE").unwrap_or_default()));
    let m = std::env::var("MODULE").unwrap_or_default();
    for p in &krate.modules[&m].uses {
        println!("{p:?} -> {:?}", krate.resolve(p, 0));
    }
}

#[test]
fn no_crate_has_an_import_circle_or_an_upward_arrow() {
    let faults = faults();
    assert!(faults.is_empty(), "{} faults:\n{}", faults.len(), faults.join("\n"));
}

#[test]
fn the_scan_sees_paths_groups_and_reexports() {
    let mut out = Vec::new();
    expand("crate::{a::X,b,c::{Y,Z@W},d::*,self}", &[], &mut out);
    let names: Vec<&str> = out.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["X", "b", "Y", "W", "*", "crate"]);
    let code = strip("use a::b; // use c::d;\nlet s = \"crate::x\";\n#[cfg(test)]\nmod tests { use super::*; }");
    assert_eq!(use_statements(&code), [(0, "a::b".to_owned())]);
    let graph: BTreeMap<ModPath, BTreeSet<ModPath>> = [
        ("a".into(), ["b".to_owned()].into()),
        ("b".into(), ["a".to_owned()].into()),
        ("c".into(), BTreeSet::new()),
    ]
    .into();
    assert_eq!(circles(&graph), vec![vec!["a".to_owned(), "b".to_owned()]]);
    // The sdk's root re-exports `Error` from `error.rs`; the engine's runner uses the
    // mappings.
    let sdk = Crate::read(&repo().join("tiny-sdk"));
    assert_eq!(sdk.resolve(&["Error".into()], 0).as_deref(), Some("error"));
    let graph = sdk.graph();
    assert!(graph["engine::runner"].contains("engine::mapping"));
    // And it sees an upward arrow: the engine's table reaches down to a node's context.
    assert!(graph["engine::table"].contains("node"));
    assert_eq!(layer_of(LAYERS[0].1, "engine::table"), Some(2));
    assert_eq!(layer_of(LAYERS[0].1, "node"), Some(1));
}

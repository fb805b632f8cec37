//! Lists the public API of a library crate from its sources, one line per item, for
//! snapshot tests: a change to what an author can name shows up in review as a diff.
//!
//! `cargo public-api` does this from rustdoc's JSON, which needs a nightly toolchain;
//! this reads the sources with `syn` instead. Starting at `src/lib.rs` it follows `mod`
//! declarations and lists what is reachable from outside the crate:
//!
//! - `pub` items whose modules are all `pub`, and `pub use` re-exports (followed to
//!   the item inside the crate; a re-export of another crate is listed as such);
//! - `pub` fields, enum variants, trait items, and the `pub` functions and constants of
//!   inherent impls, with their signatures; trait impls of listed types; derives;
//! - `#[macro_export]` macros and a proc-macro crate's derives.
//!
//! `#[doc(hidden)]` items and modules, `pub(crate)`/`pub(super)` and `#[cfg(test)]`
//! modules are left out. It is not a compiler: it does not expand macros or resolve
//! types, which for these crates' plain layout is enough.

#![warn(missing_docs)]

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Attribute, Fields, ImplItem, Item, TraitItem, UseTree, Visibility};

/// The public surface of the crate whose `Cargo.toml` is in `dir`, named `krate` in
/// paths: sorted lines, one per item.
///
/// # Panics
/// When a source file cannot be read or parsed (a test is the caller).
pub fn surface(dir: &Path, krate: &str) -> String {
    let mut modules = Vec::new();
    load(&dir.join("src/lib.rs"), vec![], true, &mut modules);
    let crate_ = Crate { modules };
    let mut out = BTreeSet::new();
    crate_.list(krate, &mut out);
    out.into_iter().collect::<Vec<_>>().join("\n") + "\n"
}

struct Module {
    path: Vec<String>,
    /// This module and all its ancestors are `pub`.
    public: bool,
    items: Vec<Item>,
}

struct Crate {
    modules: Vec<Module>,
}

/// A definition: the module it is in and its name.
type Def = (Vec<String>, String);

fn load(file: &Path, path: Vec<String>, public: bool, out: &mut Vec<Module>) {
    let src = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let parsed = syn::parse_file(&src).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    // Where `mod child;` of this file lives: beside `lib.rs`/`mod.rs`, else in a
    // directory named after this file.
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let parent = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir = if matches!(stem, "lib" | "mod") {
        parent
    } else {
        parent.join(stem)
    };
    walk(parsed.items, &dir, path, public, out);
}

fn walk(items: Vec<Item>, dir: &Path, path: Vec<String>, public: bool, out: &mut Vec<Module>) {
    let mut kept = Vec::new();
    for item in items {
        if let Item::Mod(m) = &item {
            if is_test(&m.attrs) || hidden(&m.attrs) {
                continue;
            }
            let mut child = path.clone();
            child.push(m.ident.to_string());
            let child_public = public && is_pub(&m.vis);
            match &m.content {
                Some((_, inner)) => walk(inner.clone(), &dir.join(m.ident.to_string()), child, child_public, out),
                None => {
                    let name = m.ident.to_string();
                    let flat = dir.join(format!("{name}.rs"));
                    let file: PathBuf = if flat.exists() {
                        flat
                    } else {
                        dir.join(&name).join("mod.rs")
                    };
                    load(&file, child, child_public, out);
                }
            }
        }
        kept.push(item);
    }
    out.push(Module {
        path,
        public,
        items: kept,
    });
}

fn is_pub(vis: &Visibility) -> bool {
    matches!(vis, Visibility::Public(_))
}

fn hidden(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("doc") && a.meta.to_token_stream().to_string().replace(' ', "").contains("hidden"))
}

fn is_test(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.to_token_stream().to_string().replace(' ', "") == "cfg(test)")
}

/// `#[cfg(feature = "x")]` and `#[non_exhaustive]`, shown before an item.
fn marks(attrs: &[Attribute]) -> String {
    let mut s = String::new();
    for a in attrs {
        if a.path().is_ident("cfg") || a.path().is_ident("non_exhaustive") {
            s.push_str(&tidy(a.to_token_stream()));
            s.push(' ');
        }
    }
    s
}

fn derives(attrs: &[Attribute]) -> Vec<String> {
    let mut out = Vec::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("derive")) {
        if let Ok(list) = a.parse_args_with(syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
        {
            out.extend(list.iter().map(|p| tidy(p.to_token_stream())));
        }
    }
    out
}

/// Token text with the spaces `to_string` puts everywhere taken out where Rust
/// style has none.
fn tidy(tokens: TokenStream) -> String {
    let mut s = tokens.to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" ::", "::"),
        ("< ", "<"),
        (" <", "<"),
        (" >", ">"),
        ("& ", "&"),
        (" ,", ","),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
        (" :", ":"),
        ("# [", "#["),
        (" (", "("),
        (" ?", "?"),
        ("! ", "!"),
        ("+? ", "+ ?"),
        ("<? ", "<?"),
    ] {
        s = s.replace(from, to);
    }
    for (from, to) in [
        ("->(", "-> ("),
        ("->", " -> "),
        ("  ", " "),
        ("=>", " => "),
        ("impl(", "impl ("),
        ("dyn(", "dyn ("),
        (",(", ", ("),
        (":(", ": ("),
        ("=(", "= ("),
    ] {
        s = s.replace(from, to);
    }
    while s.contains("  ") {
        s = s.replace("  ", " ");
    }
    s.trim().to_string()
}

impl Crate {
    fn module(&self, path: &[String]) -> Option<&Module> {
        self.modules.iter().find(|m| m.path == path)
    }

    /// What `name` means in module `at`: an item defined there, a child module, or a
    /// `use` there (followed). `None` for another crate's name.
    fn resolve_name(&self, at: &[String], name: &str, depth: u32) -> Option<Target> {
        if depth > 16 {
            return None;
        }
        let module = self.module(at)?;
        let child: Vec<String> = at.iter().cloned().chain([name.to_string()]).collect();
        if self.module(&child).is_some() {
            return Some(Target::Module(child));
        }
        for item in &module.items {
            if item_name(item).as_deref() == Some(name) && !matches!(item, Item::Use(_) | Item::Impl(_)) {
                return Some(Target::Item((at.to_vec(), name.to_string())));
            }
        }
        for item in &module.items {
            if let Item::Use(u) = item {
                for (alias, target) in use_leaves(&u.tree, vec![]) {
                    if alias == name {
                        return self.resolve_path(at, &target, depth + 1);
                    }
                }
            }
        }
        None
    }

    /// What path `segments` (as written in module `at`) names.
    fn resolve_path(&self, at: &[String], segments: &[String], depth: u32) -> Option<Target> {
        let (mut cur, rest): (Vec<String>, &[String]) = match segments.first().map(String::as_str) {
            Some("crate") => (vec![], &segments[1..]),
            Some("self") => (at.to_vec(), &segments[1..]),
            Some("super") => {
                let mut up = at.to_vec();
                let mut rest = segments;
                while rest.first().map(String::as_str) == Some("super") {
                    up.pop();
                    rest = &rest[1..];
                }
                (up, rest)
            }
            Some(_) => (at.to_vec(), segments),
            None => return None,
        };
        if rest.is_empty() {
            return Some(Target::Module(cur));
        }
        for (i, seg) in rest.iter().enumerate() {
            match self.resolve_name(&cur, seg, depth)? {
                Target::Module(m) => cur = m,
                Target::Item(def) if i + 1 == rest.len() => return Some(Target::Item(def)),
                Target::Item(_) => return None,
            }
        }
        Some(Target::Module(cur))
    }

    /// Every public path, with the definition it names (`None`: another crate's item,
    /// re-exported; the line is then the re-export itself).
    fn public_names(&self, krate: &str) -> (BTreeMap<Def, Vec<String>>, Vec<String>) {
        let mut defs: BTreeMap<Def, Vec<String>> = BTreeMap::new();
        let mut external = Vec::new();
        // Modules reachable as public, by their public path.
        let mut queue: Vec<(Vec<String>, Vec<String>)> = vec![(vec![], vec![krate.to_string()])];
        let mut seen = BTreeSet::new();
        while let Some((mpath, public)) = queue.pop() {
            if !seen.insert((mpath.clone(), public.clone())) {
                continue;
            }
            let Some(module) = self.module(&mpath) else { continue };
            for item in &module.items {
                if hidden(item_attrs(item)) {
                    continue;
                }
                match item {
                    Item::Mod(m) if is_pub(&m.vis) => {
                        let mut child = mpath.clone();
                        child.push(m.ident.to_string());
                        let mut p = public.clone();
                        p.push(m.ident.to_string());
                        queue.push((child, p));
                    }
                    Item::Use(u) if is_pub(&u.vis) => {
                        for (alias, target) in use_leaves(&u.tree, vec![]) {
                            let mut p = public.clone();
                            if alias == "*" {
                                if let Some(Target::Module(m)) = self.resolve_path(&mpath, &target, 0) {
                                    queue.push((m, public.clone()));
                                }
                                continue;
                            }
                            p.push(alias.clone());
                            match self.resolve_path(&mpath, &target, 0) {
                                Some(Target::Item(def)) => defs.entry(def).or_default().push(p.join("::")),
                                Some(Target::Module(m)) => queue.push((m, p)),
                                // A path into one of this crate's modules that names
                                // nothing written there: an item a derive generates
                                // (kube's `TinyNode` from `TinyNodeSpec`).
                                None if self.module(&[mpath.clone(), target[..1].to_vec()].concat()).is_some() => {
                                    external.push(format!("pub (generated) {}", p.join("::")));
                                }
                                None => external.push(format!("pub use {} = {}", p.join("::"), target.join("::"))),
                            }
                        }
                    }
                    Item::Macro(m) if m.attrs.iter().any(|a| a.path().is_ident("macro_export")) => {
                        if let Some(ident) = &m.ident {
                            external.push(format!("macro {krate}::{ident}!"));
                        }
                    }
                    Item::Fn(f) if f.attrs.iter().any(|a| a.path().is_ident("proc_macro_derive")) => {
                        for a in &f.attrs {
                            if a.path().is_ident("proc_macro_derive") {
                                external.push(format!("derive {}", tidy(a.meta.to_token_stream())));
                            }
                        }
                    }
                    _ => {
                        if let (Some(name), Some(vis)) = (item_name(item), item_vis(item))
                            && is_pub(vis)
                        {
                            let mut p = public.clone();
                            p.push(name.clone());
                            defs.entry((mpath.clone(), name)).or_default().push(p.join("::"));
                        }
                    }
                }
            }
        }
        for paths in defs.values_mut() {
            paths.sort_by_key(|p| (p.len(), p.clone()));
            paths.dedup();
        }
        (defs, external)
    }

    fn list(&self, krate: &str, out: &mut BTreeSet<String>) {
        let (defs, external) = self.public_names(krate);
        out.extend(external);
        for ((mpath, name), paths) in &defs {
            let Some(module) = self.module(mpath) else { continue };
            for item in &module.items {
                if item_name(item).as_deref() != Some(name.as_str()) || matches!(item, Item::Use(_) | Item::Mod(_)) {
                    continue;
                }
                for p in paths {
                    out.insert(item_line(item, p));
                }
                members(item, &paths[0], out);
            }
            if self.module(&[mpath.clone(), vec![name.clone()]].concat()).is_some() {
                for p in paths {
                    out.insert(format!("pub mod {p}"));
                }
            }
        }
        // Module lines for the public modules themselves.
        for m in &self.modules {
            if m.public && !m.path.is_empty() {
                out.insert(format!("pub mod {krate}::{}", m.path.join("::")));
            }
        }
        // Impl blocks, wherever they are, of the listed types.
        for m in &self.modules {
            for item in &m.items {
                let Item::Impl(imp) = item else { continue };
                if hidden(&imp.attrs) {
                    continue;
                }
                let Some(self_path) = type_path(&imp.self_ty) else {
                    continue;
                };
                let Some(Target::Item(def)) = self.resolve_path(&m.path, &self_path, 0) else {
                    continue;
                };
                let Some(paths) = defs.get(&def) else { continue };
                let ty = &paths[0];
                match &imp.trait_ {
                    Some((trait_, _)) => {
                        let segs: Vec<String> = trait_.segments.iter().map(|s| s.ident.to_string()).collect();
                        // A trait of this crate that is not public is no promise; a
                        // public one is named by its public path.
                        let mut trait_name = tidy(trait_.to_token_stream());
                        if let Some(Target::Item(t)) = self.resolve_path(&m.path, &segs, 0) {
                            let Some(public) = defs.get(&t) else { continue };
                            let args = trait_.segments.last().map(|s| tidy(s.arguments.to_token_stream()));
                            trait_name = format!("{}{}", public[0], args.unwrap_or_default());
                        }
                        let neg = if imp.modifiers.polarity.is_some() { "!" } else { "" };
                        let generics = tidy(imp.generics.to_token_stream());
                        out.insert(format!(
                            "impl{} {neg}{trait_name} for {ty}{}",
                            if generics.is_empty() { String::new() } else { generics },
                            generic_args(&imp.self_ty),
                        ));
                    }
                    None => {
                        for ii in &imp.items {
                            match ii {
                                ImplItem::Fn(f) if is_pub(&f.vis) && !hidden(&f.attrs) => {
                                    out.insert(format!("{}{}", marks(&f.attrs), fn_line("pub ", ty, &f.sig)));
                                }
                                ImplItem::Const(c) if is_pub(&c.vis) && !hidden(&c.attrs) => {
                                    out.insert(format!(
                                        "pub const {ty}::{}: {}",
                                        c.ident,
                                        tidy(c.ty.to_token_stream())
                                    ));
                                }
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
    }
}

enum Target {
    Module(Vec<String>),
    Item(Def),
}

/// `(alias, path)` for each name a `use` tree brings in (`*` for a glob).
fn use_leaves(tree: &UseTree, prefix: Vec<String>) -> Vec<(String, Vec<String>)> {
    match tree {
        UseTree::Path(p) => {
            let mut next = prefix;
            next.push(p.ident.to_string());
            use_leaves(&p.tree, next)
        }
        UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                let alias = prefix.last().cloned().unwrap_or_default();
                vec![(alias, prefix)]
            } else {
                let mut full = prefix;
                full.push(name.clone());
                vec![(name, full)]
            }
        }
        UseTree::Rename(r) => {
            let mut full = prefix;
            if r.ident != "self" {
                full.push(r.ident.to_string());
            }
            vec![(r.rename.to_string(), full)]
        }
        UseTree::Glob(_) => vec![("*".to_string(), prefix)],
        UseTree::Group(g) => g.items.iter().flat_map(|t| use_leaves(t, prefix.clone())).collect(),
    }
}

fn type_path(ty: &syn::Type) -> Option<Vec<String>> {
    match ty {
        syn::Type::Path(p) if p.qself.is_none() => Some(p.path.segments.iter().map(|s| s.ident.to_string()).collect()),
        _ => None,
    }
}

fn generic_args(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| tidy(s.arguments.to_token_stream()))
            .unwrap_or_default(),
        _ => String::new(),
    }
}

fn item_name(item: &Item) -> Option<String> {
    Some(match item {
        Item::Const(i) => i.ident.to_string(),
        Item::Enum(i) => i.ident.to_string(),
        Item::Fn(i) => i.sig.ident.to_string(),
        Item::Mod(i) => i.ident.to_string(),
        Item::Static(i) => i.ident.to_string(),
        Item::Struct(i) => i.ident.to_string(),
        Item::Trait(i) => i.ident.to_string(),
        Item::TraitAlias(i) => i.ident.to_string(),
        Item::Type(i) => i.ident.to_string(),
        Item::Union(i) => i.ident.to_string(),
        Item::Macro(i) => i.ident.as_ref()?.to_string(),
        _ => return None,
    })
}

fn item_vis(item: &Item) -> Option<&Visibility> {
    Some(match item {
        Item::Const(i) => &i.vis,
        Item::Enum(i) => &i.vis,
        Item::Fn(i) => &i.vis,
        Item::Mod(i) => &i.vis,
        Item::Static(i) => &i.vis,
        Item::Struct(i) => &i.vis,
        Item::Trait(i) => &i.vis,
        Item::TraitAlias(i) => &i.vis,
        Item::Type(i) => &i.vis,
        Item::Union(i) => &i.vis,
        _ => return None,
    })
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        _ => &[],
    }
}

/// `pub {qualifiers} fn {owner}::{name}{rest}`.
fn fn_line(vis: &str, owner: &str, sig: &syn::Signature) -> String {
    let text = sig_text(sig);
    match text.split_once("fn ") {
        Some((qualifiers, rest)) => format!("{vis}{qualifiers}fn {owner}::{rest}"),
        None => format!("{vis}{owner}::{text}"),
    }
}

fn sig_text(sig: &syn::Signature) -> String {
    let mut sig = sig.clone();
    for input in &mut sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => r.attrs.clear(),
            syn::FnArg::Typed(t) => t.attrs.clear(),
        }
    }
    tidy(sig.to_token_stream())
}

fn item_line(item: &Item, path: &str) -> String {
    let attrs = item_attrs(item);
    let derive = derives(attrs);
    let derive = if derive.is_empty() {
        String::new()
    } else {
        format!("#[derive({})] ", derive.join(", "))
    };
    let m = marks(attrs);
    match item {
        Item::Const(i) => format!("{m}pub const {path}: {}", tidy(i.ty.to_token_stream())),
        Item::Static(i) => format!("{m}pub static {path}: {}", tidy(i.ty.to_token_stream())),
        Item::Enum(i) => format!("{m}{derive}pub enum {path}{}", tidy(i.generics.to_token_stream())),
        Item::Struct(i) => format!("{m}{derive}pub struct {path}{}", tidy(i.generics.to_token_stream())),
        Item::Union(i) => format!("{m}{derive}pub union {path}{}", tidy(i.generics.to_token_stream())),
        Item::Trait(i) => {
            let supertraits = if i.supertraits.is_empty() {
                String::new()
            } else {
                format!(": {}", tidy(i.supertraits.to_token_stream()))
            };
            format!("{m}pub trait {path}{}{supertraits}", tidy(i.generics.to_token_stream()))
        }
        Item::Type(i) => format!(
            "{m}pub type {path}{} = {}",
            tidy(i.generics.to_token_stream()),
            tidy(i.ty.to_token_stream())
        ),
        Item::Fn(i) => {
            let prefix = path.rsplit_once("::").map_or("", |(p, _)| p);
            format!("{m}{}", fn_line("pub ", prefix, &i.sig))
        }
        _ => format!("{m}pub {path}"),
    }
}

fn fields_lines(fields: &Fields, owner: &str, out: &mut BTreeSet<String>) {
    for (n, f) in fields.iter().enumerate() {
        if !is_pub(&f.vis) || hidden(&f.attrs) {
            continue;
        }
        let name = f.ident.as_ref().map_or_else(|| n.to_string(), ToString::to_string);
        out.insert(format!("pub {owner}::{name}: {}", tidy(f.ty.to_token_stream())));
    }
}

fn members(item: &Item, path: &str, out: &mut BTreeSet<String>) {
    match item {
        Item::Struct(s) => fields_lines(&s.fields, path, out),
        Item::Enum(e) => {
            for v in &e.variants {
                if hidden(&v.attrs) {
                    continue;
                }
                let fields = match &v.fields {
                    Fields::Unit => String::new(),
                    Fields::Unnamed(f) => {
                        let tys: Vec<String> = f.unnamed.iter().map(|f| tidy(f.ty.to_token_stream())).collect();
                        format!("({})", tys.join(", "))
                    }
                    Fields::Named(f) => {
                        let fs: Vec<String> = f
                            .named
                            .iter()
                            .map(|f| {
                                format!(
                                    "{}: {}",
                                    f.ident.as_ref().map(ToString::to_string).unwrap_or_default(),
                                    tidy(f.ty.to_token_stream())
                                )
                            })
                            .collect();
                        format!(" {{ {} }}", fs.join(", "))
                    }
                };
                out.insert(format!("{}pub variant {path}::{}{fields}", marks(&v.attrs), v.ident));
            }
        }
        Item::Trait(t) => {
            for ti in &t.items {
                match ti {
                    TraitItem::Fn(f) if !hidden(&f.attrs) => {
                        let provided = if f.default.is_some() { " (provided)" } else { "" };
                        out.insert(format!("{}{provided}", fn_line("trait ", path, &f.sig)));
                    }
                    TraitItem::Type(ty) if !hidden(&ty.attrs) => {
                        let bounds = if ty.bounds.is_empty() {
                            String::new()
                        } else {
                            format!(": {}", tidy(ty.bounds.to_token_stream()))
                        };
                        out.insert(format!("trait type {path}::{}{bounds}", ty.ident));
                    }
                    TraitItem::Const(c) if !hidden(&c.attrs) => {
                        let provided = if c.default.is_some() { " (provided)" } else { "" };
                        out.insert(format!(
                            "trait const {path}::{}: {}{provided}",
                            c.ident,
                            tidy(c.ty.to_token_stream())
                        ));
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

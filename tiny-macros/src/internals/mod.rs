//! Reading and checking attributes. Nothing here writes code.

pub mod component;
pub mod handlers;
pub mod json;
pub mod schema;
pub mod serde_names;

use darling::{Error, FromMeta};
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{Attribute, Meta, Token, punctuated::Punctuated};

/// The path the generated code names the SDK by: `::tiny_sdk`, or what the author gave
/// in `crate = "..."` (a renamed dependency, a re-export).
#[derive(Debug, Clone)]
pub struct CratePath(pub syn::Path);

const CRATE_USAGE: &str = "`crate` takes the path the SDK is reachable by, as a string: \
                           `crate = \"my_sdk\"` for a renamed dependency, `crate = \"crate::reexported\"` for a re-export";

impl Default for CratePath {
    fn default() -> Self {
        CratePath(syn::parse_quote!(::tiny_sdk))
    }
}

impl FromMeta for CratePath {
    fn from_expr(expr: &syn::Expr) -> darling::Result<Self> {
        let path = match expr {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s), ..
            }) => s.parse::<syn::Path>().ok(),
            syn::Expr::Path(p) if p.qself.is_none() => Some(p.path.clone()),
            _ => None,
        };
        match path {
            Some(p) if p.segments.iter().all(|s| s.arguments.is_none()) => Ok(CratePath(p)),
            _ => Err(Error::custom(CRATE_USAGE).with_span(expr)),
        }
    }
}

impl ToTokens for CratePath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        self.0.to_tokens(tokens);
    }
}

impl CratePath {
    /// The path as a string, for attributes that take one (`schemars(crate = "...")`).
    pub fn to_path_string(&self) -> String {
        let segments: Vec<String> = self.0.segments.iter().map(|s| s.ident.to_string()).collect();
        let lead = if self.0.leading_colon.is_some() { "::" } else { "" };
        format!("{lead}{}", segments.join("::"))
    }

    /// `crate = "..."` read from `#[<attr>(...)]` without darling, for the fallback
    /// impls written after darling failed on another key. The default when absent or
    /// unreadable.
    pub fn lenient(attrs: &[Attribute], attr: &str) -> CratePath {
        attrs
            .iter()
            .filter(|a| a.path().is_ident(attr))
            .filter_map(|a| a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated).ok())
            .flatten()
            .find_map(|m| match m {
                Meta::NameValue(nv) if nv.path.is_ident("crate") => CratePath::from_expr(&nv.value).ok(),
                _ => None,
            })
            .unwrap_or_default()
    }
}

/// A switch such as `catch`, `hooks` or `configurable`: on when written alone, or as
/// `= true`; `= false` leaves it off. Anything else is an error saying how to write it
/// (darling's `Flag` said only "Unexpected type `bool`" to `catch = true`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Switch(Option<proc_macro2::Span>);

impl Switch {
    /// Whether it is on.
    pub fn is_present(&self) -> bool {
        self.0.is_some()
    }

    /// Where it was written (the call site when it was not).
    pub fn span(&self) -> proc_macro2::Span {
        self.0.unwrap_or_else(proc_macro2::Span::call_site)
    }
}

impl FromMeta for Switch {
    fn from_none() -> Option<Self> {
        Some(Switch(None))
    }

    fn from_meta(item: &Meta) -> darling::Result<Self> {
        use syn::spanned::Spanned as _;
        let name = item.path().get_ident().map(ToString::to_string).unwrap_or_default();
        match item {
            Meta::Path(p) => Ok(Switch(Some(p.span()))),
            Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Bool(b), ..
                }) => Ok(Switch(b.value.then(|| nv.path.span()))),
                other => Err(Error::custom(format!(
                    "`{name}` is a switch: write `{name}` alone to turn it on (or `{name} = true`)"
                ))
                .with_span(other)),
            },
            Meta::List(list) => Err(Error::custom(format!(
                "`{name}` is a switch: write `{name}` alone to turn it on, without parentheses"
            ))
            .with_span(list)),
        }
    }
}

/// The doc comment lines of `attrs`, trimmed.
pub fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s), ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The first paragraph of a doc comment, joined into one line.
pub fn doc_summary(attrs: &[Attribute]) -> String {
    doc_lines(attrs)
        .into_iter()
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The closest of `alts` to `value`, if it is close enough to be a typo.
pub fn did_you_mean<'a>(value: &str, alts: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (value.chars().count() / 3).max(1);
    alts.into_iter()
        .map(|alt| (edit_distance(&value.to_lowercase(), &alt.to_lowercase()), alt))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, alt)| alt)
}

/// "unknown X `v`; did you mean `w`?" or "...; expected one of `a`, `b`".
pub fn unknown(what: &str, value: &str, alts: &[&str]) -> String {
    match did_you_mean(value, alts.iter().copied()) {
        Some(s) => format!("unknown {what} `{value}`; did you mean `{s}`?"),
        None => {
            let alts: Vec<String> = alts.iter().map(|a| format!("`{a}`")).collect();
            format!("unknown {what} `{value}`; expected one of {}", alts.join(", "))
        }
    }
}

/// Edits between `a` and `b`, where swapping two neighbours counts as one edit
/// (`Rigth` is one edit from `Right`).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // d[i][j]: distance between the first i chars of a and the first j of b.
    let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::{did_you_mean, edit_distance, unknown};

    #[test]
    fn typos() {
        assert_eq!(edit_distance("Rigth", "Right"), 1);
        assert_eq!(edit_distance("textare", "textarea"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(did_you_mean("Rigth", ["Top", "Right", "Bottom", "Left"]), Some("Right"));
        assert_eq!(did_you_mean("left", ["Top", "Right", "Bottom", "Left"]), Some("Left"));
        assert_eq!(did_you_mean("Middle", ["Top", "Right", "Bottom", "Left"]), None);
        assert_eq!(
            unknown("position", "Middle", &["Top", "Left"]),
            "unknown position `Middle`; expected one of `Top`, `Left`"
        );
    }
}

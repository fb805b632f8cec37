//! Reading and checking attributes. Nothing here writes code.

pub mod component;
pub mod json;
pub mod schema;
pub mod serde_names;

use syn::{Attribute, Meta};

/// The doc comment lines of `attrs`, trimmed.
pub fn doc_lines(attrs: &[Attribute]) -> Vec<String> {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The first paragraph of a doc comment, joined into one line.
pub fn doc_summary(attrs: &[Attribute]) -> String {
    doc_lines(attrs).into_iter().take_while(|l| !l.is_empty()).collect::<Vec<_>>().join(" ")
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

/// "unknown X `v`; did you mean `w`?" or "...; expected one of ...".
pub fn unknown(what: &str, value: &str, alts: &[&str]) -> String {
    match did_you_mean(value, alts.iter().copied()) {
        Some(s) => format!("unknown {what} `{value}`; did you mean `{s}`?"),
        None => format!("unknown {what} `{value}`; expected one of: {}", alts.join(", ")),
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

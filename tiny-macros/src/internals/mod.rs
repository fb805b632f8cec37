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

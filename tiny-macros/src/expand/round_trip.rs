//! `impl RoundTrip` for a `#[derive(Schema)]` type: whether its values survive a JSON
//! round trip unchanged, so that the engine may hand them over without encoding.
//!
//! Exact when the author did not say `#[tiny(lossy)]`, no serde attribute outside a
//! short list known to keep the trip exact is present (on the container, a variant or
//! a field), and every field's type is exact in turn (asked at run time through
//! `__private::Exact`, whose probe answers `false` for a type that does not say).

use darling::ast;
use proc_macro2::TokenStream;
use quote::quote;
use syn::{Attribute, Meta, Token, punctuated::Punctuated};

use crate::internals::schema::{FieldHints, SchemaAttrs};

/// serde attributes that keep `decode(encode(x)) == x`. Anything else (`skip*`,
/// `*_with`, `flatten`, `untagged`, `from`/`into`, `getter`, `other`, different
/// serialise and deserialise names, ...) makes the type lossy, as far as the engine
/// knows.
const EXACT_SERDE_KEYS: &[&str] = &[
    "rename",
    "rename_all",
    "rename_all_fields",
    "alias",
    "default",
    "deny_unknown_fields",
    "tag",
    "content",
    "transparent",
    "bound",
    "borrow",
    "crate",
    "expecting",
];

pub fn round_trip_impl(attrs: &SchemaAttrs) -> TokenStream {
    let (ident, k) = (&attrs.ident, &attrs.krate);
    let (impl_generics, ty_generics, where_clause) = attrs.generics.split_for_impl();
    let mut exact = !attrs.lossy.is_present() && serde_exact(&attrs.attrs);
    let mut types = Vec::new();
    let may_be_null = match &attrs.data {
        ast::Data::Struct(fields) => {
            exact &= fields_exact(fields, &mut types);
            // A unit struct is `null`; a newtype (or `transparent`) is whatever its field is.
            (!matches!(fields.style, ast::Style::Struct) && fields.fields.len() <= 1)
                || has_key(&attrs.attrs, "transparent")
        }
        ast::Data::Enum(variants) => {
            for v in variants {
                exact &= serde_exact(&v.attrs) && fields_exact(&v.fields, &mut types);
            }
            false
        }
    };
    let body = if exact {
        quote!(depth < #k::msg::ROUND_TRIP_DEPTH #(&& {
            #[allow(unused_imports)]
            use #k::__private::{ExactNo as _, ExactYes as _};
            (&&#k::__private::Exact::<#types>::new()).round_trip_exact(depth + 1)
        })*)
    } else {
        quote!({
            let _ = depth;
            false
        })
    };
    quote! {
        #[automatically_derived]
        impl #impl_generics #k::__private::RoundTrip for #ident #ty_generics #where_clause {
            fn round_trip_exact(depth: u32) -> bool {
                #body
            }
            fn may_be_null() -> bool {
                #may_be_null
            }
        }
    }
}

/// `skip_serializing_if` predicates that hold exactly for the type's `Default`: with the
/// field's own plain `#[serde(default)]`, the value left out comes back as it was.
const SKIPPED_WHEN_DEFAULT: &[&str] = &[
    "Option::is_none",
    "Vec::is_empty",
    "String::is_empty",
    "BTreeMap::is_empty",
    "HashMap::is_empty",
    "BTreeSet::is_empty",
    "HashSet::is_empty",
];

fn fields_exact<'a>(fields: &'a ast::Fields<FieldHints>, types: &mut Vec<&'a syn::Type>) -> bool {
    let mut exact = true;
    for f in &fields.fields {
        exact &= field_exact(&f.attrs);
        if !types.contains(&&f.ty) {
            types.push(&f.ty);
        }
    }
    exact
}

/// [`serde_exact`] for a field, which may also skip a value its own `default` brings
/// back (`#[serde(default, skip_serializing_if = "Vec::is_empty")]`). A container's
/// `default` does not count: its `Default` may fill the field differently.
fn field_exact(attrs: &[Attribute]) -> bool {
    let Some(items) = serde_items(attrs) else {
        return false;
    };
    let own_default = items
        .iter()
        .any(|m| matches!(m, Meta::Path(p) if p.is_ident("default")));
    items.iter().all(|m| match m {
        Meta::NameValue(nv) if nv.path.is_ident("skip_serializing_if") => {
            own_default
                && matches!(&nv.value, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. })
                    if SKIPPED_WHEN_DEFAULT.contains(&s.value().replace(' ', "").as_str()))
        }
        m => exact_item(m),
    })
}

/// Every item of every `#[serde(...)]` in `attrs`; `None` when one does not parse.
fn serde_items(attrs: &[Attribute]) -> Option<Vec<Meta>> {
    let mut out = Vec::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        out.extend(
            a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .ok()?,
        );
    }
    Some(out)
}

/// `true` when every key of every `#[serde(...)]` in `attrs` is on the exact list, in
/// its plain form (`rename = "x"`, not `rename(serialize = .., deserialize = ..)`).
fn serde_exact(attrs: &[Attribute]) -> bool {
    serde_items(attrs).is_some_and(|items| items.iter().all(exact_item))
}

/// One serde item on the exact list, in its plain form.
fn exact_item(m: &Meta) -> bool {
    match m {
        Meta::List(_) => false,
        Meta::Path(p) | Meta::NameValue(syn::MetaNameValue { path: p, .. }) => {
            EXACT_SERDE_KEYS.iter().any(|k| p.is_ident(k))
        }
    }
}

fn has_key(attrs: &[Attribute], key: &str) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("serde")).any(|a| {
        a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .is_ok_and(|items| items.iter().any(|m| m.path().is_ident(key)))
    })
}

//! `#[derive(Schema)]`: `impl JsonSchema` with the editor's hints.
//!
//! The impl delegates to a private twin of the type (same fields, same serde
//! attributes) on which schemars' own derive runs, with each `#[tiny(...)]` hint
//! turned into the schemars attribute that writes it. schemars thus keeps doing what it
//! does well (serde renames, flattening, defaults, enum representations, docs), and the
//! hints are checked here, with errors on the author's tokens.

use darling::{FromDeriveInput, ast};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Attribute, DeriveInput, Meta, Token, punctuated::Punctuated};

use crate::internals::{
    CratePath,
    schema::{FieldHints, SchemaAttrs, VariantHints, check},
};

pub fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    let attrs = match SchemaAttrs::from_derive_input(&input) {
        Ok(a) => a,
        Err(e) => return with_fallback(&input, e),
    };
    if let Err(e) = check(&attrs) {
        return with_fallback(&input, e);
    }
    let twin = format_ident!("__TinySchema{}", attrs.ident);
    let default_fn = format_ident!("__tiny_default_{}", attrs.ident);
    let twin_def = twin_type(&attrs, &twin, &default_fn);
    let default = has_container_default(&attrs.attrs).then(|| default_fn_item(&attrs, &default_fn));
    let json_schema_impl = json_schema_impl(&attrs, &twin);
    let round_trip_impl = super::round_trip::round_trip_impl(&attrs);
    quote! {
        const _: () = {
            #twin_def
            #default
            #json_schema_impl
            #round_trip_impl
        };
    }
}

/// The errors, plus an `impl JsonSchema` that satisfies the author's other code, so
/// that a hint mistake is reported once and not again wherever the type is a message.
fn with_fallback(input: &DeriveInput, errors: darling::Error) -> TokenStream {
    let mut out = errors.write_errors();
    if input.generics.params.is_empty() {
        let ident = &input.ident;
        let name = ident.to_string();
        let k = CratePath::lenient(&input.attrs, "tiny");
        out.extend(quote! {
            #[automatically_derived]
            impl #k::__private::schemars::JsonSchema for #ident {
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    ::std::borrow::Cow::Borrowed(#name)
                }
                fn json_schema(
                    _: &mut #k::__private::schemars::SchemaGenerator,
                ) -> #k::__private::schemars::Schema {
                    #k::__private::schemars::Schema::default()
                }
            }
        });
    }
    out
}

/// The twin the schemars derive runs on.
fn twin_type(attrs: &SchemaAttrs, twin: &syn::Ident, default_fn: &syn::Ident) -> TokenStream {
    let name = attrs.ident.to_string();
    let k = &attrs.krate;
    let schemars = format!("{}::__private::schemars", k.to_path_string());
    let container = container_attrs(&attrs.attrs, default_fn);
    let rename = (!renames_container(&attrs.attrs)).then(|| quote!(#[schemars(rename = #name)]));
    let title = attrs.title.as_ref().map(|t| quote!(#[schemars(title = #t)]));
    let description = attrs
        .description
        .as_ref()
        .map(|d| quote!(#[schemars(description = #d)]));
    let body = match &attrs.data {
        ast::Data::Struct(fields) => {
            let body = fields_body(fields);
            match fields.style {
                ast::Style::Struct => quote!(struct #twin #body),
                _ => quote!(struct #twin #body;),
            }
        }
        ast::Data::Enum(variants) => {
            let own_branches = !variants.iter().all(plain_unit);
            let variants = variants.iter().map(|v| variant(k, v, own_branches));
            quote!(enum #twin { #(#variants),* })
        }
    };
    quote! {
        #[derive(#k::__private::schemars::JsonSchema)]
        #[schemars(crate = #schemars)]
        #rename
        #title
        #description
        #(#container)*
        #[allow(dead_code, non_camel_case_types, clippy::all)]
        #body
    }
}

fn fields_body(fields: &ast::Fields<FieldHints>) -> TokenStream {
    let items = fields.fields.iter().map(|f| {
        let (vis, ty) = (&f.vis, &f.ty);
        let kept = &f.attrs;
        let hints = f.schemars_attr();
        match &f.ident {
            Some(ident) => quote!(#(#kept)* #hints #vis #ident: #ty),
            None => quote!(#(#kept)* #hints #vis #ty),
        }
    });
    match fields.style {
        ast::Style::Struct => quote!({ #(#items),* }),
        ast::Style::Tuple => quote!(( #(#items),* )),
        ast::Style::Unit => TokenStream::new(),
    }
}

fn variant(k: &CratePath, v: &VariantHints, own_branch: bool) -> TokenStream {
    let ident = &v.ident;
    let kept = &v.attrs;
    let title = v.title.as_ref().map(|t| quote!(#[schemars(title = #t)]));
    let description = v.description.as_ref().map(|d| quote!(#[schemars(description = #d)]));
    // schemars lists the unit variants without docs or schemars attributes together,
    // before all the others, which loses the declaration order the editor's dropdown
    // shows. Any attribute gives a variant its own branch; this one changes nothing
    // else.
    let own_branch = (own_branch && matches!(v.fields.style, ast::Style::Unit))
        .then(|| quote!(#[schemars(transform = |_: &mut #k::__private::schemars::Schema| {})]));
    let body = fields_body(&v.fields);
    quote!(#(#kept)* #title #description #own_branch #ident #body)
}

/// A unit variant schemars would list in one `enum` with the others: no docs, no
/// title or description, no schemars attribute. When all variants are such, schemars
/// keeps their order (and a map keyed by the enum knows its keys).
fn plain_unit(v: &VariantHints) -> bool {
    matches!(v.fields.style, ast::Style::Unit)
        && v.title.is_none()
        && v.description.is_none()
        && !v
            .attrs
            .iter()
            .any(|a| a.path().is_ident("doc") || a.path().is_ident("schemars"))
}

/// The container's attributes for the twin: docs, serde and schemars attributes kept,
/// with serde's bare `default` pointed at the real type's `Default` (the twin has none).
fn container_attrs(attrs: &[Attribute], default_fn: &syn::Ident) -> Vec<TokenStream> {
    attrs
        .iter()
        .map(|a| {
            if !a.path().is_ident("serde") {
                return quote!(#a);
            }
            let Ok(items) = a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) else {
                return quote!(#a);
            };
            let fn_name = default_fn.to_string();
            let items = items.iter().map(|m| match m {
                Meta::Path(p) if p.is_ident("default") => quote!(default = #fn_name),
                other => quote!(#other),
            });
            quote!(#[serde(#(#items),*)])
        })
        .collect()
}

fn has_container_default(attrs: &[Attribute]) -> bool {
    attrs.iter().filter(|a| a.path().is_ident("serde")).any(|a| {
        a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .is_ok_and(|items| {
                items
                    .iter()
                    .any(|m| matches!(m, Meta::Path(p) if p.is_ident("default")))
            })
    })
}

fn renames_container(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("serde") || a.path().is_ident("schemars"))
        .any(|a| {
            a.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                .is_ok_and(|items| items.iter().any(|m| m.path().is_ident("rename")))
        })
}

fn default_fn_item(attrs: &SchemaAttrs, default_fn: &syn::Ident) -> TokenStream {
    let ident = &attrs.ident;
    quote! {
        #[allow(non_snake_case)]
        fn #default_fn() -> #ident {
            ::core::default::Default::default()
        }
    }
}

fn json_schema_impl(attrs: &SchemaAttrs, twin: &syn::Ident) -> TokenStream {
    let (ident, k) = (&attrs.ident, &attrs.krate);
    let id = ident.to_string();
    quote! {
        #[automatically_derived]
        impl #k::__private::schemars::JsonSchema for #ident {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                <#twin as #k::__private::schemars::JsonSchema>::schema_name()
            }

            fn schema_id() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(::core::concat!(::core::module_path!(), "::", #id))
            }

            fn json_schema(
                generator: &mut #k::__private::schemars::SchemaGenerator,
            ) -> #k::__private::schemars::Schema {
                <#twin as #k::__private::schemars::JsonSchema>::json_schema(generator)
            }
        }
    }
}

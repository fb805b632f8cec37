//! Derive and attribute macros for tiny. Use them through `tiny-sdk`, which re-exports
//! them with their documentation; the generated code names only `::tiny_sdk` paths (or
//! the path given with `crate = "..."`). The derives write their impls in a `const _`
//! scope, marked `#[automatically_derived]`; `#[handlers]` rewrites the handlers of the
//! `impl` block it is on, and leaves the rest as it is.
//!
//! Layout: `internals` reads and checks the attributes (darling structs, one file per
//! derive), `expand` writes the code (one function per generated item). The entry
//! points below are thin so that tests can drive the `proc_macro2` functions.

#![warn(missing_docs)]

use proc_macro::TokenStream;

mod expand;
mod internals;

/// See `tiny_sdk::Component`.
#[proc_macro_derive(Component, attributes(component, port))]
pub fn derive_component(input: TokenStream) -> TokenStream {
    expand::component::derive(input.into()).into()
}

/// See `tiny_sdk::handlers`.
#[proc_macro_attribute]
pub fn handlers(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::handlers::attribute(args.into(), input.into()).into()
}

/// See `tiny_sdk::Schema`.
#[proc_macro_derive(Schema, attributes(tiny, schemars, serde))]
pub fn derive_schema(input: TokenStream) -> TokenStream {
    expand::schema::derive(input.into()).into()
}

//! `#[derive(Component)]`: `impl Component` (info, port table, instance, dispatch)
//! and, unless the author writes their own, an empty `impl Hooks`.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{DeriveInput, spanned::Spanned};

use crate::internals::component::{Component, Kind, Port, StubInfo};

/// The derive's body: checked input in, code out. On a mistake, the errors plus stub
/// impls, so the author sees the mistake and not a cascade of follow-on errors.
pub fn derive(input: TokenStream) -> TokenStream {
    let input: DeriveInput = match syn::parse2(input) {
        Ok(i) => i,
        Err(e) => return e.to_compile_error(),
    };
    match Component::from_input(&input) {
        Ok(c) => component_impl(&c),
        Err((errors, stub)) => {
            let mut out = errors.write_errors();
            out.extend(stub_impls(&input, stub));
            out
        }
    }
}

fn component_impl(c: &Component) -> TokenStream {
    let ident = &c.ident;
    let settings = c.settings.as_ref().map_or_else(|| quote!(()), |t| quote!(#t));
    let control = c.control.as_ref().map_or_else(|| quote!(()), |t| quote!(#t));
    let info = info_fn(c);
    let ports = ports_fn(c);
    let instance = instance_fn(c);
    let handle = handle_fn(c);
    let error_port = error_port_fn(c);
    let hooks = (!c.hooks).then(|| quote!(impl ::tiny_sdk::Hooks for #ident {}));
    quote! {
        impl ::tiny_sdk::Component for #ident {
            type Settings = #settings;
            type Control = #control;
            #info
            #ports
            #instance
            #handle
            #error_port
        }
        #hooks
    }
}

fn info_fn(c: &Component) -> TokenStream {
    let (name, description, info, tags) = (&c.name, &c.description, &c.info, &c.tags);
    quote! {
        fn info() -> ::tiny_sdk::ComponentInfo {
            ::tiny_sdk::ComponentInfo {
                name: #name.into(),
                description: #description.into(),
                info: #info.into(),
                tags: ::std::vec![#(#tags.into()),*],
            }
        }
    }
}

/// The port table: system ports first, then the fields in declaration order.
fn ports_fn(c: &Component) -> TokenStream {
    let system = [("_settings", "Settings", &c.settings), ("_control", "Control", &c.control)];
    let system = system.iter().filter_map(|(name, label, ty)| {
        let ty = (*ty).as_ref()?;
        Some(port_row(name, label, "", quote!(Target), "Top", ty, quote!(::core::option::Option::None)))
    });
    let fields = c.ports.iter().map(|p| {
        let ty = &p.ty;
        let msg = quote_spanned!(ty.span()=> <#ty as ::tiny_sdk::__private::PortType>::Message);
        let (direction, response) = match p.kind {
            Kind::Input => (quote!(Target), quote!(::core::option::Option::None)),
            Kind::Output => (
                quote!(Source),
                quote!(::tiny_sdk::__private::response::<<#ty as ::tiny_sdk::__private::PortType>::Response>()),
            ),
        };
        port_row(&p.name, &p.label, &p.description, direction, p.position, &msg, response)
    });
    quote! {
        fn ports() -> &'static [::tiny_sdk::PortSpec] {
            const PORTS: &[::tiny_sdk::PortSpec] = &[#(#system,)* #(#fields,)*];
            PORTS
        }
    }
}

fn port_row(
    name: &str,
    label: &str,
    description: &str,
    direction: TokenStream,
    position: &str,
    msg: &dyn quote::ToTokens,
    response: TokenStream,
) -> TokenStream {
    let position = format_ident!("{position}");
    quote! {
        ::tiny_sdk::__private::port::<#msg>(
            #name, #label, #description,
            ::tiny_sdk::Direction::#direction, ::tiny_sdk::Position::#position,
            ::tiny_sdk::__private::default_config!(#msg),
            #response,
        )
    }
}

/// Names every port handle; other fields start from `Default`.
fn instance_fn(c: &Component) -> TokenStream {
    let ports = c.ports.iter().map(|p| {
        let (field, name) = (&p.field, &p.name);
        let ctor = match p.kind {
            Kind::Input => quote!(::tiny_sdk::Input::new(#name)),
            Kind::Output => quote!(::tiny_sdk::Output::new(#name)),
        };
        quote!(#field: #ctor)
    });
    let plain = c.plain.iter().map(|f| {
        let (field, ty) = (&f.field, &f.ty);
        quote_spanned!(ty.span()=> #field: ::core::default::Default::default())
    });
    quote! {
        fn instance() -> Self {
            Self { #(#ports,)* #(#plain,)* }
        }
    }
}

/// `match port { "name" => decode, call on_name }`.
fn handle_fn(c: &Component) -> TokenStream {
    let name = &c.name;
    let arms = c.ports.iter().filter(|p| p.kind == Kind::Input).map(handle_arm);
    quote! {
        fn handle<'a>(
            &'a self,
            ctx: &'a ::tiny_sdk::Ctx<Self>,
            port: &'a str,
            payload: &'a ::tiny_sdk::__private::Value,
        ) -> ::tiny_sdk::__private::BoxFuture<'a, ::tiny_sdk::Result<::tiny_sdk::Reply>> {
            match port {
                #(#arms)*
                _ => ::tiny_sdk::__private::unknown_port(#name, port),
            }
        }
    }
}

fn handle_arm(p: &Port) -> TokenStream {
    let (field, name, handler) = (&p.field, &p.name, &p.handler);
    // The call carries the handler's span, so a missing or mistyped method is
    // reported on the port field that asked for it.
    let call = quote_spanned!(handler.span()=> Self::#handler(self, ctx, msg).await);
    let into_reply = quote_spanned!(handler.span()=> ::tiny_sdk::IntoReply::into_reply);
    quote! {
        #name => ::std::boxed::Box::pin(async move {
            let msg = self.#field.decode(payload)?;
            #into_reply(#call)
        }),
    }
}

fn error_port_fn(c: &Component) -> Option<TokenStream> {
    let port = c.ports.iter().find(|p| p.catch)?;
    let field = &port.field;
    Some(quote_spanned! {port.ty.span()=>
        fn error_port(&self) -> ::core::option::Option<&::tiny_sdk::Output<::tiny_sdk::ErrorMessage>> {
            ::core::option::Option::Some(&self.#field)
        }
    })
}

/// Impls that satisfy the trait bounds of the author's code after a failed check.
fn stub_impls(input: &DeriveInput, stub: Option<StubInfo>) -> TokenStream {
    if !input.generics.params.is_empty() {
        return TokenStream::new();
    }
    let ident = &input.ident;
    let stub = stub.unwrap_or(StubInfo { settings: None, hooks: false });
    let settings = stub.settings.map_or_else(|| quote!(()), |t| quote!(#t));
    let hooks = (!stub.hooks).then(|| quote!(impl ::tiny_sdk::Hooks for #ident {}));
    quote! {
        impl ::tiny_sdk::Component for #ident {
            type Settings = #settings;
            type Control = ();
            fn info() -> ::tiny_sdk::ComponentInfo { ::core::unreachable!() }
            fn ports() -> &'static [::tiny_sdk::PortSpec] { &[] }
            fn instance() -> Self { ::core::unreachable!() }
            fn handle<'a>(
                &'a self,
                _: &'a ::tiny_sdk::Ctx<Self>,
                _: &'a str,
                _: &'a ::tiny_sdk::__private::Value,
            ) -> ::tiny_sdk::__private::BoxFuture<'a, ::tiny_sdk::Result<::tiny_sdk::Reply>> {
                ::core::unreachable!()
            }
        }
        #hooks
    }
}

//! `#[derive(Component)]`: `impl Component` (info, port table, instance, dispatch)
//! and, unless the author writes their own, an empty `impl Hooks`.
//!
//! Spans: the code that the type checker may reject carries the span of the author's
//! token it is about (a port's message type, its handler, `catch`, `hooks`), so that a
//! mistake is reported there and not on `#[derive(Component)]`.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{ToTokens as _, format_ident, quote, quote_spanned};
use syn::{DeriveInput, Ident, ext::IdentExt as _, spanned::Spanned};

use crate::internals::{
    CratePath,
    component::{Component, Kind, Port, StubInfo},
};

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

/// `impl Component` and `impl Hooks`, in a `const _` scope as serde's derives write
/// theirs: nothing the derive writes can clash with the author's names.
fn component_impl(c: &Component) -> TokenStream {
    let (ident, k) = (&c.ident, &c.krate);
    let settings = c.settings.as_ref().map_or_else(|| quote!(()), |t| quote!(#t));
    let control = c.control.as_ref().map_or_else(|| quote!(()), |t| quote!(#t));
    let info = info_fn(c);
    let ports = ports_fn(c);
    let instance = instance_fn(c);
    let handle = handle_fn(c);
    let error_port = error_port_fn(c);
    let port_enabled = port_enabled_fn(c);
    let port_keys = port_keys_fn(c);
    let inputs = input_of_impls(c);
    let handlers = port_handlers_impl(
        k,
        ident,
        c.ports
            .iter()
            .filter(|p| p.kind == Kind::Input)
            .map(|p| (p.name.clone(), p.handler.unraw().to_string())),
        true,
    );
    let hooks = match c.hooks {
        // No hooks: nothing to run on deletion, so nodes need no finalizer.
        None => quote! {
            #[automatically_derived]
            impl #k::Hooks for #ident { const DESTROYS: bool = false; }
        },
        Some(span) => hooks_check(c, span),
    };
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #k::Component for #ident {
                type Settings = #settings;
                type Control = #control;
                #info
                #ports
                #instance
                #handle
                #error_port
                #port_enabled
                #port_keys
            }
            #(#inputs)*
            #handlers
            #hooks
        };
    }
}

/// `impl PortHandlers for Hello { const HANDLERS = &[("input", "on_input"), ..]; }`: the
/// input ports and their handlers by name. `#[handlers]` reads them for a method that
/// handles no port: beside a port whose handler is not in its block it is no error
/// (the dispatch reports that port, and rustc names the method nearest), else it is
/// the one error. `checked` is `false` after a mistake the derive reported:
/// `#[handlers]` then adds nothing about the ports.
fn port_handlers_impl(
    k: &CratePath,
    ident: &Ident,
    ports: impl Iterator<Item = (String, String)>,
    checked: bool,
) -> TokenStream {
    let rows = ports.map(|(port, handler)| quote!(#k::handler::PortHandler { port: #port, handler: #handler }));
    quote! {
        #[automatically_derived]
        impl #k::handler::PortHandlers for #ident {
            const HANDLERS: &'static [#k::handler::PortHandler] = &[#(#rows),*];
            const CHECKED: bool = #checked;
        }
    }
}

/// `impl<W> InputOf<{ key("on_input") }, W> for Hello { type Message = T; }` for each input
/// port: what `#[handlers]`, which sees the handler `on_input` but not the port, gives
/// its `msg` parameter and checks the type written there against.
fn input_of_impls(c: &Component) -> Vec<TokenStream> {
    let k = &c.krate;
    let mut seen = std::collections::HashSet::new();
    c.ports
        .iter()
        .filter(|p| p.kind == Kind::Input)
        // One impl per handler: a method may handle two ports of one type.
        .filter(|p| seen.insert(p.handler.unraw().to_string()))
        .map(|p| {
            let ty = &p.ty;
            let message = p
                .message
                .as_ref()
                .map_or_else(|| quote!(<#ty as #k::port::PortType>::Message), |t| quote!(#t));
            let port = format!("the input port `{}`", p.name);
            input_of_impl(k, &c.ident, &p.handler, &port, &message, p.field.span())
        })
        .collect()
}

/// One `InputOf` impl, at `span`: where a method that handles no port is told the
/// ports are.
fn input_of_impl(
    k: &CratePath,
    ident: &Ident,
    handler: &Ident,
    port: &str,
    message: &TokenStream,
    span: Span,
) -> TokenStream {
    let handler = handler.unraw().to_string();
    let doc = format!(" `{handler}` handles {port}: `#[handlers]` checks its `msg` against this type.");
    let mut item = respan(
        quote! {
            #[doc = #doc]
            #[automatically_derived]
            impl<W> #k::handler::InputOf<{ #k::handler::key(#handler) }, W> for #ident
        },
        span,
    );
    let mut body = Group::new(proc_macro2::Delimiter::Brace, quote!(type Message = #message;));
    body.set_span(span);
    item.extend([TokenTree::Group(body)]);
    item
}

fn info_fn(c: &Component) -> TokenStream {
    let k = &c.krate;
    let (name, description) = (&c.name, &c.description);
    let mut info = &c.info;
    let mut tags = c.tags.clone();
    let mut agent_tool = quote!();
    if let Some(tool) = &c.agent_tool {
        // As Go's build publishes a tool: tagged `agent_tool`, its description as info.
        if !tags.iter().any(|t| t == "agent_tool") {
            tags.push("agent_tool".to_owned());
        }
        if !tool.description.is_empty() {
            info = &tool.description;
        }
        let (input, output, text) = (&tool.input, &tool.output, &tool.description);
        agent_tool = quote! {
            fn agent_tool() -> ::core::option::Option<#k::AgentTool> {
                ::core::option::Option::Some(#k::AgentTool {
                    input: #input,
                    output: #output,
                    description: #text,
                })
            }
        };
    }
    quote! {
        fn info() -> #k::ComponentInfo {
            #k::ComponentInfo {
                name: #name.into(),
                description: #description.into(),
                info: #info.into(),
                tags: ::std::vec![#(#tags.into()),*],
            }
        }
        #agent_tool
    }
}

/// The port table: system ports first, then the fields in declaration order.
fn ports_fn(c: &Component) -> TokenStream {
    let k = &c.krate;
    // Their names come from the SDK's wire contract (`_settings`, `_control`).
    let system = [
        (quote!(#k::contract::port::SETTINGS), "Settings", "Target", &c.settings),
        // A source, as in the Go SDK: the editor draws the dashboard from it, and
        // the engine delivers control messages to it all the same.
        (quote!(#k::contract::port::CONTROL), "Control", "Source", &c.control),
    ];
    let system = system.iter().filter_map(|(name, label, direction, ty)| {
        let ty = (*ty).as_ref()?;
        let row = Row {
            krate: k,
            name: name.clone(),
            label,
            description: "",
            direction,
            position: "Top",
            message: quote!(#ty),
            response: quote!(::core::option::Option::None),
        };
        Some(row.to_tokens())
    });
    let fields = c.ports.iter().map(|p| {
        let response = match p.kind {
            Kind::Input => quote!(::core::option::Option::None),
            Kind::Output | Kind::Family => {
                let r = p
                    .response
                    .as_ref()
                    .map_or_else(|| quote!(#k::__private::Value), |r| quote!(#r));
                let r = respan(r, p.check_span);
                quote!(#k::__private::response::<#r>())
            }
        };
        let row = Row {
            krate: k,
            name: {
                let name = &p.name;
                quote!(#name)
            },
            label: &p.label,
            description: &p.description,
            direction: if p.kind == Kind::Input { "Target" } else { "Source" },
            position: p.position,
            message: message_type(k, p),
            response,
        };
        let row = row.to_tokens();
        if p.kind == Kind::Family {
            quote!(#k::__private::family(#row))
        } else {
            row
        }
    });
    let check = messages_check(c);
    quote! {
        fn ports() -> &'static [#k::PortSpec] {
            const PORTS: &[#k::PortSpec] = {
                #check
                &[#(#system,)* #(#fields,)*]
            };
            PORTS
        }
    }
}

/// One row of the port table.
struct Row<'a> {
    krate: &'a CratePath,
    name: TokenStream,
    label: &'a str,
    description: &'a str,
    direction: &'a str,
    position: &'a str,
    message: TokenStream,
    response: TokenStream,
}

impl Row<'_> {
    fn to_tokens(&self) -> TokenStream {
        let Row {
            krate: k,
            name,
            label,
            description,
            message,
            response,
            ..
        } = self;
        let direction = format_ident!("{}", self.direction);
        let position = format_ident!("{}", self.position);
        quote! {
            #k::__private::port::<#message>(
                #name, #label, #description,
                #k::Direction::#direction, #k::Position::#position,
                {
                    /// The port's default configuration (what an edge without a mapping
                    /// delivers): autoref specialisation on `&&DefaultProbe` picks
                    /// `ViaDefault` (`T::default()`) when the type has a `Default`, else
                    /// `ViaNull` (`null`).
                    fn default_config() -> #k::__private::Value {
                        #[allow(unused_imports)]
                        use #k::__private::{ViaDefault as _, ViaNull as _};
                        (&&#k::__private::DefaultProbe::<#message>::new()).default_config()
                    }
                    default_config
                },
                #response,
            )
        }
    }
}

/// `T` of `Input<T>`, with the span errors about it belong on.
fn message_type(k: &CratePath, p: &Port) -> TokenStream {
    let ty = &p.ty;
    let message = p
        .message
        .as_ref()
        .map_or_else(|| quote!(<#ty as #k::port::PortType>::Message), |t| quote!(#t));
    respan(message, p.check_span)
}

/// `let _port_messages = PhantomData::<(<Input<T> as PortType>::Message, ..)>;`
///
/// Checks that the ports' types are messages. Each function that uses them starts with
/// it, so that a type that is not a `Message` fails there first, on the same token and
/// in the same words everywhere: rustc then reports it once, as "`T` cannot travel
/// through a port", rather than once per use and in the words of whichever bound
/// (`JsonSchema`, `Serialize`) that use needs.
fn messages_check(c: &Component) -> Option<TokenStream> {
    if c.ports.is_empty() {
        return None;
    }
    let messages = c.ports.iter().map(|p| {
        let ty = &p.ty;
        let k = at(&c.krate, p.check_span);
        quote_spanned!(p.check_span=> <#ty as #k::port::PortType>::Message)
    });
    Some(quote!(let _port_messages = ::core::marker::PhantomData::<(#(#messages,)*)>;))
}

/// Names every port handle; other fields start from `Default`.
fn instance_fn(c: &Component) -> TokenStream {
    let k = &c.krate;
    let check = messages_check(c);
    let ports = c.ports.iter().map(|p| {
        let (field, name) = (&p.field, &p.name);
        let handle = match p.kind {
            Kind::Input => quote!(#k::__private::input(#name)),
            Kind::Output => quote!(#k::__private::output(#name)),
            Kind::Family => quote!(#k::__private::outputs(#name)),
        };
        let handle = respan(handle, p.check_span);
        quote!(#field: #handle)
    });
    let plain = c.plain.iter().map(|f| {
        let (field, ty) = (&f.field, &f.ty);
        let default = quote_spanned!(ty.span()=> ::core::default::Default::default());
        quote!(#field: #default)
    });
    quote! {
        fn instance() -> Self {
            #check
            Self { #(#ports,)* #(#plain,)* }
        }
    }
}

/// `async move { match port { "name" => take the value, call on_name } }`: one future
/// for all ports, which the engine boxes once per hop.
fn handle_fn(c: &Component) -> TokenStream {
    let (name, k) = (&c.name, &c.krate);
    let arms = c
        .ports
        .iter()
        .filter(|p| p.kind == Kind::Input)
        .map(|p| handle_arm(k, p));
    let check = messages_check(c);
    quote! {
        fn handle<'a>(
            &'a self,
            ctx: &'a #k::Ctx<Self>,
            port: &'a str,
            input: #k::__private::Msg,
        ) -> impl ::core::future::Future<Output = #k::Result<#k::Reply>> + ::core::marker::Send + 'a {
            #check
            async move {
                match port {
                    #(#arms)*
                    _ => {
                        ::core::mem::drop(input);
                        #k::__private::unknown_port(#name, port)
                    }
                }
            }
        }
    }
}

fn handle_arm(k: &CratePath, p: &Port) -> TokenStream {
    let (field, name, handler) = (&p.field, &p.name, &p.handler);
    // Autoref specialisation (see `tiny_sdk::handler`): method lookup on `&&&&Take<T>`
    // finds the first of `TakeExactClone` (`&&&Take`), `TakeExact` (`&&Take`),
    // `TakeDecode` (`&Take`), `TakeNone` (`Take`) that the port's type allows, so the
    // message is moved or cloned when that is sound and decoded from JSON otherwise.
    let inbox_expr = respan(
        quote!({
            #[allow(unused_imports)]
            use #k::handler::{TakeDecode as _, TakeExact as _, TakeExactClone as _, TakeNone as _};
            (&&&&#k::handler::Take::of(&self.#field)).inbox(input)
        }),
        p.check_span,
    );
    // The calls carry the handler's span, so a missing or mistyped method is reported
    // on the port field that asked for it (or on `handler = ...`); `msg` carries the
    // message type's span, where a handler taking another type is reported.
    let msg = Ident::new("msg", p.check_span);
    let inbox = Ident::new("inbox", p.check_span);
    let shape = Ident::new("shape", handler.span());
    let args = quote!(self, ctx, #msg);
    let ty = &p.ty;
    let message = quote!(<#ty as #k::port::PortType>::Message);
    let k = at(k, handler.span());
    // First the handler's parameters (`handler::shape`), so that what else is wrong
    // with it (no `ctx`, not `async`, not `Send`, the return type) is reported on its
    // own by `handler::call`'s bounds; the `msg` parameter's type, inferred from the
    // handler, picks through `handler::arg` the value or a borrow of it.
    let shape_of = quote_spanned!(handler.span()=> #k::handler::shape::<Self, #message, _, _, _>(&Self::#handler));
    let call = quote_spanned!(handler.span()=> #k::handler::call(Self::#handler, #shape, #args).await);
    let into_reply = quote_spanned!(handler.span()=> #k::IntoReply::into_reply);
    let arg = quote_spanned!(p.check_span=> #k::handler::arg::<#message, _, _>(&mut #inbox, self.#field.name()));
    quote! {
        #name => {
            #[allow(unused_doc_comments)]
            /// The handler's parameters, `(&self, ctx, msg)` or another shape, inferred first:
            /// `call` then reports what else is wrong with it in words about that shape.
            let #shape = #shape_of;
            #[allow(unused_doc_comments)]
            /// Autoref specialisation: `&&&&Take` finds the most specific of `TakeExactClone`,
            /// `TakeExact`, `TakeDecode`, `TakeNone` that the port's type allows, i.e. how its
            /// message is taken: moved or cloned when sound, else decoded (the SDK's `handler` module).
            let mut #inbox = #inbox_expr;
            let #msg = #arg?;
            #into_reply(#call)
        }
    }
}

/// The `catch` port. A port that does not carry `ErrorMessage` is reported as a type
/// mismatch on its type, "expected due to" `catch`.
fn error_port_fn(c: &Component) -> Option<TokenStream> {
    let port = c.ports.iter().find(|p| p.catch.is_some())?;
    let catch = port.catch.unwrap_or_else(Span::call_site);
    let (k, k_catch) = (&c.krate, at(&c.krate, catch));
    let expected = quote_spanned!(catch=> &#k_catch::Output<#k_catch::ErrorMessage>);
    let field = Ident::new(&port.field.to_string(), port.ty.span());
    let found = quote_spanned!(port.ty.span()=> &self.#field);
    Some(quote! {
        fn error_port(&self) -> ::core::option::Option<&#k::Output<#k::ErrorMessage>> {
            let port: #expected = #found;
            ::core::option::Option::Some(port)
        }
    })
}

/// `match port { "stop" => settings.enable_stop_port, .. }` for `enabled_by` ports. The
/// field access carries the field's span: a missing field or one that is not `bool`
/// is reported on the name the author wrote.
fn port_enabled_fn(c: &Component) -> Option<TokenStream> {
    let arms: Vec<TokenStream> = c
        .ports
        .iter()
        .filter_map(|p| {
            let field = p.enabled_by.as_ref()?;
            let name = &p.name;
            let read = quote_spanned!(field.span()=> settings.#field);
            let expect_bool = quote_spanned!(field.span()=> bool);
            Some(quote!(#name => { let on: #expect_bool = #read; on }))
        })
        .collect();
    if arms.is_empty() {
        return None;
    }
    Some(quote! {
        fn port_enabled(settings: &Self::Settings, port: &str) -> bool {
            match port {
                #(#arms)*
                _ => true,
            }
        }
    })
}

/// `match family { "out" => keys(Self::routes, settings), .. }` for port families.
fn port_keys_fn(c: &Component) -> Option<TokenStream> {
    let k = &c.krate;
    let arms: Vec<TokenStream> = c
        .ports
        .iter()
        .filter_map(|p| {
            let keys = p.keys.as_ref()?;
            let name = &p.name;
            let path = if keys.leading_colon.is_none() && keys.segments.len() == 1 {
                quote_spanned!(keys.span()=> Self::#keys)
            } else {
                quote!(#keys)
            };
            let k = at(k, keys.span());
            // Coerced to a fn pointer first: a method of another shape is then one
            // error on the author's token that shows the expected `fn(&Settings)`.
            let call = quote_spanned!(keys.span()=> {
                let keys: fn(&Self::Settings) -> _ = #path;
                #k::__private::port_keys(keys, settings)
            });
            Some(quote!(#name => #call,))
        })
        .collect();
    if arms.is_empty() {
        return None;
    }
    Some(quote! {
        fn port_keys(settings: &Self::Settings, family: &str) -> ::std::vec::Vec<::std::string::String> {
            match family {
                #(#arms)*
                _ => ::std::vec::Vec::new(),
            }
        }
    })
}

/// `#[component(hooks)]`: the author promised an `impl Hooks`; hold them to it here,
/// on `hooks`, rather than where the component is registered.
fn hooks_check(c: &Component, span: Span) -> TokenStream {
    let k = &c.krate;
    let ident = Ident::new(&c.ident.to_string(), span);
    let check = quote_spanned!(span=> implements_hooks::<#ident>);
    quote! {
        fn implements_hooks<C: #k::Hooks>() {}
        let _ = #check;
    }
}

/// Impls that satisfy the trait bounds of the author's code after a failed check.
fn stub_impls(input: &DeriveInput, stub: Box<StubInfo>) -> TokenStream {
    let (ident, k) = (&input.ident, &stub.krate);
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    // The `Component` supertraits, which a generic component may not meet for every
    // parameter: assumed, so that only the real mistake is reported.
    let mut where_clause = where_clause.cloned();
    if !input.generics.params.is_empty() {
        let clause = where_clause.get_or_insert_with(|| syn::parse_quote!(where));
        clause
            .predicates
            .push(syn::parse_quote!(Self: ::core::marker::Send + ::core::marker::Sync + 'static));
    }
    let settings = stub.settings.map_or_else(|| quote!(()), |t| quote!(#t));
    let control = stub.control.map_or_else(|| quote!(()), |t| quote!(#t));
    // The input ports read from the fields: the author's `#[handlers]` still finds them.
    let mut seen = std::collections::HashSet::new();
    let inputs: Vec<TokenStream> = stub
        .inputs
        .iter()
        .filter(|(handler, _)| input.generics.params.is_empty() && seen.insert(handler.unraw().to_string()))
        .map(|(handler, message)| {
            let message = message.to_token_stream();
            input_of_impl(k, ident, handler, "an input port", &message, handler.span())
        })
        .collect();
    // Generic components are refused (and have no `#[handlers]` block to inform).
    let handlers = input.generics.params.is_empty().then(|| {
        let ports = stub.inputs.iter().map(|(handler, _)| {
            let handler = handler.unraw().to_string();
            (handler.trim_start_matches("on_").to_owned(), handler)
        });
        port_handlers_impl(k, ident, ports, false)
    });
    let hooks = (!stub.hooks).then(|| {
        quote! {
            #[automatically_derived]
            impl #impl_generics #k::Hooks for #ident #ty_generics #where_clause {}
        }
    });
    quote! {
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #k::Component for #ident #ty_generics #where_clause {
                type Settings = #settings;
                type Control = #control;
                fn info() -> #k::ComponentInfo { ::core::unreachable!() }
                fn ports() -> &'static [#k::PortSpec] { &[] }
                fn instance() -> Self { ::core::unreachable!() }
                fn handle<'a>(
                    &'a self,
                    _: &'a #k::Ctx<Self>,
                    _: &'a str,
                    _: #k::__private::Msg,
                ) -> impl ::core::future::Future<Output = #k::Result<#k::Reply>> + ::core::marker::Send + 'a {
                    async { ::core::unreachable!() }
                }
            }
            #(#inputs)*
            #handlers
            #hooks
        };
    }
}

/// The SDK's path placed at `span`, for `quote_spanned!`: an expression starting with
/// it then spans the author's token only, not the derive as well.
fn at(k: &CratePath, span: Span) -> TokenStream {
    respan(k.to_token_stream(), span)
}

/// `tokens` with every token placed at `span`, so that whatever the type checker says
/// about them is said there.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tt| {
            if let TokenTree::Group(g) = &tt {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tt = TokenTree::Group(group);
            } else {
                tt.set_span(span);
            }
            tt
        })
        .collect()
}

//! `#[handlers]`: the `impl` block, each handler rewritten to the shape the dispatch
//! calls, with its body unchanged:
//!
//! ```text
//! fn on_input(&self, ctx: &Ctx<Self>, msg: MessageOf<Self, { port_key(..) }, T>)
//!     -> impl Future<Output = R> + Send
//! {
//!     async move {
//!         let msg: T = <T as PortMessage<MessageOf<Self, { port_key(..) }, T>>>::taken(msg);
//!         { body }
//!     }
//! }
//! ```
//!
//! Spans: what the type checker may reject carries the span of the author's token it is
//! about, so that the error is reported there, once: the `impl Future + Send` the
//! handler's name (a future that is not `Send`), `R` the return type as written, or
//! `impl IntoReply` there for a type other than the usual ones (one that is not a
//! reply), the `MessageOf` key the name (a method that handles no port: a `const`
//! that panics, once, unless a port's handler is missing too, which the derive reports
//! with rustc's "similar name"), the `PortMessage` conversion the message type as
//! written (another type than the port's). `fn` and the braces are the author's, so
//! that the method's span is the author's code.
//! The derive then calls a handler of the right shape, and reports nothing more.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{ToTokens as _, quote, quote_spanned};
use syn::{
    GenericParam, Generics, Ident, ImplItem, ItemImpl, Lifetime, LifetimeParam, ReceiverKind, Type, ext::IdentExt as _,
    spanned::Spanned as _,
};

use crate::internals::{
    CratePath,
    handlers::{Handler, Handlers, Item, MsgParam, is_usual_reply},
};

/// The attribute's body: the block in, the block out, with an error for each mistake.
pub fn attribute(args: TokenStream, input: TokenStream) -> TokenStream {
    let block: ItemImpl = match syn::parse2(input.clone()) {
        Ok(b) => b,
        Err(_) => {
            let e = syn::Error::new(
                Span::call_site(),
                "`#[handlers]` goes on the `impl` block that holds a component's port handlers",
            );
            let mut out = e.to_compile_error();
            out.extend(input);
            return out;
        }
    };
    let (handlers, errors) = Handlers::read(args, block);
    let mut out: TokenStream = errors.iter().map(syn::Error::to_compile_error).collect();
    out.extend(impl_block(handlers));
    out
}

fn impl_block(h: Handlers) -> TokenStream {
    let Handlers {
        krate,
        mut block,
        items,
        methods,
    } = h;
    let component = type_text(&block.self_ty);
    let block_info = Block {
        methods: &methods,
        component: &component,
    };
    block.items = items
        .into_iter()
        .map(|item| match item {
            Item::Kept(item) => *item,
            Item::Handler(handler) => ImplItem::Verbatim(handler_fn(&krate, &block_info, &handler)),
        })
        .collect();
    block.into_token_stream()
}

/// What a handler's port lookup needs of its block: the names of its methods and the
/// component's name as written.
struct Block<'a> {
    methods: &'a [String],
    component: &'a str,
}

/// The component's type as written (`Hello`), for messages.
fn type_text(ty: &Type) -> String {
    ty.to_token_stream().to_string().replace(' ', "")
}

fn handler_fn(k: &CratePath, b: &Block, h: &Handler) -> TokenStream {
    let Handler {
        attrs,
        vis,
        ident,
        span,
        async_span,
        fn_span,
        msg,
        output,
        body,
        ..
    } = h;
    let span = *span;
    let ks = at(k, span);
    let name = ident.unraw().to_string();
    // The port's message type, which the derive records under the handler's name. The
    // key is looked up once, in one constant, so that a method that handles no port is
    // one error on its name that says which handler it is nearest to.
    let written = match msg {
        Some(MsgParam { ty, .. }) => ty.to_token_stream(),
        None => quote!(()),
    };
    let (methods, component) = (b.methods, b.component);
    let lookup = quote_spanned!(span=>
        #ks::handler::port_key(
            <Self as #ks::handler::PortHandlers>::HANDLERS,
            <Self as #ks::handler::PortHandlers>::CHECKED,
            &[#(#methods),*],
            #name,
            #component,
        )
    );
    let key = quote_spanned!(span=> {
        match #lookup {
            ::core::result::Result::Ok(key) => key,
            ::core::result::Result::Err(no_port) => ::core::panic!("{}", no_port.as_str()),
        }
    });
    let message_of = quote_spanned!(span=> #ks::handler::MessageOf<Self, #key, #written>);
    // The same type for the body's conversion, from a lookup that does not fail: the
    // signature's reports a method that handles no port, once.
    let quiet_key = quote_spanned!(span=> { #ks::handler::key_or_unhandled(#lookup) });
    let quiet_message_of = quote_spanned!(span=> #ks::handler::MessageOf<Self, #quiet_key, #written>);
    let (generics, receiver, ctx, lent) = lifetimes(h, &ks);
    // Named after the author's `msg`, but in the macro's hygiene: only the author's
    // pattern, bound from it in the body, is the author's name.
    let param = Ident::new("msg", Span::mixed_site());
    let take = match msg {
        Some(MsgParam { pat, ty, lent }) if body.is_some() => {
            let kt = at(k, ty.span());
            let port_message = quote_spanned!(ty.span()=> #kt::handler::PortMessage<#quiet_message_of>);
            let take = if *lent {
                quote!(let #pat: &#ty = <#ty as #port_message>::lent(#param);)
            } else {
                quote!(let #pat: #ty = <#ty as #port_message>::taken(#param);)
            };
            Some(quote! {
                #[allow(unused_doc_comments)]
                /// The message as the signature takes it: `PortMessage` accepts the port's type (or `&` it) only.
                #take
            })
        }
        _ => None,
    };
    let msg_ty = match lent {
        Some(lt) => quote!(&#lt #message_of),
        None => message_of,
    };
    let msg_param = if take.is_some() { quote!(#param) } else { quote!(_) };
    let usual = output.as_ref().is_none_or(|ty| is_usual_reply(ty, k));
    let reply = match (output, body.is_none()) {
        (_, true) => quote!(::core::result::Result<#k::Reply, #k::Error>),
        (None, false) => quote!(()),
        (Some(ty), false) if usual => ty.to_token_stream(),
        // Any other type is checked to be a reply here, on it, and the dispatch takes it
        // as declared.
        (Some(ty), false) => {
            let kt = at(k, ty.span());
            quote_spanned!(ty.span()=> impl #kt::IntoReply)
        }
    };
    let captures = generics.lifetimes().map(|l| &l.lifetime);
    let future = quote_spanned!(span=> impl ::core::future::Future<Output = #reply> + ::core::marker::Send + use<#(#captures),*>);
    let body = match (body, output) {
        (None, _) => quote!(::core::unreachable!()),
        (Some(block), Some(ty)) if !usual => {
            // The body's type is the one written, as in an `async fn`: `impl IntoReply`
            // does not say it, and `Ok(..)` or `?` need it.
            let reply = Ident::new("_reply", Span::mixed_site());
            quote!(#take #[allow(clippy::diverging_sub_expression)] let #reply: #ty = #block; #[allow(unreachable_code)] #reply)
        }
        // The author's block stays a block, so that an item in it (`use`, a local type)
        // does not reach the line taking the message; bound to a name, since a block
        // as the value of `async move { .. }` would warn of braces the author did not
        // write (`unused_braces`).
        // A body that only panics would make the name unreachable, and the block a
        // diverging sub-expression: lints of the macro's making, pointing at
        // `#[handlers]` (the author's unreachable code still warns, in the block).
        (Some(block), _) => {
            let reply = Ident::new("_reply", Span::mixed_site());
            quote!(#take #[allow(clippy::diverging_sub_expression)] let #reply = #block; #[allow(unreachable_code)] #reply)
        }
    };
    // The method's braces are the author's: with its `fn`, they make its span, which
    // the compiler shows for the method as a whole (a similar name, where a port
    // looks for its handler) at the author's code, not at `#[handlers]`.
    let braces = h.body.as_ref().map_or(*fn_span, |b| b.brace_token.span.join());
    let block = async_block(*async_span, body);
    let mut block = Group::new(Delimiter::Brace, block);
    block.set_span(braces);
    let where_clause = &generics.where_clause;
    let fn_token = quote_spanned!(*fn_span=> fn);
    // The author wrote an `async fn`: with its spans, clippy would take the rewrite
    // for a hand-written future.
    quote! {
        #(#attrs)*
        #[allow(clippy::manual_async_fn)]
        #vis #fn_token #ident #generics(#receiver, #ctx, #msg_param: #msg_ty) -> #future #where_clause #block
    }
}

/// The handler's lifetimes, named: `'handler` for `&self` and `ctx` (as the dispatch
/// lends them), `'msg` for a lent message, and the author's. The future captures them
/// all (`use<..>`), as an `async fn`'s does, in any edition. Returns the generics, the
/// receiver, the `ctx` parameter and the message's lifetime when it is lent.
fn lifetimes(h: &Handler, ks: &TokenStream) -> (Generics, TokenStream, TokenStream, Option<Lifetime>) {
    let handler = Lifetime::new("'handler", h.span);
    let mut generics = h.generics.clone();
    generics
        .params
        .insert(0, GenericParam::Lifetime(LifetimeParam::new(handler.clone())));
    let lent = h.msg.as_ref().is_some_and(|m| m.lent).then(|| {
        let msg = Lifetime::new("'msg", h.span);
        generics
            .params
            .insert(1, GenericParam::Lifetime(LifetimeParam::new(msg.clone())));
        msg
    });
    let receiver = match &h.receiver {
        Some(r) => {
            let mut r = r.clone();
            if let ReceiverKind::Reference(_, lifetime @ None, _) = &mut r.kind {
                *lifetime = Some(handler.clone());
            }
            r.to_token_stream()
        }
        None => quote_spanned!(h.span=> &#handler self),
    };
    let ctx = match &h.ctx {
        Some(c) => {
            let mut c = c.clone();
            if let Type::Reference(r) = &mut *c.ty {
                r.lifetime.get_or_insert(handler);
            }
            if h.body.is_none() {
                // The body is left out: nothing uses the author's name.
                *c.pat = syn::parse_quote!(_);
            }
            c.to_token_stream()
        }
        None => quote_spanned!(h.span=> _: &#handler #ks::Ctx<Self>),
    };
    (generics, receiver, ctx, lent)
}

/// `async move { body }`, all of it at `span` (the handler's `async`): the compiler
/// names the future after it.
fn async_block(span: Span, body: TokenStream) -> TokenStream {
    let mut group = Group::new(Delimiter::Brace, body);
    group.set_span(span);
    let mut out = quote_spanned!(span=> async move);
    out.extend([TokenTree::Group(group)]);
    out
}

/// The SDK's path placed at `span`, for `quote_spanned!`.
fn at(k: &CratePath, span: Span) -> TokenStream {
    k.to_token_stream()
        .into_iter()
        .map(|mut tt| {
            tt.set_span(span);
            tt
        })
        .collect()
}

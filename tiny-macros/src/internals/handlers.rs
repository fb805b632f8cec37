//! `#[handlers]`: which methods of the `impl` block are port handlers, and what is
//! wrong with their signatures as written.
//!
//! Each mistake is one error on the token that is wrong, saying which part it is and
//! showing the expected form. The handler is then read as if the mistake were fixed
//! (a missing `ctx` added, swapped parameters put back in order), so that the code
//! generator still writes the shape the dispatch expects and the derive reports nothing
//! more; where the body no longer fits the fixed signature, it is left out.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{
    Attribute, Block, FnArg, FnModifiers, Generics, Ident, ImplItem, ImplItemFn, ItemImpl, Meta, Pat, PatType,
    Receiver, ReceiverKind, ReturnType, Token, Type, Visibility, ext::IdentExt, punctuated::Punctuated,
};

use super::CratePath;

/// `#[handlers]` on an `impl` block, read.
pub struct Handlers {
    pub krate: CratePath,
    /// The block, its items taken out into `items`.
    pub block: ItemImpl,
    pub items: Vec<Item>,
    /// The names of all the block's methods, handlers or not: a port whose handler is
    /// not among them is reported by the derive, so a method that handles no port is
    /// then no second error (`tiny_sdk::handler::port_key`).
    pub methods: Vec<String>,
}

/// One item of the block.
pub enum Item {
    /// Not a handler, or a handler written as a plain `fn` returning its own future:
    /// kept as it is.
    Kept(Box<ImplItem>),
    Handler(Box<Handler>),
}

/// A handler, its parameters read as `(&self, ctx, msg)`: a part that is missing or of
/// another kind is `None` (and an error was reported about it).
pub struct Handler {
    /// Its attributes, `#[handler]` taken out.
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub ident: Ident,
    /// Lifetime parameters and the where clause, as written.
    pub generics: Generics,
    /// Where the errors about the handler as a whole go (its future not `Send`, its
    /// return type not a reply, no port for it): its name.
    pub span: Span,
    /// `async` (or `fn` when it is missing): where the future is made.
    pub async_span: Span,
    /// `fn`: where the method starts.
    pub fn_span: Span,
    /// `&self` as written, or `None` when it is missing or of another kind.
    pub receiver: Option<Receiver>,
    /// `ctx: &Ctx<Self>` as written, or `None` when it is missing.
    pub ctx: Option<PatType>,
    pub msg: Option<MsgParam>,
    /// The return type as written; `None` for `()`.
    pub output: Option<Type>,
    /// The body, or `None` when it no longer fits the signature read.
    pub body: Option<Block>,
}

/// The `msg` parameter as written: `pat: T` or `pat: &T`.
pub struct MsgParam {
    pub pat: Pat,
    /// `T`.
    pub ty: Type,
    /// `&T`: the message is lent.
    pub lent: bool,
}

impl Handlers {
    /// Reads the attribute's arguments and the block. On mistakes, the errors next to
    /// what could be read, so that the block is still written out.
    pub fn read(args: proc_macro2::TokenStream, block: ItemImpl) -> (Self, Vec<syn::Error>) {
        let mut errors = Vec::new();
        let krate = match crate_path(args) {
            Ok(k) => k,
            Err(e) => {
                errors.push(e);
                CratePath::default()
            }
        };
        if let Some((path, _)) = &block.trait_ {
            errors.push(syn::Error::new_spanned(
                path,
                "`#[handlers]` goes on the component's own `impl` block (`impl Hello { .. }`), which holds its port handlers, not on a trait impl",
            ));
        }
        let mut block = block;
        let methods = block
            .items
            .iter()
            .filter_map(|item| match item {
                ImplItem::Fn(f) => Some(f.sig.ident.unraw().to_string()),
                _ => None,
            })
            .collect();
        let items = std::mem::take(&mut block.items)
            .into_iter()
            .map(|item| match item {
                ImplItem::Fn(f) if block.trait_.is_none() && is_handler(&f) => read_handler(f, &mut errors),
                other => Item::Kept(Box::new(other)),
            })
            .collect();
        (
            Handlers {
                krate,
                block,
                items,
                methods,
            },
            errors,
        )
    }
}

/// `crate = "path"`, the only argument.
fn crate_path(args: proc_macro2::TokenStream) -> syn::Result<CratePath> {
    use darling::FromMeta as _;
    let metas = syn::parse::Parser::parse2(Punctuated::<Meta, Token![,]>::parse_terminated, args)?;
    let mut krate = CratePath::default();
    for meta in metas {
        match meta {
            Meta::NameValue(nv) if nv.path.is_ident("crate") => {
                krate = CratePath::from_expr(&nv.value).map_err(|e| syn::Error::new(e.span(), e.to_string()))?;
            }
            other => {
                return Err(syn::Error::new_spanned(
                    other,
                    "`#[handlers]` takes no argument but `crate = \"path\"`, the path the SDK is reachable by",
                ));
            }
        }
    }
    Ok(krate)
}

/// `on_<port>`, or marked `#[handler]`.
fn is_handler(f: &ImplItemFn) -> bool {
    f.sig.ident.unraw().to_string().starts_with("on_") || f.attrs.iter().any(is_marker)
}

fn is_marker(a: &Attribute) -> bool {
    a.path().is_ident("handler")
}

/// What a mistake's message shows: the handler's expected form.
struct Expected {
    form: String,
}

impl Expected {
    fn new(name: &Ident, msg: Option<&Type>) -> Self {
        let msg = msg.map_or_else(|| "T".to_owned(), type_text);
        Expected {
            form: format!(
                "expected `async fn {}(&self, ctx: &Ctx<Self>, msg: {msg}) -> Result<Reply>`",
                name.unraw()
            ),
        }
    }

    fn form(&self) -> &str {
        &self.form
    }

    fn error(&self, tokens: impl ToTokens, what: &str) -> syn::Error {
        syn::Error::new_spanned(tokens, format!("{what}; {}", self.form))
    }
}

/// A type as an author would write it: `Vec<u8>`, not `Vec < u8 >`.
fn type_text(ty: &Type) -> String {
    let text = ty.to_token_stream().to_string();
    [
        (" < ", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" :: ", "::"),
        (":: ", "::"),
        (" ,", ","),
        ("& ", "&"),
    ]
    .iter()
    .fold(text, |t, (from, to)| t.replace(from, to))
}

/// `()`, `Reply`, `Result<()>` or `Result<Reply>` (the SDK's `Result`, of one argument,
/// named `Result` or through `krate`), by the paths as written: a return type that the
/// handler can declare as it is. Any other is declared as `impl IntoReply`, so that a
/// type that is not a reply is one error on the handler, and the dispatch relies on the
/// declaration.
pub fn is_usual_reply(ty: &Type, krate: &CratePath) -> bool {
    fn path(ty: &Type) -> Option<&syn::Path> {
        match ty {
            Type::Path(p) if p.qself.is_none() => Some(&p.path),
            _ => None,
        }
    }
    let unit = |ty: &Type| matches!(ty, Type::Tuple(t) if t.elems.is_empty());
    let reply = |ty: &Type| {
        path(ty)
            .and_then(|p| p.segments.last())
            .is_some_and(|s| s.ident == "Reply" && s.arguments.is_none())
    };
    if unit(ty) || reply(ty) {
        return true;
    }
    let Some(path) = path(ty) else {
        return false;
    };
    let mut segments = path.segments.iter().rev();
    let Some(result) = segments.next().filter(|s| s.ident == "Result") else {
        return false;
    };
    // `Result<..>`, `tiny_sdk::Result<..>`, `sdk::Result<..>`: not another crate's.
    let sdk = krate.0.segments.last().map(|s| &s.ident);
    let ours = match segments.next() {
        None => true,
        Some(s) => s.ident == "tiny_sdk" || sdk == Some(&s.ident),
    };
    match &result.arguments {
        syn::PathArguments::AngleBracketed(args) if ours && args.args.len() == 1 => match args.args.first() {
            Some(syn::GenericArgument::Type(t)) => unit(t) || reply(t),
            _ => false,
        },
        _ => false,
    }
}

/// `&Ctx<..>`, by the last segment of the path: the parameter the handler gets `ctx` in.
fn is_ctx(ty: &Type) -> bool {
    match ty {
        Type::Reference(r) => match &*r.elem {
            Type::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "Ctx"),
            _ => false,
        },
        _ => false,
    }
}

fn read_handler(f: ImplItemFn, errors: &mut Vec<syn::Error>) -> Item {
    let ImplItemFn {
        attrs, vis, sig, block, ..
    } = f;
    let marker_args = attrs.iter().filter(|a| is_marker(a)).find_map(|a| match &a.meta {
        Meta::Path(_) => None,
        other => Some(other.clone()),
    });
    if let Some(meta) = marker_args {
        errors.push(syn::Error::new_spanned(meta, "`#[handler]` takes no arguments"));
    }
    let attrs: Vec<Attribute> = attrs.into_iter().filter(|a| !is_marker(a)).collect();

    // A plain `fn` that returns its own future (`-> impl Future<..>`) is a handler
    // written by hand: the derive checks it where it calls it.
    if sig.asyncness.is_none() && matches!(&sig.output, ReturnType::Type(_, ty) if matches!(**ty, Type::ImplTrait(_))) {
        return Item::Kept(Box::new(ImplItem::Fn(ImplItemFn {
            attrs,
            vis,
            modifiers: FnModifiers::default(),
            sig,
            block,
        })));
    }

    let Params {
        receiver,
        ctx,
        msg,
        order,
        extra,
    } = parameters(sig.inputs);
    let expected = Expected::new(
        &sig.ident,
        msg.as_ref().map(|m| match &*m.ty {
            Type::Reference(r) => &*r.elem,
            ty => ty,
        }),
    );
    let mut keeps_body = true;

    if sig.asyncness.is_none() {
        errors.push(expected.error(sig.fn_token, "a port handler is an `async fn`"));
    }
    let type_params = sig
        .generics
        .params
        .iter()
        .filter(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
        .collect::<Punctuated<_, Token![,]>>();
    if !type_params.is_empty() {
        errors.push(expected.error(
            &type_params,
            "a port handler has no type parameters: the dispatch calls it with the port's message type",
        ));
        keeps_body = false;
    }
    let parens = sig.paren_token.span.join();
    let receiver = checked_receiver(receiver, ctx.as_ref(), msg.as_ref(), &expected, parens, errors);

    keeps_body &= report_order(
        order,
        ctx.as_ref(),
        msg.as_ref(),
        receiver.is_some(),
        &expected,
        parens,
        errors,
    );
    for p in &extra {
        errors.push(expected.error(
            p,
            "a port handler takes `ctx` and the message, nothing more: remove this parameter",
        ));
        keeps_body = false;
    }

    let msg = msg.and_then(|m| {
        let PatType { pat, ty, .. } = m;
        match *ty {
            Type::Reference(r) if r.mutability.is_some() => {
                errors.push(expected.error(
                    &r,
                    "a port handler takes its message as `msg: T` (owned) or `msg: &T` (lent), not `&mut T`",
                ));
                keeps_body = false;
                None
            }
            Type::Reference(r) => Some(MsgParam {
                pat: *pat,
                ty: *r.elem,
                lent: true,
            }),
            ty => Some(MsgParam {
                pat: *pat,
                ty,
                lent: false,
            }),
        }
    });

    let mut generics = sig.generics;
    generics.params = generics
        .params
        .into_iter()
        .filter(|p| matches!(p, syn::GenericParam::Lifetime(_)))
        .collect();
    let output = match sig.output {
        ReturnType::Default => None,
        ReturnType::Type(_, ty) => Some(*ty),
    };
    Item::Handler(Box::new(Handler {
        attrs,
        vis,
        span: sig.ident.span(),
        async_span: sig.asyncness.map_or(sig.fn_token.span, |a| a.span),
        fn_span: sig.fn_token.span,
        ident: sig.ident,
        generics,
        receiver,
        ctx,
        msg,
        output,
        body: keeps_body.then_some(block),
    }))
}

/// The parameters of a handler as written.
struct Params {
    receiver: Option<Receiver>,
    /// The one whose type is `&Ctx<..>`.
    ctx: Option<PatType>,
    /// The other one.
    msg: Option<PatType>,
    order: Order,
    /// Any beyond the two.
    extra: Vec<PatType>,
}

/// Which of a handler's parameters is `ctx` (by its type) and which the message, in
/// what order, and any beyond them.
fn parameters(inputs: Punctuated<FnArg, Token![,]>) -> Params {
    let mut inputs = inputs.into_iter().peekable();
    let receiver = match inputs.peek() {
        Some(FnArg::Receiver(_)) => match inputs.next() {
            Some(FnArg::Receiver(r)) => Some(r),
            _ => None,
        },
        _ => None,
    };
    let params: Vec<PatType> = inputs
        .filter_map(|a| match a {
            FnArg::Typed(t) => Some(t),
            FnArg::Receiver(_) => None,
        })
        .collect();

    // Which parameter is which: `ctx` by its type, the message is the other one.
    let mut params = params.into_iter();
    let (first, second) = (params.next(), params.next());
    let extra: Vec<PatType> = params.collect();
    let (ctx, msg, order) = match (first, second) {
        (None, _) => (None, None, Order::Neither),
        (Some(a), None) if is_ctx(&a.ty) => (Some(a), None, Order::NoMsg),
        (Some(a), None) => (None, Some(a), Order::NoCtx),
        (Some(a), Some(b)) => match (is_ctx(&a.ty), is_ctx(&b.ty)) {
            (true, false) => (Some(a), Some(b), Order::Right),
            (false, true) => (Some(b), Some(a), Order::Swapped),
            (true, true) => (Some(a), None, Order::CtxTwice(b)),
            (false, false) => (None, Some(b), Order::NotCtx(a)),
        },
    };
    Params {
        receiver,
        ctx,
        msg,
        order,
        extra,
    }
}

/// The receiver, if it is `&self`; what else was written is reported.
fn checked_receiver(
    receiver: Option<Receiver>,
    ctx: Option<&PatType>,
    msg: Option<&PatType>,
    expected: &Expected,
    parens: Span,
    errors: &mut Vec<syn::Error>,
) -> Option<Receiver> {
    match receiver {
        Some(r) => match &r.kind {
            ReceiverKind::Reference(_, _, None) => Some(r),
            ReceiverKind::Reference(_, _, Some(_)) => {
                errors.push(expected.error(
                    &r,
                    "a port handler takes `&self`, not `&mut self`: the engine may run several messages through one component at once, so keep what changes behind a `Mutex` or an atomic",
                ));
                None
            }
            _ => {
                errors.push(expected.error(&r, "a port handler takes `&self`"));
                None
            }
        },
        None => {
            let what = "a port handler is a method: it takes `&self` first";
            match ctx
                .map(ToTokens::to_token_stream)
                .or_else(|| msg.map(ToTokens::to_token_stream))
            {
                Some(first) => errors.push(expected.error(first, what)),
                None => errors.push(syn::Error::new(parens, format!("{what}; {}", expected.form()))),
            }
            None
        }
    }
}

/// Reports a handler's parameters written out of order, or missing; `false` when its
/// body cannot be kept (the message is not where the body expects it).
fn report_order(
    order: Order,
    ctx: Option<&PatType>,
    msg: Option<&PatType>,
    has_receiver: bool,
    expected: &Expected,
    parens: Span,
    errors: &mut Vec<syn::Error>,
) -> bool {
    let mut keeps_body = true;
    match order {
        Order::Right => {}
        Order::Swapped => {
            if let (Some(c), Some(m)) = (ctx, msg) {
                errors.push(expected.error(
                    quote::quote!(#m, #c),
                    "the parameters of this handler are swapped: `ctx` comes first, then the message",
                ));
            }
        }
        Order::NoCtx => {
            if let Some(m) = msg {
                errors.push(expected.error(
                    m,
                    "this handler has no `ctx` parameter: add `ctx: &Ctx<Self>` before the message (`_ctx` if the handler does not use it)",
                ));
            }
        }
        Order::NoMsg => {
            if let Some(c) = ctx {
                errors.push(expected.error(
                    c,
                    "this handler has no message parameter: add `msg: T` after `ctx`, where `T` is the port's message type",
                ));
            }
        }
        Order::Neither => {
            if has_receiver {
                errors.push(syn::Error::new(
                    parens,
                    format!("this handler takes neither `ctx` nor the message; {}", expected.form()),
                ));
            }
        }
        Order::CtxTwice(b) => {
            errors.push(expected.error(&b, "expected the message here, after `ctx`"));
            keeps_body = false;
        }
        Order::NotCtx(a) => {
            errors.push(expected.error(&a, "expected `ctx: &Ctx<Self>` here, after `&self`"));
            keeps_body = false;
        }
    }
    keeps_body
}

/// How the parameters after `&self` were written.
enum Order {
    /// `ctx`, then the message.
    Right,
    /// The message, then `ctx`.
    Swapped,
    /// Only the message.
    NoCtx,
    /// Only `ctx`.
    NoMsg,
    /// Neither.
    Neither,
    /// `ctx`, then another `&Ctx<..>` where the message belongs.
    CtxTwice(PatType),
    /// Something else where `ctx` belongs, then the message.
    NotCtx(PatType),
}

#[cfg(test)]
mod tests {
    use syn::parse_quote;

    use super::{CratePath, is_usual_reply};

    #[test]
    fn usual_replies() {
        let sdk = CratePath(parse_quote!(sdk));
        for ty in [
            parse_quote!(()),
            parse_quote!(Reply),
            parse_quote!(tiny_sdk::Reply),
            parse_quote!(Result<()>),
            parse_quote!(Result<Reply>),
            parse_quote!(tiny_sdk::Result<Reply>),
            parse_quote!(sdk::Result<()>),
        ] {
            assert!(is_usual_reply(&ty, &sdk), "{}", quote::quote!(#ty));
        }
        for ty in [
            parse_quote!(i32),
            parse_quote!(Result<i32>),
            parse_quote!(Result<Reply, MyError>),
            parse_quote!(anyhow::Result<Reply>),
            parse_quote!(std::result::Result<Reply, Error>),
            parse_quote!(Option<Reply>),
            parse_quote!(HandlerResult),
        ] {
            assert!(!is_usual_reply(&ty, &sdk), "{}", quote::quote!(#ty));
        }
    }
}

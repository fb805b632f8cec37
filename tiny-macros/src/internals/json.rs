//! JSON literals written in attributes: `default = 5`, `enum("a", "b")`,
//! `required_when("mode", "===", "advanced")`.

use darling::{Error, FromMeta, Result};
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote_spanned};
use syn::{Expr, ExprLit, Lit, Meta, Token, UnOp, punctuated::Punctuated, spanned::Spanned};

/// A JSON value written as a Rust literal.
#[derive(Debug, Clone)]
pub enum Json {
    Null(Span),
    Bool(bool, Span),
    Number(String, Span),
    String(String, Span),
    Array(Vec<Json>, Span),
}

impl Json {
    pub fn span(&self) -> Span {
        match self {
            Json::Null(s) | Json::Bool(_, s) | Json::Number(_, s) | Json::String(_, s) | Json::Array(_, s) => *s,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s, _) => Some(s),
            _ => None,
        }
    }

    fn from_lit(lit: &Lit) -> Result<Json> {
        Ok(match lit {
            Lit::Str(s) => Json::String(s.value(), s.span()),
            Lit::Int(i) => Json::Number(i.base10_digits().to_owned(), i.span()),
            Lit::Float(f) => Json::Number(f.base10_digits().to_owned(), f.span()),
            Lit::Bool(b) => Json::Bool(b.value, b.span),
            other => {
                return Err(
                    Error::custom("expected a JSON value: a string, number, bool, `null` or `[...]`").with_span(other),
                );
            }
        })
    }
}

impl FromMeta for Json {
    fn from_expr(expr: &Expr) -> Result<Self> {
        match expr {
            Expr::Lit(ExprLit { lit, .. }) => Json::from_lit(lit),
            Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => match Json::from_expr(&u.expr)? {
                Json::Number(n, _) => Ok(Json::Number(format!("-{n}"), expr.span())),
                _ => Err(Error::custom("only numbers can be negative").with_span(expr)),
            },
            Expr::Array(a) => Ok(Json::Array(
                a.elems.iter().map(Json::from_expr).collect::<Result<_>>()?,
                a.span(),
            )),
            Expr::Path(p) if p.path.is_ident("null") => Ok(Json::Null(p.span())),
            Expr::Group(g) => Json::from_expr(&g.expr),
            other => {
                Err(Error::custom("expected a JSON value: a string, number, bool, `null` or `[...]`").with_span(other))
            }
        }
    }
}

/// Emits JSON syntax for schemars' `extend("key" = <json>)`.
impl ToTokens for Json {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.extend(match self {
            Json::Null(s) => quote_spanned!(*s=> null),
            Json::Bool(b, s) => quote_spanned!(*s=> #b),
            Json::Number(n, s) => {
                let lit: TokenStream = n.parse().unwrap_or_else(|_| quote_spanned!(*s=> null));
                lit
            }
            Json::String(v, s) => {
                let lit = syn::LitStr::new(v, *s);
                quote_spanned!(*s=> #lit)
            }
            Json::Array(items, s) => quote_spanned!(*s=> [#(#items),*]),
        });
    }
}

/// A parenthesised list of JSON values: `enum("a", "b")`.
#[derive(Debug, Clone)]
pub struct JsonList(pub Vec<Json>, pub Span);

impl FromMeta for JsonList {
    fn from_meta(meta: &Meta) -> Result<Self> {
        match meta {
            Meta::List(list) => {
                let exprs = list
                    .parse_args_with(Punctuated::<Expr, Token![,]>::parse_terminated)
                    .map_err(Error::from)?;
                let items = exprs.iter().map(Json::from_expr).collect::<Result<Vec<_>>>()?;
                Ok(JsonList(items, list.span()))
            }
            Meta::NameValue(nv) => match Json::from_expr(&nv.value)? {
                Json::Array(items, span) => Ok(JsonList(items, span)),
                other => Err(
                    Error::custom("expected a list: `key(\"a\", \"b\")` or `key = [\"a\", \"b\"]`")
                        .with_span(&other.span()),
                ),
            },
            Meta::Path(p) => Err(Error::custom("expected a list of values in parentheses").with_span(p)),
        }
    }
}

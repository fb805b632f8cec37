//! The syntax tree of one expression.

use regex::Regex;
use serde_json::Value;

use crate::functions::Func;
use crate::path::Path;

/// A binary operator that evaluates both operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
}

impl BinOp {
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Pow => "**",
        }
    }
}

/// A prefix operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnOp {
    /// `-x`
    Neg,
    /// `!x`
    Not,
}

/// The right side of `=~`.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    /// A string literal, compiled once.
    Fixed(Regex),
    /// Anything else, compiled when evaluated.
    Dynamic(Box<Node>),
}

/// An expression node.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Literal(Value),
    Path(Box<Path>),
    /// `[a, b, ...]` with at least one non-literal element.
    Array(Vec<Node>),
    Unary(UnOp, Box<Node>),
    Binary(BinOp, Box<Node>, Box<Node>),
    /// `a && b` (short-circuit, yields a boolean)
    And(Box<Node>, Box<Node>),
    /// `a || b` (short-circuit, yields a boolean)
    Or(Box<Node>, Box<Node>),
    /// `a ?? b`
    Coalesce(Box<Node>, Box<Node>),
    /// `a =~ pattern`
    Match(Box<Node>, Pattern),
    /// `c ? a : b`
    Cond(Box<Node>, Box<Node>, Box<Node>),
    Call(Func, Vec<Node>),
}

impl Node {
    /// Adds to `keys` the top-level fields of `$` this expression reads; `false` when
    /// it may read more than named fields (see [`Path::root_key`]).
    pub(crate) fn root_keys<'a>(&'a self, keys: &mut Vec<&'a str>) -> bool {
        match self {
            Node::Literal(_) => true,
            Node::Path(p) => match p.root_key() {
                Some(k) => {
                    if !keys.contains(&k) {
                        keys.push(k);
                    }
                    true
                }
                None => false,
            },
            // `root(x)` and `parent($.a)` give back the message itself.
            Node::Call(func, _) if func.reads_place() => false,
            Node::Array(items) | Node::Call(_, items) => items.iter().all(|n| n.root_keys(keys)),
            Node::Unary(_, x) => x.root_keys(keys),
            Node::Binary(_, l, r) | Node::And(l, r) | Node::Or(l, r) | Node::Coalesce(l, r) => {
                l.root_keys(keys) && r.root_keys(keys)
            }
            Node::Match(l, pattern) => {
                l.root_keys(keys)
                    && match pattern {
                        Pattern::Fixed(_) => true,
                        Pattern::Dynamic(p) => p.root_keys(keys),
                    }
            }
            Node::Cond(c, a, b) => c.root_keys(keys) && a.root_keys(keys) && b.root_keys(keys),
        }
    }
}

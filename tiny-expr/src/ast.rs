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

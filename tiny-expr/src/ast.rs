//! The syntax tree of one expression.

use regex::Regex;
use serde_json::Value;

use crate::functions::Func;
use crate::path::{Path, Step};

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
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`.
    pub(crate) fn compares(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

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

/// One step of a [`Node::Chain`]: an operator and its right side.
#[derive(Debug, Clone)]
pub(crate) enum Link {
    /// `op right`
    Op(BinOp, Node),
    /// `=~ pattern`
    Match(Pattern),
}

/// An expression node.
///
/// The operators of one left-associative level are a list ([`Node::Chain`],
/// [`Node::All`], [`Node::Any`]), not a left-deep tree: with nesting limited by the parser,
/// the tree stays shallow however long an expression is, so neither evaluating nor dropping
/// it can run out of stack.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    Literal(Value),
    Path(Box<Path>),
    /// `[a, b, ...]` with at least one non-literal element.
    Array(Vec<Node>),
    Unary(UnOp, Box<Node>),
    /// `a ** b`, the one right-associative binary operator.
    Binary(BinOp, Box<Node>, Box<Node>),
    /// `a op b op c ...` for the operators of one level (`==`/`!=`/`=~`, `<`..`>=`,
    /// `+`/`-`, `*`/`/`/`%`), applied left to right.
    Chain(Box<Node>, Vec<Link>),
    /// `a && b && ...` (short-circuit, yields a boolean)
    All(Vec<Node>),
    /// `a || b || ...` (short-circuit, yields a boolean)
    Any(Vec<Node>),
    /// `a ?? b`
    Coalesce(Box<Node>, Box<Node>),
    /// `c ? a : b`
    Cond(Box<Node>, Box<Node>, Box<Node>),
    Call(Func, Vec<Node>),
}

impl Node {
    /// Adds to `paths` the steps of every path this expression reads; `false` when one
    /// may read more than what its steps name (a query, `$`, `root()`, `parent()`).
    pub(crate) fn read_paths<'a>(&'a self, paths: &mut Vec<&'a [Step]>) -> bool {
        match self {
            Node::Literal(_) => true,
            Node::Path(p) => p.named_steps().map(|steps| paths.push(steps)).is_some(),
            Node::Call(func, _) if func.reads_place() => false,
            Node::Array(items) | Node::Call(_, items) | Node::All(items) | Node::Any(items) => {
                items.iter().all(|n| n.read_paths(paths))
            }
            Node::Unary(_, x) => x.read_paths(paths),
            Node::Binary(_, l, r) | Node::Coalesce(l, r) => l.read_paths(paths) && r.read_paths(paths),
            Node::Chain(first, links) => {
                first.read_paths(paths)
                    && links.iter().all(|link| match link {
                        Link::Op(_, r) => r.read_paths(paths),
                        Link::Match(Pattern::Fixed(_)) => true,
                        Link::Match(Pattern::Dynamic(p)) => p.read_paths(paths),
                    })
            }
            Node::Cond(c, a, b) => c.read_paths(paths) && a.read_paths(paths) && b.read_paths(paths),
        }
    }
}

//! `key(x)`, `parent(x)` and `root(x)`: where a value sits in the message.
//!
//! In the Go SDK's evaluator (ajson) every value read from the message knows its parent.
//! Values here do not, so these functions look at how their argument is written: a path
//! is selected keeping the node it ends at and that node's holder. A conditional
//! (`c ? a : b`) or `a ?? b` passes this through from the side it picks. Any other
//! argument (a literal, arithmetic, a function's result) is a value of its own: it has no
//! key and no parent, and is its own root, as a literal is in Go.

use std::borrow::Cow;

use serde_json::Value;

use crate::ast::Node;
use crate::error::{Fault, FaultKind};
use crate::functions::Func;
use crate::path::Place;

type Out<'a> = Result<Cow<'a, Value>, Fault>;

/// The evaluator a place's argument falls back to (a conditional's test, a value of
/// its own): passed in by the evaluator that calls [`call`], so that this file does
/// not import it back.
pub(crate) struct Evaluator {
    /// Evaluates a node.
    pub eval: for<'a> fn(&'a Node, &'a Value) -> Out<'a>,
    /// Whether a node is true.
    pub holds_truth: fn(&Node, &Value) -> Result<bool, Fault>,
}

/// Evaluates `func(arg)` for `key`, `parent` or `root`, with `root` as `$`.
pub(crate) fn call<'a>(func: Func, arg: &'a Node, root: &'a Value, with: &Evaluator) -> Out<'a> {
    let place = locate(arg, root, with)?;
    Ok(match (func, place) {
        (
            Func::Key,
            Place::Node {
                holder: Some((_, Some(key))),
                ..
            },
        ) => Cow::Owned(Value::String(key.to_owned())),
        (
            Func::Parent,
            Place::Node {
                holder: Some((holder, _)),
                ..
            },
        ) => Cow::Borrowed(holder),
        (Func::Root, Place::Node { .. }) => Cow::Borrowed(root),
        (Func::Root, Place::Detached(v)) => v,
        _ => Cow::Owned(Value::Null),
    })
}

fn locate<'a>(node: &'a Node, root: &'a Value, with: &Evaluator) -> Result<Place<'a>, Fault> {
    match node {
        Node::Path(p) => p.locate(root),
        Node::Cond(c, a, b) => {
            if (with.holds_truth)(c, root)? {
                locate(a, root, with)
            } else {
                locate(b, root, with)
            }
        }
        Node::Coalesce(l, r) => match locate(l, root, with) {
            Ok(Place::Node { value, .. }) if value.is_null() => locate(r, root, with),
            Ok(Place::Detached(v)) if v.is_null() => locate(r, root, with),
            Err(f) if f.kind == FaultKind::NoMatch => locate(r, root, with),
            other => other,
        },
        other => (with.eval)(other, root).map(Place::Detached),
    }
}

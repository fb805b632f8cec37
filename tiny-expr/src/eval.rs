//! Evaluates a syntax tree against a message.
//!
//! Results are `Cow`s: a path result borrows from the message and a literal from the tree,
//! so nothing is copied until a value has to be built or returned.

use std::borrow::Cow;
use std::cmp::Ordering;

use regex::Regex;
use serde_json::Value;

use crate::ast::{BinOp, Link, Node, Pattern, UnOp};
use crate::error::{Fault, FaultKind};
use crate::functions::{MAX_ARGS, NULL};
use crate::limits::{cached_regex, charge, charge_copy};
use crate::value::{Num, equal, float, to_text, truthy, type_name, write_text};

type Out<'a> = Result<Cow<'a, Value>, Fault>;

/// This evaluator, for `key()`, `parent()` and `root()` to fall back to.
const EVALUATOR: crate::place::Evaluator = crate::place::Evaluator { eval, holds_truth };

/// Evaluates `node` with `root` as `$`.
pub(crate) fn eval<'a>(node: &'a Node, root: &'a Value) -> Out<'a> {
    match node {
        Node::Literal(v) => Ok(Cow::Borrowed(v)),
        Node::Path(p) => p.select(root),
        Node::Array(items) => items
            .iter()
            .map(|item| owned(eval(item, root)?))
            .collect::<Result<Vec<_>, _>>()
            .map(|v| Cow::Owned(Value::Array(v))),
        Node::Unary(UnOp::Not, x) => Ok(Cow::Owned(Value::Bool(!holds_truth(x, root)?))),
        Node::Unary(op, x) => unary(*op, &*eval(x, root)?).map(Cow::Owned),
        Node::Binary(op, l, r) => {
            let l = eval(l, root)?;
            let r = eval(r, root)?;
            binary(*op, &l, &r).map(Cow::Owned)
        }
        Node::Chain(first, links) => chain(first, links, root),
        Node::All(items) => {
            for item in items {
                if !holds_truth(item, root)? {
                    return Ok(Cow::Owned(Value::Bool(false)));
                }
            }
            Ok(Cow::Owned(Value::Bool(true)))
        }
        Node::Any(items) => {
            for item in items {
                if holds_truth(item, root)? {
                    return Ok(Cow::Owned(Value::Bool(true)));
                }
            }
            Ok(Cow::Owned(Value::Bool(false)))
        }
        Node::Coalesce(l, r) => match eval(l, root) {
            Ok(v) if !v.is_null() => Ok(v),
            Ok(_) => eval(r, root),
            Err(f) if f.kind == FaultKind::NoMatch => eval(r, root),
            Err(f) => Err(f),
        },
        Node::Cond(c, a, b) => {
            if holds_truth(c, root)? {
                eval(a, root)
            } else {
                eval(b, root)
            }
        }
        Node::Call(func, args) => {
            if let (true, [arg]) = (func.reads_place(), args.as_slice()) {
                return crate::place::call(*func, arg, root, &EVALUATOR);
            }
            if !func.evaluates_args() {
                return func.call(&mut []);
            }
            let mut slots: [Cow<'a, Value>; MAX_ARGS] =
                [Cow::Borrowed(&NULL), Cow::Borrowed(&NULL), Cow::Borrowed(&NULL)];
            for (slot, arg) in slots.iter_mut().zip(args) {
                *slot = match eval(arg, root) {
                    Ok(v) => v,
                    Err(f) if f.kind == FaultKind::NoMatch => {
                        return func.of_missing().map(Cow::Owned).ok_or(f);
                    }
                    Err(f) => return Err(f),
                };
            }
            let n = args.len().min(MAX_ARGS);
            func.call(&mut slots[..n])
        }
    }
}

/// Applies a [`Node::Chain`] left to right, as the left-deep tree of its operators would
/// be: a comparison with a missing side is false, anything else needs both sides.
fn chain<'a>(first: &'a Node, links: &'a [Link], root: &'a Value) -> Out<'a> {
    let mut acc = eval(first, root);
    for link in links {
        acc = match link {
            Link::Op(op, r) if op.compares() => {
                let l = match acc {
                    Ok(v) => Some(v),
                    Err(f) if f.kind == FaultKind::NoMatch => None,
                    Err(f) => return Err(f),
                };
                match (l, maybe(r, root)?) {
                    (Some(l), Some(r)) => binary(*op, &l, &r).map(Cow::Owned),
                    _ => Ok(Cow::Owned(Value::Bool(false))),
                }
            }
            Link::Op(BinOp::Add, r) => {
                let l = acc?;
                append(l, &*eval(r, root)?)
            }
            Link::Op(op, r) => {
                let l = acc?;
                binary(*op, &l, &*eval(r, root)?).map(Cow::Owned)
            }
            Link::Match(pattern) => {
                let subject = acc?;
                let Value::String(s) = subject.as_ref() else {
                    return Err(Fault::other(format!(
                        "operator '=~' needs a string on the left, got {}",
                        type_name(&subject)
                    )));
                };
                let matched = match pattern {
                    Pattern::Fixed(re) => re.is_match(s),
                    Pattern::Dynamic(p) => dynamic_regex(&*eval(p, root)?)?.is_match(s),
                };
                Ok(Cow::Owned(Value::Bool(matched)))
            }
        };
    }
    acc
}

/// `l + r`, writing onto `l` where it is a string of the chain's own making, so that
/// `a + b + c + ...` builds one string instead of a new one at each step.
fn append<'a>(l: Cow<'a, Value>, r: &Value) -> Out<'a> {
    match l {
        Cow::Owned(Value::String(mut s)) => {
            // Two strings may be a time and a duration.
            if let Value::String(b) = r
                && let Some(t) = crate::timecalc::apply(false, &s, b)
            {
                return Ok(Cow::Owned(Value::String(t)));
            }
            let before = s.len();
            write_text(&mut s, r);
            charge(s.len() - before)?;
            Ok(Cow::Owned(Value::String(s)))
        }
        l => binary(BinOp::Add, &l, r).map(Cow::Owned),
    }
}

/// A value the result will own: a copy of what is borrowed from the message or the tree,
/// charged to the render's budget.
pub(crate) fn owned(v: Cow<'_, Value>) -> Result<Value, Fault> {
    match v {
        Cow::Borrowed(v) => {
            charge_copy(v)?;
            Ok(v.clone())
        }
        Cow::Owned(v) => Ok(v),
    }
}

/// `node`'s value, or `None` when a path in it matched nothing: ajson's missing value,
/// which comparisons, logic, conditions and some functions take as a value of its own.
fn maybe<'a>(node: &'a Node, root: &'a Value) -> Result<Option<Cow<'a, Value>>, Fault> {
    match eval(node, root) {
        Ok(v) => Ok(Some(v)),
        Err(f) if f.kind == FaultKind::NoMatch => Ok(None),
        Err(f) => Err(f),
    }
}

/// Whether `node` is truthy; a missing value is not (ajson's `boolean`).
pub(crate) fn holds_truth(node: &Node, root: &Value) -> Result<bool, Fault> {
    Ok(maybe(node, root)?.is_some_and(|v| truthy(&v)))
}

fn dynamic_regex(pattern: &Value) -> Result<Regex, Fault> {
    let Value::String(p) = pattern else {
        return Err(Fault::other(format!(
            "operator '=~' needs a string (a regular expression) on the right, got {}",
            type_name(pattern)
        )));
    };
    cached_regex(p).map_err(|e| {
        let text = e.to_string();
        let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        Fault::other(format!(
            "invalid regular expression {}: {}",
            Value::String(p.clone()),
            last.trim()
        ))
    })
}

fn unary(op: UnOp, v: &Value) -> Result<Value, Fault> {
    match (op, v) {
        (UnOp::Not, v) => Ok(Value::Bool(!truthy(v))),
        (UnOp::Neg, Value::Number(n)) => match Num::of(n) {
            Num::Int(i) => match i.checked_neg() {
                Some(x) => Ok(Value::from(x)),
                None => float(-Num::Int(i).as_f64()),
            },
            Num::Float(f) => float(-f),
        },
        (UnOp::Neg, other) => Err(Fault::other(format!(
            "operator '-' cannot be applied to {}",
            type_name(other)
        ))),
    }
}

/// Applies an operator that evaluates both sides.
pub(crate) fn binary(op: BinOp, l: &Value, r: &Value) -> Result<Value, Fault> {
    match op {
        BinOp::Eq => Ok(Value::Bool(equal(l, r))),
        BinOp::Ne => Ok(Value::Bool(!equal(l, r))),
        // As ajson: values of two different types are not ordered either way.
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge if std::mem::discriminant(l) != std::mem::discriminant(r) => {
            Ok(Value::Bool(false))
        }
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
            let ord = compare(op, l, r)?;
            Ok(Value::Bool(match op {
                BinOp::Lt => ord == Ordering::Less,
                BinOp::Le => ord != Ordering::Greater,
                BinOp::Gt => ord == Ordering::Greater,
                _ => ord != Ordering::Less,
            }))
        }
        BinOp::Add | BinOp::Sub if l.is_string() && r.is_string() => time_arith(op, l, r),
        BinOp::Add => match (l, r) {
            (Value::Number(a), Value::Number(b)) => arith(op, Num::of(a), Num::of(b)),
            (Value::String(_), _) | (_, Value::String(_)) => {
                let mut s = to_text(l);
                write_text(&mut s, r);
                charge(s.len())?;
                Ok(Value::String(s))
            }
            _ => Err(type_error(op, l, r)),
        },
        _ => match (l, r) {
            (Value::Number(a), Value::Number(b)) => arith(op, Num::of(a), Num::of(b)),
            _ => Err(type_error(op, l, r)),
        },
    }
}

/// `+`/`-` on two strings: the Go SDK's time and duration arithmetic, else `+`
/// concatenates and `-` is an error.
fn time_arith(op: BinOp, l: &Value, r: &Value) -> Result<Value, Fault> {
    let (Value::String(a), Value::String(b)) = (l, r) else {
        return Err(type_error(op, l, r));
    };
    if let Some(s) = crate::timecalc::apply(op == BinOp::Sub, a, b) {
        return Ok(Value::String(s));
    }
    if op == BinOp::Sub {
        return Err(Fault::other(format!(
            "operator '-' on strings needs an RFC 3339 time and a Go duration, or two durations; got {l} and {r}"
        )));
    }
    charge(a.len() + b.len())?;
    Ok(Value::String(format!("{a}{b}")))
}

fn type_error(op: BinOp, l: &Value, r: &Value) -> Fault {
    Fault::other(format!(
        "operator '{}' cannot be applied to {} and {}",
        op.symbol(),
        type_name(l),
        type_name(r)
    ))
}

/// Numbers numerically, strings by code point; two values of another type are an
/// error.
fn compare(op: BinOp, l: &Value, r: &Value) -> Result<Ordering, Fault> {
    match (l, r) {
        (Value::Number(a), Value::Number(b)) => Num::of(a).cmp(Num::of(b)).ok_or_else(|| type_error(op, l, r)),
        (Value::String(a), Value::String(b)) => Ok(a.cmp(b)),
        _ => Err(Fault::other(format!(
            "operator '{}' cannot compare {} and {}",
            op.symbol(),
            type_name(l),
            type_name(r)
        ))),
    }
}

/// Integer arithmetic when both sides are integers and the result is exact; floating
/// point otherwise.
fn arith(op: BinOp, x: Num, y: Num) -> Result<Value, Fault> {
    let zero_divisor = match y {
        Num::Int(b) => b == 0,
        Num::Float(b) => b == 0.0,
    };
    if zero_divisor && matches!(op, BinOp::Div | BinOp::Rem) {
        return Err(Fault::other(format!("operator '{}': division by zero", op.symbol())));
    }
    if let (Num::Int(a), Num::Int(b)) = (x, y) {
        let exact = match op {
            BinOp::Add => a.checked_add(b),
            BinOp::Sub => a.checked_sub(b),
            BinOp::Mul => a.checked_mul(b),
            BinOp::Div => a.checked_rem(b).filter(|r| *r == 0).and_then(|_| a.checked_div(b)),
            BinOp::Rem => a.checked_rem(b),
            BinOp::Pow => u32::try_from(b).ok().and_then(|e| a.checked_pow(e)),
            _ => None,
        };
        if let Some(v) = exact {
            return Ok(Value::from(v));
        }
    }
    let (a, b) = (x.as_f64(), y.as_f64());
    let r = match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => a / b,
        BinOp::Rem => a % b,
        _ => a.powf(b),
    };
    float(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(o: BinOp, l: Value, r: Value) -> Result<Value, String> {
        binary(o, &l, &r).map_err(|f| f.message)
    }

    #[test]
    fn integer_arithmetic_stays_exact() {
        assert_eq!(op(BinOp::Add, json!(i64::MAX - 1), json!(1)), Ok(json!(i64::MAX)));
        assert_eq!(op(BinOp::Div, json!(6), json!(3)), Ok(json!(2)));
        assert_eq!(op(BinOp::Div, json!(7), json!(2)), Ok(json!(3.5)));
        assert_eq!(op(BinOp::Rem, json!(-7), json!(3)), Ok(json!(-1)));
        assert_eq!(op(BinOp::Pow, json!(2), json!(10)), Ok(json!(1024)));
        assert_eq!(op(BinOp::Pow, json!(2), json!(-1)), Ok(json!(0.5)));
        // Overflow falls back to floating point.
        assert_eq!(
            op(BinOp::Mul, json!(i64::MAX), json!(2)),
            Ok(json!(18_446_744_073_709_551_614.0_f64))
        );
        assert_eq!(
            op(BinOp::Div, json!(i64::MIN), json!(-1)),
            Ok(json!(9.223_372_036_854_776e18))
        );
    }

    #[test]
    fn float_division_by_zero_is_an_error() {
        assert_eq!(
            op(BinOp::Div, json!(1.5), json!(0.0)),
            Err("operator '/': division by zero".to_owned())
        );
    }

    #[test]
    fn negation_of_min_int() {
        assert_eq!(
            unary(UnOp::Neg, &json!(i64::MIN)).map_err(|f| f.message),
            Ok(json!(9.223_372_036_854_776e18))
        );
    }
}

//! Built-in functions.
//!
//! Names fold ASCII case, as ajson's do (`SIN(x)` is `sin(x)`). The number of arguments is checked at compile time; the
//! types of arguments when the function runs.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD as BASE64, STANDARD_NO_PAD as BASE64_NO_PAD};
use serde_json::Value;

use crate::error::Fault;
use crate::limits::{charge, charge_copy};
use crate::math::MathFn;
use crate::value::{Num, equal, float, to_text, truthy, type_name};

/// A built-in function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Length,
    Size,
    Upper,
    Lower,
    Trim,
    Split,
    Join,
    Contains,
    Replace,
    Substr,
    String,
    Number,
    Now,
    Rfc3339,
    B64Encode,
    B64Decode,
    Abs,
    Ceil,
    Floor,
    Round,
    Sqrt,
    Pow10,
    First,
    Last,
    Sum,
    Avg,
    HasPrefix,
    HasSuffix,
    Index,
    Not,
    Reverse,
    /// A one-number function of Go's `math` package (`sin`, `log`, `gamma`, ...).
    Math(MathFn),
    Factorial,
    Rand,
    RandInt,
    B64EncodeN,
    /// `key`, `parent` and `root` read where their argument sits in the message; see
    /// [`crate::place`].
    Key,
    Parent,
    Root,
}

/// Name, function, fewest and most arguments.
const TABLE: &[(&str, Func, usize, usize)] = &[
    ("length", Func::Length, 1, 1),
    ("size", Func::Size, 1, 1),
    ("upper", Func::Upper, 1, 1),
    ("lower", Func::Lower, 1, 1),
    ("trim", Func::Trim, 1, 1),
    ("split", Func::Split, 2, 2),
    ("join", Func::Join, 2, 2),
    ("contains", Func::Contains, 2, 2),
    ("replace", Func::Replace, 3, 3),
    ("substr", Func::Substr, 2, 3),
    ("string", Func::String, 1, 1),
    ("number", Func::Number, 1, 1),
    ("now", Func::Now, 0, 1),
    ("RFC3339", Func::Rfc3339, 1, 1),
    ("b64encode", Func::B64Encode, 1, 1),
    ("b64decode", Func::B64Decode, 1, 1),
    ("abs", Func::Abs, 1, 1),
    ("ceil", Func::Ceil, 1, 1),
    ("floor", Func::Floor, 1, 1),
    ("round", Func::Round, 1, 1),
    ("sqrt", Func::Sqrt, 1, 1),
    ("pow10", Func::Pow10, 1, 1),
    ("first", Func::First, 1, 1),
    ("last", Func::Last, 1, 1),
    ("sum", Func::Sum, 1, 1),
    ("avg", Func::Avg, 1, 1),
    ("hasprefix", Func::HasPrefix, 2, 2),
    ("hassuffix", Func::HasSuffix, 2, 2),
    ("index", Func::Index, 2, 2),
    ("not", Func::Not, 1, 1),
    ("reverse", Func::Reverse, 1, 1),
    ("acos", Func::Math(MathFn::Acos), 1, 1),
    ("acosh", Func::Math(MathFn::Acosh), 1, 1),
    ("asin", Func::Math(MathFn::Asin), 1, 1),
    ("asinh", Func::Math(MathFn::Asinh), 1, 1),
    ("atan", Func::Math(MathFn::Atan), 1, 1),
    ("atanh", Func::Math(MathFn::Atanh), 1, 1),
    ("cbrt", Func::Math(MathFn::Cbrt), 1, 1),
    ("cos", Func::Math(MathFn::Cos), 1, 1),
    ("cosh", Func::Math(MathFn::Cosh), 1, 1),
    ("erf", Func::Math(MathFn::Erf), 1, 1),
    ("erfc", Func::Math(MathFn::Erfc), 1, 1),
    ("erfcinv", Func::Math(MathFn::Erfcinv), 1, 1),
    ("erfinv", Func::Math(MathFn::Erfinv), 1, 1),
    ("exp", Func::Math(MathFn::Exp), 1, 1),
    ("exp2", Func::Math(MathFn::Exp2), 1, 1),
    ("expm1", Func::Math(MathFn::Expm1), 1, 1),
    ("gamma", Func::Math(MathFn::Gamma), 1, 1),
    ("j0", Func::Math(MathFn::J0), 1, 1),
    ("j1", Func::Math(MathFn::J1), 1, 1),
    ("log", Func::Math(MathFn::Log), 1, 1),
    ("log10", Func::Math(MathFn::Log10), 1, 1),
    ("log1p", Func::Math(MathFn::Log1p), 1, 1),
    ("log2", Func::Math(MathFn::Log2), 1, 1),
    ("logb", Func::Math(MathFn::Logb), 1, 1),
    ("roundtoeven", Func::Math(MathFn::RoundToEven), 1, 1),
    ("sin", Func::Math(MathFn::Sin), 1, 1),
    ("sinh", Func::Math(MathFn::Sinh), 1, 1),
    ("tan", Func::Math(MathFn::Tan), 1, 1),
    ("tanh", Func::Math(MathFn::Tanh), 1, 1),
    ("trunc", Func::Math(MathFn::Trunc), 1, 1),
    ("y0", Func::Math(MathFn::Y0), 1, 1),
    ("y1", Func::Math(MathFn::Y1), 1, 1),
    ("factorial", Func::Factorial, 1, 1),
    ("rand", Func::Rand, 1, 1),
    ("randint", Func::RandInt, 1, 1),
    ("b64encoden", Func::B64EncodeN, 1, 1),
    ("key", Func::Key, 1, 1),
    ("parent", Func::Parent, 1, 1),
    ("root", Func::Root, 1, 1),
];

/// What one element of an array takes besides its text, for the render's budget.
const PART_BYTES: usize = std::mem::size_of::<Value>();

/// The most arguments any function takes.
pub(crate) const MAX_ARGS: usize = 3;

/// A placeholder for argument slots.
pub(crate) static NULL: Value = Value::Null;

type Out<'a> = Result<Cow<'a, Value>, Fault>;

impl Func {
    /// The function called `name`, if there is one.
    pub(crate) fn lookup(name: &str) -> Option<Func> {
        // ajson folds names to lowercase: `SIN(x)` and `rfc3339(x)` work in Go flows.
        TABLE.iter().find(|e| e.0.eq_ignore_ascii_case(name)).map(|e| e.1)
    }

    fn entry(self) -> (&'static str, usize, usize) {
        TABLE
            .iter()
            .find(|e| e.1 == self)
            .map_or(("?", 0, MAX_ARGS), |e| (e.0, e.2, e.3))
    }

    /// The name as written in expressions.
    pub(crate) fn name(self) -> &'static str {
        self.entry().0
    }

    /// A compile-time message when `n` arguments do not fit.
    pub(crate) fn check_arity(self, n: usize) -> Result<(), String> {
        let (name, min, max) = self.entry();
        if (min..=max).contains(&n) {
            return Ok(());
        }
        let takes = match (min, max) {
            (1, 1) => "1 argument".to_owned(),
            (a, b) if a == b => format!("{a} arguments"),
            (a, b) => format!("{a} or {b} arguments"),
        };
        Err(format!("function '{name}' takes {takes}, got {n}"))
    }

    /// Whether the arguments are evaluated before the call. `now(x)` ignores its argument
    /// (it exists for Go SDK compatibility), so it is not evaluated.
    pub(crate) fn evaluates_args(self) -> bool {
        self != Func::Now
    }

    /// Whether the function reads where its argument sits in the message rather than
    /// only its value (`key`, `parent`, `root`); [`crate::place`] evaluates those.
    pub(crate) fn reads_place(self) -> bool {
        matches!(self, Func::Key | Func::Parent | Func::Root)
    }

    /// What the function gives, as ajson's, when an argument is a path that matched
    /// nothing; `None`: it fails as the path does.
    pub(crate) fn of_missing(self) -> Option<Value> {
        match self {
            Func::Length | Func::Size => Some(Value::from(0)),
            Func::Not => Some(Value::Bool(true)),
            _ => None,
        }
    }

    /// Runs the function. `args` holds exactly the arguments written in the call.
    pub(crate) fn call<'a>(self, args: &mut [Cow<'a, Value>]) -> Out<'a> {
        let a = Args { func: self, args };
        match self {
            Func::Length | Func::Size => length(&a),
            Func::Upper => owned_str(a.str(0)?.to_uppercase()),
            Func::Lower => owned_str(a.str(0)?.to_lowercase()),
            Func::Trim => owned_str(a.str(0)?.trim().to_owned()),
            Func::Split => split(&a),
            Func::Join => join(&a),
            Func::Contains => contains(&a),
            Func::Replace => replace(&a),
            Func::Substr => substr(&a),
            Func::String => match a.args[0] {
                Cow::Borrowed(Value::String(_)) | Cow::Owned(Value::String(_)) => Ok(a.take(0)),
                ref v => owned_str(to_text(v)),
            },
            Func::Number => number(&a),
            Func::Now => Ok(Cow::Owned(Value::from(crate::time::now_seconds()))),
            Func::Rfc3339 => rfc3339(&a),
            Func::B64Encode => owned_str(BASE64.encode(a.str(0)?)),
            Func::B64Decode => b64decode(&a),
            Func::Abs => abs(&a),
            Func::Ceil => rounding(&a, f64::ceil),
            Func::Floor => rounding(&a, f64::floor),
            Func::Round => rounding(&a, f64::round),
            Func::Sqrt => sqrt(&a),
            Func::Pow10 => pow10(&a),
            Func::First => first_last(a, true),
            Func::Last => first_last(a, false),
            Func::Sum => sum(&a).map(Cow::Owned),
            Func::Avg => avg(&a),
            Func::HasPrefix => Ok(bool_value(a.str(0)?.starts_with(a.str(1)?))),
            Func::HasSuffix => Ok(bool_value(a.str(0)?.ends_with(a.str(1)?))),
            Func::Index => index(&a),
            Func::Not => Ok(bool_value(!truthy(&a.args[0]))),
            Func::Reverse => reverse(&a),
            Func::Math(m) => math(&a, m),
            Func::Factorial => factorial(&a),
            Func::Rand => {
                let n = a.num(0)?.as_f64();
                a.finite(n * fastrand::f64())
            }
            Func::RandInt => randint(&a),
            Func::B64EncodeN => owned_str(BASE64_NO_PAD.encode(a.str(0)?)),
            // Reached only for a value with no place in the message (see `crate::place`):
            // it has no key or parent and is its own root.
            Func::Key | Func::Parent => Ok(Cow::Owned(Value::Null)),
            Func::Root => Ok(a.take(0)),
        }
    }
}

/// Typed access to the arguments, with errors that name the function and argument.
struct Args<'r, 'a> {
    func: Func,
    args: &'r mut [Cow<'a, Value>],
}

impl<'a> Args<'_, 'a> {
    fn get(&self, i: usize) -> &Value {
        self.args.get(i).map_or(&NULL, |c| c.as_ref())
    }

    fn take(self, i: usize) -> Cow<'a, Value> {
        match self.args.get_mut(i) {
            Some(slot) => std::mem::replace(slot, Cow::Borrowed(&NULL)),
            None => Cow::Borrowed(&NULL),
        }
    }

    fn wrong(&self, i: usize, expected: &str) -> Fault {
        Fault::other(format!(
            "{}(): argument {} must be {expected}, got {}",
            self.func.name(),
            i + 1,
            type_name(self.get(i))
        ))
    }

    fn fail(&self, message: impl std::fmt::Display) -> Fault {
        Fault::other(format!("{}(): {message}", self.func.name()))
    }

    /// A computed number, or an error naming the argument when it is NaN or infinite.
    fn finite<'x>(&self, f: f64) -> Out<'x> {
        if f.is_finite() {
            return float(f).map(Cow::Owned);
        }
        Err(self.fail(format!("the result for {} is {f}, not a finite number", self.get(0))))
    }

    /// A whole number (Go's `getInteger`): an integer, or a float with no fraction.
    fn whole(&self, i: usize) -> Result<i64, Fault> {
        match self.num(i)? {
            Num::Int(v) => Ok(v),
            // In range and whole, so the cast is exact.
            #[allow(clippy::cast_possible_truncation)]
            Num::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
            Num::Float(_) => Err(self.fail(format!(
                "argument {} must be a whole number, got {}",
                i + 1,
                self.get(i)
            ))),
        }
    }

    fn str(&self, i: usize) -> Result<&str, Fault> {
        self.get(i).as_str().ok_or_else(|| self.wrong(i, "a string"))
    }

    fn num(&self, i: usize) -> Result<Num, Fault> {
        match self.get(i) {
            Value::Number(n) => Ok(Num::of(n)),
            _ => Err(self.wrong(i, "a number")),
        }
    }

    fn array(&self, i: usize) -> Result<&Vec<Value>, Fault> {
        self.get(i).as_array().ok_or_else(|| self.wrong(i, "an array"))
    }

    /// A non-negative whole number, such as a position or a count.
    fn count(&self, i: usize) -> Result<usize, Fault> {
        let n = self.num(i)?;
        let whole = match n {
            Num::Int(v) => usize::try_from(v).ok(),
            Num::Float(f) if f.fract() == 0.0 && f >= 0.0 => {
                // Whole and non-negative; saturating is fine for huge counts.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Some(f as usize)
            }
            Num::Float(_) => None,
        };
        whole.ok_or_else(|| {
            self.fail(format!(
                "argument {} must be a non-negative whole number, got {}",
                i + 1,
                self.get(i)
            ))
        })
    }
}

/// A string the function built, charged to the render's budget.
fn owned_str<'a>(s: String) -> Out<'a> {
    charge(s.len())?;
    Ok(Cow::Owned(Value::String(s)))
}

fn bool_value<'a>(b: bool) -> Cow<'a, Value> {
    Cow::Owned(Value::Bool(b))
}

fn length<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let n = match a.get(0) {
        Value::String(s) => s.chars().count(),
        Value::Array(v) => v.len(),
        Value::Object(m) => m.len(),
        _ => return Err(a.wrong(0, "a string, array or object")),
    };
    Ok(Cow::Owned(Value::from(n)))
}

fn split<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let (s, sep) = (a.str(0)?, a.str(1)?);
    // Charged before it is built: splitting into chars makes a value of each.
    let most = if sep.is_empty() {
        s.chars().count()
    } else {
        s.len() / sep.len() + 1
    };
    charge(s.len().saturating_add(most.saturating_mul(PART_BYTES)))?;
    let parts: Vec<Value> = if sep.is_empty() {
        s.chars().map(|c| Value::String(c.to_string())).collect()
    } else {
        s.split(sep).map(|p| Value::String(p.to_owned())).collect()
    };
    Ok(Cow::Owned(Value::Array(parts)))
}

fn join<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let (items, sep) = (a.array(0)?, a.str(1)?);
    // The separators are charged before they are written: a long one between many items
    // is how a small message asks for a huge string.
    let seps = items.len().saturating_sub(1).saturating_mul(sep.len());
    charge(seps)?;
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        crate::value::write_text(&mut out, item);
    }
    charge(out.len() - seps)?;
    Ok(Cow::Owned(Value::String(out)))
}

/// `replace(s, old, new)`; where `new` is the longer, what the result can take is charged
/// before it is built (`replace($.s, '', $.t)` is |s|·|t| bytes).
fn replace<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let (s, from, to) = (a.str(0)?, a.str(1)?, a.str(2)?);
    if to.len() <= from.len() {
        return owned_str(s.replace(from, to));
    }
    let hits = if from.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(from).count()
    };
    let size = s.len().saturating_add(hits.saturating_mul(to.len() - from.len()));
    charge(size)?;
    Ok(Cow::Owned(Value::String(s.replace(from, to))))
}

fn contains<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let found = match a.get(0) {
        Value::String(s) => s.contains(a.str(1)?),
        Value::Array(items) => items.iter().any(|v| equal(v, a.get(1))),
        Value::Object(map) => map.contains_key(a.str(1)?),
        _ => return Err(a.wrong(0, "a string, array or object")),
    };
    Ok(bool_value(found))
}

fn substr<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let s = a.str(0)?;
    let start = a.count(1)?;
    let len = if a.args.len() > 2 { a.count(2)? } else { usize::MAX };
    owned_str(s.chars().skip(start).take(len).collect())
}

fn number<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let v = match a.get(0) {
        Value::Number(_) => return Ok(a.args[0].clone()),
        Value::Bool(b) => Value::from(u8::from(*b)),
        Value::String(s) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                Value::from(i)
            } else {
                match t.parse::<f64>() {
                    Ok(f) if f.is_finite() && t.bytes().any(|b| b.is_ascii_digit()) => float(f)?,
                    _ => return Err(a.fail(format!("cannot parse {} as a number", a.get(0)))),
                }
            }
        }
        _ => return Err(a.wrong(0, "a string, number or boolean")),
    };
    Ok(Cow::Owned(v))
}

fn rfc3339<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let seconds = match a.num(0)? {
        Num::Int(i) => Some(i),
        // Out-of-range floats saturate and are then rejected by the year check.
        #[allow(clippy::cast_possible_truncation)]
        Num::Float(f) => Some(f.floor() as i64),
    };
    seconds
        .and_then(crate::time::rfc3339)
        .map(|s| Cow::Owned(Value::String(s)))
        .ok_or_else(|| a.fail(format!("{} is outside the years 0000 to 9999", a.get(0))))
}

fn b64decode<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let bytes = BASE64
        .decode(a.str(0)?)
        .map_err(|e| a.fail(format!("invalid base64: {e}")))?;
    String::from_utf8(bytes)
        .map_err(|_| a.fail("decoded bytes are not valid UTF-8"))
        .and_then(owned_str)
}

fn abs<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let v = match a.num(0)? {
        Num::Int(i) => match i.checked_abs() {
            Some(x) => Value::from(x),
            None => float(Num::Int(i).as_f64().abs())?,
        },
        Num::Float(f) => float(f.abs())?,
    };
    Ok(Cow::Owned(v))
}

fn rounding<'a>(a: &Args<'_, 'a>, f: fn(f64) -> f64) -> Out<'a> {
    match a.num(0)? {
        Num::Int(_) => Ok(a.args[0].clone()),
        Num::Float(x) => float(f(x)).map(Cow::Owned),
    }
}

/// A function of Go's `math` package. NaN and infinite results are errors: JSON cannot
/// hold them.
fn math<'a>(a: &Args<'_, 'a>, m: MathFn) -> Out<'a> {
    let n = a.num(0)?;
    if m.keeps_integers() && matches!(n, Num::Int(_)) {
        return Ok(a.args[0].clone());
    }
    a.finite(m.apply(n.as_f64()))
}

/// `n!` for a whole `n >= 0`: exact up to 20!, a double up to 170!.
fn factorial<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let n = a.whole(0)?;
    let n = u64::try_from(n).map_err(|_| a.fail(format!("argument 1 must not be negative, got {n}")))?;
    match crate::math::factorial(n) {
        Some(Ok(exact)) => Ok(Cow::Owned(Value::from(exact))),
        Some(Err(approx)) => float(approx).map(Cow::Owned),
        None => Err(a.fail(format!("{n}! is too large for a number (the largest is 170!)"))),
    }
}

/// A random whole number from 0 up to, not including, `n`.
fn randint<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let n = a.whole(0)?;
    if n <= 0 {
        return Err(a.fail(format!("argument 1 must be at least 1, got {}", a.get(0))));
    }
    Ok(Cow::Owned(Value::from(fastrand::i64(0..n))))
}

fn sqrt<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let x = a.num(0)?.as_f64();
    if x < 0.0 {
        return Err(a.fail(format!("cannot take the square root of {}", a.get(0))));
    }
    float(x.sqrt()).map(Cow::Owned)
}

fn pow10<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let v = match a.num(0)? {
        Num::Int(e @ 0..=18) => Value::from(10i64.pow(u32::try_from(e).unwrap_or(0))),
        n => float(10f64.powf(n.as_f64()))?,
    };
    Ok(Cow::Owned(v))
}

/// `first`/`last`: the element, or null for an empty array.
fn first_last<'a>(a: Args<'_, 'a>, first: bool) -> Out<'a> {
    let len = a.array(0)?.len();
    if len == 0 {
        return Ok(Cow::Owned(Value::Null));
    }
    let i = if first { 0 } else { len - 1 };
    Ok(match a.take(0) {
        Cow::Borrowed(Value::Array(items)) => Cow::Borrowed(&items[i]),
        Cow::Owned(Value::Array(mut items)) => Cow::Owned(items.swap_remove(i)),
        _ => Cow::Owned(Value::Null),
    })
}

fn sum(a: &Args<'_, '_>) -> Result<Value, Fault> {
    let items = a.array(0)?;
    let mut int: Option<i64> = Some(0);
    let mut total = 0.0f64;
    for (i, item) in items.iter().enumerate() {
        let Value::Number(n) = item else {
            return Err(a.fail(format!("element {i} of the array is {}, not a number", type_name(item))));
        };
        let n = Num::of(n);
        total += n.as_f64();
        int = match (int, n) {
            (Some(acc), Num::Int(x)) => acc.checked_add(x),
            _ => None,
        };
    }
    match int {
        Some(i) => Ok(Value::from(i)),
        None => float(total),
    }
}

/// The mean, or 0 for an empty array (as ajson's).
fn avg<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let len = a.array(0)?.len();
    let total = sum(a)?;
    if len == 0 {
        return Ok(Cow::Owned(Value::from(0)));
    }
    let total = total.as_f64().unwrap_or(0.0);
    // Array lengths are far below 2^53.
    #[allow(clippy::cast_precision_loss)]
    float(total / len as f64).map(Cow::Owned)
}

/// Position of `sub` in a string (in chars) or of an element in an array; -1 if absent.
fn index<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let pos = match a.get(0) {
        Value::String(s) => s.find(a.str(1)?).map(|byte| s[..byte].chars().count()),
        Value::Array(items) => items.iter().position(|v| equal(v, a.get(1))),
        _ => return Err(a.wrong(0, "a string or an array")),
    };
    let v = pos.map_or(Value::from(-1), Value::from);
    Ok(Cow::Owned(v))
}

fn reverse<'a>(a: &Args<'_, 'a>) -> Out<'a> {
    let v = match a.get(0) {
        Value::String(s) => return owned_str(s.chars().rev().collect()),
        Value::Array(items) => {
            charge_copy(a.get(0))?;
            Value::Array(items.iter().rev().cloned().collect())
        }
        _ => return Err(a.wrong(0, "a string or an array")),
    };
    Ok(Cow::Owned(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_unique_and_round_trip() {
        for (name, func, min, max) in TABLE {
            assert_eq!(Func::lookup(name), Some(*func));
            assert_eq!(func.name(), *name);
            assert!(min <= max && *max <= MAX_ARGS);
        }
        // Unique ignoring case too, since lookups fold it.
        for (i, a) in TABLE.iter().enumerate() {
            assert!(!TABLE[i + 1..].iter().any(|b| b.0.eq_ignore_ascii_case(a.0)), "{}", a.0);
        }
        assert_eq!(Func::lookup("Upper"), Some(Func::Upper));
        assert_eq!(Func::lookup("rfc3339"), Func::lookup("RFC3339"));
        assert_eq!(Func::lookup("len"), None);
    }

    #[test]
    fn arity_messages() {
        assert_eq!(
            Func::Split.check_arity(1),
            Err("function 'split' takes 2 arguments, got 1".to_owned())
        );
        assert_eq!(
            Func::Substr.check_arity(4),
            Err("function 'substr' takes 2 or 3 arguments, got 4".to_owned())
        );
        assert_eq!(
            Func::Now.check_arity(2),
            Err("function 'now' takes 0 or 1 arguments, got 2".to_owned())
        );
        assert_eq!(Func::Now.check_arity(0), Ok(()));
    }
}

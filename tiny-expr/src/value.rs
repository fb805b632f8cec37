//! What expressions need to know about JSON values: type names, truthiness, equality,
//! numbers and the text form used when a value is interpolated into a string.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Number, Value};

use crate::error::Fault;

/// The JSON type of a value, as named in error messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `false`, `null`, `0`, `""`, `[]` and `{}` are falsy; everything else is truthy (ajson's
/// `boolean`).
pub(crate) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Appends the interpolation form of `v`: strings as they are, numbers in JSON form,
/// `true`/`false`, nothing for null, compact JSON for arrays and objects.
pub(crate) fn write_text(out: &mut String, v: &Value) {
    match v {
        Value::Null => {}
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => out.push_str(s),
        Value::Array(_) | Value::Object(_) => {
            let _ = write!(out, "{v}");
        }
    }
}

/// The interpolation form of `v` as a new string.
pub(crate) fn to_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        _ => {
            let mut out = String::new();
            write_text(&mut out, v);
            out
        }
    }
}

/// A number produced by a computation. Integral results that an `f64` holds exactly
/// become JSON integers, so `{{$.n / 2}}` can fill an integer field; NaN and infinities
/// are errors because JSON cannot hold them.
pub(crate) fn float(f: f64) -> Result<Value, Fault> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if !f.is_finite() {
        return Err(Fault::other(format!("result {f} is not a finite number")));
    }
    if f.fract() == 0.0 && f.abs() <= EXACT {
        // In range and integral, so the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        return Ok(Value::from(f as i64));
    }
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| Fault::other(format!("result {f} is not a finite number")))
}

/// A number operand: exact integer when it is one, else a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub(crate) fn of(n: &Number) -> Num {
        match n.as_i64() {
            Some(i) => Num::Int(i),
            None => Num::Float(n.as_f64().unwrap_or(f64::NAN)),
        }
    }

    pub(crate) fn as_f64(self) -> f64 {
        match self {
            // Precision loss above 2^53 is inherent to mixed int/float arithmetic.
            #[allow(clippy::cast_precision_loss)]
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }

    pub(crate) fn cmp(self, other: Num) -> Option<Ordering> {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }
}

/// Deep equality where numbers compare by value (`1 == 1.0`).
pub(crate) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => Num::of(x).cmp(Num::of(y)) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn truthiness() {
        for v in [
            json!(false),
            json!(null),
            json!(0),
            json!(0.0),
            json!(""),
            json!([]),
            json!({}),
        ] {
            assert!(!truthy(&v), "{v} should be falsy");
        }
        for v in [
            json!(true),
            json!(1),
            json!(-0.5),
            json!("0"),
            json!([0]),
            json!({"a": 0}),
        ] {
            assert!(truthy(&v), "{v} should be truthy");
        }
    }

    #[test]
    fn text_forms() {
        let cases = [
            (json!("a"), "a"),
            (json!(5), "5"),
            (json!(1.5), "1.5"),
            (json!(-3), "-3"),
            (json!(true), "true"),
            (json!(null), ""),
            (json!([1, "a"]), r#"[1,"a"]"#),
            (json!({"b": 1, "a": [null]}), r#"{"b":1,"a":[null]}"#),
        ];
        for (v, want) in cases {
            assert_eq!(to_text(&v), want);
        }
    }

    #[test]
    fn float_results_are_normalized() {
        assert_eq!(float(3.0), Ok(json!(3)));
        assert_eq!(float(-0.0), Ok(json!(0)));
        assert_eq!(float(2.5), Ok(json!(2.5)));
        assert_eq!(float(1e300), Ok(json!(1e300)));
        assert_eq!(
            float(f64::INFINITY).map_err(|f| f.message),
            Err("result inf is not a finite number".to_owned())
        );
    }

    #[test]
    fn deep_equality_compares_numbers_by_value() {
        assert!(equal(&json!(1), &json!(1.0)));
        assert!(equal(&json!({"a": [1, {"b": 2.0}]}), &json!({"a": [1.0, {"b": 2}]})));
        assert!(!equal(&json!([1]), &json!([1, 2])));
        assert!(!equal(&json!({"a": 1}), &json!({"b": 1})));
        assert!(!equal(&json!("1"), &json!(1)));
        assert!(equal(&json!(u64::MAX), &json!(u64::MAX)));
    }
}

//! Whether a literal configuration fits a port's JSON Schema, checked before it runs.
//!
//! The subset of JSON Schema the ports' schemas use: local `$ref`s, `type`, `enum`,
//! `const`, `properties`, `required`, `additionalProperties`, `items`, `anyOf`,
//! `oneOf` and `allOf`. A string holding `{{` is an expression whose result is not
//! known before a message arrives: it fits anything. A field the schema does not name
//! is reported too (a misspelt key is otherwise ignored when the message decodes),
//! unless the schema allows other fields.

use serde_json::{Map, Value};

/// How deep `$ref`s and nesting are followed: a recursive schema ends somewhere.
const MAX_DEPTH: usize = 64;

/// One place where a value does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Misfit {
    /// JSON pointer of the value (`/headers/0/name`; empty for the root).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

/// Every place in `value` that does not fit `root` (a whole schema, whose `$defs` the
/// `$ref`s point into).
pub(crate) fn misfits(root: &Value, value: &Value) -> Vec<Misfit> {
    let mut out = Vec::new();
    let mut pointer = String::new();
    check(root, root, value, &mut pointer, 0, &mut out);
    out
}

fn check(root: &Value, schema: &Value, value: &Value, pointer: &mut String, depth: usize, out: &mut Vec<Misfit>) {
    if depth > MAX_DEPTH || is_expression(value) {
        return;
    }
    let Some(schema) = schema.as_object() else {
        // `true`, or not a schema: anything fits.
        if schema == &Value::Bool(false) {
            miss(out, pointer, "no value is allowed here".to_owned());
        }
        return;
    };
    if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
        // An unresolvable reference says nothing about the value.
        if let Some(referenced) = resolve(root, target) {
            check(root, referenced, value, pointer, depth + 1, out);
        }
    }
    if let Some(types) = schema.get("type")
        && !type_fits(types, value)
    {
        miss(
            out,
            pointer,
            format!("expected {}, found {}", type_names(types), describe(value)),
        );
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.iter().any(|a| same(a, value))
    {
        let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
        miss(out, pointer, format!("{value} is not one of {}", list.join(", ")));
    }
    if let Some(constant) = schema.get("const")
        && !same(constant, value)
    {
        miss(out, pointer, format!("expected {constant}, found {value}"));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array)
            && !branches.is_empty()
            && !branches.iter().any(|b| {
                let mut scratch = Vec::new();
                check(root, b, value, &mut pointer.clone(), depth + 1, &mut scratch);
                scratch.is_empty()
            })
        {
            miss(
                out,
                pointer,
                format!(
                    "{} fits none of the schema's {} alternatives",
                    describe(value),
                    branches.len()
                ),
            );
        }
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for s in all {
            check(root, s, value, pointer, depth + 1, out);
        }
    }
    match value {
        Value::Object(fields) => object(root, schema, fields, pointer, depth, out),
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    let len = pointer.len();
                    push(pointer, &i.to_string());
                    check(root, item, v, pointer, depth + 1, out);
                    pointer.truncate(len);
                }
            }
        }
        _ => {}
    }
}

fn object(
    root: &Value,
    schema: &Map<String, Value>,
    fields: &Map<String, Value>,
    pointer: &mut String,
    depth: usize,
    out: &mut Vec<Misfit>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                let len = pointer.len();
                push(pointer, name);
                miss(out, pointer, "required field is missing".to_owned());
                pointer.truncate(len);
            }
        }
    }
    // Other fields are checked against `additionalProperties`; absent, a field the
    // schema does not name is a mistake only where the schema names some (and has no
    // alternatives that might).
    let others = schema.get("additionalProperties");
    let closed = match others {
        Some(Value::Bool(false)) => true,
        None => {
            properties.is_some_and(|p| !p.is_empty())
                && !["patternProperties", "anyOf", "oneOf", "allOf"]
                    .iter()
                    .any(|k| schema.contains_key(*k))
        }
        Some(_) => false,
    };
    for (name, v) in fields {
        let len = pointer.len();
        push(pointer, name);
        match properties.and_then(|p| p.get(name)) {
            Some(s) => check(root, s, v, pointer, depth + 1, out),
            None if closed => {
                let known: Vec<&str> = properties
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                miss(
                    out,
                    pointer,
                    format!(
                        "`{name}` is not a field here (fields: {})",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                );
            }
            None => {
                if let Some(s) = others.filter(|s| s.is_object()) {
                    check(root, s, v, pointer, depth + 1, out);
                }
            }
        }
        pointer.truncate(len);
    }
}

/// A string holding an expression: its value is known only when a message arrives.
pub(super) fn is_expression(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.contains("{{"))
}

fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix('#')?;
    if path.is_empty() {
        return Some(root);
    }
    root.pointer(path)
}

fn type_fits(types: &Value, value: &Value) -> bool {
    match types {
        Value::String(t) => one_type_fits(t, value),
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).any(|t| one_type_fits(t, value)),
        _ => true,
    }
}

fn one_type_fits(t: &str, value: &Value) -> bool {
    match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0),
        // A type this check does not know is not held against the value.
        _ => true,
    }
}

fn type_names(types: &Value) -> String {
    match types {
        Value::String(t) => article(t),
        Value::Array(ts) => {
            let names: Vec<String> = ts.iter().filter_map(Value::as_str).map(article).collect();
            names.join(" or ")
        }
        other => other.to_string(),
    }
}

fn article(t: &str) -> String {
    match t {
        "object" | "array" | "integer" => format!("an {t}"),
        "null" => "null".to_owned(),
        _ => format!("a {t}"),
    }
}

/// The value's type and, for a scalar, the value itself.
fn describe(value: &Value) -> String {
    match value {
        Value::Object(_) => "an object".to_owned(),
        Value::Array(_) => "an array".to_owned(),
        Value::Null => "null".to_owned(),
        Value::String(_) => format!("the string {value}"),
        Value::Bool(_) => format!("the boolean {value}"),
        Value::Number(_) => format!("the number {value}"),
    }
}

/// JSON equality with numbers compared by value (`1` is `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

fn miss(out: &mut Vec<Misfit>, pointer: &str, message: String) {
    out.push(Misfit {
        pointer: pointer.to_owned(),
        message,
    });
}

/// Appends `token` to a JSON pointer, escaped as RFC 6901 says.
fn push(pointer: &mut String, token: &str) {
    pointer.push('/');
    pointer.push_str(&token.replace('~', "~0").replace('/', "~1"));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pointers(schema: &Value, value: &Value) -> Vec<String> {
        misfits(schema, value).into_iter().map(|m| m.pointer).collect()
    }

    #[test]
    fn types_required_and_unknown_fields_are_found_through_refs() {
        let schema = json!({"$ref": "#/$defs/T", "$defs": {
            "T": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "count": {"type": "integer"},
                "mode": {"enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
                "context": {"$ref": "#/$defs/Context"}
            }},
            "Tag": {"type": "string"},
            "Context": {"configurable": true}
        }});
        assert!(
            misfits(
                &schema,
                &json!({"name": "x", "count": 2.0, "mode": "a", "tags": ["t"], "context": {"any": 1}})
            )
            .is_empty()
        );
        assert_eq!(
            pointers(
                &schema,
                &json!({"count": 1.5, "mode": "c", "tags": ["t", 3], "nmae": "x"})
            ),
            ["/name", "/count", "/mode", "/tags/1", "/nmae"]
        );
        let m = misfits(&schema, &json!({"name": 5}));
        assert_eq!(m[0].message, "expected a string, found the number 5");
        let m = misfits(&schema, &json!({"name": "x", "nmae": 1}));
        assert!(
            m[0].message.starts_with("`nmae` is not a field here (fields: "),
            "{}",
            m[0].message
        );
    }

    #[test]
    fn expressions_fit_anything_and_alternatives_need_one_fit() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "integer"},
            "o": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "free": {"type": "object", "additionalProperties": {"type": "integer"}}
        }});
        assert!(misfits(&schema, &json!({"n": "{{$.n}}", "o": null, "free": {"a": 1}})).is_empty());
        assert!(misfits(&schema, &json!("{{$}}")).is_empty());
        assert_eq!(
            pointers(&schema, &json!({"o": 1, "free": {"a": "x"}})),
            ["/o", "/free/a"]
        );
        assert!(misfits(&json!({"type": ["string", "null"]}), &Value::Null).is_empty());
    }
}

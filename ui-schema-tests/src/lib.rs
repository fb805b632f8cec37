//! The corpus of message shapes whose editor schemas `tests/shapes.rs` snapshots, and
//! [`check`], the structural rules every editor schema must follow.
//!
//! Each module of [`shapes`] is one shape: a root message type (named after the
//! module, in PascalCase) and the types it uses. The snapshots live in
//! `tests/snapshots/`; read them against the rules in `tiny_sdk::schema`.

pub mod shapes;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

/// The editor schema of `T`, after [`check`] has passed on it.
///
/// # Panics
///
/// When the schema breaks one of the rules [`check`] tests.
pub fn editor_schema<T: tiny_sdk::__private::schemars::JsonSchema>() -> Value {
    let schema = tiny_sdk::schema::port_schema::<T>();
    if let Err(problems) = check(&schema) {
        panic!(
            "the editor schema of `{}` breaks the rules:\n  - {}\n{}",
            std::any::type_name::<T>(),
            problems.join("\n  - "),
            serde_json::to_string_pretty(&schema).unwrap_or_default()
        );
    }
    schema
}

/// Checks the rules of the editor's shape that hold for every schema:
///
/// - the top level is exactly `{"$ref": "#/$defs/<Root>", "$defs": {...}}`, and the
///   root definition has path `$`;
/// - every `$ref`, anywhere, points at a definition that exists;
/// - every definition has a string `path` starting with `$`, and no two share one
///   (a definition stands for one position of the message);
/// - every definition is referenced (no orphans);
/// - every property of every object has an integer `propertyOrder` >= 1, and the
///   orders of the siblings are distinct;
/// - `required` only names properties that exist;
/// - no `title` at the top level, and no `$schema` or `definitions` left over.
///
/// Returns the list of problems found.
pub fn check(schema: &Value) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let Some(top) = schema.as_object() else {
        return Err(vec!["the schema is not an object".into()]);
    };
    let keys: BTreeSet<&str> = top.keys().map(String::as_str).collect();
    if keys != BTreeSet::from(["$ref", "$defs"]) {
        problems.push(format!("the top level has keys {keys:?}, not just `$ref` and `$defs`"));
    }
    let defs = match top.get("$defs") {
        Some(Value::Object(defs)) => defs.clone(),
        _ => {
            problems.push("`$defs` is missing or not an object".into());
            Map::new()
        }
    };
    let root_ref = top.get("$ref").and_then(Value::as_str).unwrap_or_default();
    match root_ref.strip_prefix("#/$defs/").and_then(|name| defs.get(name)) {
        Some(root) if root.get("path") == Some(&Value::from("$")) => {}
        Some(_) => problems.push("the root definition's `path` is not `$`".into()),
        None => problems.push(format!("the top-level `$ref` {root_ref:?} does not resolve")),
    }

    let mut referenced = BTreeSet::new();
    if let Some(name) = root_ref.strip_prefix("#/$defs/") {
        referenced.insert(name.to_owned());
    }
    let mut paths = BTreeMap::new();
    for (name, def) in &defs {
        match def.get("path").and_then(Value::as_str) {
            Some(p) if p.starts_with('$') => {
                if let Some(other) = paths.insert(p.to_owned(), name) {
                    problems.push(format!("definitions `{other}` and `{name}` share the path {p:?}"));
                }
            }
            Some(p) => problems.push(format!("definition `{name}` has path {p:?}, not a JSONPath")),
            None => problems.push(format!("definition `{name}` has no `path`")),
        }
        walk(def, &format!("$defs.{name}"), &defs, &mut referenced, &mut problems);
    }
    for name in defs.keys() {
        if !referenced.contains(name) {
            problems.push(format!("definition `{name}` is never referenced"));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

/// Checks one schema node and everything below it.
fn walk(
    node: &Value,
    at: &str,
    defs: &Map<String, Value>,
    referenced: &mut BTreeSet<String>,
    problems: &mut Vec<String>,
) {
    match node {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref") {
                match r.as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
                    Some(name) if defs.contains_key(name) => {
                        referenced.insert(name.to_owned());
                    }
                    _ => problems.push(format!("{at}: `$ref` {r} does not resolve")),
                }
            }
            for stray in ["$schema", "definitions"] {
                if map.contains_key(stray) {
                    problems.push(format!("{at}: stray `{stray}`"));
                }
            }
            if let Some(Value::Object(props)) = map.get("properties") {
                let mut orders = BTreeSet::new();
                for (key, prop) in props {
                    match prop.get("propertyOrder").and_then(Value::as_u64) {
                        Some(n) if n >= 1 => {
                            if !orders.insert(n) {
                                problems.push(format!("{at}.properties.{key}: `propertyOrder` {n} is used twice"));
                            }
                        }
                        _ => problems.push(format!("{at}.properties.{key}: no `propertyOrder`")),
                    }
                    walk(prop, &format!("{at}.properties.{key}"), defs, referenced, problems);
                }
                if let Some(Value::Array(required)) = map.get("required") {
                    for r in required {
                        if !r.as_str().is_some_and(|r| props.contains_key(r)) {
                            problems.push(format!("{at}: `required` names {r}, which is not a property"));
                        }
                    }
                }
            }
            for (key, child) in map {
                if key == "properties" || key == "default" || key == "enum" || key == "const" || key == "examples" {
                    continue;
                }
                walk(child, &format!("{at}.{key}"), defs, referenced, problems);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{at}[{i}]"), defs, referenced, problems);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::check;

    #[test]
    fn check_finds_dangling_refs_and_missing_paths() {
        let bad = json!({
            "$ref": "#/$defs/A",
            "$defs": {
                "A": {"type": "object", "path": "$", "properties": {
                    "b": {"$ref": "#/$defs/B", "propertyOrder": 1},
                    "c": {"type": "string"}
                }, "required": ["d"]},
                "Orphan": {"type": "object"},
                "Twin": {"type": "object", "path": "$"}
            }
        });
        let problems = check(&bad).expect_err("the schema is broken");
        let all = problems.join("\n");
        assert!(all.contains("#/$defs/B\" does not resolve"), "{all}");
        assert!(all.contains("properties.c: no `propertyOrder`"), "{all}");
        assert!(all.contains("`required` names \"d\""), "{all}");
        assert!(all.contains("`Orphan` has no `path`"), "{all}");
        assert!(all.contains("`Orphan` is never referenced"), "{all}");
        assert!(all.contains("`A` and `Twin` share the path \"$\""), "{all}");
    }

    #[test]
    fn check_accepts_a_good_schema() {
        let good = json!({
            "$ref": "#/$defs/A",
            "$defs": {
                "A": {"type": "object", "path": "$", "properties": {
                    "b": {"$ref": "#/$defs/B", "propertyOrder": 1}
                }, "required": ["b"]},
                "B": {"type": "object", "path": "$.b", "properties": {}}
            }
        });
        assert_eq!(check(&good), Ok(()));
    }

    #[test]
    fn check_wants_the_bare_top_level() {
        let titled = json!({"$ref": "#/$defs/A", "title": "A", "$defs": {"A": {"path": "$"}}});
        assert!(check(&titled).is_err());
    }
}

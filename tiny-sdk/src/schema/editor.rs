//! The rewrite from a schemars root schema to the editor's shape.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

/// Keywords a field carries that belong to the field, not to the type behind it.
const EXTRACT_FLAGS: [&str; 2] = ["configurable", "shared"];

/// Rewrites `root` (a schemars root schema with `$defs`) into the editor's shape,
/// naming the root definition `root_name`.
pub fn editor_shape(root_name: &str, root: Value) -> Value {
    let mut root = match root {
        Value::Object(map) => map,
        Value::Bool(true) => Map::new(),
        other => return other,
    };
    let source = match root.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    root.remove("$schema");
    let mut b = Builder { source, out: Map::new(), expanding: Vec::new(), taken: HashSet::new() };
    let name = b.reserve(root_name);
    b.expanding.push((root_name.to_owned(), name.clone()));
    let mut def = b.process(Value::Object(root), "$");
    b.expanding.pop();
    set_path(&mut def, "$");
    b.out.insert(name.clone(), def);
    // The root definition first, then the others in the order they were found.
    let mut defs = Map::new();
    if let Some(root_def) = b.out.remove(&name) {
        defs.insert(name.clone(), root_def);
    }
    defs.extend(b.out);
    json!({ "$ref": format!("#/$defs/{name}"), "$defs": defs })
}

struct Builder {
    /// schemars' definitions, by type name.
    source: Map<String, Value>,
    /// Definitions written so far.
    out: Map<String, Value>,
    /// Named types being expanded: (type name, definition name), to stop recursion.
    expanding: Vec<(String, String)>,
    /// Definition names in use.
    taken: HashSet<String>,
}

impl Builder {
    /// A free definition name based on `wanted`.
    fn reserve(&mut self, wanted: &str) -> String {
        let base = if wanted.is_empty() { "Value" } else { wanted };
        let mut name = base.to_owned();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// Resolves a `$ref` into the referenced schema, with the referring schema's own
    /// keywords laid over it. Returns the type name too.
    fn resolve(&self, schema: &Map<String, Value>) -> Option<(String, Map<String, Value>)> {
        let name = schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?.to_owned();
        let mut merged = match self.source.get(&name) {
            Some(Value::Object(def)) => def.clone(),
            _ => Map::new(),
        };
        for (k, v) in schema {
            if k != "$ref" {
                merged.insert(k.clone(), v.clone());
            }
        }
        Some((name, merged))
    }

    /// Rewrites one schema found at `path`: its properties, items and variants.
    fn process(&mut self, schema: Value, path: &str) -> Value {
        let Value::Object(mut map) = schema else {
            return match schema {
                Value::Bool(true) => json!({}),
                other => other,
            };
        };
        if map.contains_key("$ref") {
            return self.named(map, path, None);
        }
        units_to_enum(&mut map);
        if let Some(Value::Object(props)) = map.remove("properties") {
            let mut out = Map::new();
            for (i, (key, prop)) in props.into_iter().enumerate() {
                let child = child_path(path, &key);
                let mut prop = self.property(prop, &child, &key);
                if let Value::Object(p) = &mut prop {
                    p.insert("propertyOrder".into(), json!(i + 1));
                }
                out.insert(key, prop);
            }
            map.insert("properties".into(), Value::Object(out));
        }
        if let Some(items) = map.remove("items") {
            let items_path = format!("{path}[0]");
            let items = self.items(items, &items_path, path);
            map.insert("items".into(), items);
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(Value::Array(variants)) = map.remove(key) {
                let variants = variants.into_iter().map(|v| self.process(v, path)).collect();
                map.insert(key.into(), Value::Array(variants));
            }
        }
        if let Some(extra) = map.remove("additionalProperties") {
            let extra = match extra {
                Value::Object(_) => self.process(extra, &format!("{path}[*]")),
                other => other,
            };
            map.insert("additionalProperties".into(), extra);
        }
        Value::Object(map)
    }

    /// A `$ref` found outside a property (in a variant, map values...): extracted when
    /// it is more than a primitive, inlined otherwise.
    fn named(&mut self, map: Map<String, Value>, path: &str, def_name: Option<&str>) -> Value {
        let Some((type_name, merged)) = self.resolve(&map) else {
            return Value::Object(map);
        };
        if let Some((_, def)) = self.expanding.iter().find(|(t, _)| *t == type_name) {
            return json!({ "$ref": format!("#/$defs/{def}") });
        }
        if !should_extract(&merged) {
            return self.process(Value::Object(merged), path);
        }
        self.extract(def_name.unwrap_or(&type_name).to_owned(), Some(type_name), merged, path)
    }

    /// Writes `schema` as a definition and returns the `$ref` to it.
    fn extract(&mut self, wanted: String, type_name: Option<String>, schema: Map<String, Value>, path: &str) -> Value {
        let name = self.reserve(&wanted);
        if let Some(t) = &type_name {
            self.expanding.push((t.clone(), name.clone()));
        }
        let mut def = self.process(Value::Object(schema), path);
        if type_name.is_some() {
            self.expanding.pop();
        }
        set_path(&mut def, path);
        self.out.insert(name.clone(), def);
        json!({ "$ref": format!("#/$defs/{name}") })
    }

    /// One property of an object, at `path`, called `key`.
    fn property(&mut self, prop: Value, path: &str, key: &str) -> Value {
        let Value::Object(prop) = prop else {
            // `true` (any value): an untyped property, always its own definition.
            return self.extract(pascal_case(key), None, Map::new(), path);
        };
        let prop = strip_null_branch(prop);
        if let Some((type_name, merged)) = self.resolve(&prop) {
            if let Some((_, def)) = self.expanding.iter().find(|(t, _)| *t == type_name) {
                return json!({ "$ref": format!("#/$defs/{def}") });
            }
            if should_extract(&merged) || has_flag(&prop) {
                return self.extract(type_name.clone(), Some(type_name), merged, path);
            }
            return self.process(Value::Object(merged), path);
        }
        if should_extract(&prop) || has_flag(&prop) {
            return self.extract(pascal_case(key), None, prop, path);
        }
        self.process(Value::Object(prop), path)
    }

    /// Array items: always a definition named after the element type.
    fn items(&mut self, items: Value, path: &str, array_path: &str) -> Value {
        let Value::Object(items) = items else {
            return self.extract(format!("{}Item", pascal_case(last_key(array_path))), None, Map::new(), path);
        };
        if let Some((type_name, merged)) = self.resolve(&items) {
            if let Some((_, def)) = self.expanding.iter().find(|(t, _)| *t == type_name) {
                return json!({ "$ref": format!("#/$defs/{def}") });
            }
            return self.extract(type_name.clone(), Some(type_name), merged, path);
        }
        let name = match items.get("type").and_then(Value::as_str) {
            Some(t @ ("string" | "integer" | "number" | "boolean")) => pascal_case(t),
            _ => format!("{}Item", pascal_case(last_key(array_path))),
        };
        self.extract(name, None, items, path)
    }
}

/// Objects, maps and untyped values get their own definition; primitives, arrays and
/// unit enums stay inline.
fn should_extract(schema: &Map<String, Value>) -> bool {
    if has_flag(schema) {
        return true;
    }
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
        None => !schema.contains_key("enum") && !schema.contains_key("const") && !is_unit_enum(schema),
        _ => false,
    }
}

fn has_flag(schema: &Map<String, Value>) -> bool {
    EXTRACT_FLAGS.iter().any(|f| schema.get(*f) == Some(&Value::Bool(true)))
}

/// `Option<T>` of a named type comes as `anyOf: [T, null]`: keep `T` with the
/// property's own keywords.
fn strip_null_branch(mut prop: Map<String, Value>) -> Map<String, Value> {
    let Some(Value::Array(branches)) = prop.get("anyOf") else {
        return prop;
    };
    if branches.len() != 2 {
        return prop;
    }
    let is_null = |v: &Value| v.get("type") == Some(&json!("null"));
    let keep = match (is_null(&branches[0]), is_null(&branches[1])) {
        (false, true) => branches[0].clone(),
        (true, false) => branches[1].clone(),
        _ => return prop,
    };
    prop.remove("anyOf");
    if let Value::Object(inner) = keep {
        for (k, v) in inner {
            prop.entry(k).or_insert(v);
        }
    }
    prop
}

fn is_unit_enum(schema: &Map<String, Value>) -> bool {
    match schema.get("oneOf") {
        Some(Value::Array(vs)) => !vs.is_empty() && vs.iter().all(|v| unit_variant(v).is_some()),
        _ => false,
    }
}

/// `{"const": "a", "title": "A"}` or `{"enum": ["a"], ...}`: a unit variant's value.
fn unit_variant(v: &Value) -> Option<&Value> {
    let v = v.as_object()?;
    if let Some(c) = v.get("const") {
        return Some(c);
    }
    match v.get("enum") {
        Some(Value::Array(e)) if e.len() == 1 => e.first(),
        _ => None,
    }
}

/// Unit enums whose variants carry docs or titles come from schemars as `oneOf` of
/// constants; the editor wants `enum` and `enumTitles`.
fn units_to_enum(map: &mut Map<String, Value>) {
    if !is_unit_enum(map) {
        return;
    }
    let Some(Value::Array(variants)) = map.remove("oneOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut titles = Vec::new();
    for v in &variants {
        let Some(value) = unit_variant(v) else { continue };
        values.extend(v.get("enum").and_then(Value::as_array).cloned().unwrap_or_else(|| vec![value.clone()]));
        let title = v
            .get("title")
            .or_else(|| v.get("description"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| value.as_str().map_or_else(|| value.to_string(), str::to_owned));
        titles.push(Value::String(title));
    }
    if !map.contains_key("type") && values.iter().all(Value::is_string) {
        map.insert("type".into(), json!("string"));
    }
    map.insert("enum".into(), Value::Array(values));
    map.entry("enumTitles").or_insert(Value::Array(titles));
}

fn set_path(def: &mut Value, path: &str) {
    if let Value::Object(map) = def {
        map.insert("path".into(), json!(path));
    }
}

/// `$.a` + `b` = `$.a.b`; keys that are not identifiers are bracketed.
fn child_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}['{}']", key.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

fn last_key(path: &str) -> &str {
    path.rsplit(['.', '[']).next().unwrap_or(path).trim_end_matches(']').trim_matches('\'')
}

/// `user_name` / `user-name` / `userName` -> `UserName`.
fn pascal_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut upper = true;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.extend(c.to_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names() {
        assert_eq!(child_path("$", "a"), "$.a");
        assert_eq!(child_path("$.a", "b c"), "$.a['b c']");
        assert_eq!(child_path("$", "9x"), "$['9x']");
        assert_eq!(pascal_case("user_name"), "UserName");
        assert_eq!(pascal_case("user-name"), "UserName");
        assert_eq!(pascal_case("userName"), "UserName");
        assert_eq!(last_key("$.a.tags"), "tags");
        assert_eq!(last_key("$['a b']"), "a b");
    }

    #[test]
    fn option_of_named_type_keeps_the_property_keywords() {
        let prop = json!({"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}], "title": "T"});
        let Value::Object(map) = prop else { unreachable!() };
        let out = strip_null_branch(map);
        assert_eq!(Value::Object(out), json!({"$ref": "#/$defs/A", "title": "T"}));
    }
}

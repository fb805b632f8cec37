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
    // A root that is only a reference (`Box<T>`, a newtype of a struct) is the
    // referenced type.
    let mut type_names = vec![root_name.to_owned()];
    if let Some((names, merged)) = b.resolve(&strip_null_branch(root.clone())) {
        type_names.extend(names);
        root = merged;
    }
    for t in &type_names {
        b.expanding.push((t.clone(), name.clone()));
    }
    let mut def = b.process(Value::Object(root), "$");
    b.expanding.clear();
    set_path(&mut def, "$");
    b.out.insert(name.clone(), def);
    json!({ "$ref": format!("#/$defs/{name}"), "$defs": b.out })
}

struct Builder {
    /// schemars' definitions, by type name.
    source: Map<String, Value>,
    /// Definitions written so far, in the order they were found (the root first): a
    /// name is reserved with a placeholder before its definition is built.
    out: Map<String, Value>,
    /// Named types being expanded: (type name, definition name), to stop recursion.
    expanding: Vec<(String, String)>,
    /// Definition names in use.
    taken: HashSet<String>,
}

impl Builder {
    /// A free definition name based on `wanted`, reserved in `out`.
    fn reserve(&mut self, wanted: &str) -> String {
        let base = if wanted.is_empty() { "Value" } else { wanted };
        let mut name = base.to_owned();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        self.out.insert(name.clone(), Value::Null);
        name
    }

    /// Resolves a `$ref` into the referenced schema, with the referring schema's own
    /// keywords laid over it, following references to references (a newtype of a
    /// struct). Returns the type names met, outermost first.
    fn resolve(&self, schema: &Map<String, Value>) -> Option<(Vec<String>, Map<String, Value>)> {
        let mut names: Vec<String> = Vec::new();
        let mut merged = schema.clone();
        while let Some(name) = ref_name(&merged) {
            if names.contains(&name) {
                break;
            }
            merged.remove("$ref");
            let def = match self.source.get(&name) {
                Some(Value::Object(def)) => def.clone(),
                _ => Map::new(),
            };
            merged = overlay(def, merged);
            names.push(name);
        }
        if names.is_empty() { None } else { Some((names, merged)) }
    }

    /// The definition of a type among `names` that is being expanded: a recursive
    /// reference to it.
    fn recursion(&self, names: &[String]) -> Option<String> {
        self.expanding.iter().find(|(t, _)| names.contains(t)).map(|(_, def)| def.clone())
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
            return self.inline(map, path);
        }
        units_to_enum(&mut map);
        if let Some(Value::Object(props)) = map.remove("properties") {
            let mut out = Map::new();
            let mut wanted = Vec::new();
            for (key, prop) in props {
                let (prop, order) = take_order(prop);
                let child = child_path(path, &key);
                out.insert(key.clone(), self.property(prop, &child, &key));
                wanted.push(order);
            }
            for (prop, order) in out.values_mut().zip(property_orders(&wanted)) {
                if let Value::Object(p) = prop {
                    p.insert("propertyOrder".into(), json!(order));
                }
            }
            map.insert("properties".into(), Value::Object(out));
        }
        if let Some(items) = map.remove("items") {
            let items_path = format!("{path}[0]");
            let items = self.items(items, &items_path, path);
            map.insert("items".into(), items);
        }
        if let Some(Value::Array(prefix)) = map.remove("prefixItems") {
            let prefix = prefix.into_iter().enumerate().map(|(i, s)| self.sub_schema(s, &format!("{path}[{i}]"))).collect();
            map.insert("prefixItems".into(), Value::Array(prefix));
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(Value::Array(variants)) = map.remove(key) {
                let variants = variants.into_iter().map(|v| self.process(v, path)).collect();
                map.insert(key.into(), Value::Array(variants));
            }
        }
        for key in ["additionalProperties", "unevaluatedProperties"] {
            if let Some(extra) = map.remove(key) {
                let extra = self.sub_schema(extra, &format!("{path}[*]"));
                map.insert(key.into(), extra);
            }
        }
        if let Some(Value::Object(patterns)) = map.remove("patternProperties") {
            let patterns =
                patterns.into_iter().map(|(k, s)| (k, self.sub_schema(s, &format!("{path}[*]")))).collect();
            map.insert("patternProperties".into(), Value::Object(patterns));
        }
        for key in ["propertyNames", "not", "if", "then", "else", "contains"] {
            if let Some(sub) = map.remove(key) {
                let sub = self.process(sub, path);
                map.insert(key.into(), sub);
            }
        }
        Value::Object(map)
    }

    /// A `$ref` that is a variant of an enum: the referenced type in place. A variant
    /// is the value at `path` itself, so a definition of its own would share the
    /// enum's path.
    fn inline(&mut self, map: Map<String, Value>, path: &str) -> Value {
        let Some((names, merged)) = self.resolve(&map) else {
            return Value::Object(map);
        };
        if let Some(def) = self.recursion(&names) {
            return json!({ "$ref": format!("#/$defs/{def}") });
        }
        self.process(Value::Object(merged), path)
    }

    /// A schema found under a map key or a tuple position: its own definition when it
    /// is more than a primitive, as for a property.
    fn sub_schema(&mut self, schema: Value, path: &str) -> Value {
        let Value::Object(map) = schema else {
            return schema;
        };
        if let Some((names, merged)) = self.resolve(&map) {
            if let Some(def) = self.recursion(&names) {
                return json!({ "$ref": format!("#/$defs/{def}") });
            }
            if should_extract(&merged) {
                return self.extract(names[0].clone(), names, merged, path);
            }
            return self.process(Value::Object(merged), path);
        }
        self.process(Value::Object(map), path)
    }

    /// Writes `schema` as a definition and returns the `$ref` to it. `type_names` are
    /// the named types it stands for, which a recursive reference points back to.
    fn extract(&mut self, wanted: String, type_names: Vec<String>, schema: Map<String, Value>, path: &str) -> Value {
        let name = self.reserve(&wanted);
        let depth = self.expanding.len();
        self.expanding.extend(type_names.into_iter().map(|t| (t, name.clone())));
        let mut def = self.process(Value::Object(schema), path);
        self.expanding.truncate(depth);
        set_path(&mut def, path);
        self.out.insert(name.clone(), def);
        json!({ "$ref": format!("#/$defs/{name}") })
    }

    /// One property of an object, at `path`, called `key`.
    fn property(&mut self, prop: Value, path: &str, key: &str) -> Value {
        let Value::Object(prop) = prop else {
            // `true` (any value): an untyped property, always its own definition.
            return self.extract(pascal_case(key), Vec::new(), Map::new(), path);
        };
        let prop = strip_null_branch(prop);
        if let Some((names, merged)) = self.resolve(&prop) {
            if let Some(def) = self.recursion(&names) {
                // The definition is the type's, shared with the outer use: the
                // field's own hints stay next to the reference.
                let mut r = prop;
                r.insert("$ref".into(), json!(format!("#/$defs/{def}")));
                return Value::Object(r);
            }
            if should_extract(&merged) {
                return self.extract(names[0].clone(), names, merged, path);
            }
            return self.process(Value::Object(merged), path);
        }
        if should_extract(&prop) {
            return self.extract(pascal_case(key), Vec::new(), prop, path);
        }
        self.process(Value::Object(prop), path)
    }

    /// Array items: always a definition named after the element type.
    fn items(&mut self, items: Value, path: &str, array_path: &str) -> Value {
        let Value::Object(items) = items else {
            return self.extract(format!("{}Item", pascal_case(last_key(array_path))), Vec::new(), Map::new(), path);
        };
        let items = strip_null_branch(items);
        if let Some((names, merged)) = self.resolve(&items) {
            if let Some(def) = self.recursion(&names) {
                return json!({ "$ref": format!("#/$defs/{def}") });
            }
            return self.extract(names[0].clone(), names, merged, path);
        }
        let primitive = match items.get("type") {
            Some(Value::String(t)) => Some(t.as_str()),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
            _ => None,
        };
        let name = match primitive {
            Some(t @ ("string" | "integer" | "number" | "boolean")) => pascal_case(t),
            _ => format!("{}Item", pascal_case(last_key(array_path))),
        };
        self.extract(name, Vec::new(), items, path)
    }
}

fn ref_name(schema: &Map<String, Value>) -> Option<String> {
    Some(schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?.to_owned())
}

/// `top`'s keywords over `base`'s. Properties and `required` are united, `top`'s
/// first: an internally tagged variant is `{"$ref": T, "properties": {tag}}`, and
/// the tag goes before `T`'s fields.
fn overlay(base: Map<String, Value>, top: Map<String, Value>) -> Map<String, Value> {
    let mut merged = base;
    for (k, v) in top {
        let united = match (k.as_str(), merged.remove(&k), v) {
            ("properties", Some(Value::Object(below)), Value::Object(mut above)) => {
                for (pk, pv) in below {
                    above.entry(pk).or_insert(pv);
                }
                Value::Object(above)
            }
            ("required", Some(Value::Array(below)), Value::Array(mut above)) => {
                for r in below {
                    if !above.contains(&r) {
                        above.push(r);
                    }
                }
                Value::Array(above)
            }
            (_, _, v) => v,
        };
        merged.insert(k, united);
    }
    merged
}

/// Removes a `propertyOrder` hint from a property: it orders the property among its
/// siblings, and never moves to a definition.
fn take_order(prop: Value) -> (Value, Option<u64>) {
    match prop {
        Value::Object(mut map) => {
            let order = map.remove("propertyOrder").and_then(|o| o.as_u64());
            (Value::Object(map), order)
        }
        other => (other, None),
    }
}

/// The `propertyOrder` of each property, from the `property_order` hints (`None`
/// where there is none): a property without a hint keeps its 1-based declaration
/// index as its wanted place, a hinted one goes first among equals, and the result is
/// renumbered 1..=n so that no two siblings share a place.
fn property_orders(wanted: &[Option<u64>]) -> Vec<u64> {
    let mut by_place: Vec<usize> = (0..wanted.len()).collect();
    by_place.sort_by_key(|&i| (wanted[i].unwrap_or(i as u64 + 1), wanted[i].is_none(), i));
    let mut orders = vec![0; wanted.len()];
    for (place, &i) in by_place.iter().enumerate() {
        orders[i] = place as u64 + 1;
    }
    orders
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
/// property's own keywords. The editor wants a plain `$ref` there; optionality
/// shows in `required`. A `default` of `null` goes too, as `T` does not allow it.
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
    if prop.get("default") == Some(&Value::Null) {
        prop.remove("default");
    }
    if let Value::Object(inner) = keep {
        for (k, v) in inner {
            prop.entry(k).or_insert(v);
        }
    }
    prop
}

fn is_unit_enum(schema: &Map<String, Value>) -> bool {
    match schema.get("oneOf") {
        Some(Value::Array(vs)) => !vs.is_empty() && vs.iter().all(|v| unit_values(v).is_some()),
        _ => false,
    }
}

/// `{"const": "a", "title": "A"}` or `{"enum": ["a", "b"]}`: the values of a branch
/// made of unit variants.
fn unit_values(v: &Value) -> Option<Vec<Value>> {
    let v = v.as_object()?;
    if let Some(c) = v.get("const") {
        return Some(vec![c.clone()]);
    }
    match v.get("enum") {
        Some(Value::Array(e)) if !e.is_empty() => Some(e.clone()),
        _ => None,
    }
}

/// A unit enum comes from the derive as `oneOf` of constants, one per variant in
/// declaration order, with the variant's title or doc; the editor wants `enum` and
/// `enumTitles`. A variant's label is its title, else its doc, else its value.
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
        let Some(vs) = unit_values(v) else { continue };
        let label = if vs.len() == 1 { v.get("title").or_else(|| v.get("description")).and_then(Value::as_str) } else { None };
        for value in vs {
            let title = label.map(str::to_owned).unwrap_or_else(|| value.as_str().map_or_else(|| value.to_string(), str::to_owned));
            titles.push(Value::String(title));
            values.push(value);
        }
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

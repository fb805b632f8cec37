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
    let mut source = match root.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    root.remove("$schema");
    for def in source.values_mut() {
        if let Value::Object(def) = def {
            enum_titles(def);
        }
    }
    enum_titles(&mut root);
    let mut b = Builder {
        source,
        out: Map::new(),
        expanding: Vec::new(),
        taken: HashSet::new(),
        inlining: Vec::new(),
        depth: 0,
    };
    // A root that is only a reference (`Option<T>`, a newtype of a struct) is the
    // referenced type, and is named after it.
    let mut type_names = vec![root_name.to_owned()];
    let mut def_name = root_name.to_owned();
    if let Some((names, merged)) = b.resolve(&strip_null_branch(root.clone())) {
        def_name.clone_from(&names[0]);
        type_names.extend(names);
        root = merged;
    }
    let name = b.reserve(&def_name);
    for t in type_names {
        b.expanding.push((t, name.clone()));
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
    /// Named types being laid out in place (not as definitions of their own): a
    /// reference back to one of them has no definition to point to.
    inlining: Vec<String>,
    /// How deeply `process` is nested, to bound the recursion on hostile input.
    depth: usize,
}

/// Deeper than this, a schema is left as "any value": no type an author writes nests
/// so deep, and the editor could not show it.
const MAX_DEPTH: usize = 64;

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
        // Only a cycle of bare aliases leaves a reference here: drop it.
        if !names.is_empty() {
            merged.remove("$ref");
        }
        if names.is_empty() { None } else { Some((names, merged)) }
    }

    /// The definition of a type among `names` that is being expanded: a recursive
    /// reference to it.
    fn recursion(&self, names: &[String]) -> Option<String> {
        self.expanding
            .iter()
            .find(|(t, _)| names.contains(t))
            .map(|(_, def)| def.clone())
    }

    /// Rewrites one schema found at `path`: its properties, items and variants.
    fn process(&mut self, schema: Value, path: &str) -> Value {
        if self.depth >= MAX_DEPTH {
            return json!({});
        }
        self.depth += 1;
        let shaped = self.process_at_depth(schema, path);
        self.depth -= 1;
        shaped
    }

    /// A named type laid out in place. A type that contains itself only through such
    /// places (never through a definition of its own) would unfold forever: there it
    /// becomes "any value".
    fn process_named(&mut self, names: &[String], schema: Map<String, Value>, path: &str) -> Value {
        if names.iter().any(|n| self.inlining.contains(n)) {
            return json!({});
        }
        let outer = self.inlining.len();
        self.inlining.extend(names.iter().cloned());
        let shaped = self.process(Value::Object(schema), path);
        self.inlining.truncate(outer);
        shaped
    }

    fn process_at_depth(&mut self, schema: Value, path: &str) -> Value {
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
        // Each keyword is rewritten in place, so that the keywords keep schemars' order.
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            let mut wanted = Vec::new();
            for (key, prop) in props.iter_mut() {
                let (taken, order) = take_order(prop.take());
                *prop = self.property(taken, &child_path(path, key), key);
                wanted.push(order);
            }
            for (prop, order) in props.values_mut().zip(property_orders(&wanted)) {
                if let Value::Object(p) = prop {
                    p.insert("propertyOrder".into(), json!(order));
                }
            }
        }
        if let Some(items) = map.get_mut("items") {
            *items = self.items(items.take(), &format!("{path}[0]"), path);
        }
        if let Some(Value::Array(prefix)) = map.get_mut("prefixItems") {
            for (i, item) in prefix.iter_mut().enumerate() {
                *item = self.sub_schema(item.take(), &format!("{path}[{i}]"));
            }
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            if let Some(Value::Array(variants)) = map.get_mut(key) {
                for v in variants.iter_mut() {
                    *v = self.process(v.take(), path);
                }
            }
        }
        for key in ["additionalProperties", "unevaluatedProperties"] {
            if let Some(extra) = map.get_mut(key) {
                *extra = self.sub_schema(extra.take(), &format!("{path}[*]"));
            }
        }
        if let Some(Value::Object(patterns)) = map.get_mut("patternProperties") {
            for s in patterns.values_mut() {
                *s = self.sub_schema(s.take(), &format!("{path}[*]"));
            }
        }
        for key in ["propertyNames", "not", "if", "then", "else", "contains"] {
            if let Some(sub) = map.get_mut(key) {
                *sub = self.process(sub.take(), path);
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
        self.process_named(&names, merged, path)
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
            return self.process_named(&names, merged, path);
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
                let mut r = Map::new();
                r.insert("$ref".into(), json!(format!("#/$defs/{def}")));
                r.extend(prop.into_iter().filter(|(k, _)| k != "$ref"));
                return Value::Object(r);
            }
            if should_extract(&merged) {
                return self.extract(names[0].clone(), names, merged, path);
            }
            return self.process_named(&names, merged, path);
        }
        if should_extract(&prop) {
            return self.extract(pascal_case(key), Vec::new(), prop, path);
        }
        self.process(Value::Object(prop), path)
    }

    /// Array items: always a definition named after the element type.
    fn items(&mut self, items: Value, path: &str, array_path: &str) -> Value {
        let Value::Object(items) = items else {
            return self.extract(
                format!("{}Item", pascal_case(last_key(array_path))),
                Vec::new(),
                Map::new(),
                path,
            );
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
        let Some(below) = merged.get_mut(&k) else {
            merged.insert(k, v);
            continue;
        };
        match (k.as_str(), below, v) {
            ("properties", Value::Object(below), Value::Object(mut above)) => {
                for (pk, pv) in std::mem::take(below) {
                    above.entry(pk).or_insert(pv);
                }
                *below = above;
            }
            ("required", Value::Array(below), Value::Array(mut above)) => {
                for r in std::mem::take(below) {
                    if !above.contains(&r) {
                        above.push(r);
                    }
                }
                *below = above;
            }
            (_, below, v) => *below = v,
        }
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
/// where there is none): a hinted property takes the place it asks for (hinted ones
/// asking for the same place in declaration order), and the others fill the places
/// left, in declaration order; the result is 1..=n, no two siblings sharing a place.
fn property_orders(wanted: &[Option<u64>]) -> Vec<u64> {
    let mut hinted: Vec<(u64, usize)> = wanted
        .iter()
        .enumerate()
        .filter_map(|(i, w)| w.map(|w| (w, i)))
        .collect();
    hinted.sort_unstable();
    let mut hinted = hinted.into_iter().peekable();
    let mut plain = (0..wanted.len()).filter(|&i| wanted[i].is_none());
    let mut orders = vec![0; wanted.len()];
    for place in 1..=wanted.len() as u64 {
        let due = hinted.peek().is_some_and(|&(w, _)| w <= place);
        let next = if due { hinted.next().map(|(_, i)| i) } else { None };
        let Some(i) = next.or_else(|| plain.next()).or_else(|| hinted.next().map(|(_, i)| i)) else {
            break;
        };
        orders[i] = place;
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
        let label = if vs.len() == 1 {
            v.get("title").or_else(|| v.get("description")).and_then(Value::as_str)
        } else {
            None
        };
        for value in vs {
            let title = label
                .map(str::to_owned)
                .unwrap_or_else(|| value.as_str().map_or_else(|| value.to_string(), str::to_owned));
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

/// A unit enum whose variants carry no docs comes from schemars as a plain `enum`
/// (a definition of a named type, never a field's `enum` hint): it gets `enumTitles`
/// too, the values themselves.
fn enum_titles(def: &mut Map<String, Value>) {
    let Some(Value::Array(values)) = def.get("enum") else {
        return;
    };
    if def.contains_key("enumTitles") || !values.iter().all(Value::is_string) {
        return;
    }
    let titles = values.clone();
    def.insert("enumTitles".into(), Value::Array(titles));
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
    path.rsplit(['.', '['])
        .next()
        .unwrap_or(path)
        .trim_end_matches(']')
        .trim_matches('\'')
}

/// `user_name` / `user-name` / `userName` -> `UserName`.
fn pascal_case(s: &str) -> String {
    heck::ToUpperCamelCase::to_upper_camel_case(s)
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

    /// The definitions of an editor schema, for the tests.
    fn defs(schema: &Value) -> &Map<String, Value> {
        schema["$defs"].as_object().expect("$defs")
    }

    #[test]
    fn property_order_hints_win_and_the_rest_follow_declaration() {
        assert_eq!(property_orders(&[None, None, None]), [1, 2, 3]);
        // c(3) a(1) b(-) nested(2): b wants its declaration place 3, which c has
        // asked for; the hint goes first among equals.
        assert_eq!(property_orders(&[Some(3), Some(1), None, Some(2)]), [3, 1, 4, 2]);
        // Gaps are closed, the relative order kept.
        assert_eq!(property_orders(&[Some(20), Some(10), Some(30)]), [2, 1, 3]);
        // A hint beyond the end moves the field last.
        assert_eq!(property_orders(&[Some(9), None, None]), [3, 1, 2]);
        // Hinted fields declared last still take the places they ask for; the others
        // fill the rest.
        assert_eq!(property_orders(&[None, None, Some(1), Some(2)]), [3, 4, 1, 2]);
    }

    #[test]
    fn property_order_hint_stays_on_the_property_not_the_definition() {
        let root = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "inner": {"$ref": "#/$defs/Inner", "propertyOrder": 1}
            },
            "$defs": {"Inner": {"type": "object", "properties": {"x": {"type": "integer"}}}}
        });
        let s = editor_shape("Root", root);
        let d = defs(&s);
        assert_eq!(
            d["Root"]["properties"]["inner"],
            json!({"$ref": "#/$defs/Inner", "propertyOrder": 1})
        );
        assert_eq!(d["Root"]["properties"]["a"]["propertyOrder"], 2);
        assert!(d["Inner"].get("propertyOrder").is_none());
    }

    #[test]
    fn internally_tagged_newtype_variant_keeps_the_fields_of_its_type() {
        // `#[serde(tag = "type")] enum Kind { Moved(Place) }`
        let root = json!({
            "type": "object",
            "properties": {"kind": {"$ref": "#/$defs/Kind"}},
            "$defs": {
                "Kind": {"oneOf": [{
                    "$ref": "#/$defs/Place",
                    "type": "object",
                    "properties": {"type": {"type": "string", "const": "moved"}},
                    "required": ["type"]
                }]},
                "Place": {
                    "type": "object",
                    "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
                    "required": ["from", "to"]
                }
            }
        });
        let s = editor_shape("Root", root);
        let d = defs(&s);
        let moved = &d["Kind"]["oneOf"][0];
        let keys: Vec<&String> = moved["properties"].as_object().expect("properties").keys().collect();
        assert_eq!(keys, ["type", "from", "to"]);
        assert_eq!(moved["required"], json!(["type", "from", "to"]));
        // The variant is the value at `$.kind`: inline, not a definition with the
        // enum's path.
        assert!(!d.contains_key("Place"), "{s:#}");
    }

    #[test]
    fn a_reference_to_a_reference_is_followed() {
        // `struct Wrapped(Inner)` in a field.
        let root = json!({
            "type": "object",
            "properties": {"w": {"$ref": "#/$defs/Wrapped", "title": "W"}},
            "$defs": {
                "Wrapped": {"$ref": "#/$defs/Inner"},
                "Inner": {"type": "object", "properties": {"v": {"type": "integer"}}}
            }
        });
        let s = editor_shape("Root", root);
        let d = defs(&s);
        assert_eq!(d.keys().collect::<Vec<_>>(), ["Root", "Wrapped"]);
        assert_eq!(d["Wrapped"]["title"], "W");
        assert_eq!(d["Wrapped"]["properties"]["v"]["type"], "integer");
        assert_eq!(d["Wrapped"]["path"], "$.w");
    }

    #[test]
    fn option_of_a_struct_drops_the_null_default() {
        let root = json!({
            "type": "object",
            "properties": {"b": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}], "default": null}},
            "$defs": {"B": {"type": "object", "properties": {}}}
        });
        let s = editor_shape("Root", root);
        assert!(defs(&s)["B"].get("default").is_none(), "{s:#}");
    }

    #[test]
    fn unit_enums_keep_declaration_order_and_get_titles() {
        // A plain schemars enum whose undocumented variants come grouped: each value
        // of a grouped branch is titled with itself.
        let root = json!({
            "type": "object",
            "properties": {"p": {"$ref": "#/$defs/P"}, "q": {"$ref": "#/$defs/Q"}},
            "$defs": {
                "P": {"oneOf": [
                    {"type": "string", "enum": ["a", "b"]},
                    {"type": "string", "const": "c", "description": "See."},
                    {"type": "string", "const": "d", "title": "D!", "description": "Dee."}
                ]},
                "Q": {"type": "string", "enum": ["x", "y"]}
            }
        });
        let s = editor_shape("Root", root);
        let p = &defs(&s)["Root"]["properties"]["p"];
        assert_eq!(p["enum"], json!(["a", "b", "c", "d"]));
        assert_eq!(p["enumTitles"], json!(["a", "b", "See.", "D!"]));
        let q = &defs(&s)["Root"]["properties"]["q"];
        assert_eq!(q["enumTitles"], json!(["x", "y"]));
    }

    #[test]
    fn field_enum_hints_get_no_invented_titles() {
        let root = json!({"type": "object", "properties": {"m": {"type": "string", "enum": ["GET", "POST"]}}});
        let s = editor_shape("Root", root);
        assert!(defs(&s)["Root"]["properties"]["m"].get("enumTitles").is_none());
    }

    #[test]
    fn tuple_positions_and_pattern_properties_resolve_their_references() {
        let root = json!({
            "type": "object",
            "properties": {
                "pair": {"type": "array", "prefixItems": [{"$ref": "#/$defs/P"}, {"type": "string"}]},
                "by_id": {"type": "object", "patternProperties": {"^\\d+$": {"$ref": "#/$defs/P"}}}
            },
            "$defs": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}}
        });
        let s = editor_shape("Root", root);
        let d = defs(&s);
        assert_eq!(
            d["Root"]["properties"]["pair"]["prefixItems"][0],
            json!({"$ref": "#/$defs/P"})
        );
        assert_eq!(d["P"]["path"], "$.pair[0]");
        assert_eq!(d["P2"]["path"], "$.by_id[*]");
    }

    #[test]
    fn a_root_that_is_a_reference_is_named_after_its_type() {
        // `Option<Address>` as a message.
        let root = json!({
            "anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}],
            "$defs": {"Address": {"type": "object", "properties": {"zip": {"type": "string"}}}}
        });
        let s = editor_shape("Nullable_Address", root);
        assert_eq!(s["$ref"], "#/$defs/Address");
        assert_eq!(defs(&s).keys().collect::<Vec<_>>(), ["Address"]);
        assert_eq!(defs(&s)["Address"]["path"], "$");
    }

    #[test]
    fn a_recursive_field_keeps_its_hints_next_to_the_reference() {
        let root = json!({
            "type": "object",
            "properties": {
                "parent": {"anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}], "title": "Parent"}
            }
        });
        let s = editor_shape("Tree", root);
        assert_eq!(
            defs(&s)["Tree"]["properties"]["parent"],
            json!({"$ref": "#/$defs/Tree", "title": "Parent", "propertyOrder": 1})
        );
    }

    #[test]
    fn a_type_that_contains_itself_only_in_place_ends_as_any_value() {
        // `L` is a tuple of itself: never a definition of its own, so no `$ref` can
        // stand for the inner one (found by the `schema` fuzz target as a stack overflow).
        let schema = json!({
            "type": "object",
            "properties": { "a": { "$ref": "#/$defs/L" } },
            "$defs": { "L": { "type": "array", "prefixItems": [{ "$ref": "#/$defs/L" }] } }
        });
        let shaped = editor_shape("Root", schema);
        let a = &defs(&shaped)["Root"]["properties"]["a"];
        assert_eq!(a["type"], "array", "{shaped:#}");
        assert_eq!(a["prefixItems"][0], json!({}), "{shaped:#}");
    }

    #[test]
    fn nesting_deeper_than_any_type_is_cut_not_overflowed() {
        let mut schema = json!({ "type": "string" });
        for _ in 0..500 {
            schema = json!({ "type": "object", "properties": { "x": schema } });
        }
        let shaped = editor_shape("Root", schema);
        // Bounded: at most MAX_DEPTH levels of definitions.
        assert!(defs(&shaped).len() <= MAX_DEPTH + 1, "{}", defs(&shaped).len());
    }

    #[test]
    fn definitions_are_listed_in_the_order_they_are_found() {
        let root = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}, "z": {"$ref": "#/$defs/Z"}},
            "$defs": {
                "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                "B": {"type": "object", "properties": {}},
                "Z": {"type": "object", "properties": {}}
            }
        });
        let s = editor_shape("Root", root);
        assert_eq!(defs(&s).keys().collect::<Vec<_>>(), ["Root", "A", "B", "Z"]);
    }

    #[test]
    fn option_of_named_type_keeps_the_property_keywords() {
        let prop = json!({"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}], "title": "T"});
        let Value::Object(map) = prop else { unreachable!() };
        let out = strip_null_branch(map);
        assert_eq!(Value::Object(out), json!({"$ref": "#/$defs/A", "title": "T"}));
    }
}

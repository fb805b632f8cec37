//! The comparison: every difference between the port schemas of two builds.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::findings::{Change, ChangeKind};
use crate::{
    contract::port as system,
    flow::{ComponentSchema, PortSchema},
};

/// How deep `$ref`s and nesting are followed: a recursive schema ends somewhere.
const MAX_DEPTH: usize = 32;

/// Every difference between the components `old` and `new` publish, component by
/// component and port by port, in `old`'s order (what `new` adds last). Inputs and
/// outputs are compared alike; which changes break depends on what is deployed,
/// which [`check_upgrade`](super::check_upgrade) weighs.
///
/// Schemas are compared for `$ref`, `type` (with `integer` inside `number`),
/// `enum`/`const` alternatives, `properties`, `required` and `items`, through
/// `anyOf`/`oneOf` (an `Option`'s `null` branch).
///
/// ```
/// use serde_json::json;
/// use tiny_sdk::flow::{ChangeKind, ComponentSchema, PortSchema, schema_changes};
///
/// let build = |fields: serde_json::Value| vec![ComponentSchema {
///     name: "echo".into(),
///     ports: vec![PortSchema::new("in", false, json!({"type": "object", "properties": fields}))],
/// }];
/// let old = build(json!({"name": {"type": "string"}, "title": {"type": "string"}}));
/// let new = build(json!({"name": {"type": "string"}}));
/// let changes = schema_changes(&old, &new);
/// assert_eq!(changes[0].kind, ChangeKind::FieldRemoved);
/// assert_eq!(changes[0].field.as_deref(), Some("/title"));
/// ```
pub fn schema_changes(old: &[ComponentSchema], new: &[ComponentSchema]) -> Vec<Change> {
    let mut out = Vec::new();
    for oc in old {
        let Some(nc) = new.iter().find(|c| c.name == oc.name) else {
            out.push(change(
                &oc.name,
                None,
                false,
                None,
                ChangeKind::ComponentRemoved,
                "the new build has no such component".to_owned(),
            ));
            continue;
        };
        for op in &oc.ports {
            let Some(np) = new_port(nc, op) else {
                out.push(change(
                    &oc.name,
                    Some(&op.name),
                    op.source,
                    None,
                    ChangeKind::PortRemoved,
                    format!("the new build's `{}` has no such port", nc.name),
                ));
                continue;
            };
            if np.source != op.source {
                let now = if np.source { "an output" } else { "an input" };
                out.push(change(
                    &oc.name,
                    Some(&op.name),
                    op.source,
                    None,
                    ChangeKind::PortRemoved,
                    format!("the port is {now} in the new build"),
                ));
                continue;
            }
            let mut diff = Diff {
                old: &op.schema,
                new: &np.schema,
                out: Vec::new(),
            };
            diff.compare(&op.schema, &np.schema, &mut String::new(), 0);
            for (pointer, kind, message, allowed, types) in diff.out {
                let kind = if kind == ChangeKind::FieldRemoved && op.name == system::SETTINGS {
                    ChangeKind::SettingsKeyRemoved
                } else {
                    kind
                };
                let mut c = change(&oc.name, Some(&op.name), op.source, Some(pointer), kind, message);
                c.allowed = allowed;
                c.types = types;
                out.push(c);
            }
        }
        for np in nc
            .ports
            .iter()
            .filter(|np| !oc.ports.iter().any(|op| op.name == np.name))
        {
            out.push(change(
                &oc.name,
                Some(&np.name),
                np.source,
                None,
                ChangeKind::PortAdded,
                "a new port".to_owned(),
            ));
        }
    }
    for nc in new.iter().filter(|nc| !old.iter().any(|oc| oc.name == nc.name)) {
        out.push(change(
            &nc.name,
            None,
            false,
            None,
            ChangeKind::ComponentAdded,
            "a new component".to_owned(),
        ));
    }
    out
}

/// The port of the new build's component that takes the place of `old`.
pub(super) fn new_port<'a>(new: &'a ComponentSchema, old: &PortSchema) -> Option<&'a PortSchema> {
    new.ports
        .iter()
        .find(|p| p.name == old.name)
        .or_else(|| (!old.family).then(|| new.port(&old.name)).flatten())
}

fn change(
    component: &str,
    port: Option<&str>,
    output: bool,
    field: Option<String>,
    kind: ChangeKind,
    message: String,
) -> Change {
    Change {
        component: component.to_owned(),
        port: port.map(str::to_owned),
        output,
        field,
        kind,
        allowed: None,
        types: None,
        message,
    }
}

/// A change at a field: pointer, kind, words, allowed enum values, allowed types.
type FieldChange = (String, ChangeKind, String, Option<Vec<Value>>, Option<Vec<String>>);

/// The comparison of one port's two schemas (each a whole schema, whose `$defs`
/// their `$ref`s point into).
struct Diff<'a> {
    old: &'a Value,
    new: &'a Value,
    out: Vec<FieldChange>,
}

impl<'a> Diff<'a> {
    fn push(&mut self, pointer: &str, kind: ChangeKind, message: String) {
        self.out.push((pointer.to_owned(), kind, message, None, None));
    }

    fn compare(&mut self, old: &'a Value, new: &'a Value, pointer: &mut String, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let (old, new) = (deref(self.old, old), deref(self.new, new));
        let (ot, nt) = (types(self.old, old, 0), types(self.new, new, 0));
        match (&ot, &nt) {
            (_, None) => {
                if ot.is_some() {
                    self.push(pointer, ChangeKind::TypeWidened, "any type is taken now".to_owned());
                }
            }
            (None, Some(n)) => self.narrowed(pointer, n, "any type was taken".to_owned()),
            (Some(o), Some(n)) => {
                let lost: Vec<&String> = o.iter().filter(|t| !covered(t, n)).collect();
                let gained: Vec<&String> = n.iter().filter(|t| !covered(t, o)).collect();
                if !lost.is_empty() {
                    let lost: Vec<&str> = lost.iter().map(|s| s.as_str()).collect();
                    self.narrowed(pointer, n, format!("{} is no longer taken", lost.join(" or ")));
                } else if !gained.is_empty() {
                    let gained: Vec<&str> = gained.iter().map(|s| s.as_str()).collect();
                    self.push(
                        pointer,
                        ChangeKind::TypeWidened,
                        format!("{} is taken now too", gained.join(" or ")),
                    );
                }
            }
        }
        self.enums(old, new, pointer);
        if let (Some(o), Some(n)) = (object(self.old, old, 0), object(self.new, new, 0)) {
            self.objects(o, n, pointer, depth);
        }
        if let (Some(o), Some(n)) = (items(self.old, old, 0), items(self.new, new, 0)) {
            let len = pointer.len();
            pointer.push_str("/*");
            self.compare(o, n, pointer, depth + 1);
            pointer.truncate(len);
        }
    }

    fn narrowed(&mut self, pointer: &str, new: &BTreeSet<String>, message: String) {
        let types: Vec<String> = new.iter().cloned().collect();
        let message = format!("{message} (the new build takes {})", types.join(" or "));
        self.out
            .push((pointer.to_owned(), ChangeKind::TypeNarrowed, message, None, Some(types)));
    }

    fn enums(&mut self, old: &'a Value, new: &'a Value, pointer: &str) {
        let Some(allowed) = enum_values(self.new, new, 0) else {
            return;
        };
        let Some(before) = enum_values(self.old, old, 0) else {
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            let message = format!("only {} is taken now", list.join(", "));
            self.out.push((
                pointer.to_owned(),
                ChangeKind::EnumValueRemoved,
                message,
                Some(allowed),
                None,
            ));
            return;
        };
        let removed: Vec<String> = before
            .iter()
            .filter(|v| !allowed.contains(v))
            .map(Value::to_string)
            .collect();
        let added: Vec<String> = allowed
            .iter()
            .filter(|v| !before.contains(v))
            .map(Value::to_string)
            .collect();
        if !removed.is_empty() {
            let message = format!("{} is no longer one of the values", removed.join(", "));
            self.out.push((
                pointer.to_owned(),
                ChangeKind::EnumValueRemoved,
                message,
                Some(allowed),
                None,
            ));
        } else if !added.is_empty() {
            self.push(
                pointer,
                ChangeKind::EnumValueAdded,
                format!("{} is a value now too", added.join(", ")),
            );
        }
    }

    fn objects(&mut self, old: Object<'a>, new: Object<'a>, pointer: &mut String, depth: usize) {
        let (op, np) = (old.properties, new.properties);
        for (name, os) in op.into_iter().flatten() {
            let len = pointer.len();
            push_token(pointer, name);
            match np.and_then(|p| p.get(name)) {
                None => self.push(
                    pointer,
                    ChangeKind::FieldRemoved,
                    "the new build has no such field".to_owned(),
                ),
                Some(ns) => {
                    if new.required.contains(name.as_str()) && !old.required.contains(name.as_str()) {
                        self.push(
                            pointer,
                            ChangeKind::MadeRequired,
                            "the field is required now".to_owned(),
                        );
                    } else if old.required.contains(name.as_str()) && !new.required.contains(name.as_str()) {
                        self.push(
                            pointer,
                            ChangeKind::MadeOptional,
                            "the field is optional now".to_owned(),
                        );
                    }
                    self.compare(os, ns, pointer, depth + 1);
                }
            }
            pointer.truncate(len);
        }
        for name in np
            .into_iter()
            .flat_map(Map::keys)
            .filter(|n| !op.is_some_and(|p| p.contains_key(*n)))
        {
            let len = pointer.len();
            push_token(pointer, name);
            if new.required.contains(name.as_str()) {
                self.push(pointer, ChangeKind::MadeRequired, "a new field, required".to_owned());
            } else {
                self.push(pointer, ChangeKind::FieldAdded, "a new field, optional".to_owned());
            }
            pointer.truncate(len);
        }
    }
}

/// An object schema's fields and the names it requires.
#[derive(Clone, Copy)]
struct Object<'a> {
    properties: Option<&'a Map<String, Value>>,
    required: RequiredSet<'a>,
}

#[derive(Clone, Copy)]
struct RequiredSet<'a>(Option<&'a Vec<Value>>);

impl RequiredSet<'_> {
    fn contains(&self, name: &str) -> bool {
        self.0.is_some_and(|r| r.iter().any(|v| v.as_str() == Some(name)))
    }
}

/// The schema a `$ref` chain ends at.
fn deref<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..MAX_DEPTH {
        let Some(target) = schema.get("$ref").and_then(Value::as_str) else {
            break;
        };
        let found = target.strip_prefix('#').and_then(|path| {
            if path.is_empty() {
                Some(root)
            } else {
                root.pointer(path)
            }
        });
        match found {
            Some(s) => schema = s,
            None => break,
        }
    }
    schema
}

/// The branches of `anyOf`/`oneOf`, if the schema is a choice.
fn branches(schema: &Value) -> Option<&Vec<Value>> {
    ["anyOf", "oneOf"]
        .iter()
        .find_map(|k| schema.get(*k).and_then(Value::as_array))
        .filter(|b| !b.is_empty())
}

/// The JSON types a schema takes; `None`: any.
fn types(root: &Value, schema: &Value, depth: usize) -> Option<BTreeSet<String>> {
    let schema = deref(root, schema);
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(t) = schema.get("type") {
        return match t {
            Value::String(s) => Some(BTreeSet::from([s.clone()])),
            Value::Array(ts) => Some(ts.iter().filter_map(Value::as_str).map(str::to_owned).collect()),
            _ => None,
        };
    }
    if let Some(bs) = branches(schema) {
        let mut all = BTreeSet::new();
        for b in bs {
            all.extend(types(root, b, depth + 1)?);
        }
        return Some(all);
    }
    let values = schema
        .get("enum")
        .and_then(Value::as_array)
        .cloned()
        .or_else(|| schema.get("const").map(|c| vec![c.clone()]))?;
    Some(values.iter().map(|v| type_of(v).to_owned()).collect())
}

pub(super) fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether type `t` is among `types` (`integer` is inside `number`).
pub(super) fn covered(t: &str, types: &BTreeSet<String>) -> bool {
    types.contains(t) || (t == "integer" && types.contains("number"))
}

/// The values an enumeration takes (`enum`, `const`, or alternatives of those, with
/// a `null` branch's `null`); `None`: not an enumeration.
fn enum_values(root: &Value, schema: &Value, depth: usize) -> Option<Vec<Value>> {
    let schema = deref(root, schema);
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return Some(values.clone());
    }
    if let Some(c) = schema.get("const") {
        return Some(vec![c.clone()]);
    }
    let mut all = Vec::new();
    let mut any = false;
    for b in branches(schema)? {
        let b = deref(root, b);
        if b.get("type").and_then(Value::as_str) == Some("null") {
            all.push(Value::Null);
            continue;
        }
        all.extend(enum_values(root, b, depth + 1)?);
        any = true;
    }
    any.then_some(all)
}

/// The object a schema describes: its own `properties`, or those of its first
/// alternative that has some (an `Option<T>`'s `T`).
fn object<'a>(root: &'a Value, schema: &'a Value, depth: usize) -> Option<Object<'a>> {
    let schema = deref(root, schema);
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        return Some(Object {
            properties: Some(properties),
            required: RequiredSet(schema.get("required").and_then(Value::as_array)),
        });
    }
    branches(schema)?.iter().find_map(|b| object(root, b, depth + 1))
}

/// The schema of an array's items, also through alternatives.
fn items<'a>(root: &'a Value, schema: &'a Value, depth: usize) -> Option<&'a Value> {
    let schema = deref(root, schema);
    if depth > MAX_DEPTH {
        return None;
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        return Some(items);
    }
    branches(schema)?.iter().find_map(|b| items(root, b, depth + 1))
}

/// Appends `token` to a JSON pointer, escaped as RFC 6901 says.
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    pointer.push_str(&token.replace('~', "~0").replace('/', "~1"));
}

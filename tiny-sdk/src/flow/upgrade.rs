//! Whether a new build of a module still accepts what is deployed: [`schema_changes`]
//! compares the port schemas of two builds, and [`check_upgrade`] weighs each change
//! against the deployed nodes' edge mappings and settings (`<module> check-upgrade`).

use std::{collections::BTreeSet, fmt};

use serde::Serialize;
use serde_json::{Map, Value};

use super::{ComponentSchema, Node, PortAddress, PortSchema, fit, module_matches, parse_node_name};
use crate::contract::{label, port as system};

/// How deep `$ref`s and nesting are followed: a recursive schema ends somewhere.
const MAX_DEPTH: usize = 32;

/// Whether a change stops the new build from accepting what the old one did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// What was accepted before may be refused, or lose data, now.
    Breaking,
    /// What was accepted before still is.
    Compatible,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Breaking => "breaking",
            Verdict::Compatible => "compatible",
        })
    }
}

/// What changed between two builds' schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ChangeKind {
    /// The component is gone.
    ComponentRemoved,
    /// The port is gone (or turned from input to output, or back).
    PortRemoved,
    /// A field of an input is gone (or renamed: the old name is gone).
    FieldRemoved,
    /// A key of `_settings` is gone.
    SettingsKeyRemoved,
    /// A field takes fewer types than before (`number` to `integer`, a nullable one
    /// made not nullable).
    TypeNarrowed,
    /// A field must now be written (a new required field, or an old one made required).
    MadeRequired,
    /// Values of an enumeration are gone.
    EnumValueRemoved,
    /// A literal value that fitted the old schema does not fit the new one.
    NoLongerFits,
    /// A component is new.
    ComponentAdded,
    /// A port is new.
    PortAdded,
    /// An optional field is new.
    FieldAdded,
    /// A required field is optional now.
    MadeOptional,
    /// A field takes more types than before.
    TypeWidened,
    /// An enumeration has new values.
    EnumValueAdded,
}

impl ChangeKind {
    /// A short name (`field-removed`), as `--output json` writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            ChangeKind::ComponentRemoved => "component-removed",
            ChangeKind::PortRemoved => "port-removed",
            ChangeKind::FieldRemoved => "field-removed",
            ChangeKind::SettingsKeyRemoved => "settings-key-removed",
            ChangeKind::TypeNarrowed => "type-narrowed",
            ChangeKind::MadeRequired => "made-required",
            ChangeKind::EnumValueRemoved => "enum-value-removed",
            ChangeKind::NoLongerFits => "no-longer-fits",
            ChangeKind::ComponentAdded => "component-added",
            ChangeKind::PortAdded => "port-added",
            ChangeKind::FieldAdded => "field-added",
            ChangeKind::MadeOptional => "made-optional",
            ChangeKind::TypeWidened => "type-widened",
            ChangeKind::EnumValueAdded => "enum-value-added",
        }
    }

    /// The verdict on an input whose schema changed so, before looking at what is
    /// deployed.
    pub const fn verdict(self) -> Verdict {
        match self {
            ChangeKind::ComponentRemoved
            | ChangeKind::PortRemoved
            | ChangeKind::FieldRemoved
            | ChangeKind::SettingsKeyRemoved
            | ChangeKind::TypeNarrowed
            | ChangeKind::MadeRequired
            | ChangeKind::EnumValueRemoved
            | ChangeKind::NoLongerFits => Verdict::Breaking,
            _ => Verdict::Compatible,
        }
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One difference between two builds' components, found by [`schema_changes`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// The component.
    pub component: String,
    /// The port, unless the whole component changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// `true` when the port is an output.
    pub output: bool,
    /// JSON pointer of the field in the port's messages (`/user/name`; `*` is every
    /// item of an array); `None` for the port itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What changed.
    pub kind: ChangeKind,
    /// For [`ChangeKind::EnumValueRemoved`], the values the new build takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Value>>,
    /// For [`ChangeKind::TypeNarrowed`], the types the new build takes (`None`: any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<String>>,
    /// What changed, in words.
    pub message: String,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: component `{}`", self.kind.verdict(), self.component)?;
        if let Some(port) = &self.port {
            write!(f, ", port `{port}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field `{field}`")?;
        }
        write!(f, ": {} [{}]", self.message, self.kind)
    }
}

/// What a deployed edge or node setting meets in the new build, found by
/// [`check_upgrade`]. `Display` gives one line naming flow, node, edge, port and field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// Breaking or compatible.
    pub verdict: Verdict,
    /// The flow the edge or node belongs to.
    pub flow: String,
    /// The node of this module whose port is concerned (an edge's target; for an
    /// output, the edge's source).
    pub node: String,
    /// The edge's id, when an edge is concerned (not a node's own settings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<String>,
    /// The edge's source, `<node>:<port>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The edge's target, `<node>:<port>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// The port of `node`.
    pub port: String,
    /// JSON pointer of the field concerned, in the port's messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The change behind it.
    pub kind: ChangeKind,
    /// What happens to the deployed configuration, in words.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: flow `{}`, node `{}`", self.verdict, self.flow, self.node)?;
        if let Some(edge) = &self.edge {
            write!(f, ", edge `{edge}`")?;
            match (&self.from, &self.to) {
                (Some(from), _) if !from.starts_with(&format!("{}:", self.node)) => write!(f, " from `{from}`")?,
                (_, Some(to)) => write!(f, " to `{to}`")?,
                _ => {}
            }
        }
        write!(f, ", port `{}`", self.port)?;
        if let Some(field) = &self.field {
            write!(f, ", field `{field}`")?;
        }
        write!(f, ": {} [{}]", self.message, self.kind)
    }
}

/// Every difference between the components `old` and `new` publish, component by
/// component and port by port, in `old`'s order (what `new` adds last). Inputs and
/// outputs are compared alike; which changes break depends on what is deployed,
/// which [`check_upgrade`] weighs.
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
fn new_port<'a>(new: &'a ComponentSchema, old: &PortSchema) -> Option<&'a PortSchema> {
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

fn type_of(v: &Value) -> &'static str {
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
fn covered(t: &str, types: &BTreeSet<String>) -> bool {
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

/// The tokens of a JSON pointer, unescaped.
fn tokens(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// What a configuration writes at a field.
enum Written<'v> {
    /// Nothing.
    Nothing,
    /// Literal values (one per array item where the pointer has `*`).
    Literal(Vec<&'v Value>),
    /// A `{{...}}` expression at the field itself.
    Expression,
    /// An expression above the field (`"{{$}}"` for the whole message): what it
    /// holds is known only when a message arrives.
    Unknown,
}

fn written<'v>(config: &'v Value, pointer: &str) -> Written<'v> {
    let mut here = vec![config];
    for token in tokens(pointer) {
        if here.iter().any(|v| is_expression(v)) {
            return Written::Unknown;
        }
        here = here
            .into_iter()
            .flat_map(|v| -> Vec<&'v Value> {
                match (v, token.as_str()) {
                    (Value::Array(items), "*") => items.iter().collect(),
                    (Value::Object(fields), t) => fields.get(t).into_iter().collect(),
                    _ => Vec::new(),
                }
            })
            .collect();
        if here.is_empty() {
            return Written::Nothing;
        }
    }
    if here.iter().any(|v| is_expression(v)) {
        Written::Expression
    } else {
        Written::Literal(here)
    }
}

fn is_expression(value: &Value) -> bool {
    value.as_str().is_some_and(|s| s.contains("{{"))
}

/// The parent of a pointer (`/a/b` is in `/a`; `/a` in the root, `""`).
fn parent(pointer: &str) -> &str {
    pointer.rfind('/').map_or("", |i| &pointer[..i])
}

/// Whether a misfit's pointer (`/tags/0/name`) is at a change's (`/tags/*/name`).
fn same_place(misfit: &str, change: &str) -> bool {
    let (m, c) = (tokens(misfit), tokens(change));
    m.len() == c.len() && m.iter().zip(&c).all(|(m, c)| c == "*" || m == c)
}

/// One configured port of a deployed node: its settings or an edge's mapping.
struct Use<'a> {
    node: &'a Node,
    port: &'a str,
    /// The edge's id, source and flow, for an edge.
    edge: Option<(&'a str, String, &'a str)>,
    config: Option<&'a Value>,
    flow_id: &'a str,
}

/// Weighs every change from `old` to `new` (the components this module published,
/// and this build's) against what is deployed: the edges that reach a node of
/// `module` (whose mappings, on the target's `ports[]`, write the port's fields), the
/// nodes' own port configurations and settings, and the edges that leave a node of
/// `module` (a removed output, or a field of it an edge's expression reads:
/// `{{$.field}}`). `nodes` are every node of the namespace: an edge to this module
/// may leave another module's node.
///
/// A change is breaking for a configuration that meets it: a removed field it
/// writes, a field made required that it does not write, a narrowed type or a
/// removed enumeration value where it writes an expression (whose result is not
/// known before a message arrives) or a literal that no longer fits, a removed
/// port it configures or an edge to one. Where an expression stands for a whole
/// object (`"{{$}}"`), the fields inside it cannot be checked and are not reported.
/// Compatible changes (a new optional field, a field made optional, a wider type)
/// are reported for the configurations that meet them. Findings come in the order of
/// `nodes`.
///
/// ```
/// use serde_json::json;
/// use tiny_sdk::flow::{ComponentSchema, FlowBuilder, PortSchema, Verdict, check_upgrade};
///
/// let build = |fields: serde_json::Value| vec![ComponentSchema {
///     name: "echo".into(),
///     ports: vec![
///         PortSchema::new("in", false, json!({"type": "object", "properties": fields})),
///         PortSchema::new("out", true, json!({"type": "object"})),
///     ],
/// }];
/// let old = build(json!({"name": {"type": "string"}, "title": {"type": "string"}}));
/// let new = build(json!({"name": {"type": "string"}}));
/// let flow = FlowBuilder::new()
///     .node("f.qa.echo-a", "echo")
///     .node("f.qa.echo-b", "echo")
///     .edge("f.qa.echo-a:out", "f.qa.echo-b:in", json!({"title": "Dr"}))
///     .build();
/// let findings = check_upgrade(&flow.nodes, "qa", &old, &new);
/// assert_eq!(findings.len(), 1);
/// assert_eq!(findings[0].verdict, Verdict::Breaking);
/// assert!(findings[0].to_string().starts_with(
///     "breaking: flow `flow`, node `f.qa.echo-b`, edge `f.qa.echo-a:out->f.qa.echo-b:in` from `f.qa.echo-a:out`, \
///      port `in`, field `/title`"
/// ));
/// ```
pub fn check_upgrade(nodes: &[Node], module: &str, old: &[ComponentSchema], new: &[ComponentSchema]) -> Vec<Finding> {
    let changes = schema_changes(old, new);
    let mut out = Vec::new();
    for node in nodes.iter().filter(|n| owned(n, module)) {
        let component = &node.spec.component;
        let Some(oc) = old.iter().find(|c| &c.name == component) else {
            // Not published before: nothing deployed was accepted by an old schema.
            continue;
        };
        let Some(nc) = new.iter().find(|c| &c.name == component) else {
            out.push(finding(
                node,
                None,
                "",
                None,
                ChangeKind::ComponentRemoved,
                format!("the new build has no component `{component}`"),
            ));
            continue;
        };
        for u in uses(nodes, node) {
            inputs(&u, oc, nc, &changes, &mut out);
        }
        outputs(nodes, node, &changes, &mut out);
    }
    out
}

/// Whether `node` is one of `module`'s, as the module's controller decides.
fn owned(node: &Node, module: &str) -> bool {
    match parse_node_name(&node.name) {
        Some((m, _)) => module_matches(m, module),
        None => module_matches(&node.spec.module, module),
    }
}

/// The configured ports of `node`: its own configurations, and each edge that
/// reaches it with the mapping written for it.
fn uses<'a>(nodes: &'a [Node], node: &'a Node) -> Vec<Use<'a>> {
    let mut out: Vec<Use<'a>> = node
        .spec
        .ports
        .iter()
        .filter(|pc| pc.from.is_empty())
        .map(|pc| Use {
            node,
            port: &pc.port,
            edge: None,
            config: pc.configuration.as_ref().map(|c| c.value()),
            flow_id: &pc.flow_id,
        })
        .collect();
    for sender in nodes {
        for e in &sender.spec.edges {
            let Ok(to) = PortAddress::parse(&e.to) else {
                continue;
            };
            if to.node != node.name {
                continue;
            }
            let from = format!("{}:{}", sender.name, e.port);
            let mapping = node.spec.ports.iter().find(|pc| pc.from == from && pc.port == to.port);
            out.push(Use {
                node,
                port: e.to.rsplit_once(':').map_or("", |(_, p)| p),
                edge: Some((&e.id, from, &e.flow_id)),
                config: mapping.and_then(|m| m.configuration.as_ref()).map(|c| c.value()),
                flow_id: mapping.map_or("", |m| m.flow_id.as_str()),
            });
        }
    }
    out
}

/// The flow a node or edge belongs to: the edge's or configuration's `flowID`, the
/// node's flow label, or the first part of its name.
fn flow_of(node: &Node, ids: &[&str]) -> String {
    ids.iter()
        .find(|id| !id.is_empty())
        .map(|id| (*id).to_owned())
        .or_else(|| node.labels.get(label::FLOW_NAME).cloned())
        .unwrap_or_else(|| node.name.split('.').next().unwrap_or_default().to_owned())
}

/// A finding on `node`'s `port`; `edge` is the edge's id, source and `flowID`.
fn finding(
    node: &Node,
    edge: Option<(&str, &str, &str)>,
    port: &str,
    field: Option<String>,
    kind: ChangeKind,
    message: String,
) -> Finding {
    Finding {
        verdict: kind.verdict(),
        flow: flow_of(node, &[edge.map_or("", |(_, _, f)| f)]),
        node: node.name.clone(),
        edge: edge.map(|(id, _, _)| id.to_owned()),
        from: edge.map(|(_, from, _)| from.to_owned()),
        to: edge.map(|_| format!("{}:{port}", node.name)),
        port: port.to_owned(),
        field,
        kind,
        message,
    }
}

/// What one configured input of a deployed node meets in the new build.
fn inputs(u: &Use<'_>, old: &ComponentSchema, new: &ComponentSchema, changes: &[Change], out: &mut Vec<Finding>) {
    let Some(old_port) = old.port(u.port).filter(|p| !p.source) else {
        return;
    };
    let edge = u.edge.as_ref().map(|(id, from, flow)| (*id, from.as_str(), *flow));
    let place = match (&u.edge, u.port) {
        (Some(_), _) => "the edge's mapping",
        (None, system::SETTINGS) => "the node's settings",
        (None, _) => "the port's configuration",
    };
    let push = |out: &mut Vec<Finding>, field: Option<String>, kind: ChangeKind, verdict: Verdict, message: String| {
        let mut f = finding(u.node, edge, u.port, field, kind, message);
        f.verdict = verdict;
        f.flow = flow_of(u.node, &[edge.map_or("", |(_, _, f)| f), u.flow_id]);
        out.push(f);
    };
    let start = out.len();
    let empty = Value::Object(Map::new());
    let config = u.config.unwrap_or(&empty);
    let mut changed = false;
    for c in changes
        .iter()
        .filter(|c| c.component == old.name && c.port.as_deref() == Some(old_port.name.as_str()))
    {
        changed = true;
        let met = match &c.field {
            None if c.kind == ChangeKind::PortRemoved => {
                Some((Verdict::Breaking, format!("{}; {place} leads to it", c.message)))
            }
            None => None,
            Some(field) => meets(c, field, config, place),
        };
        if let Some((verdict, message)) = met {
            push(out, c.field.clone().filter(|f| !f.is_empty()), c.kind, verdict, message);
        }
    }
    // A literal that fitted the old schema and does not fit the new one, where no
    // change above said why (an `additionalProperties` closed, a `const`).
    if let (Some(config), Some(new_port), true) = (u.config, new_port(new, old_port), changed) {
        no_longer_fits(&old_port.schema, &new_port.schema, config, place, start, &push, out);
    }
}

/// The verdict on a configuration (`place`) that meets change `c` at `field` (`""`:
/// the whole message), and why; `None` when the change does not concern it.
fn meets(c: &Change, field: &str, config: &Value, place: &str) -> Option<(Verdict, String)> {
    let w = written(config, field);
    match c.kind {
        ChangeKind::FieldRemoved | ChangeKind::SettingsKeyRemoved => {
            matches!(w, Written::Literal(_) | Written::Expression).then(|| {
                (
                    Verdict::Breaking,
                    format!("{place} writes the field, which the new build does not have"),
                )
            })
        }
        ChangeKind::MadeRequired => {
            // A required field inside an object the configuration does not write
            // literally is not its to write.
            let parent_written =
                parent(field).is_empty() || matches!(written(config, parent(field)), Written::Literal(_));
            (parent_written && matches!(w, Written::Nothing)).then(|| {
                (
                    Verdict::Breaking,
                    format!("{} in the new build; {place} does not write it", c.message),
                )
            })
        }
        ChangeKind::TypeNarrowed | ChangeKind::EnumValueRemoved => match w {
            Written::Expression => Some((
                Verdict::Breaking,
                format!(
                    "{}; {place} writes an expression whose result fitted the old schema",
                    c.message
                ),
            )),
            Written::Literal(values) => {
                let bad: Vec<String> = values.iter().filter(|v| !fits(c, v)).map(|v| v.to_string()).collect();
                Some(if bad.is_empty() {
                    (
                        Verdict::Compatible,
                        format!("{}; what {place} writes still fits", c.message),
                    )
                } else {
                    (
                        Verdict::Breaking,
                        format!("{}; {place} writes {}", c.message, bad.join(", ")),
                    )
                })
            }
            Written::Nothing | Written::Unknown => None,
        },
        ChangeKind::FieldAdded => Some((Verdict::Compatible, c.message.clone())),
        ChangeKind::MadeOptional | ChangeKind::TypeWidened | ChangeKind::EnumValueAdded => {
            (!matches!(w, Written::Nothing)).then(|| (Verdict::Compatible, c.message.clone()))
        }
        _ => None,
    }
}

/// Whether a literal `v` still fits a narrowed type or enumeration `c`.
fn fits(c: &Change, v: &Value) -> bool {
    match c.kind {
        ChangeKind::TypeNarrowed => c
            .types
            .as_ref()
            .is_none_or(|ts| covered(type_of(v), &ts.iter().cloned().collect())),
        _ => c.allowed.as_ref().is_none_or(|a| a.contains(v)),
    }
}

/// What of a literal `config` fitted `old` and does not fit `new`, where no finding
/// since `start` said so at the same field.
fn no_longer_fits(
    old: &Value,
    new: &Value,
    config: &Value,
    place: &str,
    start: usize,
    push: &impl Fn(&mut Vec<Finding>, Option<String>, ChangeKind, Verdict, String),
    out: &mut Vec<Finding>,
) {
    let before: Vec<String> = fit::misfits(old, config).into_iter().map(|m| m.pointer).collect();
    for m in fit::misfits(new, config) {
        if before.contains(&m.pointer) {
            continue;
        }
        let said = out[start..]
            .iter()
            .any(|f| f.verdict == Verdict::Breaking && f.field.as_deref().is_some_and(|p| same_place(&m.pointer, p)));
        if !said {
            let field = (!m.pointer.is_empty()).then_some(m.pointer);
            push(
                out,
                field,
                ChangeKind::NoLongerFits,
                Verdict::Breaking,
                format!("{} ({place}; it fitted the old schema)", m.message),
            );
        }
    }
}

/// The edges leaving `node`: to a removed output, or reading a field of it that the
/// new build no longer emits as before.
fn outputs(nodes: &[Node], node: &Node, changes: &[Change], out: &mut Vec<Finding>) {
    for e in &node.spec.edges {
        let edge = Some((e.id.as_str(), "", e.flow_id.as_str()));
        let mine = changes.iter().filter(|c| {
            c.output && c.component == node.spec.component && c.port.as_deref().is_some_and(|p| p == e.port)
        });
        let target = PortAddress::parse(&e.to).ok();
        let mapping = target.as_ref().and_then(|to| {
            let from = format!("{}:{}", node.name, e.port);
            nodes
                .iter()
                .find(|n| n.name == to.node)
                .and_then(|n| n.spec.ports.iter().find(|pc| pc.from == from && pc.port == to.port))
                .and_then(|pc| pc.configuration.as_ref())
                .map(|c| c.value())
        });
        for c in mine {
            let mut f = match (c.kind, &c.field) {
                (ChangeKind::PortRemoved, _) => finding(
                    node,
                    edge,
                    &e.port,
                    None,
                    c.kind,
                    format!("{}; edge `{}` leaves it", c.message, e.id),
                ),
                (ChangeKind::FieldRemoved | ChangeKind::TypeNarrowed, Some(field))
                    if mapping.is_some_and(|m| reads(m, field)) =>
                {
                    finding(
                        node,
                        edge,
                        &e.port,
                        Some(field.clone()),
                        c.kind,
                        format!("{}; the mapping of edge `{}` reads it", c.message, e.id),
                    )
                }
                _ => continue,
            };
            f.from = Some(format!("{}:{}", node.name, e.port));
            f.to = Some(e.to.clone());
            out.push(f);
        }
    }
}

/// Whether an expression of `mapping` reads `field` (`/user/name` as `$.user.name`).
fn reads(mapping: &Value, field: &str) -> bool {
    let path: Vec<String> = tokens(field);
    if path.iter().any(|t| t == "*") {
        return false;
    }
    let needle = format!("$.{}", path.join("."));
    let mut found = false;
    visit_strings(mapping, &mut |s| {
        let mut rest = s;
        while let Some(i) = rest.find(&needle) {
            let after = rest[i + needle.len()..].chars().next();
            if !after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                found = true;
            }
            rest = &rest[i + needle.len()..];
        }
    });
    found
}

fn visit_strings(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| visit_strings(v, f)),
        Value::Object(fields) => fields.values().for_each(|v| visit_strings(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::flow::FlowBuilder;

    /// Component `greet` of module `qa`: input `in` of `input`'s fields (required
    /// `required`), settings of `settings`' fields, output `out` of `output`'s fields;
    /// in the derive's shape (`$ref` into `$defs`).
    fn build(input: Value, required: &[&str], settings: Value, output: Value) -> Vec<ComponentSchema> {
        let wrap = |name: &str, fields: Value, required: &[&str]| {
            json!({"$ref": format!("#/$defs/{name}"), "$defs": {
                name: {"type": "object", "properties": fields, "required": required},
                "Context": {"configurable": true}
            }})
        };
        vec![ComponentSchema {
            name: "greet".into(),
            ports: vec![
                PortSchema::new("_settings", false, wrap("Settings", settings, &[])),
                PortSchema::new("in", false, wrap("In", input, required)),
                PortSchema::new("out", true, wrap("Out", output, &[])),
            ],
        }]
    }

    fn input(fields: Value, required: &[&str]) -> Vec<ComponentSchema> {
        build(
            fields,
            required,
            json!({"word": {"type": "string"}}),
            json!({"text": {"type": "string"}}),
        )
    }

    fn old() -> Vec<ComponentSchema> {
        input(
            json!({
                "context": {"$ref": "#/$defs/Context"},
                "name": {"type": "string"},
                "title": {"type": "string"},
                "count": {"type": "number"},
                "mode": {"enum": ["a", "b"]},
                "note": {"type": ["string", "null"]}
            }),
            &["name"],
        )
    }

    /// A deployed flow: `sender:out` -> `greet-1:in` with `mapping`, and greet-1's settings.
    fn deployed(mapping: Value, settings: Value) -> Vec<Node> {
        FlowBuilder::new()
            .module("qa")
            .node("f.other-v0.sender-1", "sender")
            .node("f.qa.greet-1", "greet")
            .settings(settings)
            .node("f.other-v0.sink-1", "sink")
            .edge("f.other-v0.sender-1:out", "f.qa.greet-1:in", mapping)
            .edge(
                "f.qa.greet-1:out",
                "f.other-v0.sink-1:in",
                json!({"said": "{{$.text}}"}),
            )
            .build()
            .nodes
    }

    fn check(mapping: Value, new: &[ComponentSchema]) -> Vec<Finding> {
        check_upgrade(&deployed(mapping, json!({"word": "hi"})), "qa", &old(), new)
    }

    /// `(verdict, kind, field)` of each finding.
    fn brief(findings: &[Finding]) -> Vec<(Verdict, ChangeKind, String)> {
        findings
            .iter()
            .map(|f| (f.verdict, f.kind, f.field.clone().unwrap_or_default()))
            .collect()
    }

    fn without(field: &str) -> Value {
        let mut fields = json!({
            "context": {"$ref": "#/$defs/Context"},
            "name": {"type": "string"},
            "title": {"type": "string"},
            "count": {"type": "number"},
            "mode": {"enum": ["a", "b"]},
            "note": {"type": ["string", "null"]}
        });
        fields.as_object_mut().expect("an object").remove(field);
        fields
    }

    fn with(field: &str, schema: Value) -> Value {
        let mut fields = without(field);
        fields.as_object_mut().expect("an object").insert(field.into(), schema);
        fields
    }

    #[test]
    fn the_same_build_changes_nothing() {
        assert!(schema_changes(&old(), &old()).is_empty());
        assert!(check(json!({"name": "{{$.who}}", "title": "Dr"}), &old()).is_empty());
    }

    #[test]
    fn a_removed_field_an_edge_writes_breaks_it_and_names_flow_node_edge_port_and_field() {
        let new = input(without("title"), &["name"]);
        let f = check(json!({"name": "{{$.who}}", "title": "Dr"}), &new);
        assert_eq!(
            brief(&f),
            [(Verdict::Breaking, ChangeKind::FieldRemoved, "/title".into())]
        );
        assert_eq!(f[0].flow, "flow");
        assert_eq!(f[0].edge.as_deref(), Some("f.other-v0.sender-1:out->f.qa.greet-1:in"));
        assert_eq!(
            f[0].to_string(),
            "breaking: flow `flow`, node `f.qa.greet-1`, edge `f.other-v0.sender-1:out->f.qa.greet-1:in` from \
             `f.other-v0.sender-1:out`, port `in`, field `/title`: the edge's mapping writes the field, which the \
             new build does not have [field-removed]"
        );
        // An edge that does not write it is not concerned; nor one that passes a whole
        // message, whose fields are not known before it arrives.
        assert!(check(json!({"name": "x"}), &new).is_empty());
        assert!(check(json!("{{$}}"), &new).is_empty());
    }

    #[test]
    fn a_renamed_field_is_the_old_name_removed_and_the_new_one_added() {
        let new = input(
            {
                let mut f = without("title");
                f["honorific"] = json!({"type": "string"});
                f
            },
            &["name"],
        );
        let f = check(json!({"name": "x", "title": "Dr"}), &new);
        assert_eq!(
            brief(&f),
            [
                (Verdict::Breaking, ChangeKind::FieldRemoved, "/title".into()),
                (Verdict::Compatible, ChangeKind::FieldAdded, "/honorific".into()),
            ]
        );
    }

    #[test]
    fn a_narrowed_type_breaks_an_expression_and_a_literal_that_no_longer_fits() {
        let new = input(with("count", json!({"type": "integer"})), &["name"]);
        let changes = schema_changes(&old(), &new);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].kind, ChangeKind::TypeNarrowed);
        assert_eq!(
            brief(&check(json!({"name": "x", "count": "{{$.n}}"}), &new)),
            [(Verdict::Breaking, ChangeKind::TypeNarrowed, "/count".into())]
        );
        assert_eq!(
            brief(&check(json!({"name": "x", "count": 1.5}), &new)),
            [(Verdict::Breaking, ChangeKind::TypeNarrowed, "/count".into())]
        );
        assert_eq!(
            brief(&check(json!({"name": "x", "count": 2}), &new)),
            [(Verdict::Compatible, ChangeKind::TypeNarrowed, "/count".into())]
        );
        // A nullable field made not nullable.
        let new = input(with("note", json!({"type": "string"})), &["name"]);
        assert_eq!(
            brief(&check(json!({"name": "x", "note": null}), &new)),
            [(Verdict::Breaking, ChangeKind::TypeNarrowed, "/note".into())]
        );
    }

    #[test]
    fn a_field_made_required_breaks_the_edges_that_do_not_write_it() {
        let new = input(without(""), &["name", "title"]);
        assert_eq!(
            brief(&check(json!({"name": "x"}), &new)),
            [(Verdict::Breaking, ChangeKind::MadeRequired, "/title".into())]
        );
        assert!(check(json!({"name": "x", "title": "{{$.t}}"}), &new).is_empty());
        // A new required field too.
        let new = input(with("lang", json!({"type": "string"})), &["name", "lang"]);
        assert_eq!(
            brief(&check(json!({"name": "x"}), &new)),
            [(Verdict::Breaking, ChangeKind::MadeRequired, "/lang".into())]
        );
    }

    #[test]
    fn a_removed_enum_value_breaks_the_edges_that_write_it() {
        let new = input(with("mode", json!({"enum": ["a"]})), &["name"]);
        assert_eq!(
            brief(&check(json!({"name": "x", "mode": "b"}), &new)),
            [(Verdict::Breaking, ChangeKind::EnumValueRemoved, "/mode".into())]
        );
        // A value kept still fits.
        assert_eq!(
            brief(&check(json!({"name": "x", "mode": "a"}), &new)),
            [(Verdict::Compatible, ChangeKind::EnumValueRemoved, "/mode".into())]
        );
        // As the derive writes a documented enum: alternatives of `const`.
        let new = input(
            with("mode", json!({"oneOf": [{"const": "a"}, {"const": "c"}]})),
            &["name"],
        );
        assert_eq!(
            brief(&check(json!({"name": "x", "mode": "b"}), &new)),
            [(Verdict::Breaking, ChangeKind::EnumValueRemoved, "/mode".into())]
        );
    }

    #[test]
    fn a_removed_port_breaks_the_edges_to_it_and_from_it() {
        let mut new = old();
        new[0].ports.retain(|p| p.name == "_settings");
        let f = check(json!({"name": "x"}), &new);
        let kinds: Vec<(Verdict, ChangeKind, String, Option<String>)> = f
            .iter()
            .map(|f| (f.verdict, f.kind, f.port.clone(), f.edge.clone()))
            .collect();
        assert_eq!(
            kinds,
            [
                (
                    Verdict::Breaking,
                    ChangeKind::PortRemoved,
                    "in".into(),
                    Some("f.other-v0.sender-1:out->f.qa.greet-1:in".into())
                ),
                (
                    Verdict::Breaking,
                    ChangeKind::PortRemoved,
                    "out".into(),
                    Some("f.qa.greet-1:out->f.other-v0.sink-1:in".into())
                ),
            ]
        );
        // A removed component breaks its nodes.
        let gone = check_upgrade(&deployed(json!({}), json!({})), "qa", &old(), &[]);
        assert_eq!(
            brief(&gone),
            [(Verdict::Breaking, ChangeKind::ComponentRemoved, String::new())]
        );
    }

    #[test]
    fn a_settings_key_gone_breaks_the_nodes_that_set_it() {
        let new = build(
            without(""),
            &["name"],
            json!({"greeting": {"type": "string"}}),
            json!({"text": {"type": "string"}}),
        );
        let mut old_with_title = old();
        old_with_title[0].ports[1] = new[0].ports[1].clone();
        let nodes = deployed(json!({"name": "x"}), json!({"word": "hi"}));
        let f = check_upgrade(&nodes, "qa", &old_with_title, &new);
        assert_eq!(
            brief(&f),
            [
                (Verdict::Breaking, ChangeKind::SettingsKeyRemoved, "/word".into()),
                (Verdict::Compatible, ChangeKind::FieldAdded, "/greeting".into()),
            ]
        );
        assert!(f[0].edge.is_none());
        assert!(
            f[0].to_string().contains("the node's settings writes the field"),
            "{}",
            f[0]
        );
        // A node that never set it is not concerned (but gets the new key).
        let nodes = deployed(json!({"name": "x"}), json!({}));
        let f = check_upgrade(&nodes, "qa", &old_with_title, &new);
        assert_eq!(
            brief(&f),
            [(Verdict::Compatible, ChangeKind::FieldAdded, "/greeting".into())]
        );
    }

    #[test]
    fn an_output_field_an_edge_reads_breaks_that_edge_when_removed() {
        let new = build(
            without(""),
            &["name"],
            json!({"word": {"type": "string"}}),
            json!({"words": {"type": "string"}}),
        );
        let mut base = old();
        base[0].ports[1] = new[0].ports[1].clone();
        let f = check_upgrade(&deployed(json!({"name": "x"}), json!({})), "qa", &base, &new);
        assert_eq!(
            brief(&f),
            [(Verdict::Breaking, ChangeKind::FieldRemoved, "/text".into())]
        );
        assert_eq!(f[0].to.as_deref(), Some("f.other-v0.sink-1:in"));
        assert!(reads(&json!({"a": "{{$.text}}"}), "/text"));
        assert!(!reads(&json!({"a": "{{$.texts}}"}), "/text"));
    }

    #[test]
    fn compatible_changes_say_so_for_what_meets_them() {
        // An optional field added, a required one made optional, a type widened.
        let new = input(
            {
                let mut f = with("count", json!({"type": ["number", "string"]}));
                f["lang"] = json!({"type": "string"});
                f
            },
            &[],
        );
        let f = check(json!({"name": "x", "count": 3}), &new);
        assert_eq!(
            brief(&f),
            [
                (Verdict::Compatible, ChangeKind::MadeOptional, "/name".into()),
                (Verdict::Compatible, ChangeKind::TypeWidened, "/count".into()),
                (Verdict::Compatible, ChangeKind::FieldAdded, "/lang".into()),
            ]
        );
        // integer inside number: widening, never narrowing.
        let int = input(with("count", json!({"type": "integer"})), &["name"]);
        let changes = schema_changes(&int, &old());
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].kind, ChangeKind::TypeWidened);
    }

    #[test]
    fn a_literal_that_no_longer_fits_for_another_reason_is_breaking() {
        // `additionalProperties: false` on a free-form field.
        let new = input(
            with(
                "context",
                json!({"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": false}),
            ),
            &["name"],
        );
        let f = check(json!({"name": "x", "context": {"trace": 1}}), &new);
        assert!(
            f.iter().any(|f| f.verdict == Verdict::Breaking
                && f.kind == ChangeKind::NoLongerFits
                && f.field.as_deref() == Some("/context/trace")),
            "{f:#?}"
        );
    }

    #[test]
    fn a_whole_message_of_fewer_types_breaks_an_edge_that_passes_one_on() {
        let port = |schema: Value| {
            vec![ComponentSchema {
                name: "greet".into(),
                ports: vec![PortSchema::new("in", false, schema)],
            }]
        };
        let old = port(json!({"type": ["object", "string"]}));
        let new = port(json!({"type": "object"}));
        let nodes = |mapping: Value| {
            FlowBuilder::new()
                .node("f.other-v0.sender-1", "sender")
                .node("f.qa.greet-1", "greet")
                .edge("f.other-v0.sender-1:out", "f.qa.greet-1:in", mapping)
                .build()
                .nodes
        };
        let f = check_upgrade(&nodes(json!("{{$.text}}")), "qa", &old, &new);
        assert_eq!(
            brief(&f),
            [(Verdict::Breaking, ChangeKind::TypeNarrowed, String::new())]
        );
        assert!(f[0].field.is_none());
        let f = check_upgrade(&nodes(json!({"a": 1})), "qa", &old, &new);
        assert_eq!(
            brief(&f),
            [(Verdict::Compatible, ChangeKind::TypeNarrowed, String::new())]
        );
    }

    #[test]
    fn nodes_of_other_modules_are_left_alone() {
        let new = input(without("title"), &["name"]);
        let nodes = deployed(json!({"title": "Dr"}), json!({}));
        assert!(check_upgrade(&nodes, "other-v0", &old(), &new).is_empty());
        assert_eq!(check_upgrade(&nodes, "qa", &old(), &new).len(), 1);
    }
}

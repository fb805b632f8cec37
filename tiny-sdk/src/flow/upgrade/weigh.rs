//! The weighing: what each change meets in the deployed nodes' edge mappings and
//! settings, breaking or compatible.

use serde_json::{Map, Value};

use super::{
    compare::{covered, new_port, schema_changes, type_of},
    findings::{Change, ChangeKind, Finding, Verdict},
};
use crate::{
    contract::{label, port as system},
    flow::{ComponentSchema, Node, PortAddress, fit, module_matches, parse_node_name},
};

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
        if here.iter().any(|v| fit::is_expression(v)) {
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
    if here.iter().any(|v| fit::is_expression(v)) {
        Written::Expression
    } else {
        Written::Literal(here)
    }
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
pub(super) fn reads(mapping: &Value, field: &str) -> bool {
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

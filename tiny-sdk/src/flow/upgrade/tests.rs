//! The comparison and the weighing, through `schema_changes` and `check_upgrade`.

use serde_json::{Value, json};

use super::{weigh::reads, *};
use crate::flow::{ComponentSchema, FlowBuilder, Node, PortSchema};

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
    // An edge out of the node is named with its target, not its source (the node itself).
    let text = f[0].to_string();
    assert!(text.contains("` to `f.other-v0.sink-1:in`, port `out`"), "{text}");
    assert!(!text.contains(" from `"), "{text}");
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

//! One snapshot per message shape: the editor schema `port_schema` gives, after
//! `ui_schema_tests::check` has passed on it.

use serde_json::{Map, Value, json};
use tiny_sdk::Component as _;
use ui_schema_tests::{check, editor_schema, shapes::*};

macro_rules! shape {
    ($($test:ident: $ty:ty;)*) => {$(
        #[test]
        fn $test() {
            insta::assert_json_snapshot!(editor_schema::<$ty>());
        }
    )*};
}

shape! {
    go_example_1: go_example_1::Request;
    hint_configurable: hint_configurable::Configurable;
    hint_shared: hint_shared::Shared;
    hint_title_description: hint_title_description::Titled;
    hint_default: hint_default::Defaults;
    hint_enum: hint_enum::Choices;
    hint_readonly_secret: hint_readonly_secret::Credentials;
    hint_format: hint_format::Formats;
    hint_layout: hint_layout::Layout;
    hint_property_order: hint_property_order::Ordered;
    hint_conditions: hint_conditions::Conditional;
    nested_structs: nested_structs::Order;
    array_of_structs: array_of_structs::Table;
    array_of_primitives: array_of_primitives::Lists;
    option_primitives: option_primitives::Optionals;
    option_structs: option_structs::Patch;
    unit_enum_plain: unit_enum_plain::Paint;
    unit_enum_titled: unit_enum_titled::Job;
    unit_enum_root: unit_enum_root::Switch;
    enum_external: enum_external::Command;
    enum_internal: enum_internal::Event;
    enum_adjacent: enum_adjacent::Envelope;
    enum_untagged: enum_untagged::Input;
    maps: maps::Maps;
    values: values::Values;
    serde_rename: serde_rename::Original;
    serde_rename_all: serde_rename_all::Settings;
    flatten: flatten::Message;
    container_default: container_default::Config;
    field_default: field_default::Fields;
    doc_comments: doc_comments::Documented;
    recursive_tree: recursive_tree::Tree;
    same_struct_twice: same_struct_twice::Transfer;
    newtype: newtype::Contact;
    newtype_root: newtype_root::Token;
    tuple_struct: tuple_struct::Segment;
    skip: skip::Skips;
    primitives: primitives::Primitives;
    name_clash: name_clash::Both;
    keyword_names: keyword_names::Keywords;
    map_keys: map_keys::Keyed;
    tuples: tuples::Tuples;
    recursive_enum: recursive_enum::Formula;
    option_root: option_root::Root;
    error_message: tiny_sdk::ErrorMessage;
}

/// Every port of the `examples/hello` component, with its response schema if any.
#[test]
fn hello_ports() {
    let mut ports = Map::new();
    for port in tiny_example_hello::Hello::ports() {
        let schema = (port.schema)();
        if let Err(problems) = check(&schema) {
            panic!("port `{}`: {problems:#?}", port.name);
        }
        let mut entry = json!({ "schema": schema });
        if let Some(response) = port.response_schema {
            let response = response();
            if let Err(problems) = check(&response) {
                panic!("response of port `{}`: {problems:#?}", port.name);
            }
            entry["response"] = response;
        }
        ports.insert(port.name.to_owned(), entry);
    }
    insta::assert_json_snapshot!(Value::Object(ports));
}

/// A port of `Msg` takes any message, as one of `serde_json::Value` does: the editor
/// sees the same schema.
#[test]
fn msg_is_any_json_value() {
    assert_eq!(editor_schema::<tiny_sdk::Msg>(), editor_schema::<Value>());
}

//! What the editor shows of `convert`, pinned: a change to a message type is a diff to
//! review, not a surprise in the editor.

use serde_json::json;
use tiny_example_guide::Convert;
use tiny_sdk::Component;

#[test]
fn the_editor_schema_is_the_reviewed_one() {
    let ports: Vec<_> = Convert::ports()
        .iter()
        .map(|p| json!({"port": p.name, "schema": (p.schema)(), "default": (p.default_config)()}))
        .collect();
    insta::assert_json_snapshot!("convert", ports);
}

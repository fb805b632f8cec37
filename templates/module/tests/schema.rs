//! What the editor shows of `greet`, pinned: each port's schema and the configuration
//! it starts with (what an edge without a mapping delivers). A change to a message
//! type shows up here as a diff to review; after a change you mean,
//! `INSTA_UPDATE=always cargo test --test schema` (or `cargo insta review`) updates it.

use my_module::Greet;
use serde_json::json;
use tiny_sdk::Component;

#[test]
fn the_editor_schema_is_the_reviewed_one() {
    let ports: Vec<_> = Greet::ports()
        .iter()
        .map(|p| json!({"port": p.name, "schema": (p.schema)(), "default": (p.default_config)()}))
        .collect();
    insta::assert_json_snapshot!("greet", ports);
}

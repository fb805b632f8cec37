//! Target `schema`: the rewrite of a JSON Schema into the editor's shape.
//!
//! Input: `schema [NUL root-name]`: a JSON (or YAML) schema, normally a schemars
//! root schema with `$defs`, and the name of the root definition.

use tiny_sdk::schema::editor_shape;

/// Rewrites the schema in `data`; any value must come back as some value.
pub fn run(data: &[u8]) {
    let (schema, name) = crate::split(data);
    let Some(schema) = crate::json_or_yaml(schema) else {
        return;
    };
    let name = name.and_then(|n| std::str::from_utf8(n).ok()).unwrap_or("Root");
    let shaped = editor_shape(name, schema);
    // The result is what the editor is sent: it must serialize.
    if let Err(e) = serde_json::to_vec(&shaped) {
        panic!("the editor shape does not serialize: {e}");
    }
}

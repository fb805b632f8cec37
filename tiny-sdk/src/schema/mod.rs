//! JSON Schemas in the shape the TinySystems editor reads.
//!
//! [`port_schema`] reflects a message type with `schemars` (which knows serde's
//! renames, flattening, defaults and enum representations) and rewrites the result
//! into the editor's shape, as the Go SDK's `CreateSchema` does:
//!
//! - the top level is only `{"$ref": "#/$defs/<Root>", "$defs": {...}}`;
//! - a property becomes its own definition, replaced by a `$ref`, when it is
//!   `configurable` or `shared`, an object (struct or map), or untyped
//!   (`serde_json::Value`, data-carrying enums); its hints move onto the definition;
//! - array items always become a definition named after the element type;
//! - every definition has a `path` (`$`, `$.context`, `$.items[0]`);
//! - every property has `propertyOrder`, its 1-based declaration index;
//! - unit enums become `enum` with `enumTitles`.
//!
//! Definitions are named after the Rust type (`HelloIn`), or after the field in
//! PascalCase when the type has no name (`context: Value` gives `Context`); a name
//! taken by a different definition gets a numeric suffix.

mod editor;

use serde_json::Value;

pub use editor::editor_shape;

/// The editor schema of `T`.
///
/// ```
/// use tiny_sdk::prelude::*;
///
/// #[derive(Serialize, Deserialize, Schema)]
/// struct Request {
///     /// Anything the caller wants back.
///     #[tiny(configurable)]
///     context: serde_json::Value,
///     #[tiny(format = "uri", title = "URL")]
///     url: String,
/// }
///
/// let s = tiny_sdk::schema::port_schema::<Request>();
/// assert_eq!(s["$ref"], "#/$defs/Request");
/// assert_eq!(s["$defs"]["Request"]["properties"]["url"]["propertyOrder"], 2);
/// assert_eq!(s["$defs"]["Context"]["configurable"], true);
/// assert_eq!(s["$defs"]["Context"]["path"], "$.context");
/// ```
pub fn port_schema<T: schemars::JsonSchema + ?Sized>() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.meta_schema = None)
        .into_generator();
    // Not `root_schema_for`: it titles the root with the type name, which the editor
    // would show as the form's heading.
    let mut root = T::json_schema(&mut generator).to_value();
    let defs = generator.take_definitions(true);
    if let Value::Object(map) = &mut root {
        map.insert("$defs".into(), Value::Object(defs));
    }
    editor_shape(&T::schema_name(), root)
}

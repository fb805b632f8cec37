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
//! - array items always become a definition named after the element type, and so do
//!   map values and tuple positions that are objects;
//! - every definition has a `path` (`$`, `$.context`, `$.items[0]`, `$.map[*]`);
//! - every property has `propertyOrder`, 1..n: a field with a `property_order` hint
//!   takes the place it asks for, and the others fill the places left in declaration
//!   order; the hint orders the property and never moves to a definition;
//! - unit enums become `enum` with `enumTitles`, in declaration order; a variant's
//!   title is its `title`, else its doc comment, else its value;
//! - an enum's variants stay inline in its `oneOf`/`anyOf` (a variant is the value
//!   at the enum's own path), with their fields extracted as above;
//! - `Option<T>` is optional through `required`; a primitive keeps schemars'
//!   `"type": [T, "null"]`, while an `Option` of a named type is a plain `$ref` (the
//!   editor's shape) and loses `null`, and with it a `"default": null`.
//!
//! Each position gets its own definition, so that a field's hints never leak to
//! another field of the same type and every `path` is exact. Definitions are named
//! after the Rust type (`HelloIn`, `String` for items), or after the field in
//! PascalCase when the type has no name (`context: Value` gives `Context`); a name
//! already used at another position gets a numeric suffix (`Account2`). A recursive
//! type refers back to the definition being expanded.

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

/// [`port_schema`] of `T`, built once per type and process: the port table's schemas
/// are read on every node load, status write and TinyModule publish, and the type
/// decides them alone. Settings-shaped ports ([`Hooks::shape_port`](crate::Hooks::shape_port),
/// `enabled_by`, port families) shape a copy of this base.
pub(crate) fn cached_port_schema<T: schemars::JsonSchema + ?Sized + 'static>() -> Value {
    use std::{
        any::TypeId,
        collections::HashMap,
        sync::{LazyLock, PoisonError, RwLock},
    };
    static CACHE: LazyLock<RwLock<HashMap<TypeId, Value>>> = LazyLock::new(RwLock::default);
    let key = TypeId::of::<T>();
    if let Some(schema) = CACHE.read().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return schema.clone();
    }
    // Built outside the lock: a schema of a type whose schema reads the cache (none
    // does today) cannot deadlock, and two threads building at once agree.
    let schema = port_schema::<T>();
    CACHE
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(key)
        .or_insert(schema)
        .clone()
}

/// The root definition of an editor schema (what its top-level `$ref` names), to
/// adjust it to settings in [`Hooks::shape_port`](crate::Hooks::shape_port).
pub fn root_mut(schema: &mut Value) -> Option<&mut Value> {
    let name = schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?.to_owned();
    schema.get_mut("$defs")?.get_mut(&name)
}

/// The definition at `path` (`$.conditions[0].route`), or the property schema when
/// the property has no definition of its own: where to set an enum or a default that
/// the settings decide.
///
/// ```
/// # use tiny_sdk::prelude::*;
/// #[derive(Serialize, Deserialize, Schema)]
/// struct Pick { route: String }
/// let mut s = tiny_sdk::schema::port_schema::<Pick>();
/// tiny_sdk::schema::at_path_mut(&mut s, "$.route").unwrap()["enum"] = serde_json::json!(["a", "b"]);
/// assert_eq!(s["$defs"]["Pick"]["properties"]["route"]["enum"][1], "b");
/// ```
pub fn at_path_mut<'a>(schema: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    // A definition that carries this path, when the property was extracted.
    let found = schema
        .get("$defs")?
        .as_object()?
        .iter()
        .find(|(_, d)| d.get("path").and_then(Value::as_str) == Some(path))
        .map(|(name, _)| name.clone());
    if let Some(name) = found {
        return schema.get_mut("$defs")?.get_mut(&name);
    }
    // Otherwise walk the properties from the root, following `$ref`s and items.
    let steps: Vec<String> = path
        .strip_prefix('$')?
        .split('.')
        .filter(|s| !s.is_empty())
        .map(|s| s.split('[').next().unwrap_or(s).to_owned())
        .collect();
    let (last, parents) = steps.split_last()?;
    let mut def = root_name(schema)?;
    for step in parents {
        let prop = schema.get("$defs")?.get(&def)?.get("properties")?.get(step)?;
        let target = prop.get("items").unwrap_or(prop);
        def = target.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?.to_owned();
    }
    schema
        .get_mut("$defs")?
        .get_mut(&def)?
        .get_mut("properties")?
        .get_mut(last)
}

fn root_name(schema: &Value) -> Option<String> {
    Some(schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?.to_owned())
}

/// Removes the root's properties that `keep` refuses (and their `required` entries):
/// how a `_control` view hides the button it does not show.
pub fn retain_properties(schema: &mut Value, keep: impl Fn(&str) -> bool) {
    let Some(root) = root_mut(schema) else { return };
    if let Some(Value::Object(props)) = root.get_mut("properties") {
        props.retain(|k, _| keep(k));
    }
    if let Some(Value::Array(required)) = root.get_mut("required") {
        required.retain(|k| k.as_str().is_none_or(&keep));
    }
}

#[cfg(test)]
mod tests {
    use super::{cached_port_schema, port_schema};
    use crate::ErrorMessage;

    /// The cache answers what a fresh build would, per type (and a shaped copy does
    /// not reach it).
    #[test]
    fn cached_schemas_are_the_fresh_ones() {
        assert_eq!(cached_port_schema::<ErrorMessage>(), port_schema::<ErrorMessage>());
        assert_eq!(cached_port_schema::<String>(), port_schema::<String>());
        let mut shaped = cached_port_schema::<ErrorMessage>();
        shaped["shaped"] = true.into();
        assert_eq!(cached_port_schema::<ErrorMessage>(), port_schema::<ErrorMessage>());
    }
}

//! Secrets stay out of everything tiny writes or prints.
//!
//! A field marked `#[tiny(secret)]` (its schema says `"secret": true`), or one whose
//! schema says `"format": "password"` or `"writeOnly": true` (the Go SDK's credential
//! tags), holds a secret. The component gets the real value; everything tiny writes
//! about the data (TinyNode status, TinyTracker previews, trace attributes, logs and
//! error messages) gets [`MASK`] in its place.
//!
//! [`Secrets`] is compiled once per port from its schema: where in a message the
//! secret fields are. A port without secret fields compiles to an empty set, which
//! costs nothing per message.
//!
//! What nobody declared is caught by name, as the Go SDK does: wherever tiny publishes
//! data (a port's configuration in the TinyNode status, so a debug node's view too; a
//! span's payload; what a tracker records), a string under a key that names a
//! credential by convention (`apiKey`, `client_secret`, `accessToken`, `password`,
//! `Authorization`, ...; see [`is_credential_key`]) is masked as well
//! ([`Secrets::mask_published`]). The flow itself still carries the values.
//!
//! ```
//! use serde_json::json;
//! use tiny_sdk::redact::{MASK, Secrets};
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {
//!         "user": { "type": "string" },
//!         "password": { "type": "string", "secret": true },
//!     }
//! });
//! let secrets = Secrets::from_schema(&schema);
//! let mut value = json!({"user": "ada", "password": "hunter22"});
//! secrets.mask(&mut value);
//! assert_eq!(value, json!({"user": "ada", "password": MASK}));
//! ```

use std::borrow::Cow;

use serde_json::Value;

/// What a secret value is replaced with (the Go SDK's).
pub const MASK: &str = "<redacted>";

/// Secret values shorter than this are not searched for in free text: masking every
/// `a` in an error message would hide the message, not the secret.
pub const MIN_SCRUB_LEN: usize = 4;

/// How deep `$ref`s are followed: a recursive type's schema ends somewhere.
const MAX_DEPTH: usize = 16;

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// An object's property.
    Key(String),
    /// Every item of an array, or every value of a map.
    Each,
}

/// Where a port's secret fields are, compiled from its schema, and the values known
/// to be secret wherever they appear (a node's resolved
/// [`[[secret:...]]`](crate::secret) placeholders).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    paths: Vec<Vec<Step>>,
    values: Vec<String>,
}

static NONE: Secrets = Secrets {
    paths: Vec::new(),
    values: Vec::new(),
};

impl Secrets {
    /// No secret fields.
    pub fn none() -> &'static Secrets {
        &NONE
    }

    /// The secret fields of values of `schema` (a JSON Schema as `#[derive(Schema)]`
    /// makes them: `properties`, `items`, `additionalProperties`, `anyOf`/`oneOf`/
    /// `allOf`, and `$ref` into `$defs` or `definitions`).
    pub fn from_schema(schema: &Value) -> Secrets {
        let mut paths = Vec::new();
        walk(schema, schema, &mut Vec::new(), &mut paths, 0);
        paths.sort_by_key(Vec::len);
        paths.dedup();
        Secrets {
            paths,
            values: Vec::new(),
        }
    }

    /// These secrets, and `values` wherever they appear: a string equal to one becomes
    /// [`MASK`], and one that contains one (at least [`MIN_SCRUB_LEN`] long) has it
    /// replaced, as [`scrub`] does.
    ///
    /// ```
    /// use serde_json::json;
    /// use tiny_sdk::redact::{MASK, Secrets};
    ///
    /// let secrets = Secrets::default().with_values(["s3cr3t".to_owned()]);
    /// let mut v = json!({"a": "s3cr3t", "b": ["s3cr3t, Ada!"], "c": "plain"});
    /// secrets.mask(&mut v);
    /// assert_eq!(v, json!({"a": MASK, "b": ["<redacted>, Ada!"], "c": "plain"}));
    /// ```
    #[must_use]
    pub fn with_values(mut self, values: impl IntoIterator<Item = String>) -> Self {
        for v in values {
            if !v.is_empty() && !self.values.contains(&v) {
                self.values.push(v);
            }
        }
        self
    }

    /// The values masked wherever they appear.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// `true` when there is nothing to mask.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty() && self.values.is_empty()
    }

    /// Replaces every secret in `value` with [`MASK`]; `true` if anything was.
    /// `null`, empty strings and `{{...}}` expressions at a secret field are left
    /// alone: they are not secrets, and an editor must still see where an expression
    /// goes.
    pub fn mask(&self, value: &mut Value) -> bool {
        let mut changed = false;
        for path in &self.paths {
            changed |= mask_at(value, path);
        }
        if !self.values.is_empty() {
            changed |= mask_values(value, &self.values);
        }
        changed
    }

    /// [`mask`](Self::mask), and every value under a credential-shaped key
    /// ([`mask_credential_keys`]): what tiny does to data before it publishes it.
    pub fn mask_published(&self, value: &mut Value) -> bool {
        self.mask(value) | mask_credential_keys(value)
    }

    /// `value` as [`mask_published`](Self::mask_published) leaves it; borrowed when
    /// there is nothing to mask.
    pub fn masked_published<'a>(&self, value: &'a Value) -> Cow<'a, Value> {
        if self.is_empty() && !has_credential_keys(value, false) {
            return Cow::Borrowed(value);
        }
        let mut copy = value.clone();
        self.mask_published(&mut copy);
        Cow::Owned(copy)
    }

    /// `value` with its secrets masked; borrowed when there are none.
    pub fn masked<'a>(&self, value: &'a Value) -> Cow<'a, Value> {
        if self.is_empty() {
            return Cow::Borrowed(value);
        }
        let mut copy = value.clone();
        if self.mask(&mut copy) {
            Cow::Owned(copy)
        } else {
            Cow::Borrowed(value)
        }
    }

    /// Adds the secret strings of `value` (at least [`MIN_SCRUB_LEN`] long) to `out`,
    /// for [`scrub`] to find in free text. Numbers and booleans are added as text too.
    pub fn collect(&self, value: &Value, out: &mut Vec<String>) {
        for path in &self.paths {
            collect_at(value, path, out);
        }
        for v in &self.values {
            push(out, v.clone());
        }
    }
}

/// Masks `values` in every string of `value`; `true` if anything was.
fn mask_values(value: &mut Value, values: &[String]) -> bool {
    match value {
        Value::String(s) => {
            if values.iter().any(|v| v == s) {
                *s = MASK.to_owned();
                return true;
            }
            let long: Vec<String> = values
                .iter()
                .filter(|v| v.chars().count() >= MIN_SCRUB_LEN)
                .cloned()
                .collect();
            match scrub(s, &long) {
                Cow::Owned(clean) => {
                    *s = clean;
                    true
                }
                Cow::Borrowed(_) => false,
            }
        }
        Value::Array(items) => items.iter_mut().fold(false, |c, v| mask_values(v, values) | c),
        Value::Object(map) => map.values_mut().fold(false, |c, v| mask_values(v, values) | c),
        _ => false,
    }
}

fn is_secret(schema: &Value) -> bool {
    schema.get("secret").and_then(Value::as_bool) == Some(true)
        || schema.get("writeOnly").and_then(Value::as_bool) == Some(true)
        || schema.get("format").and_then(Value::as_str) == Some("password")
}

/// Resolves a local `$ref` (`#/$defs/Name`, `#/definitions/Name`).
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(pointer)
}

fn walk(root: &Value, schema: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>, depth: usize) {
    if depth > MAX_DEPTH || !schema.is_object() {
        return;
    }
    if is_secret(schema) {
        out.push(at.clone());
        // Everything under a secret is masked with it.
        return;
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve(root, r))
    {
        walk(root, target, at, out, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(alternatives) = schema.get(key).and_then(Value::as_array) {
            for alternative in alternatives {
                walk(root, alternative, at, out, depth + 1);
            }
        }
    }
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            at.push(Step::Key(name.clone()));
            walk(root, property, at, out, depth + 1);
            at.pop();
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(inner) = schema.get(key).filter(|s| s.is_object()) {
            at.push(Step::Each);
            walk(root, inner, at, out, depth + 1);
            at.pop();
        }
    }
}

/// Whether a value at a secret's place is left as it is.
fn keep(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty() || is_expression(s),
        _ => false,
    }
}

fn is_expression(s: &str) -> bool {
    let t = s.trim();
    t.starts_with("{{") && t.ends_with("}}")
}

fn mask_at(value: &mut Value, path: &[Step]) -> bool {
    let Some((step, rest)) = path.split_first() else {
        if keep(value) {
            return false;
        }
        *value = Value::String(MASK.to_owned());
        return true;
    };
    match (step, value) {
        (Step::Key(k), Value::Object(map)) => map.get_mut(k).is_some_and(|v| mask_at(v, rest)),
        (Step::Each, Value::Array(items)) => items.iter_mut().fold(false, |c, v| mask_at(v, rest) | c),
        (Step::Each, Value::Object(map)) => map.values_mut().fold(false, |c, v| mask_at(v, rest) | c),
        _ => false,
    }
}

fn collect_at(value: &Value, path: &[Step], out: &mut Vec<String>) {
    let Some((step, rest)) = path.split_first() else {
        collect_leaves(value, out);
        return;
    };
    match (step, value) {
        (Step::Key(k), Value::Object(map)) => {
            if let Some(v) = map.get(k) {
                collect_at(v, rest, out);
            }
        }
        (Step::Each, Value::Array(items)) => items.iter().for_each(|v| collect_at(v, rest, out)),
        (Step::Each, Value::Object(map)) => map.values().for_each(|v| collect_at(v, rest, out)),
        _ => {}
    }
}

fn collect_leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if !keep(value) => push(out, s.clone()),
        Value::Number(n) => push(out, n.to_string()),
        Value::Array(items) => items.iter().for_each(|v| collect_leaves(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_leaves(v, out)),
        _ => {}
    }
}

fn push(out: &mut Vec<String>, s: String) {
    if s.chars().count() >= MIN_SCRUB_LEN && !out.contains(&s) {
        out.push(s);
    }
}

/// Parts of a key that name a credential by convention, matched in any case anywhere
/// in the key (the Go SDK's list), by their first letter (lower case): the scan then
/// compares only the names that can start where it stands.
fn credential_names(first: u8) -> &'static [&'static str] {
    match first {
        b'a' => &[
            "apikey",
            "api_key",
            "api-key",
            "authorization",
            "accesskey",
            "access_key",
            "access-key",
        ],
        b'b' => &["bearer"],
        b'c' => &["credential"],
        b'p' => &["passw", "privatekey", "private_key", "private-key"],
        b's' => &["secret"],
        b't' => &["token"],
        _ => &[],
    }
}

/// Whether an object key names a credential by convention: it holds (in any case)
/// `apiKey`, `secret`, `token`, `passw`, `authorization`, `bearer`, `credential`,
/// `privateKey` or `accessKey` (`_` or `-` between the words allowed).
///
/// ```
/// use tiny_sdk::redact::is_credential_key;
///
/// assert!(is_credential_key("X-Api-Key") && is_credential_key("refresh_token"));
/// assert!(!is_credential_key("name") && !is_credential_key("context"));
/// ```
pub fn is_credential_key(key: &str) -> bool {
    // One pass, comparing names only where one's first letter stands: a hop span's
    // `data` event runs this over a whole payload's JSON, and a window per name and
    // position cost more than the rest of a recorded hop.
    // The shortest name (`token`, `passw`) fits nowhere in a shorter key, nor starts
    // in a key's last four bytes: most keys are answered without a comparison.
    const SHORTEST: usize = 5;
    let key = key.as_bytes();
    let Some(last) = key.len().checked_sub(SHORTEST) else {
        return false;
    };
    (0..=last).any(|i| {
        let rest = &key[i..];
        credential_names(rest[0].to_ascii_lowercase()).iter().any(|name| {
            rest.get(..name.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(name.as_bytes()))
        })
    })
}

/// Replaces with [`MASK`] every string held under a credential-shaped key
/// ([`is_credential_key`]), however deep under it (in the objects and arrays such a key
/// holds), and the `value` of a `{key, value}` or `{name, value}` pair whose key names a
/// credential (a header list: `[{"key": "Authorization", "value": "Bearer ..."}]`);
/// `true` if anything was. Empty strings and strings with a `{{...}}` expression are
/// left: there is nothing to hide in them, and an editor must still see where an
/// expression goes. Numbers are left too (`total_tokens` is a count).
///
/// ```
/// use serde_json::json;
/// use tiny_sdk::redact::{MASK, mask_credential_keys};
///
/// let mut v = json!({"user": "ada", "context": {"apiKey": "sk-1", "tokens": ["a", "b"]},
///                    "headers": [{"key": "Authorization", "value": "Bearer x"}],
///                    "password": "{{$.pw}}"});
/// mask_credential_keys(&mut v);
/// assert_eq!(v, json!({"user": "ada", "context": {"apiKey": MASK, "tokens": [MASK, MASK]},
///                      "headers": [{"key": "Authorization", "value": MASK}],
///                      "password": "{{$.pw}}"}));
/// ```
pub fn mask_credential_keys(value: &mut Value) -> bool {
    mask_under(value, false)
}

fn maskable(s: &str) -> bool {
    !s.is_empty() && !s.contains("{{")
}

/// Whether `map` is a `{key, value}` / `{name, value}` pair naming a credential.
fn names_a_credential(map: &serde_json::Map<String, Value>) -> bool {
    map.contains_key("value")
        && ["key", "name"]
            .iter()
            .any(|k| map.get(*k).and_then(Value::as_str).is_some_and(is_credential_key))
}

/// Whether the value at `key` of an object holds a credential: the object does
/// (`credential`), the key names one, or the object is a pair naming one (`pair`) and
/// this is its `value`.
fn holds_credential(credential: bool, pair: bool, key: &str) -> bool {
    credential || is_credential_key(key) || (pair && key == "value")
}

fn mask_under(value: &mut Value, credential: bool) -> bool {
    match value {
        Value::String(s) if credential && maskable(s) => {
            *s = MASK.to_owned();
            true
        }
        Value::Array(items) => items.iter_mut().fold(false, |c, v| mask_under(v, credential) | c),
        Value::Object(map) => {
            let pair = names_a_credential(map);
            map.iter_mut().fold(false, |c, (k, v)| {
                mask_under(v, holds_credential(credential, pair, k)) | c
            })
        }
        _ => false,
    }
}

/// Whether [`mask_credential_keys`] would change `value`.
fn has_credential_keys(value: &Value, credential: bool) -> bool {
    match value {
        Value::String(s) => credential && maskable(s),
        Value::Array(items) => items.iter().any(|v| has_credential_keys(v, credential)),
        Value::Object(map) => {
            let pair = names_a_credential(map);
            map.iter()
                .any(|(k, v)| has_credential_keys(v, holds_credential(credential, pair, k)))
        }
        _ => false,
    }
}

/// `err` with every value of `secrets` in its message replaced by [`MASK`]: a
/// decode error quoting a password, or a component echoing its settings, does not
/// carry the secret on. The engine does it where a hop finishes.
///
/// ```
/// let err = tiny_sdk::Error::permanent("login as ada:hunter22 failed");
/// let err = tiny_sdk::redact::scrub_error(err, &["hunter22".into()]);
/// assert_eq!(err.message(), "login as ada:<redacted> failed");
/// ```
#[must_use]
pub fn scrub_error(mut err: crate::Error, secrets: &[String]) -> crate::Error {
    if let Cow::Owned(clean) = scrub(err.message(), secrets) {
        *err.message_mut() = clean;
    }
    err
}

/// `text` with every occurrence of a `secrets` value (and of its JSON-escaped form,
/// as an error quoting a payload would show it) replaced by [`MASK`].
///
/// ```
/// let text = tiny_sdk::redact::scrub("login as ada:hunter22 failed", &["hunter22".into()]);
/// assert_eq!(text, "login as ada:<redacted> failed");
/// ```
pub fn scrub<'a>(text: &'a str, secrets: &[String]) -> Cow<'a, str> {
    let mut out = Cow::Borrowed(text);
    for secret in secrets {
        if secret.is_empty() {
            continue;
        }
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), MASK));
        }
        // The form a secret takes inside a JSON string (quotes, backslashes, controls).
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        if escaped != secret && !escaped.is_empty() && out.contains(escaped) {
            out = Cow::Owned(out.replace(escaped, MASK));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn secrets_are_found_through_refs_options_arrays_and_maps() {
        let schema = json!({
            "type": "object",
            "properties": {
                "auth": { "anyOf": [{ "$ref": "#/$defs/Auth" }, { "type": "null" }] },
                "keys": { "type": "array", "items": { "type": "string", "format": "password" } },
                "headers": { "type": "object", "additionalProperties": { "$ref": "#/$defs/Header" } },
                "name": { "type": "string" },
            },
            "$defs": {
                "Auth": { "type": "object", "properties": {
                    "user": { "type": "string" },
                    "token": { "type": ["string", "null"], "secret": true },
                }},
                "Header": { "type": "object", "properties": { "value": { "writeOnly": true } } },
            }
        });
        let secrets = Secrets::from_schema(&schema);
        let mut v = json!({
            "auth": { "user": "ada", "token": "t0ken-1" },
            "keys": ["key-one", ""],
            "headers": { "x": { "value": "v-secret" } },
            "name": "n",
        });
        let mut found = Vec::new();
        secrets.collect(&v, &mut found);
        assert_eq!(found, ["t0ken-1", "key-one", "v-secret"]);
        assert!(secrets.mask(&mut v));
        assert_eq!(
            v,
            json!({
                "auth": { "user": "ada", "token": MASK },
                "keys": [MASK, ""],
                "headers": { "x": { "value": MASK } },
                "name": "n",
            })
        );
    }

    #[test]
    fn expressions_nulls_and_empty_strings_are_not_secrets() {
        let schema = json!({ "properties": { "p": { "secret": true } } });
        let secrets = Secrets::from_schema(&schema);
        for kept in [
            json!({"p": "{{$.password}}"}),
            json!({"p": null}),
            json!({"p": ""}),
            json!({}),
        ] {
            assert_eq!(*secrets.masked(&kept), kept);
        }
        assert_eq!(*secrets.masked(&json!({"p": {"a": 1}})), json!({"p": MASK}));
    }

    #[test]
    fn a_recursive_schema_compiles() {
        let schema = json!({ "$ref": "#/$defs/T", "$defs": { "T": { "properties": {
            "next": { "$ref": "#/$defs/T" }, "s": { "secret": true } } } } });
        let secrets = Secrets::from_schema(&schema);
        let mut v = json!({ "s": "aaaa", "next": { "s": "bbbb" } });
        secrets.mask(&mut v);
        assert_eq!(v, json!({ "s": MASK, "next": { "s": MASK } }));
    }

    #[test]
    fn scrub_finds_escaped_forms_and_leaves_short_values() {
        let secrets = vec!["pa\"ss word".to_owned()];
        assert_eq!(scrub(r#"got "pa\"ss word""#, &secrets), r#"got "<redacted>""#);
        let mut out = Vec::new();
        Secrets::from_schema(&json!({"properties": {"p": {"secret": true}}})).collect(&json!({"p": "abc"}), &mut out);
        assert!(out.is_empty(), "too short to search for");
    }

    /// Every credential name is found in any case and anywhere in a key or a whole
    /// JSON text (filed under its first letter), at the very end
    /// too, and a name cut short is not.
    #[test]
    fn credential_names_are_found_in_any_case_anywhere() {
        let names = (b'a'..=b'z').flat_map(credential_names);
        assert_eq!(names.clone().count(), 15, "the Go SDK's list");
        for name in names {
            let upper = name.to_ascii_uppercase();
            for key in [
                name.to_string(),
                format!("x{upper}"),
                format!(r#"{{"city":"Oslo","auth":{{"{upper}y":1}}}}"#),
            ] {
                assert!(is_credential_key(&key), "{key}");
            }
            assert!(!is_credential_key(&name[..name.len() - 1]), "{name} cut short");
        }
        assert!(!is_credential_key(r#"{"city":"Oslo","note":"a pass"}"#));
    }
}

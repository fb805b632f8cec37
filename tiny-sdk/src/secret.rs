//! Credentials in node configurations: `[[secret:<name>/<key>]]` placeholders.
//!
//! A string field of a node's settings (`_settings`) or of an edge configuration whose
//! whole value is `[[secret:<name>/<key>]]` is replaced, before the component sees it,
//! by the value under `<key>` of the Kubernetes Secret `<name>` in the module's
//! namespace (the Go SDK's `pkg/secret` syntax; `{{...}}` would be an expression).
//! Only whole strings are replaced, as in Go: `"Bearer [[secret:api/token]]"` stays as
//! written, so a value can never be put together from a placeholder and user input.
//! Names and keys are `[A-Za-z0-9._-]+`; a string that starts with `[[secret:` and
//! ends with `]]` but is not of that form is an error on the node (Go passes it on
//! unchanged, which hides a typo until the credential is refused).
//!
//! Where the values come from is a [`SecretSource`]: tiny-runtime reads Secrets with
//! the module's ServiceAccount (only those the module declares, cached for a TTL), and
//! the [`harness`](crate::harness) takes them from [`StaticSecrets`]. A resolved value
//! is a secret of its node: masked in its status, its hops' trace data and TinyTracker
//! records, and its error messages (see [`redact`](crate::redact)).
//!
//! ```
//! use tiny_sdk::secret::Placeholder;
//!
//! let p = Placeholder::parse("[[secret:creds/token]]").unwrap().unwrap();
//! assert_eq!((p.name.as_str(), p.key.as_str()), ("creds", "token"));
//! assert!(Placeholder::parse("Bearer [[secret:creds/token]]").is_none());
//! assert!(Placeholder::parse("[[secret:creds]]").unwrap().is_err());
//! ```

use std::{collections::BTreeMap, fmt, sync::RwLock};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::error::{Error, code};

/// What opens a placeholder.
const OPEN: &str = "[[secret:";
/// What closes it.
const CLOSE: &str = "]]";

/// `[[secret:<name>/<key>]]`: the key `key` of the Secret `name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Placeholder {
    /// The Secret's name.
    pub name: String,
    /// The key in the Secret's `data`.
    pub key: String,
}

impl fmt::Display for Placeholder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{OPEN}{}/{}{CLOSE}", self.name, self.key)
    }
}

/// A string that looks like a placeholder but is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The string as written.
    pub text: String,
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a secret placeholder: write `[[secret:<name>/<key>]]`, name and key of letters, digits, `.`, `_` or `-`",
            self.text
        )
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Placeholder {
    /// `None` when `text` is not meant as a placeholder (it does not both start with
    /// `[[secret:` and end with `]]`); otherwise the placeholder, or why it is not one.
    pub fn parse(text: &str) -> Option<Result<Placeholder, Malformed>> {
        let inner = text.strip_prefix(OPEN)?.strip_suffix(CLOSE)?;
        let parsed = inner
            .split_once('/')
            .filter(|(name, key)| is_name(name) && is_name(key))
            .map(|(name, key)| Placeholder {
                name: name.to_owned(),
                key: key.to_owned(),
            });
        Some(parsed.ok_or_else(|| Malformed { text: text.to_owned() }))
    }
}

/// One step of the way to a field in a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object's property.
    Key(String),
    /// An array's item.
    Index(usize),
}

/// A placeholder and the field that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Where it is.
    pub path: Vec<Step>,
    /// What it asks for.
    pub placeholder: Placeholder,
}

/// `path` as the field it names (`apiKey`, `headers[0].value`; `.` for the whole value).
pub fn field(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() { ".".to_owned() } else { out }
}

/// The placeholders in `value`, in document order, or the first malformed one (with
/// its field).
pub fn find(value: &Value) -> Result<Vec<Found>, (String, Malformed)> {
    let mut out = Vec::new();
    walk(value, &mut Vec::new(), &mut out)?;
    Ok(out)
}

fn walk(value: &Value, at: &mut Vec<Step>, out: &mut Vec<Found>) -> Result<(), (String, Malformed)> {
    match value {
        Value::String(s) => match Placeholder::parse(s) {
            Some(Ok(placeholder)) => out.push(Found {
                path: at.clone(),
                placeholder,
            }),
            Some(Err(bad)) => return Err((field(at), bad)),
            None => {}
        },
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(Step::Index(i));
                walk(item, at, out)?;
                at.pop();
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                at.push(Step::Key(k.clone()));
                walk(v, at, out)?;
                at.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

/// Whether `value` holds a placeholder (or something meant as one): a runtime
/// re-resolves such configurations every TTL.
pub fn mentions(value: &Value) -> bool {
    match value {
        Value::String(s) => Placeholder::parse(s).is_some(),
        Value::Array(items) => items.iter().any(mentions),
        Value::Object(map) => map.values().any(mentions),
        _ => false,
    }
}

/// Whether any port configuration of `spec` holds a placeholder.
pub fn spec_mentions(spec: &crate::flow::NodeSpec) -> bool {
    spec.ports
        .iter()
        .filter_map(|p| p.configuration.as_ref())
        .any(|c| mentions(c.value()))
}

/// Puts `values[i]` at `found[i].path` in `value`, where the placeholder still is (a
/// template renders a literal string as itself; a field an expression made is left
/// alone, so a message can never ask for a secret).
pub fn fill(value: &mut Value, found: &[Found], values: &[String]) {
    for (f, v) in found.iter().zip(values) {
        if let Some(at) = locate(value, &f.path)
            && at.as_str().is_some_and(|s| Placeholder::parse(s).is_some())
        {
            *at = Value::String(v.clone());
        }
    }
}

/// The field at `path` in `value`, if there is one.
fn locate<'a>(value: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    let Some((step, rest)) = path.split_first() else {
        return Some(value);
    };
    let next = match (step, value) {
        (Step::Key(k), Value::Object(map)) => map.get_mut(k)?,
        (Step::Index(i), Value::Array(items)) => items.get_mut(*i)?,
        _ => return None,
    };
    locate(next, rest)
}

/// Why a placeholder has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// Nothing provides secrets (an engine or harness built without a source).
    #[error("no secrets are available here (in a harness, add them with `.secret(name, key, value)`)")]
    NoSource,
    /// The module does not declare the Secret, so it may not read it.
    #[error(
        "Secret `{name}` is not among the Secrets the module declares ({declared}); add it to the module's requirements"
    )]
    Undeclared {
        /// The Secret.
        name: String,
        /// What the module declares (`none` when nothing).
        declared: String,
    },
    /// There is no such Secret.
    #[error("Secret `{name}` does not exist in namespace `{namespace}`")]
    NotFound {
        /// The Secret.
        name: String,
        /// Where it was looked for.
        namespace: String,
    },
    /// The Secret has no such key.
    #[error("Secret `{name}` has no key `{key}` (keys: {keys})")]
    NoKey {
        /// The Secret.
        name: String,
        /// The key asked for.
        key: String,
        /// The keys it has (`none` when it has none).
        keys: String,
    },
    /// The value is not UTF-8 text, so it cannot go into a JSON string.
    #[error("key `{key}` of Secret `{name}` is not UTF-8 text")]
    NotText {
        /// The Secret.
        name: String,
        /// The key.
        key: String,
    },
    /// The module's ServiceAccount may not read the Secret.
    #[error(
        "the module's ServiceAccount may not read Secret `{name}` (RBAC: grant `get` on it, e.g. through the module's requirements)"
    )]
    Forbidden {
        /// The Secret.
        name: String,
    },
    /// The Secret's owner limited it, with an annotation, to named flows or nodes, and
    /// the node asking is not among them.
    #[error(
        "Secret `{name}` is limited by its annotation `{annotation}` to {allowed}; {}",
        requester(node, flow)
    )]
    NotAllowed {
        /// The Secret.
        name: String,
        /// The annotation that limits it (`tinysystems.io/allowed-flows` or `-nodes`).
        annotation: String,
        /// What the annotation allows (`none` when it names nothing).
        allowed: String,
        /// The node that asked (empty when the caller did not say).
        node: String,
        /// That node's flow (empty when it has none).
        flow: String,
    },
    /// The API server could not be asked (retried on the next resolution).
    #[error("Secret `{name}` could not be read: {reason}")]
    Unavailable {
        /// The Secret.
        name: String,
        /// What failed.
        reason: String,
    },
}

/// Who a [`SecretError::NotAllowed`] was refused to, in words.
fn requester(node: &str, flow: &str) -> String {
    match (node.is_empty(), flow.is_empty()) {
        (true, _) => "the caller named no node".to_owned(),
        (false, true) => format!("node `{node}` is in no flow"),
        (false, false) => format!("node `{node}` is in flow `{flow}`"),
    }
}

/// The node that asks for a Secret: what a Secret limited to named flows or nodes
/// (the [`annotation`](crate::contract::annotation) `tinysystems.io/allowed-flows` and
/// `-nodes`) is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requester<'a> {
    /// The node's name (the TinyNode's `metadata.name`).
    pub node: &'a str,
    /// Its flow (the `tinysystems.io/flow-name` label), if it has one.
    pub flow: Option<&'a str>,
}

/// Where placeholder values come from. Each call may read the store or a cache; a
/// source decides how fresh a value is (tiny-runtime re-reads after its TTL).
pub trait SecretSource: Send + Sync {
    /// The value of `key` in the Secret `name`.
    fn get<'a>(&'a self, name: &'a str, key: &'a str) -> BoxFuture<'a, Result<String, SecretError>>;

    /// The value of `key` in the Secret `name` for the node `who`: what the engine
    /// asks. A source that knows of limits per flow or node (tiny-runtime's) checks
    /// them here; by default there are none.
    fn get_for<'a>(
        &'a self,
        who: Requester<'a>,
        name: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<String, SecretError>> {
        let _ = who;
        self.get(name, key)
    }
}

/// Secrets held in memory: what a [`Harness`](crate::harness::Harness) resolves
/// placeholders from. Values can be replaced at any time, as a rotated Secret.
#[derive(Debug, Default)]
pub struct StaticSecrets {
    values: RwLock<BTreeMap<String, BTreeMap<String, String>>>,
}

impl StaticSecrets {
    /// Sets `key` of Secret `name` (creating the Secret).
    pub fn set(&self, name: &str, key: &str, value: &str) {
        let mut values = self.values.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        values
            .entry(name.to_owned())
            .or_default()
            .insert(key.to_owned(), value.to_owned());
    }

    /// Removes the Secret `name`.
    pub fn remove(&self, name: &str) {
        let mut values = self.values.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        values.remove(name);
    }
}

impl SecretSource for StaticSecrets {
    fn get<'a>(&'a self, name: &'a str, key: &'a str) -> BoxFuture<'a, Result<String, SecretError>> {
        let values = self.values.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let result = match values.get(name) {
            None => Err(SecretError::NotFound {
                name: name.to_owned(),
                namespace: "(harness)".to_owned(),
            }),
            Some(data) => data.get(key).cloned().ok_or_else(|| SecretError::NoKey {
                name: name.to_owned(),
                key: key.to_owned(),
                keys: key_list(data.keys()),
            }),
        };
        Box::pin(std::future::ready(result))
    }
}

/// `keys` for an error message: comma-separated, `none` when empty.
pub fn key_list<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let keys: Vec<&str> = keys.map(String::as_str).collect();
    if keys.is_empty() {
        "none".to_owned()
    } else {
        keys.join(", ")
    }
}

/// The values of `found`, in order, each asked of `source` once; or the node error of
/// the first that has none, naming the placeholder, the field (`where_` says which
/// configuration: `port \`_settings\``) and the Secret, never a value.
pub(crate) async fn resolve(
    source: Option<&dyn SecretSource>,
    who: Requester<'_>,
    found: &[Found],
    where_: &str,
) -> Result<Vec<String>, Error> {
    let mut out: Vec<String> = Vec::with_capacity(found.len());
    for (i, f) in found.iter().enumerate() {
        // The same placeholder twice is asked for once.
        if let Some(j) = found[..i].iter().position(|g| g.placeholder == f.placeholder) {
            let same = out[j].clone();
            out.push(same);
            continue;
        }
        let got = match source {
            None => Err(SecretError::NoSource),
            Some(s) => s.get_for(who, &f.placeholder.name, &f.placeholder.key).await,
        };
        match got {
            Ok(v) => out.push(v),
            Err(e) => {
                let transient = matches!(e, SecretError::Unavailable { .. });
                let error = format!("{where_} field `{}`: {}: {e}", field(&f.path), f.placeholder);
                let error = if transient {
                    Error::transient(error)
                } else {
                    Error::permanent(error)
                };
                return Err(error.with_code(code::SECRET));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn only_whole_strings_of_the_right_form_are_placeholders() {
        let ok = Placeholder::parse("[[secret:my-creds.v1/api_key]]").unwrap().unwrap();
        assert_eq!(ok.name, "my-creds.v1");
        assert_eq!(ok.key, "api_key");
        assert_eq!(ok.to_string(), "[[secret:my-creds.v1/api_key]]");
        for not_meant in [
            "token",
            "Bearer [[secret:a/b]]",
            "[[secret:a/b]] ",
            "{{secret:a/b}}",
            "",
        ] {
            assert!(Placeholder::parse(not_meant).is_none(), "{not_meant}");
        }
        for bad in [
            "[[secret:a]]",
            "[[secret:/b]]",
            "[[secret:a/]]",
            "[[secret:a/b/c]]",
            "[[secret:a b/c]]",
        ] {
            let err = Placeholder::parse(bad).unwrap().unwrap_err();
            assert_eq!(err.text, bad);
            assert!(err.to_string().contains("[[secret:<name>/<key>]]"), "{err}");
        }
    }

    #[test]
    fn find_names_fields_and_fill_puts_values_there() {
        let mut v = json!({
            "url": "https://x",
            "auth": { "token": "[[secret:creds/token]]" },
            "headers": [{ "value": "[[secret:creds/other]]" }, { "value": "plain" }],
            "again": "[[secret:creds/token]]",
        });
        let found = find(&v).unwrap();
        let fields: Vec<String> = found.iter().map(|f| field(&f.path)).collect();
        assert_eq!(fields, ["auth.token", "headers[0].value", "again"]);
        assert!(mentions(&v));
        fill(&mut v, &found, &["t1".into(), "o2".into(), "t1".into()]);
        assert_eq!(
            v,
            json!({
                "url": "https://x",
                "auth": { "token": "t1" },
                "headers": [{ "value": "o2" }, { "value": "plain" }],
                "again": "t1",
            })
        );
        assert!(!mentions(&v));
        assert_eq!(field(&[]), ".");
    }

    #[test]
    fn a_malformed_placeholder_is_named_with_its_field() {
        let (at, bad) = find(&json!({"a": [{"k": "[[secret:oops]]"}]})).unwrap_err();
        assert_eq!(at, "a[0].k");
        assert_eq!(bad.text, "[[secret:oops]]");
    }

    #[test]
    fn fill_leaves_what_an_expression_made() {
        // The template put a message's value where the placeholder was written: not filled.
        let found = find(&json!({"t": "[[secret:a/b]]"})).unwrap();
        let mut rendered = json!({"t": "from the message"});
        fill(&mut rendered, &found, &["v".into()]);
        assert_eq!(rendered, json!({"t": "from the message"}));
    }

    const WHO: Requester<'static> = Requester {
        node: "n1",
        flow: Some("f1"),
    };

    #[tokio::test]
    async fn resolution_errors_name_placeholder_field_and_secret() {
        let source = StaticSecrets::default();
        source.set("creds", "token", "s3cr3t-value");
        let found = find(&json!({"a": "[[secret:creds/token]]", "b": "[[secret:creds/nope]]"})).unwrap();
        let err = resolve(Some(&source), WHO, &found, "port `_settings`")
            .await
            .unwrap_err();
        let text = err.to_string();
        assert_eq!(err.code(), Some(code::SECRET));
        assert!(
            text.contains(
                "port `_settings` field `b`: [[secret:creds/nope]]: Secret `creds` has no key `nope` (keys: token)"
            ),
            "{text}"
        );
        assert!(!text.contains("s3cr3t-value"), "{text}");
        let missing = find(&json!({"x": "[[secret:gone/k]]"})).unwrap();
        let err = resolve(Some(&source), WHO, &missing, "edge").await.unwrap_err();
        assert!(err.to_string().contains("Secret `gone` does not exist"), "{err}");
        let err = resolve(None, WHO, &missing, "edge").await.unwrap_err();
        assert!(err.to_string().contains("no secrets are available"), "{err}");
        let ok = find(&json!({"a": "[[secret:creds/token]]"})).unwrap();
        assert_eq!(resolve(Some(&source), WHO, &ok, "x").await.unwrap(), ["s3cr3t-value"]);
    }
}

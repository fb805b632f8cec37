use std::fmt;

use crate::error::Error;

/// A port address, `"<node>:<port>"`, as used in `edges[].to` and `ports[].from`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortAddress {
    /// Node name.
    pub node: String,
    /// Port name.
    pub port: String,
}

impl PortAddress {
    /// Parses `"<node>:<port>"`; both parts must be non-empty.
    ///
    /// ```
    /// let a = tiny_sdk::flow::PortAddress::parse("abc.common.router-1:out").unwrap();
    /// assert_eq!((a.node.as_str(), a.port.as_str()), ("abc.common.router-1", "out"));
    /// assert!(tiny_sdk::flow::PortAddress::parse("no-port").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s.rsplit_once(':') {
            Some((node, port)) if !node.is_empty() && !port.is_empty() => Ok(Self {
                node: node.to_owned(),
                port: port.to_owned(),
            }),
            _ => Err(Error::permanent(format!("`{s}` is not a port address `<node>:<port>`"))),
        }
    }
}

impl fmt::Display for PortAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.node, self.port)
    }
}

/// Splits a TinyNode name `{flow hash}.{module}.{component}-{suffix}` into
/// `(module, component)`, as the Go SDK's `ParseFullName`. Names without dots (common
/// in hand-written test flows) have no module part.
pub fn parse_node_name(name: &str) -> Option<(&str, &str)> {
    let mut parts = name.split('.');
    let _flow = parts.next()?;
    let module = parts.next()?;
    let component = parts.next()?;
    Some((module, component))
}

/// Whether the module segment `found` of a node name identifies the module that runs
/// as `running`, as the Go SDK's `NameMatches`: case and `/` versus `-` do not matter,
/// and a publisher prefix may stand on either side (`http-module-v0`,
/// `tinysystems-http-module-v0` and `tinysystems/http-module-v0` are one module).
///
/// ```
/// use tiny_sdk::flow::module_matches;
/// assert!(module_matches("http-module-v0", "tinysystems-http-module-v0"));
/// assert!(module_matches("tinysystems/http-module-v0", "http-module-v0"));
/// assert!(!module_matches("http-module-v0", "http-module-v1"));
/// assert!(!module_matches("module-v0", "http-module-v0x"));
/// ```
pub fn module_matches(found: &str, running: &str) -> bool {
    // Compared byte by byte as normalised (ASCII lowercase, `/` as `-`), without making
    // normalised copies: a hop to another module asks this on every delivery. Both
    // changes keep a byte's length, so suffixes line up as in the normalised strings.
    fn normal(b: u8) -> u8 {
        if b == b'/' { b'-' } else { b.to_ascii_lowercase() }
    }
    fn same(a: &[u8], b: &[u8]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| normal(*x) == normal(*y))
    }
    // `long` is `short` with a prefix ending in `-`.
    fn prefixed(long: &[u8], short: &[u8]) -> bool {
        long.len() > short.len()
            && same(&long[long.len() - short.len()..], short)
            && normal(long[long.len() - short.len() - 1]) == b'-'
    }
    let (f, r) = (found.as_bytes(), running.as_bytes());
    if f.is_empty() || r.is_empty() {
        return false;
    }
    same(f, r) || prefixed(r, f) || prefixed(f, r)
}

/// Why a TinyNode's name does not fit its spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeNameError {
    /// Not `{flow}.{module}.{component}-{suffix}`.
    #[error("node name `{name}` is not `{{flow}}.{{module}}.{{component}}-{{suffix}}`: {why}")]
    Shape {
        /// The name.
        name: String,
        /// What is missing.
        why: &'static str,
    },
    /// The name's component segment names another component than `spec.component`.
    #[error(
        "node name `{name}` is for component `{named}`, but spec.component is `{component}` (expected a name like `{{flow}}.{{module}}.{expected}-{{suffix}}`)"
    )]
    ComponentMismatch {
        /// The name.
        name: String,
        /// The component segment of the name, without its suffix.
        named: String,
        /// `spec.component`.
        component: String,
        /// The segment the component's name gives.
        expected: String,
    },
}

/// Checks that `name` is `{flow}.{module}.{component}-{suffix}` with the component
/// segment made from `component` (sanitised as the Go SDK does: `http_server` is
/// `http-server`), the shape the platform names nodes by and routes on.
///
/// ```
/// use tiny_sdk::flow::check_node_name;
/// assert!(check_node_name("a1b2.common-module-v0.http-server-x7k2p", "http_server").is_ok());
/// assert!(check_node_name("badname", "hello").is_err());
/// assert!(check_node_name("x.qa.hello", "hello").is_err());
/// assert!(check_node_name("x.qa.shout-1", "hello").is_err());
/// ```
pub fn check_node_name(name: &str, component: &str) -> Result<(), NodeNameError> {
    let shape = |why| NodeNameError::Shape {
        name: name.to_owned(),
        why,
    };
    let parts: Vec<&str> = name.split('.').collect();
    let [flow, module, segment] = parts.as_slice() else {
        return Err(shape("it needs exactly three dot-separated parts"));
    };
    if flow.is_empty() || module.is_empty() {
        return Err(shape("the flow and module parts must not be empty"));
    }
    let expected = node_name_segment(component);
    let mismatch = || {
        let named = segment.rsplit_once('-').map_or(*segment, |(c, _)| c);
        NodeNameError::ComponentMismatch {
            name: name.to_owned(),
            named: named.to_owned(),
            component: component.to_owned(),
            expected: expected.clone(),
        }
    };
    match segment.strip_prefix(expected.as_str()) {
        Some(rest) => match rest.strip_prefix('-') {
            Some(suffix) if !suffix.is_empty() && !suffix.contains('-') => Ok(()),
            Some(_) => Err(mismatch()),
            None if rest.is_empty() => Err(shape("the component part has no `-{suffix}`")),
            None => Err(mismatch()),
        },
        None if !segment.contains('-') => Err(shape("the component part has no `-{suffix}`")),
        None => Err(mismatch()),
    }
}

/// Why `name` cannot be a Kubernetes object name (an RFC 1123 subdomain), when it
/// cannot: the API server refuses a TinyNode so named. The reason names the name to
/// use instead when one is near (`parse_temp-1` is `parse-temp-1`: a component's name
/// is written in node names as [`node_name_segment`] gives it, as the Go SDK slugs
/// `http_server` to `http-server`).
pub(crate) fn kubernetes_name_error(name: &str, component: &str) -> Option<String> {
    if is_kubernetes_name(name) {
        return None;
    }
    let mut why = format!(
        "node name `{name}` is not a Kubernetes name the API server takes (RFC 1123: lowercase letters, \
         digits, `-` and `.`, each dot-separated part starting and ending with a letter or digit, at most \
         253 characters)"
    );
    let segment = node_name_segment(component);
    if !segment.is_empty() && segment != component {
        why.push_str(&format!(
            "; component `{component}` is written `{segment}` in node names, as the Go SDK writes it"
        ));
    }
    let suggestion: Vec<String> = name.split('.').map(node_name_segment).collect();
    let suggestion = suggestion.join(".");
    if suggestion != name && is_kubernetes_name(&suggestion) {
        why.push_str(&format!(": did you mean `{suggestion}`?"));
    }
    Some(why)
}

fn is_kubernetes_name(name: &str) -> bool {
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    !name.is_empty() && name.len() <= 253 && name.split('.').all(label_ok)
}

/// A component's name as node names carry it, as the Go SDK writes it: lowercase, each
/// run of other characters than letters and digits one `-` (`parse_temp` is
/// `parse-temp`, so its nodes are `{flow}.{module}.parse-temp-{suffix}`).
///
/// ```
/// assert_eq!(tiny_sdk::flow::node_name_segment("parse_temp"), "parse-temp");
/// assert_eq!(tiny_sdk::flow::node_name_segment("HTTP  server"), "http-server");
/// ```
pub fn node_name_segment(component: &str) -> String {
    let mut out = String::with_capacity(component.len());
    for c in component.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_out_of_form_are_refused_with_the_reason() {
        for (name, component) in [
            ("badname", "hello"),
            ("two.qa", "hello"),
            ("x.qa.hello", "hello"),
            ("..hello-1", "hello"),
        ] {
            let err = check_node_name(name, component).expect_err(name);
            assert!(matches!(err, NodeNameError::Shape { .. }), "{name}: {err}");
        }
        let err = check_node_name("x.qa.shout-1", "hello").expect_err("mismatch");
        assert!(
            matches!(&err, NodeNameError::ComponentMismatch { named, .. } if named == "shout"),
            "{err}"
        );
        // A component whose name ends like another's prefix is still a mismatch.
        assert!(check_node_name("x.qa.hello-world-1", "hello").is_err());
        assert!(check_node_name("x.qa.hello-world-1", "hello_world").is_ok());
        assert!(check_node_name("greet.examples-v0.hello-1", "hello").is_ok());
    }

    #[test]
    fn a_component_name_with_an_underscore_gets_the_node_name_to_use() {
        let why = kubernetes_name_error("weather.weather-module-v0.parse_temp-1", "parse_temp").expect("refused");
        assert!(
            why.ends_with(
                "; component `parse_temp` is written `parse-temp` in node names, as the Go SDK writes it: \
                 did you mean `weather.weather-module-v0.parse-temp-1`?"
            ),
            "{why}"
        );
        assert!(check_node_name("weather.weather-module-v0.parse-temp-1", "parse_temp").is_ok());
        assert_eq!(
            kubernetes_name_error("weather.weather-module-v0.parse-temp-1", "parse_temp"),
            None
        );
    }

    #[test]
    fn module_names_match_as_in_go() {
        assert!(module_matches("Hello-Module-V0", "hello-module-v0"));
        assert!(!module_matches("", "x"));
        assert!(!module_matches("hello-module", "hello-module-v0"));
        // The separator before a publisher prefix may be written `/`, on either side.
        assert!(module_matches("TinySystems/Hello-Module-V0", "hello-module-v0"));
        assert!(module_matches("hello-module-v0", "tinysystems/hello-module-v0"));
        assert!(!module_matches("hello-module-v0", "tinysystemshello-module-v0"));
        assert!(!module_matches("-hello-module-v0", "hello-module-v0x"));
        assert!(!module_matches("x", ""));
    }
}

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

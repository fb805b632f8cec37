//! One node: its component instance, compiled edge mappings, settings and edges.

use std::{borrow::Cow, sync::Arc};

use rustc_hash::FxHashMap as HashMap;

use serde_json::Value;
use tiny_expr::Template;

use crate::{
    context::Hop,
    error::{Error, Result},
    flow::{Node, PortAddress},
    message::Reply,
    port::{Direction, PortSpec},
    system,
};

use super::{
    instance::NodeInstance,
    observe::{HopEvent, HopKind, Observer},
    retry::Backoff,
    scheduler::Source,
};

/// A node ready to take messages. Rebuilt on every spec change; the instance (and so
/// the component's state) carries over when the component stays the same.
pub(crate) struct Runner {
    pub name: Arc<str>,
    pub node: Node,
    pub instance: Arc<dyn NodeInstance>,
    /// Edge mappings, `(from, port)`: a handful per node, so a scan beats hashing.
    mappings: Vec<(String, String, Mapping)>,
    /// The settings JSON from the spec, already rendered.
    pub settings: Option<Value>,
    /// Source port -> where its messages go.
    pub outlets: HashMap<String, Arc<Outlet>>,
}

/// How an edge's configuration turns the sender's message into the target's input.
enum Mapping {
    /// `"{{$}}"`: the message itself, borrowed rather than copied.
    Identity,
    Template(Template),
}

impl Mapping {
    fn new(config: &Value) -> std::result::Result<Mapping, tiny_expr::CompileError> {
        let identity = config
            .as_str()
            .and_then(|s| s.strip_prefix("{{")?.strip_suffix("}}"))
            .is_some_and(|e| e.trim() == "$");
        if identity {
            Ok(Mapping::Identity)
        } else {
            Template::compile(config).map(Mapping::Template)
        }
    }
}

/// The edges leaving one source port.
pub(crate) struct Outlet {
    /// `"<node>:<port>"`, the `from` the targets see.
    pub from: Arc<str>,
    pub edges: Vec<Route>,
}

/// One edge, parsed.
pub(crate) struct Route {
    pub id: Arc<str>,
    pub node: Arc<str>,
    pub port: Arc<str>,
    pub backoff: Backoff,
}

impl Runner {
    /// Compiles everything a message will need, so that nothing is parsed per message.
    /// Every mistake in the spec is reported here, naming where it is.
    pub fn build(node: Node, instance: Arc<dyn NodeInstance>) -> Result<Runner> {
        let ports = instance.ports();
        let name: Arc<str> = node.name.as_str().into();
        let mut mappings = Vec::new();
        let mut settings = None;
        for pc in &node.spec.ports {
            let Some(spec) = ports.iter().find(|p| p.name == pc.port) else {
                return Err(Error::permanent(format!(
                    "ports[] configures port `{}`, which component `{}` does not have (it has: {})",
                    pc.port,
                    node.spec.component,
                    port_list(ports, |_| true)
                )));
            };
            if spec.is_source() {
                return Err(Error::permanent(format!(
                    "ports[] configures `{}`, an output port; only inputs take configuration",
                    pc.port
                )));
            }
            let Some(config) = &pc.configuration else { continue };
            let mapping = Mapping::new(config.value()).map_err(|e| {
                let edge = if pc.from.is_empty() {
                    String::new()
                } else {
                    format!(" (edge from `{}`)", pc.from)
                };
                Error::permanent(format!("port `{}`{edge}: {e}", pc.port))
            })?;
            if pc.port == system::SETTINGS && pc.from.is_empty() {
                // Settings have no incoming message: expressions see an empty object.
                let empty = Value::Object(Default::default());
                let rendered = match mapping {
                    Mapping::Identity => empty,
                    Mapping::Template(t) => t
                        .render(&empty)
                        .map_err(|e| Error::permanent(format!("port `_settings`: {e}")))?,
                };
                settings = Some(rendered);
            } else {
                mappings.push((pc.from.clone(), pc.port.clone(), mapping));
            }
        }
        let mut outlets: HashMap<String, Outlet> = HashMap::default();
        for edge in &node.spec.edges {
            match ports.iter().find(|p| p.name == edge.port) {
                Some(p) if p.is_source() => {}
                _ => {
                    return Err(Error::permanent(format!(
                        "edge `{}` leaves port `{}`, which is not an output of `{}` (outputs: {})",
                        edge.id,
                        edge.port,
                        node.spec.component,
                        port_list(ports, PortSpec::is_source)
                    )));
                }
            }
            let to = PortAddress::parse(&edge.to).map_err(|e| e.context(format_args!("edge `{}`", edge.id)))?;
            let backoff = Backoff::from_policy(edge.retry_policy.as_ref())
                .map_err(|e| e.context(format_args!("edge `{}`", edge.id)))?;
            let outlet = outlets.entry(edge.port.clone()).or_insert_with(|| Outlet {
                from: format!("{name}:{}", edge.port).into(),
                edges: Vec::new(),
            });
            // Several flows may hold the same edge: send once.
            if outlet.edges.iter().any(|r| *r.node == to.node && *r.port == to.port) {
                continue;
            }
            outlet.edges.push(Route {
                id: edge.id.as_str().into(),
                node: to.node.into(),
                port: to.port.into(),
                backoff,
            });
        }
        let outlets = outlets.into_iter().map(|(k, v)| (k, Arc::new(v))).collect();
        Ok(Runner {
            name,
            node,
            instance,
            mappings,
            settings,
            outlets,
        })
    }

    /// The input for `port` from a message that came from `source`.
    fn input<'a>(&self, spec: &PortSpec, source: &Source<'_>, data: &'a Value) -> Result<Cow<'a, Value>> {
        match source {
            Source::Signal => Ok(Cow::Borrowed(data)),
            Source::Edge { from, .. } => {
                match self.mappings.iter().find(|(f, p, _)| p == spec.name && f == from) {
                    Some((_, _, Mapping::Identity)) => Ok(Cow::Borrowed(data)),
                    Some((_, _, Mapping::Template(template))) => template
                        .render(data)
                        .map(Cow::Owned)
                        .map_err(|e| Error::permanent(format!("edge mapping from `{from}`: {e}"))),
                    // As in the Go SDK: an edge without a mapping delivers the port's
                    // default configuration, not the sender's payload.
                    None => Ok(Cow::Owned((spec.default_config)())),
                }
            }
        }
    }

    /// Delivers a message to one of this node's ports.
    pub async fn deliver(
        &self,
        port: &str,
        source: &Source<'_>,
        data: &Value,
        hop: Hop,
        observer: Option<&dyn Observer>,
    ) -> Result<Reply> {
        match port {
            system::SETTINGS => {
                self.instance.settings(Some(data)).await?;
                return Ok(Reply::empty());
            }
            system::CONTROL => return self.instance.control(data, hop).await,
            system::RECONCILE => {
                self.instance.reconcile(&self.node).await?;
                return Ok(Reply::empty());
            }
            _ => {}
        }
        let ports = self.instance.ports();
        let Some(spec) = ports
            .iter()
            .find(|p| p.name == port && p.direction == Direction::Target)
        else {
            return Err(Error::permanent(format!(
                "component `{}` has no input port `{port}` (inputs: {})",
                self.node.spec.component,
                port_list(ports, |p| !p.is_source() && !p.is_system())
            )));
        };
        let input = self.input(spec, source, data)?;
        let Some(observer) = observer else {
            return self.instance.handle(port, &input, hop).await;
        };
        let (started, clock) = (std::time::SystemTime::now(), std::time::Instant::now());
        let depth = hop.depth;
        let result = self.instance.handle(port, &input, hop).await;
        let (from, edge_id) = match source {
            Source::Signal => (None, None),
            Source::Edge { from, edge_id } => (Some(*from), Some(*edge_id)),
        };
        observer.on_hop(&HopEvent {
            kind: HopKind::Delivered,
            node: &self.name,
            port,
            from,
            edge_id,
            data: &input,
            started,
            duration: clock.elapsed(),
            depth,
            error: result.as_ref().err(),
        });
        result
    }
}

fn port_list(ports: &[PortSpec], keep: impl Fn(&PortSpec) -> bool) -> String {
    let names: Vec<&str> = ports.iter().filter(|p| keep(p)).map(|p| p.name).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

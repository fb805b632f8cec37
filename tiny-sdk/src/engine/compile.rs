//! Compiling a node: its spec, component and secrets made into a [`Runner`], with
//! every edge mapping parsed, every outlet's routes resolved and every mistake in the
//! spec found here, naming where it is, so that nothing is parsed per message. The
//! runner ([`super::runner`]) only delivers.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use serde_json::Value;

use crate::{
    contract::port as system,
    error::{Error, Result},
    flow::{Node, PortAddress},
    msg::Msg,
    port::{Direction, PortSpec},
    redact::{MIN_SCRUB_LEN, Secrets},
};

use super::{
    instance::NodeInstance,
    mapping::{EdgeMapping, Mapping, Policy, PortFills},
    masking::Known,
    retry::Backoff,
    runner::{Inlet, InletCache, Outlet, Route, Runner, port_list},
};

impl Runner {
    /// Compiles everything a message will need, so that nothing is parsed per message.
    /// Every mistake in the spec is reported here, naming where it is.
    ///
    /// `fills` holds, for each `ports[]` entry in order, the values of its secret
    /// placeholders (see [`crate::secret`]): settings without theirs do not load; an
    /// edge without them fails its messages, and says so in the node's status, while
    /// the rest of the node runs.
    pub fn build(
        node: Node,
        instance: Arc<dyn NodeInstance>,
        policy: Policy,
        fills: Vec<PortFills>,
        known: Arc<Known>,
    ) -> Result<Runner> {
        let ports = instance.ports();
        let name: Arc<str> = node.name.as_str().into();
        let mut inputs = inlets(ports);
        let Configured {
            settings,
            settings_failures,
            resolved,
            problems,
        } = configure(&node, ports, &policy, fills, &mut inputs)?;
        let outlets = outlets(&node, ports, &name)?;
        let settings_secrets = ports
            .iter()
            .find(|p| p.name == system::SETTINGS)
            .map(|p| Secrets::from_schema(&(p.schema)()))
            .unwrap_or_default();
        let mut secret_values = Vec::new();
        if let Some(settings) = &settings {
            settings_secrets.collect(settings, &mut secret_values);
        }
        // Resolved values are masked in every record of the node: its inputs, its
        // emits, its settings (in free text only when long enough to be told apart).
        let settings_secrets = settings_secrets.with_values(resolved.iter().cloned());
        for inlet in &mut inputs {
            inlet.secrets = std::mem::take(&mut inlet.secrets).with_values(resolved.iter().cloned());
        }
        for v in &resolved {
            if v.chars().count() >= MIN_SCRUB_LEN && !secret_values.contains(v) {
                secret_values.push(v.clone());
            }
        }
        // Ids start at 1: an empty `InletCache` matches no runner.
        static BUILT: AtomicU64 = AtomicU64::new(1);
        Ok(Runner {
            id: BUILT.fetch_add(1, Ordering::Relaxed),
            name,
            node,
            instance,
            inputs,
            settings,
            outlets,
            settings_secrets,
            secret_values,
            emit_secrets: Secrets::default().with_values(resolved.iter().cloned()),
            resolved,
            known,
            problem: one_problem(problems),
            policy,
            settings_failures,
        })
    }

    /// The settings expressions that failed, when they differ from `before`'s: to log
    /// them once per spec, not on every re-apply.
    pub fn new_settings_failures(&self, before: Option<&Runner>) -> &[String] {
        match before {
            Some(b) if b.settings_failures == self.settings_failures => &[],
            _ => &self.settings_failures,
        }
    }

    /// Carries over what `old`, the node's previous runner, knows of failing edges
    /// (the same sender into the same port).
    pub fn keep_failures(&mut self, old: &Runner) {
        for inlet in &mut self.inputs {
            let Some(before) = old.inputs.iter().find(|i| i.spec.name == inlet.spec.name) else {
                continue;
            };
            for m in &mut inlet.mappings {
                if let Some(o) = before.mappings.iter().find(|o| o.from == m.from) {
                    m.keep_failures(o);
                }
            }
        }
    }

    /// The edges into this node whose expressions failed within
    /// [`FAILING_WINDOW`](super::FAILING_WINDOW), one line each.
    pub fn failing_edges(&self) -> Vec<String> {
        let edges = self
            .inputs
            .iter()
            .flat_map(|i| i.mappings.iter().filter_map(|m| m.failing(i.spec.name)));
        self.settings_failures.iter().cloned().chain(edges).collect()
    }

    /// Fits the runner to the ports the node has with its settings (applied after
    /// `build`): inputs the settings switched off go, and so do edges leaving ports
    /// the settings switched off or removed, each named in [`problem`](Self::problem)
    /// while the rest of the node runs.
    pub fn settle(&mut self) {
        let live = self.instance.live_ports();
        // A family key that names a fixed port (`out` with key `a` beside `out_a`): one
        // name, two ports. It runs, and its status says so.
        let twice = live
            .iter()
            .enumerate()
            .find(|(i, p)| live[..*i].iter().any(|q| q.name == p.name))
            .map(|(_, p)| p.name.to_string());
        if let Some(name) = twice
            && self.problem.is_none()
        {
            self.problem = Some(
                Error::permanent(format!(
                    "port `{name}` is named twice: a family's key makes the name of another port \
                     (change the key in the settings)"
                ))
                .with_code(crate::error::code::INVALID_SPEC),
            );
        }
        let has = |name: &str| live.iter().any(|p| p.name == name);
        self.inputs.retain(|i| has(i.spec.name));
        let mut cut = Vec::new();
        self.outlets.retain(|o| {
            if has(&o.port) {
                return true;
            }
            cut.extend(
                o.edges
                    .iter()
                    .map(|e| format!("edge `{}` from port `{}`", e.id, o.port)),
            );
            false
        });
        // A problem found while building (an edge's secret) is said first.
        if cut.is_empty() || self.problem.is_some() {
            return;
        }
        let ports: Vec<&str> = live
            .iter()
            .filter(|p| p.spec.is_source() && !p.spec.is_system())
            .map(|p| &*p.name)
            .collect();
        self.problem = Some(
            Error::permanent(format!(
                "{} cannot run: the settings in force removed the port (outputs now: {})",
                cut.join(", "),
                if ports.is_empty() {
                    "none".to_owned()
                } else {
                    ports.join(", ")
                }
            ))
            .with_code(crate::error::code::PORT_REMOVED),
        );
    }
}

/// The business input ports of a component, each with its default and its secret
/// fields, no mapping yet.
fn inlets(ports: &'static [PortSpec]) -> Vec<Inlet> {
    ports
        .iter()
        .filter(|p| p.direction == Direction::Target && !p.is_system())
        .map(|spec| Inlet {
            spec,
            mappings: Vec::new(),
            default: Msg::from_json((spec.default_config)()),
            secrets: Secrets::from_schema(&(spec.schema)()),
        })
        .collect()
}

/// What a node's `ports[]` configure, besides the edge mappings put on `inputs`.
struct Configured {
    /// The settings, rendered.
    settings: Option<Value>,
    /// Settings expressions that failed (and gave `null`).
    settings_failures: Vec<String>,
    /// The values of the node's resolved `[[secret:...]]` placeholders.
    resolved: Vec<String>,
    /// Edge configurations whose placeholders did not resolve.
    problems: Vec<Error>,
}

/// Compiles the node's `ports[]`: the settings (rendered now: they see no message)
/// and each edge's mapping onto its input; `fills` are the values of each entry's
/// secret placeholders, in order.
fn configure(
    node: &Node,
    ports: &'static [PortSpec],
    policy: &Policy,
    fills: Vec<PortFills>,
    inputs: &mut [Inlet],
) -> Result<Configured> {
    let mut settings = None;
    let mut settings_failures = Vec::new();
    let mut resolved: Vec<String> = Vec::new();
    let mut problems: Vec<Error> = Vec::new();
    let mut fills = fills.into_iter();
    for pc in &node.spec.ports {
        let filled = fills.next().unwrap_or(Ok(None));
        let Some(spec) = ports.iter().find(|p| p.name == pc.port) else {
            return Err(Error::permanent(format!(
                "ports[] configures port `{}`, which component `{}` does not have (it has: {})",
                pc.port,
                node.spec.component,
                port_list(ports, |_| true)
            )));
        };
        if spec.name == system::CONTROL {
            // The editor may keep a schema for the dashboard here; controls
            // arrive as messages, so there is nothing to run.
            continue;
        }
        if spec.is_source() {
            return Err(Error::permanent(format!(
                "ports[] configures `{}`, an output port; only inputs take configuration",
                pc.port
            )));
        }
        let Some(config) = &pc.configuration else { continue };
        let is_settings = pc.port == system::SETTINGS && pc.from.is_empty();
        let filled = match filled {
            Ok(f) => f,
            // Settings without their values do not load: the component would run
            // with a placeholder for a credential.
            Err(e) if is_settings => return Err(e),
            Err(e) => {
                problems.push(e.clone());
                if let Some(inlet) = inputs.iter_mut().find(|i| i.spec.name == pc.port) {
                    inlet
                        .mappings
                        .push(EdgeMapping::new(pc.from.clone(), Mapping::Failed(e)));
                }
                continue;
            }
        };
        if let Some((_, values)) = &filled {
            for v in values {
                if !resolved.contains(v) {
                    resolved.push(v.clone());
                }
            }
        }
        let mapping = Mapping::new(config.value()).map_err(|e| {
            let edge = if pc.from.is_empty() {
                String::new()
            } else {
                format!(" (edge from `{}`)", pc.from)
            };
            Error::permanent(format!("port `{}`{edge}: {e}", pc.port))
        })?;
        if is_settings {
            let mut rendered = render_settings(mapping, policy, &mut settings_failures)?;
            if let Some((found, values)) = &filled {
                crate::secret::fill(&mut rendered, found, values);
            }
            settings = Some(rendered);
        } else if let Some(inlet) = inputs.iter_mut().find(|i| i.spec.name == pc.port) {
            let mapping = match (mapping, filled) {
                (Mapping::Template(t), Some(fills)) => Mapping::Filled(t, Box::new(fills)),
                (m, _) => m,
            };
            inlet.mappings.push(EdgeMapping::new(pc.from.clone(), mapping));
        }
    }
    Ok(Configured {
        settings,
        settings_failures,
        resolved,
        problems,
    })
}

/// The settings `mapping` makes: they have no incoming message, so expressions see
/// an empty object and a path in them yields null, as in the Go SDK (`failures` says
/// which); strictly, an error.
fn render_settings(mapping: Mapping, policy: &Policy, failures: &mut Vec<String>) -> Result<Value> {
    let empty = Value::Object(Default::default());
    Ok(match mapping {
        Mapping::Template(t) if policy.strict => t
            .render(&empty)
            .map_err(|e| Error::permanent(format!("port `_settings`: {e}")))?,
        Mapping::Template(t) => {
            let mut failed = Vec::new();
            let rendered = t.render_lenient(&empty, &mut failed);
            failures.extend(
                failed
                    .iter()
                    .map(|f| format!("settings: {f} (settings see no message: null)")),
            );
            rendered
        }
        _ => empty,
    })
}

/// The node's edges, by the source port they leave; an edge from a port that is
/// not an output, to an address out of form, or with a retry policy that does not
/// parse fails the node.
fn outlets(node: &Node, ports: &'static [PortSpec], name: &str) -> Result<Vec<Arc<Outlet>>> {
    let mut outlets: Vec<Outlet> = Vec::new();
    for edge in &node.spec.edges {
        match ports.iter().find(|p| p.answers(&edge.port)) {
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
        let outlet = match outlets.iter().position(|o| o.port == edge.port) {
            Some(i) => &mut outlets[i],
            None => {
                outlets.push(Outlet {
                    port: edge.port.clone(),
                    from: format!("{name}:{}", edge.port).into(),
                    edges: Vec::new(),
                });
                let last = outlets.len() - 1;
                &mut outlets[last]
            }
        };
        // Several flows may hold the same edge: send once.
        if outlet.edges.iter().any(|r| *r.node == to.node && *r.port == to.port) {
            continue;
        }
        let module = crate::flow::parse_node_name(&to.node).map(|(m, _)| Arc::from(m));
        outlet.edges.push(Arc::new(Route {
            id: edge.id.as_str().into(),
            node: to.node.into(),
            port: to.port.into(),
            module,
            backoff,
            target: std::sync::OnceLock::new(),
            inlet_cache: InletCache::default(),
        }));
    }
    Ok(outlets.into_iter().map(Arc::new).collect())
}

/// The spec's problems that let the node run, as one error.
fn one_problem(mut problems: Vec<Error>) -> Option<Error> {
    match problems.len() {
        0 => None,
        1 => problems.pop(),
        _ => {
            let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
            Some(Error::permanent(text.join("; ")).with_code(crate::error::code::SECRET))
        }
    }
}

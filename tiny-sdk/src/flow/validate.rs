use std::{collections::BTreeMap, fmt};

use serde_json::Value;

use super::{
    Catalog, ComponentSchema, Flow, Node, PortAddress, check_node_name,
    fit::{self, Misfit},
};
use crate::{contract::port as system, hop::MAX_DEPTH};

/// One mistake in a flow, found by [`validate`]: where it is and what is wrong.
/// `Display` gives one line naming the node, port and field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The node the mistake is written on (a signal's target node for a signal).
    pub node: String,
    /// The port concerned, if any.
    pub port: Option<String>,
    /// JSON pointer of the field concerned inside the port's configuration or schema
    /// (`/greetingWord`), if any.
    pub field: Option<String>,
    /// Which kind of mistake.
    pub kind: ProblemKind,
    /// What is wrong, in words.
    pub message: String,
}

/// The kinds of mistake [`validate`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// A node name that is not a Kubernetes object name (RFC 1123) or out of form
    /// (`{flow}.{module}.{component}-{suffix}`), or used twice.
    Name,
    /// A component no known module offers.
    Component,
    /// An edge, mapping or signal naming a node the flow does not have.
    Node,
    /// An edge, configuration or signal naming a port the component does not have (or
    /// an output where an input belongs, or the other way round).
    Port,
    /// A `{{...}}` expression that does not parse.
    Expression,
    /// An edge configuration (or a signal's data) that does not fit the target port's
    /// schema.
    Configuration,
    /// Settings that do not fit the `_settings` schema.
    Settings,
    /// Edges that make a loop: a message going round it is refused after
    /// [`MAX_DEPTH`] hops.
    Cycle,
    /// An `error` port whose schema lacks `context`, `error` or `retryable`.
    ErrorPort,
    /// A mapping (a `ports[]` entry with `from`) that no edge uses: the sender has no
    /// edge from that port to this one, so the mapping does nothing.
    Mapping,
}

impl ProblemKind {
    /// A short name for the kind (`expression`, `error-port`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Name => "name",
            ProblemKind::Component => "component",
            ProblemKind::Node => "node",
            ProblemKind::Port => "port",
            ProblemKind::Expression => "expression",
            ProblemKind::Configuration => "configuration",
            ProblemKind::Settings => "settings",
            ProblemKind::Cycle => "cycle",
            ProblemKind::ErrorPort => "error-port",
            ProblemKind::Mapping => "mapping",
        }
    }
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node `{}`", self.node)?;
        if let Some(port) = &self.port {
            write!(f, ", port `{port}`")?;
        }
        if let Some(field) = &self.field {
            write!(f, ", field `{field}`")?;
        }
        write!(f, ": {} [{}]", self.message, self.kind)
    }
}

/// The fields every error port's message has (the Go SDK's `ErrorMessage`).
pub const ERROR_PORT_FIELDS: [&str; 3] = ["context", "error", "retryable"];

/// Checks a flow before it runs, against the components `catalog` knows: node names;
/// components; edges, mappings and signals from or to nodes and ports that do not
/// exist; mappings that no edge uses; `{{...}}` expressions that do not parse; literal edge configurations and
/// settings that do not fit their port's schema (an expression's result is not known
/// before a message arrives, so those fields are not checked); loops of edges; and
/// `error` ports without `context`, `error` and `retryable`. Each mistake is reported
/// once, in the order of the flow's nodes (loops last).
///
/// Schemas are checked for `$ref`, `type`, `enum`, `const`, `properties`, `required`,
/// `additionalProperties`, `items` and `anyOf`/`oneOf`/`allOf` (not `minimum`,
/// `pattern` or `format`); a field the schema does not name is a mistake unless the
/// schema allows other fields. Ports are the ones a component declares: one that only
/// some settings switch on counts as there, and one another module makes at run time
/// (a router's `out_<route>`) as missing unless its catalogue marks it a family.
///
/// ```
/// use serde_json::json;
/// use tiny_sdk::flow::{Catalog, ComponentSchema, FlowBuilder, PortSchema, ProblemKind, validate};
///
/// let mut catalog = Catalog::default();
/// catalog.add_module("qa", vec![ComponentSchema {
///     name: "echo".into(),
///     ports: vec![
///         PortSchema::new("in", false, json!({"type": "object", "properties": {"n": {"type": "integer"}}})),
///         PortSchema::new("out", true, json!({})),
///     ],
/// }]);
/// let flow = FlowBuilder::new()
///     .node("f.qa.echo-a", "echo")
///     .node("f.qa.echo-b", "echo")
///     .edge("f.qa.echo-a:out", "f.qa.echo-b:in", json!({"n": "many"}))
///     .build();
/// let problems = validate(&flow, &catalog);
/// assert_eq!(problems.len(), 1);
/// assert_eq!(problems[0].kind, ProblemKind::Configuration);
/// assert_eq!(
///     problems[0].to_string(),
///     "node `f.qa.echo-b`, port `in`, field `/n`: expected an integer, found the string \"many\" \
///      (in the mapping of the edge from `f.qa.echo-a:out`) [configuration]"
/// );
/// ```
pub fn validate(flow: &Flow, catalog: &Catalog) -> Vec<Problem> {
    let mut v = Validator {
        flow,
        catalog,
        out: Vec::new(),
    };
    v.names();
    for node in &flow.nodes {
        let component = catalog.component(&node.name, &node.spec.module, &node.spec.component);
        if component.is_none() {
            v.unknown_component(node);
        }
        v.ports(node, component);
        v.edges(node, component);
        if let Some(c) = component {
            v.error_ports(node, c);
        }
    }
    v.signals();
    v.cycles();
    v.out
}

struct Validator<'a> {
    flow: &'a Flow,
    catalog: &'a Catalog,
    out: Vec<Problem>,
}

impl<'a> Validator<'a> {
    fn push(&mut self, node: &str, port: Option<&str>, field: Option<String>, kind: ProblemKind, message: String) {
        self.out.push(Problem {
            node: node.to_owned(),
            port: port.map(str::to_owned),
            field,
            kind,
            message,
        });
    }

    fn node(&self, name: &str) -> Option<&'a Node> {
        self.flow.nodes.iter().find(|n| n.name == name)
    }

    fn component_of(&self, node: &Node) -> Option<&'a ComponentSchema> {
        self.catalog
            .component(&node.name, &node.spec.module, &node.spec.component)
    }

    /// Whether an edge of the flow goes from `from` (`<node>:<port>`) to `node:port`.
    fn has_edge(&self, from: &str, node: &str, port: &str) -> bool {
        let Ok(address) = PortAddress::parse(from) else {
            return false;
        };
        self.node(&address.node).is_some_and(|sender| {
            sender.spec.edges.iter().any(|e| {
                e.port == address.port && PortAddress::parse(&e.to).is_ok_and(|to| to.node == node && to.port == port)
            })
        })
    }

    fn names(&mut self) {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for node in &self.flow.nodes {
            *seen.entry(node.name.as_str()).or_default() += 1;
            // One line a name: the API server's rule first, as it refuses the object.
            let message = super::kubernetes_name_error(&node.name, &node.spec.component).or_else(|| {
                check_node_name(&node.name, &node.spec.component)
                    .err()
                    .map(|e| e.to_string())
            });
            if let Some(message) = message {
                self.push(&node.name, None, None, ProblemKind::Name, message);
            }
        }
        for (name, count) in seen.into_iter().filter(|(_, c)| *c > 1) {
            self.push(
                name,
                None,
                None,
                ProblemKind::Name,
                format!("{count} nodes of the flow have this name"),
            );
        }
    }

    fn unknown_component(&mut self, node: &Node) {
        let (known, module) = self.catalog.component_names(&node.name, &node.spec.module);
        let message = match module {
            Some(module) => format!(
                "component `{}` is not one module `{module}` publishes (it publishes: {})",
                node.spec.component,
                list(known)
            ),
            None => format!(
                "component `{}` is not one of this module's (it has: {}); a node of another module is checked \
                 against what that module publishes, when its TinyModule is given",
                node.spec.component,
                list(known)
            ),
        };
        self.push(&node.name, None, None, ProblemKind::Component, message);
    }

    /// `ports[]`: the port exists and is an input; a mapping's sender exists; the
    /// configuration's expressions parse and its literal values fit the port.
    fn ports(&mut self, node: &Node, component: Option<&ComponentSchema>) {
        for pc in &node.spec.ports {
            // A mapping's edge names the same port: the edge's check reports it.
            let edged = !pc.from.is_empty() && self.has_edge(&pc.from, &node.name, &pc.port);
            let port = match component {
                None => None,
                Some(c) => match c.port(&pc.port) {
                    None if edged => None,
                    None => {
                        self.push(
                            &node.name,
                            Some(&pc.port),
                            None,
                            ProblemKind::Port,
                            format!(
                                "ports[] configures a port component `{}` does not have (it has: {})",
                                c.name,
                                list(c.ports.iter().map(|p| p.name.as_str()))
                            ),
                        );
                        None
                    }
                    Some(p) if p.source && p.name != system::CONTROL => {
                        self.push(
                            &node.name,
                            Some(&pc.port),
                            None,
                            ProblemKind::Port,
                            "ports[] configures an output port; only inputs take configuration".to_owned(),
                        );
                        None
                    }
                    Some(p) => Some(p),
                },
            };
            if !pc.from.is_empty() {
                self.mapping_sender(node, &pc.from, &pc.port);
            }
            let Some(config) = pc.configuration.as_ref().map(|c| c.value()) else {
                continue;
            };
            self.expressions(node, &pc.port, config);
            let Some(port) = port.filter(|p| p.name != system::CONTROL) else {
                continue;
            };
            let (kind, place) = if pc.from.is_empty() {
                if pc.port == system::SETTINGS {
                    (ProblemKind::Settings, "in the settings".to_owned())
                } else {
                    (ProblemKind::Configuration, "in the port's configuration".to_owned())
                }
            } else {
                (
                    ProblemKind::Configuration,
                    format!("in the mapping of the edge from `{}`", pc.from),
                )
            };
            for Misfit { pointer, message } in fit::misfits(&port.schema, config) {
                self.push(
                    &node.name,
                    Some(&pc.port),
                    (!pointer.is_empty()).then_some(pointer),
                    kind,
                    format!("{message} ({place})"),
                );
            }
        }
    }

    /// A mapping `from` a sender: reported only where no edge of the flow leads here
    /// from it (the edge's own check names a wrong sender port once).
    fn mapping_sender(&mut self, node: &Node, from: &str, port: &str) {
        let Ok(address) = PortAddress::parse(from) else {
            self.push(
                &node.name,
                Some(port),
                None,
                ProblemKind::Port,
                format!("the mapping's `from` `{from}` is not `<node>:<port>`"),
            );
            return;
        };
        let Some(sender) = self.node(&address.node) else {
            self.push(
                &node.name,
                Some(port),
                None,
                ProblemKind::Node,
                format!(
                    "the mapping is for an edge from `{from}`, but the flow has no node `{}`",
                    address.node
                ),
            );
            return;
        };
        if self.has_edge(from, &node.name, port) {
            return;
        }
        let sends = self
            .component_of(sender)
            .is_none_or(|c| c.port(&address.port).is_some_and(|p| p.source));
        if sends {
            self.push(
                &node.name,
                Some(port),
                None,
                ProblemKind::Mapping,
                format!(
                    "the mapping is for an edge from `{from}`, but `{}` has no edge from `{}` to `{}:{port}`, so \
                     the mapping does nothing (write the edge in `{}`'s `edges`, or remove this entry)",
                    address.node, address.port, node.name, address.node
                ),
            );
        }
        if let Some(c) = self.component_of(sender)
            && !c.port(&address.port).is_some_and(|p| p.source)
        {
            self.push(
                &node.name,
                Some(port),
                None,
                ProblemKind::Port,
                format!(
                    "the mapping is for an edge from `{from}`, but `{}` has no output `{}` (outputs: {})",
                    address.node,
                    address.port,
                    outputs(c)
                ),
            );
        }
    }

    /// Every string holding `{{` compiles, each reported at its own field.
    fn expressions(&mut self, node: &Node, port: &str, config: &Value) {
        let mut found = Vec::new();
        strings(config, &mut String::new(), &mut found);
        for (pointer, text) in found {
            if let Err(e) = tiny_expr::Template::compile(&Value::String(text.to_owned())) {
                self.push(
                    &node.name,
                    Some(port),
                    (!pointer.is_empty()).then_some(pointer),
                    ProblemKind::Expression,
                    format!("the expression does not parse: {e}"),
                );
            }
        }
    }

    /// `edges[]`: each leaves an output of this node and reaches an input of a node of
    /// the flow.
    fn edges(&mut self, node: &Node, component: Option<&ComponentSchema>) {
        for edge in &node.spec.edges {
            if let Some(c) = component
                && !c.port(&edge.port).is_some_and(|p| p.source)
            {
                self.push(
                    &node.name,
                    Some(&edge.port),
                    None,
                    ProblemKind::Port,
                    format!(
                        "edge `{}` leaves a port that is not an output of `{}` (outputs: {})",
                        edge.id,
                        c.name,
                        outputs(c)
                    ),
                );
            }
            let Ok(to) = PortAddress::parse(&edge.to) else {
                self.push(
                    &node.name,
                    Some(&edge.port),
                    None,
                    ProblemKind::Port,
                    format!("edge `{}` goes to `{}`, which is not `<node>:<port>`", edge.id, edge.to),
                );
                continue;
            };
            let Some(target) = self.node(&to.node) else {
                self.push(
                    &node.name,
                    Some(&edge.port),
                    None,
                    ProblemKind::Node,
                    format!(
                        "edge `{}` goes to node `{}`, which the flow does not have",
                        edge.id, to.node
                    ),
                );
                continue;
            };
            if let Some(c) = self.component_of(target)
                && c.port(&to.port).is_none_or(|p| p.source)
            {
                self.push(
                    &node.name,
                    Some(&edge.port),
                    None,
                    ProblemKind::Port,
                    format!(
                        "edge `{}` goes to `{}`, but `{}` (component `{}`) has no input `{}` (inputs: {})",
                        edge.id,
                        edge.to,
                        to.node,
                        c.name,
                        to.port,
                        inputs(c)
                    ),
                );
            }
        }
    }

    /// An `error` output carries the Go SDK's `ErrorMessage`: flows read
    /// `{{$.error}}`, `{{$.retryable}}` and `{{$.context}}` from it.
    fn error_ports(&mut self, node: &Node, component: &ComponentSchema) {
        for port in component.ports.iter().filter(|p| p.source && p.name == system::ERROR) {
            let properties = root_properties(&port.schema);
            for field in ERROR_PORT_FIELDS {
                if !properties.iter().any(|p| p.contains_key(field)) {
                    self.push(
                        &node.name,
                        Some(&port.name),
                        Some(format!("/{field}")),
                        ProblemKind::ErrorPort,
                        format!(
                            "the error port of component `{}` has no `{field}` in its schema (an error port's message has {})",
                            component.name,
                            ERROR_PORT_FIELDS.join(", ")
                        ),
                    );
                }
            }
        }
    }

    /// Signals go to an input of a node of the flow.
    fn signals(&mut self) {
        for signal in &self.flow.signals {
            let Some(target) = self.node(&signal.node) else {
                self.push(
                    &signal.node,
                    Some(&signal.port),
                    None,
                    ProblemKind::Node,
                    format!("signal `{}` is for a node the flow does not have", signal.name),
                );
                continue;
            };
            let Some(c) = self.component_of(target) else { continue };
            match c.port(&signal.port) {
                Some(port) if !port.source => {
                    for Misfit { pointer, message } in fit::misfits(&port.schema, &signal.data) {
                        self.push(
                            &signal.node,
                            Some(&signal.port),
                            (!pointer.is_empty()).then_some(pointer),
                            ProblemKind::Configuration,
                            format!("{message} (in the data of signal `{}`)", signal.name),
                        );
                    }
                }
                _ => self.push(
                    &signal.node,
                    Some(&signal.port),
                    None,
                    ProblemKind::Port,
                    format!(
                        "signal `{}` is for a port that is not an input of `{}` (inputs: {})",
                        signal.name,
                        c.name,
                        inputs(c)
                    ),
                ),
            }
        }
    }

    /// Each loop of edges once: its nodes in the order the edges go round.
    fn cycles(&mut self) {
        let graph = Graph::of(self.flow, self.catalog);
        for component in graph.loops() {
            let path = graph.cycle_through(&component);
            let Some(&start) = path.first() else { continue };
            let mut hops: Vec<String> = path
                .windows(2)
                .map(|w| format!("{}:{}", graph.names[w[0]], graph.port(w[0], w[1])))
                .collect();
            hops.push(graph.names[start].to_owned());
            let more = component.len().saturating_sub(path.len() - 1);
            let more = if more > 0 {
                format!(" (and {more} more nodes loop with them)")
            } else {
                String::new()
            };
            let first_port = path.get(1).map(|&next| graph.port(start, next).to_owned());
            self.push(
                graph.names[start],
                first_port.as_deref(),
                None,
                ProblemKind::Cycle,
                format!(
                    "edges make a loop: {}{more}; a message going round it is refused after {MAX_DEPTH} hops",
                    hops.join(" -> ")
                ),
            );
        }
    }
}

/// Where messages enter the flow's nodes (a node and one of its inputs) as a graph
/// of the edges between them.
struct Graph<'a> {
    /// The node of each vertex.
    names: Vec<&'a str>,
    /// `next[i]`: (target vertex, source port) of the edges a message entering at
    /// vertex `i` goes on by.
    next: Vec<Vec<(usize, &'a str)>>,
}

impl<'a> Graph<'a> {
    /// One vertex per node and input port an edge goes to: a message that entered a
    /// node there goes on by each edge leaving the node, except from a blocking output
    /// (its emits are the component's own, waiting for the answer). So a loop is one
    /// where a message can come back to the port it left; an http server's `request`
    /// going round a router to its own `response` is the answer, not a loop.
    fn of(flow: &'a Flow, catalog: &Catalog) -> Self {
        let target = |to: &str| {
            let to = PortAddress::parse(to).ok()?;
            let m = flow.nodes.iter().position(|m| m.name == to.node)?;
            Some((m, to.port))
        };
        // In flow order, so that a loop is told from its first node as written.
        let mut vertices: Vec<(usize, String)> = Vec::new();
        for e in flow.nodes.iter().flat_map(|n| &n.spec.edges) {
            if let Some(v) = target(&e.to)
                && !vertices.contains(&v)
            {
                vertices.push(v);
            }
        }
        vertices.sort_by_key(|(m, _)| *m);
        let leaving: Vec<Vec<(usize, &'a str)>> = flow
            .nodes
            .iter()
            .map(|n| {
                let component = catalog.component(&n.name, &n.spec.module, &n.spec.component);
                n.spec
                    .edges
                    .iter()
                    .filter(|e| !component.and_then(|c| c.port(&e.port)).is_some_and(|p| p.blocking))
                    .filter_map(|e| {
                        let to = target(&e.to)?;
                        Some((vertices.iter().position(|v| *v == to)?, e.port.as_str()))
                    })
                    .collect()
            })
            .collect();
        let names = vertices.iter().map(|(m, _)| flow.nodes[*m].name.as_str()).collect();
        let next = vertices.iter().map(|(m, _)| leaving[*m].clone()).collect();
        Self { names, next }
    }

    fn port(&self, from: usize, to: usize) -> &'a str {
        self.next[from].iter().find(|(t, _)| *t == to).map_or("", |(_, p)| *p)
    }

    /// The strongly connected components that hold a loop (Tarjan's algorithm), each
    /// sorted in flow order, in the order of their first node.
    fn loops(&self) -> Vec<Vec<usize>> {
        struct Tarjan<'g, 'a> {
            g: &'g Graph<'a>,
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            on_stack: Vec<bool>,
            stack: Vec<usize>,
            counter: usize,
            out: Vec<Vec<usize>>,
        }
        impl Tarjan<'_, '_> {
            fn visit(&mut self, v: usize) {
                self.index[v] = Some(self.counter);
                self.low[v] = self.counter;
                self.counter += 1;
                self.stack.push(v);
                self.on_stack[v] = true;
                for &(w, _) in &self.g.next[v] {
                    match self.index[w] {
                        None => {
                            self.visit(w);
                            self.low[v] = self.low[v].min(self.low[w]);
                        }
                        Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                        Some(_) => {}
                    }
                }
                if Some(self.low[v]) == self.index[v] {
                    let mut component = Vec::new();
                    while let Some(w) = self.stack.pop() {
                        self.on_stack[w] = false;
                        component.push(w);
                        if w == v {
                            break;
                        }
                    }
                    let looped = component.len() > 1 || self.g.next[v].iter().any(|(w, _)| *w == v);
                    if looped {
                        component.sort_unstable();
                        self.out.push(component);
                    }
                }
            }
        }
        let n = self.names.len();
        let mut t = Tarjan {
            g: self,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            counter: 0,
            out: Vec::new(),
        };
        for v in 0..n {
            if t.index[v].is_none() {
                t.visit(v);
            }
        }
        let mut out = t.out;
        out.sort_unstable_by_key(|c| c[0]);
        out
    }

    /// A shortest loop through the first node of `component`, start repeated at the end.
    fn cycle_through(&self, component: &[usize]) -> Vec<usize> {
        let Some(&start) = component.first() else {
            return Vec::new();
        };
        let mut before: BTreeMap<usize, usize> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            for &(w, _) in &self.next[v] {
                if w == start {
                    let mut path = vec![v];
                    let mut at = v;
                    while at != start {
                        at = before.get(&at).copied().unwrap_or(start);
                        path.push(at);
                    }
                    // The walk went back from `v` to `start`: turn it round and close it.
                    path.reverse();
                    path.push(start);
                    return path;
                }
                if component.contains(&w) && !before.contains_key(&w) && w != start {
                    before.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        Vec::new()
    }
}

/// The `properties` of a schema's root object (through a `$ref` into `$defs`).
fn root_properties(schema: &Value) -> Option<&serde_json::Map<String, Value>> {
    let mut at = schema;
    for _ in 0..8 {
        if let Some(p) = at.get("properties").and_then(Value::as_object) {
            return Some(p);
        }
        let target = at.get("$ref")?.as_str()?.strip_prefix('#')?;
        at = schema.pointer(target)?;
    }
    None
}

/// The strings of `value` that hold `{{`, with their JSON pointers.
fn strings<'v>(value: &'v Value, pointer: &mut String, out: &mut Vec<(String, &'v str)>) {
    match value {
        Value::String(s) if s.contains("{{") => out.push((pointer.clone(), s)),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                strings(v, pointer, out);
                pointer.truncate(len);
            }
        }
        Value::Object(fields) => {
            for (k, v) in fields {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                strings(v, pointer, out);
                pointer.truncate(len);
            }
        }
        _ => {}
    }
}

fn list<'s>(names: impl IntoIterator<Item = &'s str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

fn outputs(c: &ComponentSchema) -> String {
    list(c.ports.iter().filter(|p| p.source).map(|p| p.name.as_str()))
}

fn inputs(c: &ComponentSchema) -> String {
    list(
        c.ports
            .iter()
            .filter(|p| !p.source && !system::is_system(&p.name))
            .map(|p| p.name.as_str()),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::flow::{FlowBuilder, PortSchema};

    fn catalog() -> Catalog {
        let error = json!({"$ref": "#/$defs/E", "$defs": {"E": {"type": "object", "properties": {
            "context": {}, "error": {"type": "string"}, "retryable": {"type": "boolean"}}}}});
        let mut c = Catalog::default();
        c.add_module(
            "qa",
            vec![
                ComponentSchema {
                    name: "echo".into(),
                    ports: vec![
                        PortSchema::new(
                            "_settings",
                            false,
                            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
                        ),
                        PortSchema::new(
                            "in",
                            false,
                            json!({"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}),
                        ),
                        PortSchema::new("out", true, json!({})),
                        PortSchema::new("error", true, error),
                    ],
                },
                ComponentSchema {
                    name: "legacy".into(),
                    ports: vec![
                        PortSchema::new("in", false, json!({})),
                        PortSchema::new(
                            "error",
                            true,
                            json!({"type": "object", "properties": {"message": {"type": "string"}}}),
                        ),
                    ],
                },
            ],
        );
        c
    }

    fn kinds(problems: &[Problem]) -> Vec<(ProblemKind, &str, Option<&str>, Option<&str>)> {
        problems
            .iter()
            .map(|p| (p.kind, p.node.as_str(), p.port.as_deref(), p.field.as_deref()))
            .collect()
    }

    #[test]
    fn a_sound_flow_has_no_problems() {
        let flow = FlowBuilder::new()
            .node("f.qa.echo-a", "echo")
            .settings(json!({"n": 3}))
            .node("f.qa.echo-b", "echo")
            .edge("f.qa.echo-a:out", "f.qa.echo-b:in", json!({"text": "{{$.text + '!'}}"}))
            .signal("f.qa.echo-a:in", json!({"text": "hi"}))
            .build();
        assert_eq!(validate(&flow, &catalog()), []);
    }

    #[test]
    fn each_mistake_is_reported_once_where_it_is() {
        let flow = FlowBuilder::new()
            .module("qa")
            .node("Bad_Name", "echo")
            .node("f.qa.echo-a", "echo")
            .settings(json!({"n": "three"}))
            .node("f.qa.echo-b", "echo")
            .node("f.qa.nope-1", "nope")
            .node("f.qa.legacy-1", "legacy")
            .edge(
                "f.qa.echo-a:out",
                "f.qa.echo-b:in",
                json!({"text": 5, "x": "{{$.a +}}"}),
            )
            .edge("f.qa.echo-a:missing", "f.qa.echo-b:in", json!("{{$}}"))
            .edge("f.qa.echo-b:out", "f.qa.echo-b:nothere", json!("{{$}}"))
            .edge("f.qa.echo-b:out", "f.qa.gone-1:in", json!("{{$}}"))
            .signal("f.qa.echo-a:out", json!({}))
            .build();
        let problems = validate(&flow, &catalog());
        let text: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            kinds(&problems),
            [
                (ProblemKind::Name, "Bad_Name", None, None),
                (ProblemKind::Settings, "f.qa.echo-a", Some("_settings"), Some("/n")),
                (ProblemKind::Port, "f.qa.echo-a", Some("missing"), None),
                (ProblemKind::Expression, "f.qa.echo-b", Some("in"), Some("/x")),
                (ProblemKind::Configuration, "f.qa.echo-b", Some("in"), Some("/text")),
                (ProblemKind::Configuration, "f.qa.echo-b", Some("in"), Some("/x")),
                (ProblemKind::Port, "f.qa.echo-b", Some("out"), None),
                (ProblemKind::Node, "f.qa.echo-b", Some("out"), None),
                (ProblemKind::Component, "f.qa.nope-1", None, None),
                (ProblemKind::ErrorPort, "f.qa.legacy-1", Some("error"), Some("/context")),
                (ProblemKind::ErrorPort, "f.qa.legacy-1", Some("error"), Some("/error")),
                (
                    ProblemKind::ErrorPort,
                    "f.qa.legacy-1",
                    Some("error"),
                    Some("/retryable")
                ),
                (ProblemKind::Port, "f.qa.echo-a", Some("out"), None),
                (ProblemKind::Cycle, "f.qa.echo-b", Some("out"), None),
            ],
            "{text:#?}"
        );
        assert!(text[3].contains("does not parse"), "{}", text[3]);
        assert!(
            text[5].contains("`x` is not a field here (fields: text)"),
            "{}",
            text[5]
        );
        assert!(text[6].contains("has no input `nothere` (inputs: in)"), "{}", text[6]);
        assert!(
            text[8].contains("is not one module `qa` publishes (it publishes: echo, legacy)"),
            "{}",
            text[8]
        );
        assert_eq!(
            text[13],
            "node `f.qa.echo-b`, port `out`: edges make a loop: f.qa.echo-b:out -> f.qa.echo-b; \
             a message going round it is refused after 256 hops [cycle]"
        );
    }

    #[test]
    fn names_the_api_server_refuses_and_signal_data_that_does_not_fit_are_found() {
        let flow = FlowBuilder::new()
            .module("qa")
            .node("f.qa.Echo-1", "echo")
            .node("f.qa.echo-1", "echo")
            .signal("f.qa.echo-1:in", json!({"text": 1}))
            .build();
        let problems = validate(&flow, &catalog());
        assert_eq!(
            kinds(&problems),
            [
                (ProblemKind::Name, "f.qa.Echo-1", None, None),
                (ProblemKind::Configuration, "f.qa.echo-1", Some("in"), Some("/text")),
            ],
            "{problems:#?}"
        );
        assert!(problems[0].message.contains("RFC 1123"), "{}", problems[0].message);
        assert_eq!(
            problems[1].message,
            "expected a string, found the number 1 (in the data of signal `signal-1`)"
        );
    }

    #[test]
    fn a_mapping_that_no_edge_uses_is_reported() {
        // `echo-b` maps what `echo-a` sends on `out`, but `echo-a` has no edge there.
        let flow = Flow::from_yaml(
            r#"
kind: TinyNode
metadata: { name: f.qa.echo-a }
spec: { module: qa, component: echo }
---
kind: TinyNode
metadata: { name: f.qa.echo-b }
spec:
  module: qa
  component: echo
  ports: [{ from: "f.qa.echo-a:out", port: in, configuration: { text: "{{$.text}}" } }]
"#,
        )
        .unwrap();
        let problems = validate(&flow, &catalog());
        assert_eq!(
            kinds(&problems),
            [(ProblemKind::Mapping, "f.qa.echo-b", Some("in"), None)],
            "{problems:#?}"
        );
        assert_eq!(
            problems[0].to_string(),
            "node `f.qa.echo-b`, port `in`: the mapping is for an edge from `f.qa.echo-a:out`, but `f.qa.echo-a` \
             has no edge from `out` to `f.qa.echo-b:in`, so the mapping does nothing (write the edge in \
             `f.qa.echo-a`'s `edges`, or remove this entry) [mapping]"
        );
    }

    #[test]
    fn a_loop_is_reported_once_in_the_order_its_edges_go() {
        let flow = FlowBuilder::new()
            .node("f.qa.echo-a", "echo")
            .node("f.qa.echo-b", "echo")
            .node("f.qa.echo-c", "echo")
            .node("f.qa.echo-d", "echo")
            .edge("f.qa.echo-a:out", "f.qa.echo-c:in", json!({"text": "{{$.text}}"}))
            .edge("f.qa.echo-c:out", "f.qa.echo-b:in", json!({"text": "{{$.text}}"}))
            .edge("f.qa.echo-b:out", "f.qa.echo-a:in", json!({"text": "{{$.text}}"}))
            .edge("f.qa.echo-b:error", "f.qa.echo-d:in", json!({"text": "{{$.error}}"}))
            .build();
        let problems = validate(&flow, &catalog());
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(problems[0].kind, ProblemKind::Cycle);
        assert!(
            problems[0].message.starts_with(
                "edges make a loop: f.qa.echo-a:out -> f.qa.echo-c:out -> f.qa.echo-b:out -> f.qa.echo-a;"
            ),
            "{}",
            problems[0].message
        );
    }

    #[test]
    fn a_request_answered_through_a_router_is_not_a_loop_but_a_message_sent_round_is() {
        // Issue 47: an http flow (the server's `request` out, a router, its `response`
        // in) was reported as a loop; the answer does not leave by `request` again.
        let mut c = Catalog::default();
        let mut request = PortSchema::new("request", true, json!({}));
        request.blocking = true;
        let mut route = PortSchema::new("out", true, json!({}));
        route.family = true;
        c.add_module(
            "qa",
            vec![
                ComponentSchema {
                    name: "server".into(),
                    ports: vec![request, PortSchema::new("response", false, json!({}))],
                },
                ComponentSchema {
                    name: "router".into(),
                    ports: vec![PortSchema::new("in", false, json!({})), route],
                },
            ],
        );
        let flow = FlowBuilder::new()
            .node("f.qa.server-a", "server")
            .node("f.qa.router-a", "router")
            .edge("f.qa.server-a:request", "f.qa.router-a:in", json!("{{$}}"))
            .edge("f.qa.router-a:out_ok", "f.qa.server-a:response", json!("{{$}}"))
            .build();
        let problems = validate(&flow, &c);
        assert!(problems.is_empty(), "{problems:#?}");
        // A router that routes back into itself does send a message round.
        let flow = FlowBuilder::new()
            .node("f.qa.router-a", "router")
            .edge("f.qa.router-a:out_again", "f.qa.router-a:in", json!("{{$}}"))
            .build();
        let problems = validate(&flow, &c);
        assert_eq!(
            kinds(&problems),
            [(ProblemKind::Cycle, "f.qa.router-a", Some("out_again"), None)],
            "{problems:#?}"
        );
    }
}

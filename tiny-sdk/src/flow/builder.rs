use serde_json::Value;

use super::{Edge, Flow, Node, NodeSpec, PortConfig, RawJson, RetryPolicy, Signal};

/// Builds a [`Flow`] in code.
///
/// ```
/// use serde_json::json;
/// use tiny_sdk::flow::FlowBuilder;
///
/// let flow = FlowBuilder::new()
///     .node("greeter", "hello")
///     .settings(json!({"greetingWord": "Hi"}))
///     .edge("greeter:greeting", "shout:in", json!({"text": "{{$.greeting}}"}))
///     .node("shout", "upper")
///     .build();
/// assert_eq!(flow.nodes[0].spec.edges[0].to, "shout:in");
/// assert_eq!(flow.nodes[1].spec.ports[0].from, "greeter:greeting");
/// ```
///
/// Edges may name nodes added after them: they are placed when the flow is built.
#[derive(Debug, Clone, Default)]
pub struct FlowBuilder {
    flow: Flow,
    module: String,
    /// `(from, to, mapping, retry)`, placed by [`build`](Self::build).
    edges: Vec<(String, String, Value, Option<RetryPolicy>)>,
}

impl FlowBuilder {
    /// An empty flow of module `test`.
    pub fn new() -> Self {
        Self {
            flow: Flow::default(),
            module: "test".into(),
            edges: Vec::new(),
        }
    }

    /// The module written into each node's spec.
    #[must_use]
    pub fn module(mut self, module: impl Into<String>) -> Self {
        self.module = module.into();
        self
    }

    /// Adds node `name` running `component`; later calls configure it.
    #[must_use]
    pub fn node(mut self, name: &str, component: &str) -> Self {
        self.flow.nodes.push(Node {
            name: name.into(),
            spec: NodeSpec {
                module: self.module.clone(),
                component: component.into(),
                ..NodeSpec::default()
            },
            ..Node::default()
        });
        self
    }

    /// Settings of the last added node.
    #[must_use]
    pub fn settings(mut self, settings: Value) -> Self {
        if let Some(node) = self.flow.nodes.last_mut() {
            node.spec
                .ports
                .retain(|p| !(p.port == crate::contract::port::SETTINGS && p.from.is_empty()));
            node.spec.ports.push(PortConfig {
                port: crate::contract::port::SETTINGS.into(),
                configuration: Some(RawJson(settings)),
                ..PortConfig::default()
            });
        }
        self
    }

    /// An edge `from` (`node:port`) -> `to` (`node:port`), whose `mapping` (JSON with
    /// `{{...}}` expressions over the sender's message) shapes the target's input.
    /// Use `json!("{{$}}")` to pass the message through unchanged.
    #[must_use]
    pub fn edge(self, from: &str, to: &str, mapping: Value) -> Self {
        self.edge_with(from, to, mapping, None)
    }

    /// [`edge`](Self::edge) with a retry policy.
    #[must_use]
    pub fn edge_with(mut self, from: &str, to: &str, mapping: Value, retry: Option<RetryPolicy>) -> Self {
        self.edges.push((from.into(), to.into(), mapping, retry));
        self
    }

    /// Places an edge: on its source node, and its mapping on its target node (each
    /// when the flow has it).
    fn place(&mut self, from: &str, to: &str, mapping: Value, retry: Option<RetryPolicy>) {
        let (src_node, src_port) = from.rsplit_once(':').unwrap_or((from, ""));
        let (dst_node, dst_port) = to.rsplit_once(':').unwrap_or((to, ""));
        let id = format!("{from}->{to}");
        if let Some(n) = self.flow.nodes.iter_mut().find(|n| n.name == src_node) {
            n.spec.edges.push(Edge {
                id,
                port: src_port.into(),
                to: to.into(),
                flow_id: "flow".into(),
                retry_policy: retry,
            });
        }
        if let Some(n) = self.flow.nodes.iter_mut().find(|n| n.name == dst_node) {
            n.spec.ports.push(PortConfig {
                from: from.into(),
                port: dst_port.into(),
                configuration: Some(RawJson(mapping)),
                flow_id: "flow".into(),
                ..PortConfig::default()
            });
        }
    }

    /// A signal delivered once the flow runs.
    #[must_use]
    pub fn signal(mut self, to: &str, data: Value) -> Self {
        let (node, port) = to.rsplit_once(':').unwrap_or((to, ""));
        self.flow.signals.push(Signal {
            name: format!("signal-{}", self.flow.signals.len() + 1),
            node: node.into(),
            port: port.into(),
            data,
        });
        self
    }

    /// The flow, its edges placed.
    pub fn build(self) -> Flow {
        let mut this = self;
        for (from, to, mapping, retry) in std::mem::take(&mut this.edges) {
            this.place(&from, &to, mapping, retry);
        }
        this.flow
    }
}

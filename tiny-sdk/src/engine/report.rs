//! What a node's status shows: [`NodeReport`]; node counts; delivery with an attempt number.

use serde_json::Value;

use crate::{component::ComponentInfo, error::Error, port::Position, redact::Secrets};

use super::table::Engine;

/// What a node's status shows: its component, ports and health.
#[derive(Debug, Clone)]
pub struct NodeReport {
    /// The component, when it is known.
    pub component: Option<ComponentInfo>,
    /// Ports sorted by name, system ports `_settings`/`_control` included.
    pub ports: Vec<PortReport>,
    /// Why the node does not run as specified, if it does not.
    pub error: Option<Error>,
    /// Edges into the node whose expressions failed within
    /// [`FAILING_WINDOW`](super::FAILING_WINDOW) (the hop went on with `null`, as in
    /// the Go SDK), one line each naming the edge, the field and the expression; and
    /// settings expressions that failed (settings see no message), first.
    pub failing_edges: Vec<String>,
    /// A message this node sent within [`FAILING_WINDOW`](super::FAILING_WINDOW) that
    /// the wire to another module refused (`MESSAGE_TOO_LARGE`: over the broker's
    /// `max_payload` or gRPC's message size), naming the edge: the sender learns it
    /// from the error, and its node shows it.
    pub delivery_failure: Option<String>,
}

/// One port in a [`NodeReport`].
#[derive(Debug, Clone)]
pub struct PortReport {
    /// Port name.
    pub name: String,
    /// Label.
    pub label: String,
    /// Handle position.
    pub position: Position,
    /// `true` for outputs.
    pub source: bool,
    /// Editor schema.
    pub schema: Value,
    /// Current configuration (settings in force, or the port's default), with the
    /// fields the schema marks secret masked (see [`crate::redact`]): a status is
    /// readable by anyone who may read TinyNodes.
    pub configuration: Value,
}

impl Engine {
    /// How many nodes run, and how many are refused or run an older spec because
    /// their current one was rejected: `(running, failed)`.
    pub fn node_counts(&self) -> (usize, usize) {
        let nodes = self.inner.nodes_read();
        let failed = nodes.values().filter(|s| s.error.is_some()).count();
        (nodes.len() - failed, failed)
    }

    /// The status of a node, for `TinyNode.status`. Secret fields are masked.
    pub fn report(&self, name: &str) -> Option<NodeReport> {
        let nodes = self.inner.nodes_read();
        let slot = nodes.get(name)?;
        let error = slot.error.clone();
        let Some(runner) = &slot.runner else {
            let component = self.inner.registry.get(&slot.node.spec.component).map(|e| (e.info)());
            return Some(NodeReport {
                component,
                ports: Vec::new(),
                error,
                failing_edges: Vec::new(),
                delivery_failure: self.inner.recent_delivery_failure(name),
            });
        };
        let known = self.inner.known.get();
        let mut ports: Vec<PortReport> = runner
            .instance
            .shaped_ports()
            .into_iter()
            .map(|(spec, shape)| {
                let mut configuration = shape.configuration;
                Secrets::from_schema(&shape.schema)
                    .with_values(runner.resolved().iter().cloned())
                    .with_values(known.iter().flat_map(|k| k.iter().cloned()))
                    .mask_published(&mut configuration);
                PortReport {
                    name: shape.name,
                    label: shape.label,
                    position: spec.position,
                    source: spec.is_source(),
                    schema: shape.schema,
                    configuration,
                }
            })
            .collect();
        ports.sort_by(|a, b| a.name.cmp(&b.name));
        // A spec that runs, but with an edge the settings cut off, still says so.
        let error = error.or_else(|| runner.problem.clone());
        Some(NodeReport {
            component: Some(runner.instance.info()),
            ports,
            error,
            failing_edges: runner.failing_edges(),
            delivery_failure: self.inner.recent_delivery_failure(name),
        })
    }
}

//! The flow model: nodes, their port configurations and edges, in the same shape as
//! the TinyNode custom resource, so one YAML runs in-process and on Kubernetes.

mod address;
mod builder;
mod document;
mod node;
mod raw;

pub use address::{NodeNameError, PortAddress, check_node_name, module_matches, parse_node_name};
pub use builder::FlowBuilder;
pub use document::{Flow, Signal};
pub use node::{Edge, Node, NodeSpec, PortConfig, RetryPolicy};
pub use raw::RawJson;

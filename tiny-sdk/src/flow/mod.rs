//! The flow model: nodes, their port configurations and edges, in the same shape as
//! the TinyNode custom resource, so one YAML runs in-process and on Kubernetes.

mod address;
mod node;
mod raw;

pub use address::{PortAddress, parse_node_name};
pub use node::{Edge, Node, NodeSpec, PortConfig, RetryPolicy};
pub use raw::RawJson;

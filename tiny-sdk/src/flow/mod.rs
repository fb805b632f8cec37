//! The flow model: nodes, their port configurations and edges, in the same shape as
//! the TinyNode custom resource, so one YAML runs in-process and on Kubernetes; and
//! [`validate`](validate()), which checks a flow against the components it uses before
//! it runs; and [`check_upgrade`], which says what a new build of a module breaks of
//! the flows deployed.

mod address;
mod builder;
mod catalog;
mod document;
mod fit;
mod node;
mod raw;
mod upgrade;
mod validate;

pub(crate) use address::kubernetes_name_error;
pub use address::{NodeNameError, PortAddress, check_node_name, module_matches, node_name_segment, parse_node_name};
pub use builder::FlowBuilder;
pub use catalog::{Catalog, ComponentSchema, PortSchema};
pub use document::{Flow, Signal};
pub use node::{Edge, Node, NodeSpec, PortConfig, RetryPolicy};
pub use raw::RawJson;
pub use upgrade::{Change, ChangeKind, Finding, Verdict, check_upgrade, schema_changes};
pub use validate::{ERROR_PORT_FIELDS, Problem, ProblemKind, validate};

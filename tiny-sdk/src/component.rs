//! The component abstraction: what a module author implements (through the derive).

pub use crate::author::{AgentTool, Component, ComponentInfo, Hooks};

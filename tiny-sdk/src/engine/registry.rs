//! Which components a module offers, by name.

use std::{collections::BTreeMap, sync::Arc};

use crate::{
    component::{AgentTool, Component, ComponentInfo, Hooks},
    node::NodeContext,
    port::PortSpec,
};

use super::{
    defined::{ComponentRuntime, Defined, Definition},
    instance::{Instance, NodeInstance},
};

/// How to make one component.
#[derive(Clone, Copy)]
pub struct ComponentEntry {
    /// Catalogue information.
    pub info: fn() -> ComponentInfo,
    /// The port table.
    pub ports: fn() -> &'static [PortSpec],
    /// The component as an agent tool, when it is one.
    pub agent_tool: fn() -> Option<AgentTool>,
    pub(crate) create: fn(Arc<NodeContext>) -> Arc<dyn NodeInstance>,
    destroys: bool,
    default_keys: fn(&str) -> Vec<String>,
}

impl ComponentEntry {
    /// Whether a deleted node of this component must be held until its `on_destroy`
    /// ran (a runtime puts a finalizer on such nodes, and only on them).
    pub fn destroys(&self) -> bool {
        self.destroys
    }

    /// The keys of the port family `family` under the default settings: the ports a
    /// new node has (`out_a`, `out_b` for a router), which a module publishes as Go's
    /// TinyModule status does.
    pub fn default_port_keys(&self, family: &str) -> Vec<String> {
        (self.default_keys)(family)
    }
}

impl std::fmt::Debug for ComponentEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComponentEntry")
            .field("info", &(self.info)())
            .finish_non_exhaustive()
    }
}

/// The components of a module.
///
/// ```
/// # use tiny_sdk::prelude::*;
/// # #[derive(Component, Default)] #[component(name = "noop")] struct Noop;
/// let mut registry = tiny_sdk::engine::Registry::default();
/// registry.register::<Noop>();
/// assert!(registry.get("noop").is_some());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Registry {
    components: BTreeMap<String, ComponentEntry>,
    /// The runtimes for components defined as data, and the definitions installed.
    pub(crate) defined: Defined,
}

impl Registry {
    /// Adds `C` under its `info().name`; a later registration of the same name wins.
    pub fn register<C: Component + Hooks>(&mut self) -> &mut Self {
        let entry = ComponentEntry {
            info: C::info,
            ports: C::ports,
            agent_tool: C::agent_tool,
            create: Instance::<C>::create,
            destroys: C::DESTROYS,
            default_keys: |family| C::port_keys(&C::Settings::default(), family),
        };
        self.components.insert(C::info().name, entry);
        self
    }

    /// The component called `name`.
    pub fn get(&self, name: &str) -> Option<&ComponentEntry> {
        self.components.get(name)
    }

    /// All components, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ComponentEntry)> {
        self.components.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Serves components defined as data (TinyComponents) whose `runtime` is
    /// `runtime.name()`; a later runtime of the same name wins.
    pub fn runtime(&mut self, runtime: impl ComponentRuntime) -> &mut Self {
        self.defined.add_runtime(Arc::new(runtime));
        self
    }

    /// Whether definitions of `runtime` are served.
    pub fn serves(&self, runtime: &str) -> bool {
        self.defined.serves(runtime)
    }

    /// The runtimes served, sorted.
    pub fn runtimes(&self) -> Vec<&str> {
        self.defined.runtime_names()
    }

    /// The installed definition of the defined component `name`: in an engine's
    /// registry ([`Engine::registry`](super::Engine::registry)); an engine takes a table
    /// of its own when built, so the registry it was built from has none.
    pub fn definition(&self, name: &str) -> Option<Definition> {
        self.defined.definition(name)
    }

    /// The installed definitions, by name: in an engine's registry
    /// ([`Engine::registry`](super::Engine::registry)).
    pub fn definitions(&self) -> Vec<Definition> {
        self.defined.definitions()
    }

    /// Registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.components.keys().map(String::as_str).collect()
    }
}

// Here rather than in `flow`: the flow model sits below the engine and knows nothing
// of its registry.
impl crate::flow::Catalog {
    /// The catalogue of a module's own components.
    pub fn from_registry(registry: &Registry) -> Self {
        let local = registry
            .iter()
            .map(|(name, entry)| crate::flow::ComponentSchema {
                name: name.to_owned(),
                ports: (entry.ports)()
                    .iter()
                    .map(|p| crate::flow::PortSchema {
                        name: p.name.to_owned(),
                        source: p.is_source(),
                        schema: (p.schema)(),
                        family: p.family,
                        blocking: p.declares_response(),
                    })
                    .collect(),
            })
            .collect();
        Self::with_local(local)
    }
}

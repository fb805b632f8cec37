use serde_json::Value;

/// The components a flow may use, with their ports and schemas: what
/// [`validate`](super::validate()) checks a flow against. One module's own
/// components come from its [`Registry`](crate::engine::Registry); other modules' from what they publish
/// (their TinyModule's `status.components`).
///
/// ```
/// use serde_json::json;
/// use tiny_sdk::flow::{Catalog, ComponentSchema, PortSchema};
///
/// let mut catalog = Catalog::default();
/// catalog.add_module("common-module-v0", vec![ComponentSchema {
///     name: "router".into(),
///     ports: vec![PortSchema::new("input", false, json!({"type": "object"}))],
/// }]);
/// assert!(catalog.component("x.common-module-v0.router-1", "common", "router").is_some());
/// assert!(catalog.component("x.other-v0.router-1", "other", "router").is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// This module's components: nodes of no other known module are looked up here.
    local: Vec<ComponentSchema>,
    /// Other modules, by the name their nodes carry (`common-module-v0`).
    modules: Vec<(String, Vec<ComponentSchema>)>,
}

/// One component: its name and ports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ComponentSchema {
    /// The component's name (`spec.component` of its nodes).
    pub name: String,
    /// Its ports.
    pub ports: Vec<PortSchema>,
}

/// One port of a component.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PortSchema {
    /// The port's name (a family's name for a port family).
    pub name: String,
    /// `true` for outputs.
    pub source: bool,
    /// The port's JSON Schema (the editor shape: `$ref` into `$defs`).
    pub schema: Value,
    /// A port family: the node has ports `<name>_<key>`, keys from its settings.
    pub family: bool,
    /// An output whose emits wait for an answer that comes back up the chain (a
    /// response type, Go's `ResponseConfiguration`): the component emits on it for
    /// events of its own (an HTTP request), not for a message on one of its inputs,
    /// so an edge back into the node answers it rather than loops (see
    /// [`validate`](super::validate())).
    pub blocking: bool,
}

impl PortSchema {
    /// A port that is not a family.
    pub fn new(name: impl Into<String>, source: bool, schema: Value) -> Self {
        Self {
            name: name.into(),
            source,
            schema,
            family: false,
            blocking: false,
        }
    }

    /// Whether a node of this component has the port called `port` through this one:
    /// the same name, or a member `<family>_<key>` of a family.
    pub fn answers(&self, port: &str) -> bool {
        crate::port::answers(&self.name, self.family, port)
    }
}

impl ComponentSchema {
    /// The port a node of this component has under the name `port`.
    pub fn port(&self, port: &str) -> Option<&PortSchema> {
        self.ports
            .iter()
            .find(|p| p.name == port)
            .or_else(|| self.ports.iter().find(|p| p.answers(port)))
    }
}

impl Catalog {
    /// A catalogue of `local` components (and no other module's yet).
    pub(crate) fn with_local(local: Vec<ComponentSchema>) -> Self {
        Self {
            local,
            modules: Vec::new(),
        }
    }

    /// Adds components of this module's own beyond its registry's: the components
    /// defined as data (TinyComponents) it serves.
    pub fn add_local(&mut self, components: Vec<ComponentSchema>) -> &mut Self {
        self.local.extend(components);
        self
    }

    /// Adds another module's components, known by `module`, the name its nodes carry
    /// (`{flow}.{module}.{component}-{suffix}`, compared as
    /// [`module_matches`](super::module_matches)).
    pub fn add_module(&mut self, module: impl Into<String>, components: Vec<ComponentSchema>) -> &mut Self {
        self.modules.push((module.into(), components));
        self
    }

    /// The component a node runs: in the module its name (or, for a name out of form,
    /// `spec_module`) gives, if that is another module this catalogue knows; else
    /// among the local components.
    pub fn component(&self, node: &str, spec_module: &str, component: &str) -> Option<&ComponentSchema> {
        self.module_of(node, spec_module).iter().find(|c| c.name == component)
    }

    /// The components of the module a node belongs to.
    fn module_of(&self, node: &str, spec_module: &str) -> &[ComponentSchema] {
        let module = super::parse_node_name(node).map_or(spec_module, |(m, _)| m);
        self.modules
            .iter()
            .find(|(name, _)| super::module_matches(module, name))
            .map_or(self.local.as_slice(), |(_, components)| components.as_slice())
    }

    /// The names of the components a node of that module could run, and the name of
    /// that module if it is another than the local one, for messages.
    pub(crate) fn component_names(&self, node: &str, spec_module: &str) -> (Vec<&str>, Option<&str>) {
        let module = super::parse_node_name(node).map_or(spec_module, |(m, _)| m);
        let other = self
            .modules
            .iter()
            .find(|(name, _)| super::module_matches(module, name))
            .map(|(name, _)| name.as_str());
        let names = self
            .module_of(node, spec_module)
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        (names, other)
    }
}

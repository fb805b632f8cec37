//! The two halves of the author's API that name each other: the [`Component`] trait,
//! whose handlers take a `&Ctx<Self>`, and the [`Ctx`] they get, generic over its
//! component. Declared together so that neither file imports the other; published
//! as [`crate::component`] and [`crate::context`], where the rest of each lives.

use std::{fmt, future::Future, sync::Arc};

use serde::{Deserialize, Serialize};

use crate::{
    client::ResourceManager,
    error::{ErrorMessage, Result},
    flow::Node,
    hop::Hop,
    message::{Message, Reply},
    msg::Msg,
    node::NodeContext,
    port::{Output, PortShape, PortSpec},
};

/// Name, description and tags of a component, as shown in the editor's catalogue.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentInfo {
    /// Unique name within the module, e.g. `http_server`.
    pub name: String,
    /// One-line description.
    #[serde(default)]
    pub description: String,
    /// Longer help text (markdown).
    #[serde(default)]
    pub info: String,
    /// Searchable tags.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// How a component serves as an agent tool (Go's `AgentToolInfo`): a platform agent
/// calls it directly (`x-mode: rpc` on NATS), with no flow, settings or state, and
/// gets the first message it emits on `output`. Written by
/// `#[component(agent_tool(input = "in", output = "out", description = "..."))]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentTool {
    /// The input port the caller's JSON arrives on (Go's default `in`).
    pub input: &'static str,
    /// The output port whose first emit is the answer (Go's default `out`).
    pub output: &'static str,
    /// What the agent reads about the tool; when not empty it is also the catalogue's
    /// `info`, as Go's build writes it.
    pub description: &'static str,
}

/// A reusable building block of flows, usually written with `#[derive(Component)]`.
///
/// ```
/// use tiny_sdk::prelude::*;
///
/// #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
/// pub struct Name {
///     #[tiny(configurable)]
///     pub name: String,
/// }
///
/// #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
/// pub struct Greeting {
///     pub greeting: String,
/// }
///
/// #[derive(Component, Default)]
/// #[component(name = "hello", description = "Greets a person by name")]
/// pub struct Hello {
///     #[port(position = Left)]
///     name: Input<Name>,
///     #[port(position = Right)]
///     greeting: Output<Greeting>,
/// }
///
/// impl Hello {
///     async fn on_name(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
///         let greeting = format!("Hello, {}!", msg.name);
///         self.greeting.emit(ctx, Greeting { greeting }).await
///     }
/// }
///
/// assert_eq!(Hello::info().name, "hello");
/// assert_eq!(Hello::ports().len(), 2);
/// ```
pub trait Component: Sized + Send + Sync + 'static {
    /// Typed settings delivered on `_settings` before any business message; `()` when
    /// the component has none.
    type Settings: Message + Default + Clone;
    /// Typed dashboard controls delivered on `_control`; `()` when none.
    type Control: Message;

    /// Catalogue information.
    fn info() -> ComponentInfo;

    /// The port table, in declaration order (system ports first).
    fn ports() -> &'static [PortSpec];

    /// A fresh instance for one node, with its port handles named.
    fn instance() -> Self;

    /// Takes `port`'s value out of `input` (see [`Msg`] for when it is moved, cloned
    /// or decoded) and runs the port's handler.
    fn handle<'a>(
        &'a self,
        ctx: &'a Ctx<Self>,
        port: &'a str,
        input: Msg,
    ) -> impl Future<Output = Result<Reply>> + Send + 'a;

    /// The component as an agent tool, when it is one (`#[component(agent_tool(..))]`).
    /// Only a component that works from a fresh instance with default settings and
    /// nothing but the call's payload should be one.
    fn agent_tool() -> Option<AgentTool> {
        None
    }

    /// The port that receives handler failures as [`ErrorMessage`]s instead of failing
    /// the hop (`#[port(catch)]`), if any.
    fn error_port(&self) -> Option<&Output<ErrorMessage>> {
        None
    }

    /// Whether `port` exists with `settings` (`#[port(enabled_by = field)]`; the
    /// derive writes it).
    fn port_enabled(settings: &Self::Settings, port: &str) -> bool {
        let _ = (settings, port);
        true
    }

    /// The keys of the port family `family` with `settings` (`#[port(keys = method)]`;
    /// the derive writes it).
    fn port_keys(settings: &Self::Settings, family: &str) -> Vec<String> {
        let _ = (settings, family);
        Vec::new()
    }
}

/// Lifecycle hooks behind the system ports. Every method has a no-op default; the
/// derive writes an empty impl unless the component says `#[component(hooks)]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` says `#[component(hooks)]` but does not implement `Hooks`",
    label = "no `impl Hooks for {Self}`",
    note = "write `impl tiny_sdk::Hooks for {Self} {{ ... }}` with the hooks it needs, or drop `hooks`"
)]
pub trait Hooks: Component {
    /// Whether [`on_destroy`](Self::on_destroy) may have work to do, so that the
    /// runtime must hold a deleted node (with a finalizer) until it ran. The derive says
    /// `false` for components without `#[component(hooks)]`; an impl written by hand
    /// keeps the default.
    #[doc(hidden)]
    const DESTROYS: bool = true;

    /// `_settings`: called with the new settings before business messages, and again
    /// whenever they change.
    fn on_settings(&self, ctx: &Ctx<Self>, settings: &Self::Settings) -> impl Future<Output = Result<()>> + Send {
        let _ = (ctx, settings);
        async { Ok(()) }
    }

    /// `_control`: a dashboard control (a button, a toggle) was used.
    fn on_control(&self, ctx: &Ctx<Self>, control: Self::Control) -> impl Future<Output = Result<Reply>> + Send {
        let _ = (ctx, control);
        async { Ok(Reply::empty()) }
    }

    /// `_reconcile`: the node changed, or the periodic reconcile (every 5 minutes) ran.
    fn on_reconcile(&self, ctx: &Ctx<Self>, node: &Node) -> impl Future<Output = Result<()>> + Send {
        let _ = (ctx, node);
        async { Ok(()) }
    }

    /// Adjusts a port to the settings in force, as status shows it and the editor
    /// reads it: its schema (a router's route enum), default configuration or label.
    /// Called for every port the node has, family ports included.
    fn shape_port(&self, settings: &Self::Settings, port: &mut PortShape) {
        let _ = (settings, port);
    }

    /// `_client`: the runtime hands over its resource manager.
    fn on_client(&self, ctx: &Ctx<Self>, client: Arc<dyn ResourceManager>) -> impl Future<Output = Result<()>> + Send {
        let _ = (ctx, client);
        async { Ok(()) }
    }

    /// The node was deleted (not merely stopped): release what it created.
    fn on_destroy(&self, ctx: &Ctx<Self>) -> impl Future<Output = Result<()>> + Send {
        let _ = ctx;
        async { Ok(()) }
    }
}

/// The context of one handler call, or of a node's [work](Ctx::spawn).
pub struct Ctx<C: Component> {
    pub(crate) node: Arc<NodeContext>,
    pub(crate) settings: Arc<C::Settings>,
    pub(crate) hop: Hop,
}

impl<C: Component> Clone for Ctx<C> {
    fn clone(&self) -> Self {
        Self {
            node: self.node.clone(),
            settings: self.settings.clone(),
            hop: self.hop.clone(),
        }
    }
}

impl<C: Component> fmt::Debug for Ctx<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("node", &self.node.identity.node_name)
            .field("hop", &self.hop)
            .finish_non_exhaustive()
    }
}

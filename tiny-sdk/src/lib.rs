//! # tiny-sdk
//!
//! Everything a TinySystems module author needs: the [`Component`] trait and its
//! derive, typed [ports](port), port [messages](Message) with editor
//! [schemas](schema), [errors](Error) that know whether a retry helps, the
//! [flow model](flow), edge [expressions](expr), and the in-process flow
//! [engine] with a [harness] to test flows without a cluster. The names shared with
//! the Go SDK and the platform (system ports, labels, annotations) are in
//! [`contract`], and the broker-independent part of the Go SDK's durable runs (step
//! keys, the step ledger, run status, the reconciler's pass) in [`run`].
//!
//! ```
//! use tiny_sdk::prelude::*;
//!
//! #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
//! pub struct HelloIn {
//!     /// Who to greet.
//!     #[tiny(configurable)]
//!     pub name: String,
//! }
//!
//! #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
//! pub struct Greeting {
//!     #[tiny(shared)]
//!     pub greeting: String,
//! }
//!
//! #[derive(Component, Default)]
//! #[component(name = "hello", description = "Greets a person by name")]
//! pub struct Hello {
//!     #[port(position = Left)]
//!     input: Input<HelloIn>,
//!     #[port(position = Right)]
//!     output: Output<Greeting>,
//! }
//!
//! #[handlers]
//! impl Hello {
//!     async fn on_input(&self, ctx: &Ctx<Self>, msg: HelloIn) -> Result<Reply> {
//!         let greeting = format!("Hello, {}!", msg.name);
//!         self.output.emit(ctx, Greeting { greeting }).await
//!     }
//! }
//! ```

#![warn(missing_docs)]

// The derives name `::tiny_sdk`; this lets them work inside the crate too.
extern crate self as tiny_sdk;

mod author;
pub mod client;
pub mod component;
pub mod context;
pub mod contract;
mod decode;
pub mod engine;
pub mod error;
#[cfg(feature = "fast-alloc")]
mod fast_alloc;
pub mod flow;
pub mod handler;
pub mod harness;
mod hop;
pub mod limits;
pub mod message;
pub mod metadata;
pub mod msg;
mod name;
mod node;
mod overlay;
pub mod port;
mod portable;
pub mod redact;
pub mod run;
pub mod schema;
pub mod secret;
pub mod state;
mod work;

#[doc(hidden)]
pub mod __private;

/// The README's Rust examples, compiled as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct Readme;

/// Edge expressions: `{{...}}` templates over JSONPath, compiled once per node.
pub use tiny_expr as expr;

pub use client::ResourceManager;
pub use component::{AgentTool, Component, ComponentInfo, Hooks};
pub use context::{Ctx, Hop, NodeIdentity};
pub use error::{Error, ErrorKind, ErrorMessage, Result};
pub use message::{IntoReply, Message, Reply};
pub use metadata::NodeMetadata;
pub use msg::{Msg, RoundTrip};
pub use port::{Direction, Input, Output, Outputs, PortShape, PortSpec, Position};
pub use state::NodeState;

#[cfg(feature = "fast-alloc")]
pub use fast_alloc::FastAlloc;

/// Derives [`Component`]: the port table, the instance constructor and the dispatch
/// from `Input`/`Output` fields to `on_<port>` methods.
///
/// Container attributes, `#[component(...)]`:
/// - `name = "..."` (required), `description = "..."`, `info = "..."`, `tags("a", "b")`;
/// - `settings = Type`: typed settings on `_settings` (see [`Ctx::settings`]);
/// - `control = Type`: typed dashboard controls on `_control` ([`Hooks::on_control`]);
/// - `hooks`: the component implements [`Hooks`] itself.
/// - `agent_tool(input = "in", output = "out", description = "...")`: a platform agent
///   may call the component directly ([`AgentTool`], [`engine::Engine::call_tool`]); every
///   key is optional (Go's defaults `in` and `out`), and a port that does not exist or
///   points the wrong way is a compile error on its name. The component gets the tag
///   `agent_tool`, and a description replaces its `info`, as Go's build publishes it.
/// - `crate = "path"`: the path the generated code names the SDK by, when it is not
///   `::tiny_sdk` (a dependency renamed in `Cargo.toml`, a re-export from another
///   crate), e.g. `crate = "sdk"` or `crate = "::my_platform::sdk"`.
///
/// An input port `input: Input<T>` is handled by `async fn on_input(&self, ctx:
/// &Ctx<Self>, msg: T) -> R` (`R` is `()`, [`Reply`], `Result<()>` or `Result<Reply>`).
/// A handler that only reads may take `msg: &T`: a message shared by a fan-out or
/// kept by an edge for a retry is then lent, not copied. Put [`#[handlers]`](handlers)
/// on the `impl` block of the handlers: a handler of the wrong shape is then reported
/// on the handler, not on the port field.
///
/// Field attributes, `#[port(...)]`, on `Input<T>`, `Output<T, R>` and `Outputs<T, R>`
/// fields: `label = "..."`, `position = Top | Right | Bottom | Left`, `handler = method`
/// (default `on_<field>`), and `catch` on an `Output<ErrorMessage>` to receive the
/// component's handler failures (and inputs that do not decode, code `UNDECODABLE`)
/// instead of failing the hop. As in the Go SDK, the
/// catch port is switched by an `enableErrorPort` settings field when the settings have
/// one; a failure that would reach an unwired or switched-off catch port fails the hop
/// (errors never vanish).
///
/// Ports shaped by settings:
/// - `enabled_by = field`: the port exists only while the settings' `bool` field
///   `field` is true (Go's `enableStopPort`, `enableDefaultPort` pattern).
/// - `keys = method` on an [`Outputs<T>`](Outputs) field: a family of ports
///   `<field>_<key>`, one per key that `fn method(&Settings) -> Vec<String>` gives (a
///   router's `out_<route>`).
/// - [`Hooks::shape_port`] adjusts a port's schema, default and label to the settings
///   (a router's route enum).
pub use tiny_macros::Component;

/// Checks the port handlers of a component where they are written: on the `impl` block
/// that holds them, next to `#[derive(Component)]` on the struct.
///
/// ```
/// # use tiny_sdk::prelude::*;
/// # #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
/// # pub struct Name { pub name: String }
/// # #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
/// # pub struct Greeting { pub greeting: String }
/// #[derive(Component, Default)]
/// #[component(name = "hello")]
/// pub struct Hello {
///     input: Input<Name>,
///     greeting: Output<Greeting>,
/// }
///
/// #[handlers]
/// impl Hello {
///     async fn on_input(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
///         let greeting = format!("Hello, {}!", msg.name);
///         self.greeting.emit(ctx, Greeting { greeting }).await
///     }
/// }
/// ```
///
/// In the block, each `on_<port>` method, and each method marked `#[handler]` (one that
/// `#[port(handler = method)]` names), is a handler: `async fn on_<port>(&self, ctx:
/// &Ctx<Self>, msg: T) -> R`. A mistake in it is one error on the handler, saying which
/// part is wrong: not `async`, no `&self`, no `ctx`, the parameters in another order, a
/// `msg` type other than the port's, a return type that is not a reply, a method that
/// handles no port, or a future that is not `Send` (a `MutexGuard` held across an
/// `.await`: the compiler shows where). Other methods are left as they are.
///
/// Each handler is rewritten to the shape the dispatch calls, with the body unchanged:
/// `fn on_<port>(&self, ctx: &Ctx<Self>, msg: MessageOf<..>) -> impl Future<Output = R> +
/// Send { async move { .. } }` (see [`handler`]; `make expand` shows it). Without the
/// attribute, the derive checks the same, and reports a mistake on the port field.
///
/// `#[handlers(crate = "path")]` names the SDK by another path, as
/// `#[component(crate = ..)]` does.
pub use tiny_macros::handlers;

/// Derives `schemars::JsonSchema` with the editor's hints, read from `#[tiny(...)]`:
/// `configurable`, `shared`, `title`, `description`, `default`, `enum(...)`,
/// `enum_titles(...)`, `readonly`, `format`, `tab`, `align`, `col_span`,
/// `property_order`, `required_when(...)`, `optional_when(...)`, `language`,
/// `secret`. serde's attributes (`rename`, `rename_all`, `flatten`, `default`, enum
/// tagging) are honoured, and doc comments become descriptions. On the container,
/// `#[tiny(crate = "path")]` names the SDK by another path, as `#[component(crate = ..)]`
/// does.
pub use tiny_macros::Schema;

/// The names an author needs, in one `use`.
pub mod prelude {
    pub use crate::{
        Component, Ctx, Error, ErrorMessage, Hooks, Input, Output, Position, Reply, Result, Schema, handlers,
    };
    pub use serde::{Deserialize, Serialize};
}

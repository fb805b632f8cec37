//! Ports: the typed inputs and outputs of a component.
//!
//! A component declares its ports as fields of type [`Input<T>`] and [`Output<T>`]; the
//! derive turns them into a [`PortSpec`] table. Because a port is a typed field,
//! sending on a port that does not exist, or with the wrong message type, does not
//! compile.

use std::{fmt, marker::PhantomData};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::Message;

/// Where a port's handle sits on the node in the editor.
///
/// Serialised as the Go SDK's integers: Top=0, Right=1, Bottom=2, Left=3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Position {
    /// Top edge.
    Top,
    /// Right edge (the default for outputs).
    Right,
    /// Bottom edge (where error ports usually go).
    Bottom,
    /// Left edge (the default for inputs).
    #[default]
    Left,
}

impl Position {
    /// The Go SDK's integer for this position.
    pub const fn as_int(self) -> u8 {
        match self {
            Position::Top => 0,
            Position::Right => 1,
            Position::Bottom => 2,
            Position::Left => 3,
        }
    }
}

impl Serialize for Position {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_u8(self.as_int())
    }
}

impl<'de> Deserialize<'de> for Position {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match u8::deserialize(d)? {
            0 => Ok(Position::Top),
            1 => Ok(Position::Right),
            2 => Ok(Position::Bottom),
            3 => Ok(Position::Left),
            n => Err(serde::de::Error::custom(format!("port position {n} is not 0..=3"))),
        }
    }
}

/// Which way data moves through a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The component emits on it (an output, `source: true` in the CRDs).
    Source,
    /// The component receives on it (an input).
    Target,
}

/// What the engine and the CRDs need to know about one port. The derive writes a
/// table of these; [`Component::ports`](crate::Component::ports) returns it.
#[derive(Clone, Copy)]
pub struct PortSpec {
    /// Programmatic name, e.g. `request`, `_settings`.
    pub name: &'static str,
    /// Label shown in the editor.
    pub label: &'static str,
    /// Longer help text, from the field's doc comment.
    pub description: &'static str,
    /// Source or target.
    pub direction: Direction,
    /// Where the handle sits.
    pub position: Position,
    /// The editor schema of the message type.
    pub schema: fn() -> Value,
    /// The default configuration (the message type's `Default`, or `null`): what the
    /// editor shows as the port's configuration, and what an edge without a mapping
    /// delivers to this port instead of the sender's message (as in the Go SDK).
    pub default_config: fn() -> Value,
    /// For source ports: the editor schema of the expected response, if any.
    pub response_schema: Option<fn() -> Value>,
    /// A port family ([`Outputs`]): `name` is the family, and the node has one port
    /// `<name>_<key>` for each key its settings give.
    pub family: bool,
}

impl PortSpec {
    /// `true` for the `_`-prefixed system ports.
    pub fn is_system(&self) -> bool {
        crate::contract::port::is_system(self.name)
    }

    /// `true` for source (output) ports.
    pub fn is_source(&self) -> bool {
        self.direction == Direction::Source
    }

    /// Whether the output declares the answer it waits for (`Output<T, R>` with an `R`
    /// other than `Value`, Go's `ResponseConfiguration`): a request the component makes
    /// for events of its own, as http_server's `request`, whose answer comes back up
    /// the chain rather than as a message on one of its inputs.
    pub fn declares_response(&self) -> bool {
        self.response_schema
            .is_some_and(|r| r() != crate::schema::cached_port_schema::<Value>())
    }

    /// Whether a node has the port called `port` through this one (see [`answers`]).
    pub(crate) fn answers(&self, port: &str) -> bool {
        answers(self.name, self.family, port)
    }
}

/// Whether the port `name` (a family when `family`) is the port called `port` on a
/// node: the same name, or a member `<family>_<key>` of the family.
pub(crate) fn answers(name: &str, family: bool, port: &str) -> bool {
    name == port
        || (family
            && port
                .strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('_'))
                .is_some_and(|key| !key.is_empty()))
}

impl fmt::Debug for PortSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortSpec")
            .field("name", &self.name)
            .field("label", &self.label)
            .field("direction", &self.direction)
            .field("position", &self.position)
            .finish_non_exhaustive()
    }
}

/// A port as one node has it with its settings in force: what its status shows. See
/// [`Hooks::shape_port`](crate::Hooks::shape_port).
#[derive(Debug, Clone, PartialEq)]
pub struct PortShape {
    /// The port's name (`out_a` for a family member).
    pub name: String,
    /// Its label (a family member's key, by default).
    pub label: String,
    /// The editor schema.
    pub schema: Value,
    /// The current configuration: the settings for `_settings`, the shown view for
    /// `_control`, else the default.
    pub configuration: Value,
}

/// What a port field's type carries: `T` of [`Input<T>`], and `T` and the reply type `R`
/// of [`Output<T, R>`] and [`Outputs<T, R>`]. The derive reads the port table from it, and
/// [`Output::emit`] names its parameter by it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a port type",
    note = "port fields have type `tiny_sdk::Input<T>` or `tiny_sdk::Output<T>` / `Output<T, R>`"
)]
pub trait PortType {
    /// The message type the port carries.
    type Message: Message;
    /// The type of the reply to a message sent on it (JSON for an input port).
    type Response: Message;
}

impl<T: Message> PortType for Input<T> {
    type Message = T;
    type Response = Value;
}

impl<T: Message, R: Message> PortType for Output<T, R> {
    type Message = T;
    type Response = R;
}

impl<T: Message, R: Message> PortType for Outputs<T, R> {
    type Message = T;
    type Response = R;
}

/// An input port receiving messages of type `T`.
///
/// Messages arriving on it are decoded into `T` and handed to the component's
/// `on_<port>` method.
pub struct Input<T> {
    name: &'static str,
    _message: PhantomData<fn() -> T>,
}

impl<T> Input<T> {
    /// A handle for the port called `name`; the derive creates these (through
    /// `__private::input`), so that a handle always names a port of the table.
    pub(crate) const fn new(name: &'static str) -> Self {
        Self {
            name,
            _message: PhantomData,
        }
    }

    /// The port's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

/// An output port emitting messages of type `T`, answered with a `R` downstream.
pub struct Output<T, R = Value> {
    name: &'static str,
    _message: PhantomData<fn() -> (T, R)>,
}

impl<T, R> Output<T, R> {
    /// A handle for the port called `name`; the derive creates these.
    pub(crate) const fn new(name: &'static str) -> Self {
        Self {
            name,
            _message: PhantomData,
        }
    }

    /// The port's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }
}

/// A family of output ports built from settings, each carrying `T`: a router's
/// `out_<route>`, one port per route. The field names the family; the component says
/// which keys exist with `#[port(keys = method)]`, a `fn(&Settings) -> Vec<String>`,
/// and the node then has the ports `<field>_<key>`. Edges may leave any of them; an
/// edge from a port that a settings change removed is reported on the node.
///
/// ```
/// # use tiny_sdk::prelude::*;
/// # use tiny_sdk::Outputs;
/// #[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
/// pub struct Routes { pub routes: Vec<String> }
///
/// #[derive(Component, Default)]
/// #[component(name = "fork", settings = Routes)]
/// struct Fork {
///     #[port]
///     input: Input<String>,
///     /// `out_<route>` for each route.
///     #[port(keys = route_keys)]
///     out: Outputs<String>,
/// }
///
/// impl Fork {
///     fn route_keys(settings: &Routes) -> Vec<String> {
///         settings.routes.iter().map(|r| r.to_lowercase()).collect()
///     }
///     async fn on_input(&self, ctx: &Ctx<Self>, msg: String) -> Result<Reply> {
///         self.out.emit(ctx, &msg.to_lowercase(), msg.clone()).await
///     }
/// }
/// ```
pub struct Outputs<T, R = Value> {
    name: &'static str,
    _message: PhantomData<fn() -> (T, R)>,
}

impl<T, R> Outputs<T, R> {
    /// A handle for the family called `name`; the derive creates these.
    pub(crate) const fn new(name: &'static str) -> Self {
        Self {
            name,
            _message: PhantomData,
        }
    }

    /// The family's name (the prefix of its ports).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The name of the family's port for `key`: `<family>_<key>`.
    pub fn port(&self, key: &str) -> String {
        family_port(self.name, key)
    }
}

/// `<family>_<key>`.
pub(crate) fn family_port(family: &str, key: &str) -> String {
    format!("{family}_{key}")
}

// Manual impls: the derives would wrongly require `T: Clone` etc.
macro_rules! handle_impls {
    ($ty:ident <$($p:ident),*>) => {
        impl<$($p),*> Clone for $ty<$($p),*> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<$($p),*> Copy for $ty<$($p),*> {}
        impl<$($p),*> fmt::Debug for $ty<$($p),*> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($ty), "({})"), self.name)
            }
        }
        /// An unnamed handle; [`Component::instance`](crate::Component::instance) names it.
        impl<$($p),*> Default for $ty<$($p),*> {
            fn default() -> Self {
                Self { name: "", _message: PhantomData }
            }
        }
    };
}
handle_impls!(Input<T>);
handle_impls!(Output<T, R>);
handle_impls!(Outputs<T, R>);

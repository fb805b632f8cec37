//! Support for the code `#[derive(Component)]` and `#[derive(Schema)]` write. Not a
//! public API: names here may change in any release.

use std::marker::PhantomData;

pub use futures::future::BoxFuture;
pub use schemars;
pub use serde_json::Value;

pub use crate::msg::{Msg, RoundTrip};

use crate::{
    error::{Error, Result},
    message::Reply,
    port::{Direction, PortSpec, Position},
    schema::cached_port_schema,
};

/// The handle of input port `name` (the engine-side constructors are not public).
pub const fn input<T>(name: &'static str) -> crate::Input<T> {
    crate::Input::new(name)
}

/// The handle of output port `name`.
pub const fn output<T, R>(name: &'static str) -> crate::Output<T, R> {
    crate::Output::new(name)
}

/// The handle of port family `name`.
pub const fn outputs<T, R>(name: &'static str) -> crate::Outputs<T, R> {
    crate::Outputs::new(name)
}

/// One row of the port table.
#[allow(clippy::too_many_arguments)]
pub const fn port<T: crate::Message>(
    name: &'static str,
    label: &'static str,
    description: &'static str,
    direction: Direction,
    position: Position,
    default_config: fn() -> Value,
    response_schema: Option<fn() -> Value>,
) -> PortSpec {
    PortSpec {
        name,
        label,
        description,
        direction,
        position,
        schema: cached_port_schema::<T>,
        default_config,
        response_schema,
        family: false,
    }
}

/// A port family's row of the port table (see [`Outputs`](crate::port::Outputs)).
pub const fn family(mut spec: PortSpec) -> PortSpec {
    spec.family = true;
    spec
}

/// The keys of a port family, from the component's `keys = method`.
pub fn port_keys<S, K: IntoIterator<Item = impl Into<String>>>(keys: fn(&S) -> K, settings: &S) -> Vec<String> {
    keys(settings).into_iter().map(Into::into).collect()
}

/// The schema function of a response type.
pub const fn response<R: schemars::JsonSchema + 'static>() -> Option<fn() -> Value> {
    Some(cached_port_schema::<R>)
}

/// The answer to a message for a port the component does not have.
pub fn unknown_port(component: &'static str, port: &str) -> Result<Reply> {
    Err(
        Error::permanent(format!("component `{component}` has no input port `{port}`"))
            .with_code(crate::error::code::UNKNOWN_PORT),
    )
}

/// The probe behind the derive's `round_trip_exact` of a field's type: `ExactYes` when
/// the type implements [`RoundTrip`], `ExactNo` otherwise.
#[derive(Debug)]
pub struct Exact<T>(PhantomData<fn() -> T>);

impl<T> Default for Exact<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Exact<T> {
    pub const fn new() -> Self {
        Exact(PhantomData)
    }
}

pub trait ExactYes {
    fn round_trip_exact(&self, depth: u32) -> bool;
    fn may_be_null(&self) -> bool;
}

impl<T: RoundTrip> ExactYes for &Exact<T> {
    fn round_trip_exact(&self, depth: u32) -> bool {
        T::round_trip_exact(depth)
    }
    fn may_be_null(&self) -> bool {
        T::may_be_null()
    }
}

pub trait ExactNo {
    fn round_trip_exact(&self, depth: u32) -> bool;
    fn may_be_null(&self) -> bool;
}

impl<T> ExactNo for Exact<T> {
    fn round_trip_exact(&self, _: u32) -> bool {
        false
    }
    fn may_be_null(&self) -> bool {
        true
    }
}

/// Picks `T::default()` as a port's default configuration when `T: Default`, `null`
/// otherwise (autoref specialisation: the `&DefaultProbe` impl wins when it applies).
#[derive(Debug)]
pub struct DefaultProbe<T>(PhantomData<fn() -> T>);

impl<T> Default for DefaultProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> DefaultProbe<T> {
    pub const fn new() -> Self {
        DefaultProbe(PhantomData)
    }
}

pub trait ViaDefault {
    fn default_config(&self) -> Value;
}

impl<T: Default + serde::Serialize> ViaDefault for &DefaultProbe<T> {
    // Reached through `&&DefaultProbe`: found before `ViaNull`, which needs a deref.
    fn default_config(&self) -> Value {
        serde_json::to_value(T::default()).unwrap_or(Value::Null)
    }
}

pub trait ViaNull {
    fn default_config(&self) -> Value;
}

impl<T> ViaNull for DefaultProbe<T> {
    fn default_config(&self) -> Value {
        Value::Null
    }
}

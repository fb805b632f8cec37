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

/// What the derive checks an `on_<port>` method against, so that a handler of the wrong
/// shape is one error that shows the expected signature, not rustc's argument count.
/// `M` is the port's message type (named in that error), `T` the handler's parameter
/// (`M` or `&M`, see [`Arg`]); `Shape` tells the accepted shape from the refused ones
/// (it is inferred).
#[diagnostic::on_unimplemented(
    message = "this is not a handler for a port carrying `{M}`",
    label = "expected `async fn(&self, ctx: &Ctx<Self>, msg: {M}) -> R` here",
    note = "a port handler is `async fn on_<port>(&self, ctx: &Ctx<Self>, msg: {M}) -> R` (or `msg: &{M}`), where `R` is `()`, `Reply`, `Result<()>` or `Result<Reply>`",
    note = "its future must be `Send`: hold no `Rc`, `RefCell` borrow or `MutexGuard` across an `.await`"
)]
pub trait Handler<'a, C: crate::Component, M, T, Shape> {
    /// The handler's future.
    type Future: Future<Output = Self::Output> + Send;
    /// What it answers.
    type Output: crate::IntoReply;
    /// Runs it.
    fn call(&self, component: &'a C, ctx: &'a crate::Ctx<C>, msg: T) -> Self::Future;
}

/// `Handler`'s shape `(&self, ctx, msg)`, the one accepted.
#[derive(Debug)]
pub struct WithCtx;

/// `Handler`'s shape `(&self, msg)`, refused: without it, rustc would answer a
/// handler that forgot `ctx` with its argument count instead of the signature.
#[derive(Debug)]
pub struct WithoutCtx;

/// Never implemented: what makes the `WithoutCtx` shape fail.
pub trait Refused<C> {}

// Reported as "not a handler", with the signature, rather than as whichever of the
// bounds below failed.
#[diagnostic::do_not_recommend]
impl<'a, C, M, T, F, Fut> Handler<'a, C, M, T, WithCtx> for F
where
    C: crate::Component,
    F: Fn(&'a C, &'a crate::Ctx<C>, T) -> Fut,
    Fut: Future + Send,
    Fut::Output: crate::IntoReply,
{
    type Future = Fut;
    type Output = Fut::Output;

    fn call(&self, component: &'a C, ctx: &'a crate::Ctx<C>, msg: T) -> Fut {
        self(component, ctx, msg)
    }
}

#[diagnostic::do_not_recommend]
impl<'a, C, M, T, F, Fut> Handler<'a, C, M, T, WithoutCtx> for F
where
    C: crate::Component,
    F: Fn(&'a C, T) -> Fut,
    Fut: Future + Send,
    Fut::Output: crate::IntoReply,
    WithoutCtx: Refused<C>,
{
    type Future = Fut;
    type Output = Fut::Output;

    fn call(&self, component: &'a C, _: &'a crate::Ctx<C>, msg: T) -> Fut {
        self(component, msg)
    }
}

/// Calls a port handler (the derive's dispatch goes through here; see [`Handler`]) of
/// a port carrying `M`. `msg` is what the handler's parameter asked of the message
/// ([`Arg`]).
pub fn call<'a, C: crate::Component, M, T, S, H: Handler<'a, C, M, T, S>>(
    handler: H,
    component: &'a C,
    ctx: &'a crate::Ctx<C>,
    msg: T,
) -> H::Future {
    handler.call(component, ctx, msg)
}

/// What the handler's `msg` parameter asks of the message in `inbox`, which arrived
/// on `port`: the parameter's type is inferred from the handler the dispatch calls.
pub fn arg<'x, T, K, A: Arg<'x, T, K>>(inbox: &'x mut Inbox<T, K>, port: &str) -> Result<A> {
    A::from_inbox(inbox, port)
}

/// The answer to a message for a port the component does not have.
pub fn unknown_port(component: &'static str, port: &str) -> Result<Reply> {
    Err(
        Error::permanent(format!("component `{component}` has no input port `{port}`"))
            .with_code(crate::error::code::UNKNOWN_PORT),
    )
}

/// The message for one handler call, until the handler's parameter says how it wants
/// it. `K` is how a value of `T` is taken out of a message soundly ([`Taker`]), chosen
/// for the concrete type at the call site ([`Take`]).
pub struct Inbox<T, K> {
    msg: Option<Msg>,
    how: PhantomData<fn() -> (T, K)>,
}

impl<T, K> std::fmt::Debug for Inbox<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox").field("msg", &self.msg).finish()
    }
}

impl<T, K> Inbox<T, K> {
    fn new(msg: Msg) -> Self {
        Inbox {
            msg: Some(msg),
            how: PhantomData,
        }
    }

    fn handed_over() -> Error {
        Error::permanent("message was already handed over")
    }
}

/// What a handler's `msg` parameter can be for a port carrying `T`: `T` (the handler
/// owns the value: moved when this hop holds the only reference, else cloned or
/// decoded) or `&T` (lent: a message of type `T` shared with other receivers, or kept
/// by an edge for a retry, is not copied).
#[diagnostic::on_unimplemented(
    message = "this is not a handler for a port carrying `{T}`",
    label = "expected `async fn(&self, ctx: &Ctx<Self>, msg: {T}) -> R` (or `msg: &{T}`) here",
    note = "a port handler is `async fn on_<port>(&self, ctx: &Ctx<Self>, msg: {T}) -> R`, where `R` is `()`, `Reply`, `Result<()>` or `Result<Reply>`; `msg: &{T}` borrows the message instead of taking it"
)]
pub trait Arg<'x, T, K>: Sized {
    /// The parameter's value, from the message in `inbox`, which arrived on `port`.
    fn from_inbox(inbox: &'x mut Inbox<T, K>, port: &str) -> Result<Self>;
}

#[diagnostic::do_not_recommend]
impl<'x, T, K: Taker<T>> Arg<'x, T, K> for T {
    fn from_inbox(inbox: &'x mut Inbox<T, K>, port: &str) -> Result<T> {
        K::take(inbox.msg.take().ok_or_else(Inbox::<T, K>::handed_over)?, port)
    }
}

#[diagnostic::do_not_recommend]
impl<'x, T: crate::Message, K: Taker<T>> Arg<'x, T, K> for &'x T {
    fn from_inbox(inbox: &'x mut Inbox<T, K>, port: &str) -> Result<&'x T> {
        let msg = inbox.msg.as_mut().ok_or_else(Inbox::<T, K>::handed_over)?;
        // A value that would not survive JSON unchanged is lent as the receiver
        // would have decoded it, like a taken one.
        if !(K::lends() && msg.is::<T>()) {
            *msg = Msg::new(msg.decode::<T>(port)?);
        }
        msg.get::<T>().ok_or_else(Inbox::<T, K>::handed_over)
    }
}

/// How a value of `T` is taken out of a message soundly: one zero-sized type per way,
/// picked by [`Take`].
pub trait Taker<T> {
    /// The value itself: moved or cloned where that gives what JSON would, else
    /// decoded.
    fn take(msg: Msg, port: &str) -> Result<T>;
    /// Whether a typed `T` may be lent as it is (it survives a JSON round trip).
    fn lends() -> bool;
}

/// A [`RoundTrip`]-exact `Clone` type: moved, or cloned when shared.
#[derive(Debug)]
pub struct ExactClone;
/// A [`RoundTrip`]-exact type: moved when not shared, else decoded.
#[derive(Debug)]
pub struct ExactMove;
/// Any other message type: decoded from JSON.
#[derive(Debug)]
pub struct Decode;
/// Not a message type (the port table reports it).
#[derive(Debug)]
pub struct NotAMessage;

impl<T: crate::Message + RoundTrip + Clone> Taker<T> for ExactClone {
    fn take(msg: Msg, port: &str) -> Result<T> {
        if T::round_trip_exact(0) {
            msg.take_exact_or_clone(port)
        } else {
            msg.decode(port)
        }
    }
    fn lends() -> bool {
        T::round_trip_exact(0)
    }
}

impl<T: crate::Message + RoundTrip> Taker<T> for ExactMove {
    fn take(msg: Msg, port: &str) -> Result<T> {
        if T::round_trip_exact(0) {
            msg.take_exact(port)
        } else {
            msg.decode(port)
        }
    }
    fn lends() -> bool {
        T::round_trip_exact(0)
    }
}

impl<T: crate::Message> Taker<T> for Decode {
    fn take(msg: Msg, port: &str) -> Result<T> {
        msg.decode(port)
    }
    fn lends() -> bool {
        false
    }
}

impl<T> Taker<T> for NotAMessage {
    fn take(_: Msg, port: &str) -> Result<T> {
        Err(Error::permanent(format!("port `{port}` does not carry a message type")))
    }
    fn lends() -> bool {
        false
    }
}

/// Picks the [`Taker`] for an input port's (concrete) message type at the call site, by
/// autoref specialisation: the most specific of [`ExactClone`], [`ExactMove`], [`Decode`]
/// that the type allows.
#[derive(Debug)]
pub struct Take<T>(PhantomData<fn() -> T>);

impl<T> Default for Take<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Take<T> {
    pub const fn new() -> Self {
        Take(PhantomData)
    }

    /// The probe for an input port's message type, named by the port itself.
    pub const fn of(_: &crate::Input<T>) -> Self {
        Take(PhantomData)
    }
}

pub trait TakeExactClone<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, ExactClone>;
}

impl<T: crate::Message + RoundTrip + Clone> TakeExactClone<T> for &&&Take<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, ExactClone> {
        Inbox::new(msg)
    }
}

pub trait TakeExact<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, ExactMove>;
}

impl<T: crate::Message + RoundTrip> TakeExact<T> for &&Take<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, ExactMove> {
        Inbox::new(msg)
    }
}

pub trait TakeDecode<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, Decode>;
}

impl<T: crate::Message> TakeDecode<T> for &Take<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, Decode> {
        Inbox::new(msg)
    }
}

/// Reached only for a port type that is not a message, which the port table already
/// reports: no second error here.
pub trait TakeNone<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, NotAMessage>;
}

impl<T> TakeNone<T> for Take<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, NotAMessage> {
        Inbox::new(msg)
    }
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

/// What the port table reads from an `Input<T>` or `Output<T, R>` field's type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a port type",
    note = "port fields have type `tiny_sdk::Input<T>` or `tiny_sdk::Output<T>` / `Output<T, R>`"
)]
pub trait PortType {
    type Message: crate::Message;
    type Response: crate::Message;
}

impl<T: crate::Message> PortType for crate::Input<T> {
    type Message = T;
    type Response = Value;
}

impl<T: crate::Message, R: crate::Message> PortType for crate::Output<T, R> {
    type Message = T;
    type Response = R;
}

impl<T: crate::Message, R: crate::Message> PortType for crate::port::Outputs<T, R> {
    type Message = T;
    type Response = R;
}

//! What a port handler is, as the compiler checks it.
//!
//! `#[derive(Component)]` calls an input port's `on_<port>` method through [`call`] and
//! gives it the message through [`arg`]. Their bounds are where a handler of the wrong
//! shape is reported, one error that names the wrong part: [`Shape`] (the parameters:
//! `&self`, `ctx`, `msg`), [`NeedsCtx`] (no `ctx`), [`HandlerFuture`] (not `async`),
//! `Send` (a value that is not `Send`, such as a `MutexGuard`, held across an `.await`:
//! the compiler shows where), [`IntoReply`](crate::IntoReply) (the return type) and
//! [`Arg`] (the message type). The derive sees the handler's name only, so it reports
//! these errors on the port field.
//!
//! `#[handlers]` on the `impl` block of the handlers reports them on the handler
//! instead. It checks each handler's parameters as written, and gives the handler the
//! shape the dispatch calls, `fn(&self, ctx, msg: MessageOf<..>) -> impl Future<Output =
//! R> + Send`, so that what only the type checker knows is an error on that signature,
//! where the derive then finds nothing more to report: [`port_key`] (the method handles
//! no port), [`PortMessage`] (its `msg` type is not the port's), `Send`, and
//! [`IntoReply`](crate::IntoReply) for a return type other than the usual ones. Nothing
//! here is called by hand; names may change in any release.
//!
//! The message is taken out of its [`Msg`] by "autoref specialisation": the derive writes
//! `(&&&&Take::of(&self.input)).inbox(msg)`, and method lookup, trying `&&&&Take`,
//! `&&&Take`, `&&Take`, `&Take` in turn, finds the first of [`TakeExactClone`],
//! [`TakeExact`], [`TakeDecode`], [`TakeNone`] whose bounds the port's type meets: the
//! cheapest sound way to get a value of that type (moved, cloned, or decoded from JSON).

use std::marker::PhantomData;

use crate::{
    error::{Error, Result},
    msg::{Msg, RoundTrip},
};

/// The parameters of a port handler: `(&self, ctx: &Ctx<Self>, msg: T)`, the accepted
/// shape ([`WithCtx`]), or `(&self, msg: T)` ([`WithoutCtx`]), known here so that it is
/// reported as a missing `ctx` ([`NeedsCtx`]) rather than as an argument count. `M` is
/// the port's message type, named in the error; `T` the handler's `msg` parameter.
#[diagnostic::on_unimplemented(
    message = "the handler of this port does not take `(&self, ctx: &Ctx<Self>, msg: {M})`",
    label = "its handler must be `async fn(&self, ctx: &Ctx<Self>, msg: {M}) -> R`",
    note = "a port handler is `async fn on_<port>(&self, ctx: &Ctx<Self>, msg: {M}) -> R` (or `msg: &{M}`), where `R` is `()`, `Reply`, `Result<()>` or `Result<Reply>`",
    note = "`#[tiny_sdk::handlers]` on the `impl` block of the handlers reports this on the handler itself"
)]
pub trait Shape<'a, C, M, T, S> {}

/// [`Shape`] `(&self, ctx, msg)`, the one accepted.
#[derive(Debug)]
pub struct WithCtx;

/// [`Shape`] `(&self, msg)`, refused by [`NeedsCtx`].
#[derive(Debug)]
pub struct WithoutCtx;

#[diagnostic::do_not_recommend]
impl<'a, C, M, T, F, Fut> Shape<'a, C, M, T, WithCtx> for F
where
    C: crate::Component,
    F: Fn(&'a C, &'a crate::Ctx<C>, T) -> Fut,
{
}

#[diagnostic::do_not_recommend]
impl<'a, C, M, T, F, Fut> Shape<'a, C, M, T, WithoutCtx> for F
where
    C: crate::Component,
    F: Fn(&'a C, T) -> Fut,
{
}

/// Never implemented: a handler without `ctx` fails here.
#[diagnostic::on_unimplemented(
    message = "the handler of this port has no `ctx` parameter",
    label = "its handler must be `async fn(&self, ctx: &Ctx<Self>, msg: {M}) -> R`",
    note = "add `ctx: &Ctx<Self>` after `&self`, even when the handler does not use it (then name it `_ctx`)",
    note = "`#[tiny_sdk::handlers]` on the `impl` block of the handlers reports this on the handler itself"
)]
pub trait NeedsCtx<M> {}

/// What a handler returns: a future, as an `async fn` does.
#[diagnostic::on_unimplemented(
    message = "the handler of this port is not `async`: it returns `{Self}`",
    label = "its handler must be `async fn(..) -> R`",
    note = "write `async fn on_<port>(..)`; the engine awaits every handler",
    note = "`#[tiny_sdk::handlers]` on the `impl` block of the handlers reports this on the handler itself"
)]
pub trait HandlerFuture: Future {}

// Reported as "not `async`", not as the `Future` bound below it.
#[diagnostic::do_not_recommend]
impl<F: Future> HandlerFuture for F {}

/// What the handler `F` of shape `Self` (see [`Shape`]) must meet: implemented for the
/// shape, so that it is chosen only once the shape is known and the error, if any, is
/// the one part that is wrong (no `ctx`, not `async`, not `Send`, the return type).
pub trait Handler<'a, C: crate::Component, M, T, F> {
    /// The handler's future.
    type Future: Future<Output = Self::Output> + Send;
    /// What it answers.
    type Output: crate::IntoReply;
    /// Runs it.
    fn call(handler: &F, component: &'a C, ctx: &'a crate::Ctx<C>, msg: T) -> Self::Future;
}

impl<'a, C, M, T, F, Fut> Handler<'a, C, M, T, F> for WithCtx
where
    C: crate::Component,
    F: Fn(&'a C, &'a crate::Ctx<C>, T) -> Fut,
    Fut: HandlerFuture + Send,
    Fut::Output: crate::IntoReply,
{
    type Future = Fut;
    type Output = Fut::Output;

    fn call(handler: &F, component: &'a C, ctx: &'a crate::Ctx<C>, msg: T) -> Fut {
        handler(component, ctx, msg)
    }
}

impl<'a, C, M, T, F, Fut> Handler<'a, C, M, T, F> for WithoutCtx
where
    C: crate::Component,
    F: Fn(&'a C, T) -> Fut + NeedsCtx<M>,
    Fut: Future + Send,
    Fut::Output: crate::IntoReply,
{
    type Future = Fut;
    type Output = Fut::Output;

    fn call(handler: &F, component: &'a C, _: &'a crate::Ctx<C>, msg: T) -> Fut {
        handler(component, msg)
    }
}

/// The shape of a handler (see [`shape`]).
pub struct ShapeOf<C, M, T, S>(PhantomData<Marker<(C, M, T, S)>>);

/// Names types without owning them, so that `ShapeOf` is `Send` and `Sync` whatever they are.
type Marker<T> = fn() -> T;

impl<C, M, T, S> std::fmt::Debug for ShapeOf<C, M, T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ShapeOf")
    }
}

/// The shape of `handler`, for [`call`]: inferred from its parameters alone, so that
/// what else is wrong with it is reported against that shape.
pub fn shape<'a, C, M, T, S, H: Shape<'a, C, M, T, S>>(_: &H) -> ShapeOf<C, M, T, S> {
    ShapeOf(PhantomData)
}

/// Calls `handler`, of shape `S` (see [`shape`]), for a port carrying `M`; `msg` is
/// what the handler's parameter asked of the message ([`arg`]).
pub fn call<'a, C: crate::Component, M, T, S: Handler<'a, C, M, T, H>, H>(
    handler: H,
    _shape: ShapeOf<C, M, T, S>,
    component: &'a C,
    ctx: &'a crate::Ctx<C>,
    msg: T,
) -> S::Future {
    S::call(&handler, component, ctx, msg)
}

/// The key of a handler method's name, for [`InputOf`]: a `&str` cannot be a const
/// generic argument on stable Rust, a number can. A 64-bit FNV-1a hash: two handlers of
/// one component whose names collide would be two impls of one trait, a compile error;
/// nothing at run time depends on it.
pub const fn key(method: &str) -> u64 {
    let bytes = method.as_bytes();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The input port whose handler is the method named by `HANDLER` (its [`key`]): written
/// by `#[derive(Component)]` for each input port, so that `#[handlers]`, which sees the
/// method but not the port, gives the method's `msg` parameter the port's message type
/// ([`MessageOf`]) and checks the type the author wrote against it ([`PortMessage`]).
/// `W` is the type written; for [`UNHANDLED`] it is the message type itself, so that a
/// method that handles no port is no second error (see [`port_key`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no input port that this method handles",
    label = "not the handler of an input port of `{Self}`",
    note = "in a `#[handlers]` impl, `on_<port>` and the methods marked `#[handler]` are the handlers of input ports: `on_<port>` of the port `<port>` (or of the one whose `#[port(handler = ...)]` names it)",
    note = "rename it, or move it to another `impl` block if it is not a handler"
)]
pub trait InputOf<const HANDLER: u64, W> {
    /// The port's message type.
    type Message;
}

/// The key [`port_key`] gives a method that handles no port, while the derive reports
/// a port without its handler: the method then takes the type it wrote.
pub const UNHANDLED: u64 = 0;

impl<C, W> InputOf<UNHANDLED, W> for C {
    type Message = W;
}

/// The message type of the input port whose handler is the method named by `HANDLER`
/// (see [`InputOf`]): the type of a `#[handlers]` handler's `msg` parameter, which
/// wrote `W`.
pub type MessageOf<C, const HANDLER: u64, W> = <C as InputOf<HANDLER, W>>::Message;

/// An input port and the method that handles it, as `#[derive(Component)]` lists them.
#[derive(Debug, Clone, Copy)]
pub struct PortHandler {
    /// The port's name.
    pub port: &'static str,
    /// Its handler's name: `on_<field>`, or the one `#[port(handler = ...)]` names.
    pub handler: &'static str,
}

/// A component's input ports and their handlers: written by `#[derive(Component)]`, read
/// by `#[handlers]` to tell whether a method that handles no port is the one error
/// ([`port_key`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a component: `#[handlers]` goes on the `impl` block of a `#[derive(Component)]` struct",
    label = "not a `#[derive(Component)]` struct"
)]
pub trait PortHandlers {
    /// Each input port with its handler, in declaration order.
    const HANDLERS: &'static [PortHandler];
    /// `false` when the derive reported a mistake of its own: `#[handlers]` then reports
    /// nothing more about the ports.
    const CHECKED: bool = true;
}

/// Why a method of a `#[handlers]` block handles no port, in words: a `const`
/// evaluation panics with it, so that it is the one error, on the method's name.
pub struct NoPort {
    text: [u8; NoPort::CAPACITY],
    len: usize,
}

impl std::fmt::Debug for NoPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl NoPort {
    const CAPACITY: usize = 1024;

    const fn new() -> Self {
        NoPort {
            text: [0; NoPort::CAPACITY],
            len: 0,
        }
    }

    /// Appends `s`, cut (at a character boundary) where the buffer ends.
    const fn push(mut self, s: &str) -> Self {
        let bytes = s.as_bytes();
        let mut i = 0;
        while i < bytes.len() && self.len < NoPort::CAPACITY {
            self.text[self.len] = bytes[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// The message.
    pub const fn as_str(&self) -> &str {
        let (text, _) = self.text.split_at(self.len);
        match std::str::from_utf8(text) {
            Ok(s) => s,
            // Cut inside a character: up to where it is valid.
            Err(e) => match std::str::from_utf8(text.split_at(e.valid_up_to()).0) {
                Ok(s) => s,
                Err(_) => "",
            },
        }
    }
}

/// The key of the port that `method`, in a `#[handlers]` block of `component` whose
/// methods are `block`, handles: [`key`]`(method)` when a port's handler is `method`.
/// For a method that handles no port, [`UNHANDLED`] when a port's handler is not in the
/// block (the derive reports that port, and the compiler names the method nearest to
/// the one it looked for: a misspelt handler is one error), else the error, which
/// lists the ports and their handlers.
// Evaluated by the compiler only, in a `const`: the size of the error costs nothing.
#[allow(clippy::result_large_err)]
pub const fn port_key(
    handlers: &[PortHandler],
    checked: bool,
    block: &[&str],
    method: &str,
    component: &str,
) -> std::result::Result<u64, NoPort> {
    let mut i = 0;
    while i < handlers.len() {
        if str_eq(handlers[i].handler, method) {
            return Ok(key(method));
        }
        i += 1;
    }
    if !checked {
        return Ok(UNHANDLED);
    }
    let mut i = 0;
    while i < handlers.len() {
        if !contains(block, handlers[i].handler) {
            return Ok(UNHANDLED);
        }
        i += 1;
    }
    let mut e = NoPort::new()
        .push("`")
        .push(method)
        .push("` handles no input port of `")
        .push(component)
        .push("`");
    if handlers.is_empty() {
        e = e.push(", which has no input ports");
    } else {
        // Every port's handler is in the block (else the derive reports the port):
        // this method is an extra one, not a port's handler misspelt.
        e = e.push(", whose input ports are ");
        let mut i = 0;
        while i < handlers.len() {
            if i > 0 {
                e = e.push(", ");
            }
            e = e
                .push("`")
                .push(handlers[i].port)
                .push("` (handler `")
                .push(handlers[i].handler)
                .push("`)");
            i += 1;
        }
    }
    Err(e.push(": rename the method, or move it to another `impl` block if it handles no port"))
}

/// [`port_key`]'s key, or [`UNHANDLED`] where it reports a method that handles no
/// port: for a second look-up of the same method, which must not report it again.
pub const fn key_or_unhandled(found: std::result::Result<u64, NoPort>) -> u64 {
    match found {
        Ok(key) => key,
        Err(_) => UNHANDLED,
    }
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn contains(names: &[&str], name: &str) -> bool {
    let mut i = 0;
    while i < names.len() {
        if str_eq(names[i], name) {
            return true;
        }
        i += 1;
    }
    false
}

/// The `msg` parameter's type as the author wrote it, `Self` (taken) or `&Self` (lent),
/// against the port's message type `M`: `#[handlers]` converts the parameter it gives
/// the handler, of type `M`, to the one written, which only `M` itself can be.
#[diagnostic::on_unimplemented(
    message = "this handler takes `{Self}`, but its port carries `{M}`",
    label = "expected `{M}` (or `&{M}`) here",
    note = "a port handler is `async fn on_<port>(&self, ctx: &Ctx<Self>, msg: {M}) -> Result<Reply>`; `msg: &{M}` borrows the message instead of taking it"
)]
pub trait PortMessage<M>: Sized {
    /// The message, taken.
    fn taken(msg: M) -> Self;
    /// The message, lent.
    fn lent(msg: &M) -> &Self;
}

impl<M> PortMessage<M> for M {
    fn taken(msg: M) -> M {
        msg
    }
    fn lent(msg: &M) -> &M {
        msg
    }
}

/// What the handler's `msg` parameter asks of the message in `inbox`, which arrived
/// on `port`: the parameter's type is inferred from the handler the dispatch calls.
pub fn arg<'x, T, K, A: Arg<'x, T, K>>(inbox: &'x mut Inbox<T, K>, port: &str) -> Result<A> {
    A::from_inbox(inbox, port)
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
    note = "a port handler is `async fn on_<port>(&self, ctx: &Ctx<Self>, msg: {T}) -> R`, where `R` is `()`, `Reply`, `Result<()>` or `Result<Reply>`; `msg: &{T}` borrows the message instead of taking it",
    note = "`#[tiny_sdk::handlers]` on the `impl` block of the handlers reports this on the handler itself"
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
    /// The probe for message type `T`.
    pub const fn new() -> Self {
        Take(PhantomData)
    }

    /// The probe for an input port's message type, named by the port itself.
    pub const fn of(_: &crate::Input<T>) -> Self {
        Take(PhantomData)
    }
}

/// [`Take`]'s choice for a [`RoundTrip`]-exact `Clone` type (found first: `&&&Take`).
pub trait TakeExactClone<T> {
    /// The message, to be taken this way.
    fn inbox(&self, msg: Msg) -> Inbox<T, ExactClone>;
}

impl<T: crate::Message + RoundTrip + Clone> TakeExactClone<T> for &&&Take<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, ExactClone> {
        Inbox::new(msg)
    }
}

/// [`Take`]'s choice for a [`RoundTrip`]-exact type (`&&Take`).
pub trait TakeExact<T> {
    /// The message, to be taken this way.
    fn inbox(&self, msg: Msg) -> Inbox<T, ExactMove>;
}

impl<T: crate::Message + RoundTrip> TakeExact<T> for &&Take<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, ExactMove> {
        Inbox::new(msg)
    }
}

/// [`Take`]'s choice for any other message type (`&Take`).
pub trait TakeDecode<T> {
    /// The message, to be taken this way.
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
    /// The message, for a type that cannot be taken.
    fn inbox(&self, msg: Msg) -> Inbox<T, NotAMessage>;
}

impl<T> TakeNone<T> for Take<T> {
    fn inbox(&self, msg: Msg) -> Inbox<T, NotAMessage> {
        Inbox::new(msg)
    }
}

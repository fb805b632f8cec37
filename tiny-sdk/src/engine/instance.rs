//! A component instance behind an object-safe handle, so the engine can hold
//! instances of different component types side by side.

use std::{
    panic::AssertUnwindSafe,
    sync::{Arc, RwLock},
};

use futures::{FutureExt as _, future::BoxFuture};
use serde_json::Value;

use crate::{
    client::ResourceManager,
    component::{Component, ComponentInfo, Hooks},
    context::{Ctx, Hop},
    contract::port as system,
    error::{Error, ErrorMessage, Result, code},
    flow::Node,
    message::Reply,
    msg::Msg,
    node::{Emit as _, NodeContext},
    port::{PortShape, PortSpec, family_port},
};

/// A port one node has now.
pub(crate) struct LivePort {
    pub spec: &'static PortSpec,
    pub name: std::borrow::Cow<'static, str>,
    /// The family key, for a family member.
    pub key: Option<String>,
}

/// What the engine needs from any component instance.
pub(crate) trait NodeInstance: Send + Sync {
    fn info(&self) -> ComponentInfo;
    fn ports(&self) -> &'static [PortSpec];
    /// The node's context (identity, state, client).
    fn node(&self) -> &Arc<NodeContext>;

    /// A business port: take the value, run the handler, route a failure to the catch
    /// port. The one allocation of a hop's control flow: the handler's future, boxed,
    /// with the hop it emits inline in it (the emitter's `Emit`: a plain struct for the
    /// common hop, everything else boxed). Its size is what each hop allocates and
    /// moves (608 bytes for the flow benchmark's step).
    fn handle(self: Arc<Self>, port: &'static str, input: Msg, hop: Hop) -> BoxFuture<'static, Result<Reply>>;
    /// `_settings`: decode and, when they changed, swap them in and call the hook.
    /// `None` means the spec has no settings: the defaults apply.
    fn settings<'a>(&'a self, value: Option<&'a Value>) -> BoxFuture<'a, Result<bool>>;
    /// A new instance's settings, put in force before its first hooks without calling
    /// `on_settings` (the `settings` call after them still does). Work those hooks
    /// start (a server or ticker resumed from `status.metadata`) keeps the settings of
    /// its context: with the defaults it would run unlike the node it resumes. Go's
    /// components read their settings field live, so its hook order does not show.
    fn preset_settings(&self, value: Option<&Value>);
    /// The ports the node has with the settings in force: an `error` catch port is
    /// switched off by `enableErrorPort: false` (as in the Go SDK), `enabled_by`
    /// ports by their settings field, and families give one port per key.
    fn live_ports(&self) -> Vec<LivePort>;
    /// The live ports as status shows them: schema, configuration, label, adjusted
    /// by the component to its settings and `_control` view.
    fn shaped_ports(&self) -> Vec<(&'static PortSpec, PortShape)>;
    /// Stops handlers still running for this node: it was removed or replaced.
    fn stop(&self);
    /// Whether what the instance runs has changed under it (a defined component
    /// installed again): the node then gets a fresh instance when it is applied.
    fn stale(&self) -> bool {
        false
    }
    fn control<'a>(&'a self, input: &'a Value, hop: Hop) -> BoxFuture<'a, Result<Reply>>;
    fn reconcile<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<()>>;
    fn client(&self, client: Arc<dyn ResourceManager>) -> BoxFuture<'_, Result<()>>;
    /// The resource manager this node's context holds, if any.
    fn node_client(&self) -> Option<Arc<dyn ResourceManager>>;
    fn destroy(&self) -> BoxFuture<'_, Result<()>>;
}

/// One node's instance of `C`.
pub(crate) struct Instance<C: Component> {
    component: C,
    node: Arc<NodeContext>,

    settings: RwLock<Settings<C::Settings>>,
}

/// The settings in force.
struct Settings<S> {
    decoded: Arc<S>,
    /// The JSON they came from (to skip unchanged ones); `None` for the defaults.
    source: Option<Value>,
    /// The Go SDK's `enableErrorPort` toggle, when the settings have one.
    error_port: Option<bool>,
}

impl<S: serde::Serialize> Settings<S> {
    fn new(decoded: S, source: Option<Value>) -> Self {
        // Go's key; a settings struct without `rename_all = "camelCase"` writes it as
        // the field is named, which is read too.
        let error_port = serde_json::to_value(&decoded).ok().and_then(|v| {
            v.get(ENABLE_ERROR_PORT)
                .or_else(|| v.get("enable_error_port"))
                .and_then(Value::as_bool)
        });
        Self {
            decoded: Arc::new(decoded),
            source,
            error_port,
        }
    }
}

/// The settings key that switches a component's error port on, as in the Go SDK.
pub(crate) const ENABLE_ERROR_PORT: &str = "enableErrorPort";

impl<C: Component + Hooks> Instance<C> {
    pub(crate) fn create(node: Arc<NodeContext>) -> Arc<dyn NodeInstance> {
        Arc::new(Instance::<C> {
            component: C::instance(),
            node,
            settings: RwLock::new(Settings::new(C::Settings::default(), None)),
        })
    }

    fn read_settings<T>(&self, f: impl FnOnce(&Settings<C::Settings>) -> T) -> T {
        match self.settings.read() {
            Ok(s) => f(&s),
            Err(poisoned) => f(&poisoned.into_inner()),
        }
    }

    fn ctx(&self, hop: Hop) -> Ctx<C> {
        let settings = self.read_settings(|s| s.decoded.clone());
        Ctx::new(self.node.clone(), settings, hop)
    }

    /// The context of a hook: the node's own hop (leadership, stopped with the node).
    fn hook_ctx(&self) -> Ctx<C> {
        self.ctx(self.node.system_hop())
    }

    /// Whether a handler failure goes to the catch port `catch`: the settings leave it
    /// on, and an edge leaves it. Otherwise the failure fails the hop, as it does in
    /// the Go SDK with the error port off, rather than vanish into an unwired port.
    fn catches(&self, catch: &str) -> bool {
        self.read_settings(|s| s.error_port != Some(false)) && self.node.connected(catch)
    }

    /// A handler failed on `port` with `input`: the failure goes to the catch port as
    /// an [`ErrorMessage`] when it is wired and on, and fails the hop otherwise.
    async fn catch(&self, ctx: Ctx<C>, port: &str, input: Msg, err: Error) -> Result<Reply> {
        match self.component.error_port() {
            // An input that does not decode is caught too (code `UNDECODABLE`, the field
            // named): the Go SDK fails such a hop before the component sees it, but an
            // author who wired the error port expects every failure of the node there.
            Some(catch) if catch.name() != port && self.catches(catch.name()) => {
                let mut input = input.json().cloned().unwrap_or(Value::Null);
                // Secrets stay out of the flow the error goes on into.
                let settings = self.settings.read().ok().and_then(|s| s.source.clone());
                let err = super::masking::for_catch_port(C::ports(), port, &mut input, settings.as_ref(), err);
                // And so do the values of the node's placeholders.
                let resolved = self.node.emitter.resolved();
                let err = if resolved.is_empty() {
                    err
                } else {
                    crate::redact::Secrets::default()
                        .with_values(resolved.iter().cloned())
                        .mask(&mut input);
                    let long: Vec<String> = resolved
                        .into_iter()
                        .filter(|v| v.chars().count() >= crate::redact::MIN_SCRUB_LEN)
                        .collect();
                    crate::redact::scrub_error(err, &long)
                };
                catch.emit(&ctx, ErrorMessage::new(&input, &err)).await
            }
            _ => Err(err),
        }
    }
}

/// Runs a handler until it finishes, panics (the message's permanent error) or its
/// node is stopped (removed or replaced), whichever comes first; the handler is
/// polled first.
///
/// The wait for the stop is made, boxed, only when the handler first suspends: a
/// handler that finishes in its first poll never registers with the node's stop
/// token, and the hop's future does not carry the wait's bytes (it is boxed once per
/// hop; a smaller one stays in the allocator's fast path).
fn until_stopped<'a>(
    mut work: std::pin::Pin<&'a mut (impl Future<Output = Result<Reply>> + ?Sized)>,
    node: &'a NodeContext,
) -> impl Future<Output = Result<Reply>> + 'a {
    let mut stop: Option<std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFuture<'a>>>> = None;
    std::future::poll_fn(move |cx| {
        // A panic is this message's permanent error (`guarded`'s rule, here rather than
        // in a combinator: a hop's future is one layer smaller). Once it panicked, the
        // handler is not polled again: this future is done.
        match std::panic::catch_unwind(AssertUnwindSafe(|| work.as_mut().poll(cx))) {
            // A handler that saw the stop (`ctx.cancelled()`) and answered with an error
            // of its own: that error is the removal's, with the code the docs promise and
            // words that say so (its own read as if its caller had given up).
            Ok(std::task::Poll::Ready(r)) => {
                return std::task::Poll::Ready(r.map_err(|e| match e.code() {
                    None if node.is_stopped() => removed(),
                    _ => e,
                }));
            }
            Err(panic) => return std::task::Poll::Ready(Err(panicked("handler", panic.as_ref()))),
            Ok(std::task::Poll::Pending) => {}
        }
        let stop = stop.get_or_insert_with(|| Box::pin(node.stopped()));
        stop.as_mut().poll(cx).map(|()| Err(removed()))
    })
}

/// The failure of a message whose node was removed while its handler ran.
fn removed() -> Error {
    Error::permanent("the node was removed while its handler ran; the handler was stopped")
        .with_code(code::NODE_REMOVED)
}

/// Runs a component future, turning a panic into a permanent error for this message.
///
/// A combinator, not an `async fn`: an `async fn` would hold `fut` twice (as its
/// argument and as the future it awaits), doubling the size of every hop's future.
fn guarded<'a, T>(what: &'a str, fut: impl Future<Output = Result<T>> + 'a) -> impl Future<Output = Result<T>> + 'a {
    AssertUnwindSafe(fut).catch_unwind().map(move |r| match r {
        Ok(r) => r,
        Err(panic) => Err(panicked(what, panic.as_ref())),
    })
}

/// The error a panic in `what` becomes.
fn panicked(what: &str, panic: &(dyn std::any::Any + Send)) -> Error {
    let msg = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-string panic payload".to_owned());
    Error::permanent(format!("{what} panicked: {msg}")).with_code(crate::error::code::PANIC)
}

/// Boxes the future `make` returns, made in its allocation rather than on the stack
/// and then copied: a handler's future is allocated once per hop and is large, while
/// what it holds before its first poll (its captures) is small.
#[inline(always)]
fn boxed_in_place<F: Future<Output = Result<Reply>> + Send + 'static>(
    make: impl FnOnce() -> F,
) -> BoxFuture<'static, Result<Reply>> {
    let slot: Box<std::mem::MaybeUninit<F>> = Box::new_uninit();
    let made: Box<F> = Box::write(slot, make());
    Box::into_pin(made)
}

impl<C: Component + Hooks> NodeInstance for Instance<C> {
    fn info(&self) -> ComponentInfo {
        C::info()
    }

    fn ports(&self) -> &'static [PortSpec] {
        C::ports()
    }

    fn node(&self) -> &Arc<NodeContext> {
        &self.node
    }

    fn handle(self: Arc<Self>, port: &'static str, input: Msg, hop: Hop) -> BoxFuture<'static, Result<Reply>> {
        boxed_in_place(move || async move {
            let ctx = self.ctx(hop);
            // A catch port reports the input that failed: keep a reference (the
            // handler then gets a copy rather than the value itself).
            let kept = self.component.error_port().map(|_| input.clone());
            // Pinned where it is made (a binding moved into `pin!` would hold the
            // handler's future twice), in a block of its own so that what follows may
            // reuse its bytes.
            let result = {
                let work = std::pin::pin!(self.component.handle(&ctx, port, input));
                until_stopped(work, &self.node).await
            };
            match (result, kept) {
                (Ok(reply), _) => Ok(reply),
                // Rare: boxed, so that every hop does not carry a second emit.
                (Err(err), Some(input)) => Box::pin(self.catch(ctx, port, input, err)).await,
                (Err(err), None) => Err(err),
            }
        })
    }

    fn settings<'a>(&'a self, value: Option<&'a Value>) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let unchanged = match self.settings.read() {
                Ok(s) => s.source.as_ref() == value,
                Err(_) => false,
            };
            if unchanged {
                return Ok(false);
            }
            let decoded: C::Settings = match value {
                Some(v) => crate::decode::decode(crate::contract::port::SETTINGS, v)?,
                None => C::Settings::default(),
            };
            let settings = Settings::new(decoded, value.cloned());
            let decoded = settings.decoded.clone();
            if let Ok(mut s) = self.settings.write() {
                *s = settings;
            }
            let ctx = self.hook_ctx();
            guarded("on_settings", self.component.on_settings(&ctx, &decoded)).await?;
            Ok(true)
        })
    }

    fn preset_settings(&self, value: Option<&Value>) {
        let Some(value) = value else { return };
        // Settings that do not decode are reported by the `settings` call after.
        let Ok(decoded) = crate::decode::decode::<C::Settings>(crate::contract::port::SETTINGS, value) else {
            return;
        };
        if let Ok(mut s) = self.settings.write() {
            // No source: the `settings` call still sees a change and calls the hook.
            *s = Settings::new(decoded, None);
        }
    }

    fn live_ports(&self) -> Vec<LivePort> {
        let (settings, error_port) = self.read_settings(|s| (s.decoded.clone(), s.error_port));
        let catch = self.component.error_port().map(|c| c.name());
        let mut live = Vec::with_capacity(C::ports().len());
        for spec in C::ports() {
            if spec.family {
                live.extend(C::port_keys(&settings, spec.name).into_iter().map(|key| LivePort {
                    spec,
                    name: family_port(spec.name, &key).into(),
                    key: Some(key),
                }));
                continue;
            }
            let switched_off =
                (catch == Some(spec.name) && error_port == Some(false)) || !C::port_enabled(&settings, spec.name);
            if !switched_off {
                live.push(LivePort {
                    spec,
                    name: spec.name.into(),
                    key: None,
                });
            }
        }
        live
    }

    fn shaped_ports(&self) -> Vec<(&'static PortSpec, PortShape)> {
        let settings = self.read_settings(|s| s.decoded.clone());
        let control = self.node.control_view();
        self.live_ports()
            .into_iter()
            .map(|p| {
                let mut schema = (p.spec.schema)();
                let configuration = match (p.spec.name, &control) {
                    (system::SETTINGS, _) => serde_json::to_value(&*settings).unwrap_or(Value::Null),
                    (system::CONTROL, Some(view)) => {
                        // What the view leaves out is not shown: a Start button
                        // becomes a Stop button.
                        crate::schema::retain_properties(&mut schema, |k| view.get(k).is_some());
                        view.clone()
                    }
                    _ => (p.spec.default_config)(),
                };
                let mut shape = PortShape {
                    name: p.name.into_owned(),
                    label: p.key.unwrap_or_else(|| p.spec.label.to_owned()),
                    schema,
                    configuration,
                };
                self.component.shape_port(&settings, &mut shape);
                (p.spec, shape)
            })
            .collect()
    }

    fn stop(&self) {
        self.node.stop();
    }

    fn control<'a>(&'a self, input: &'a Value, hop: Hop) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(async move {
            let control: C::Control = crate::decode::decode(crate::contract::port::CONTROL, input)?;
            let ctx = self.ctx(hop);
            guarded("on_control", self.component.on_control(&ctx, control)).await
        })
    }

    fn reconcile<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let ctx = self.hook_ctx();
            guarded("on_reconcile", self.component.on_reconcile(&ctx, node)).await
        })
    }

    fn client(&self, client: Arc<dyn ResourceManager>) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let ctx = self.hook_ctx();
            guarded("on_client", self.component.on_client(&ctx, client)).await
        })
    }

    fn node_client(&self) -> Option<Arc<dyn ResourceManager>> {
        self.node.client().cloned()
    }

    fn destroy(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let ctx = self.hook_ctx();
            guarded("on_destroy", self.component.on_destroy(&ctx)).await
        })
    }
}

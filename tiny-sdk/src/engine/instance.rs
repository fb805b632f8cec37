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
    context::{Ctx, Hop, NodeContext},
    error::{Error, ErrorMessage, Result},
    flow::Node,
    message::Reply,
    msg::Msg,
    port::PortSpec,
};

/// What the engine needs from any component instance.
pub(crate) trait NodeInstance: Send + Sync {
    fn info(&self) -> ComponentInfo;
    fn ports(&self) -> &'static [PortSpec];
    /// The node's context (identity, emitter, client).
    fn node(&self) -> &Arc<NodeContext>;
    /// A business port: take the value, run the handler, route a failure to the catch
    /// port. The one allocation of a hop's control flow: the handler's future, boxed.
    fn handle<'a>(&'a self, port: &'a str, input: Msg, hop: Hop) -> BoxFuture<'a, Result<Reply>>;
    /// `_settings`: decode and, when they changed, swap them in and call the hook.
    /// `None` means the spec has no settings: the defaults apply.
    fn settings<'a>(&'a self, value: Option<&'a Value>) -> BoxFuture<'a, Result<bool>>;
    /// The settings in force, as JSON.
    fn settings_json(&self) -> Value;
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
    /// The decoded settings and the JSON they came from (to skip unchanged ones).
    settings: RwLock<(Arc<C::Settings>, Option<Value>)>,
}

impl<C: Component + Hooks> Instance<C> {
    pub(crate) fn create(node: Arc<NodeContext>) -> Arc<dyn NodeInstance> {
        Arc::new(Instance::<C> {
            component: C::instance(),
            node,
            settings: RwLock::new((Arc::new(C::Settings::default()), None)),
        })
    }

    fn ctx(&self, hop: Hop) -> Ctx<C> {
        let settings = match self.settings.read() {
            Ok(s) => s.0.clone(),
            Err(poisoned) => poisoned.into_inner().0.clone(),
        };
        Ctx::new(self.node.clone(), settings, hop)
    }
}

/// Runs a component future, turning a panic into a permanent error for this message.
async fn guarded<T>(what: &str, fut: impl Future<Output = Result<T>>) -> Result<T> {
    match AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string panic payload".to_owned());
            Err(Error::permanent(format!("{what} panicked: {msg}")))
        }
    }
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

    fn handle<'a>(&'a self, port: &'a str, input: Msg, hop: Hop) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(async move {
            let ctx = self.ctx(hop);
            // A catch port reports the input that failed: keep a reference (the
            // handler then gets a copy rather than the value itself).
            let kept = self.component.error_port().map(|_| input.clone());
            let result = guarded("handler", self.component.handle(&ctx, port, input)).await;
            match (result, self.component.error_port(), kept) {
                (Err(err), Some(catch), Some(input)) if catch.name() != port && !err.undecodable => {
                    let input = input.json().cloned().unwrap_or(Value::Null);
                    catch.emit(&ctx, ErrorMessage::new(&input, &err)).await
                }
                (result, _, _) => result,
            }
        })
    }

    fn settings<'a>(&'a self, value: Option<&'a Value>) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let unchanged = match self.settings.read() {
                Ok(s) => s.1.as_ref() == value,
                Err(_) => false,
            };
            if unchanged {
                return Ok(false);
            }
            let decoded: C::Settings = match value {
                Some(v) => crate::port::decode(crate::system::SETTINGS, v)?,
                None => C::Settings::default(),
            };
            let decoded = Arc::new(decoded);
            if let Ok(mut s) = self.settings.write() {
                *s = (decoded.clone(), value.cloned());
            }
            let ctx = self.ctx(Hop::default());
            guarded("on_settings", self.component.on_settings(&ctx, &decoded)).await?;
            Ok(true)
        })
    }

    fn settings_json(&self) -> Value {
        match self.settings.read() {
            Ok(s) => serde_json::to_value(&*s.0).unwrap_or(Value::Null),
            Err(_) => Value::Null,
        }
    }

    fn control<'a>(&'a self, input: &'a Value, hop: Hop) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(async move {
            let control: C::Control = crate::port::decode(crate::system::CONTROL, input)?;
            let ctx = self.ctx(hop);
            guarded("on_control", self.component.on_control(&ctx, control)).await
        })
    }

    fn reconcile<'a>(&'a self, node: &'a Node) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let ctx = self.ctx(Hop::default());
            guarded("on_reconcile", self.component.on_reconcile(&ctx, node)).await
        })
    }

    fn client(&self, client: Arc<dyn ResourceManager>) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let ctx = self.ctx(Hop::default());
            guarded("on_client", self.component.on_client(&ctx, client)).await
        })
    }

    fn node_client(&self) -> Option<Arc<dyn ResourceManager>> {
        self.node.client().cloned()
    }

    fn destroy(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let ctx = self.ctx(Hop::default());
            guarded("on_destroy", self.component.on_destroy(&ctx)).await
        })
    }
}

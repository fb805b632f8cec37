//! my-module: two components to start from: `greet`, and `show_last`, which shows on
//! its dashboard what it received.

use std::sync::atomic::{AtomicU64, Ordering};

use tiny_sdk::prelude::*;

/// What a `greet` node is set to, in the editor.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(default, rename_all = "camelCase")]
pub struct GreetSettings {
    /// Put before the name.
    #[tiny(title = "Greeting word")]
    pub word: String,
    /// Failures go to the `error` port instead of failing the message.
    pub enable_error_port: bool,
}

// `#[serde(default)]` fills missing settings from here; the component needs it too.
impl Default for GreetSettings {
    fn default() -> Self {
        GreetSettings {
            word: "Hello".into(),
            enable_error_port: false,
        }
    }
}

/// A name to greet.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Name {
    /// Anything the sender wants back with the greeting.
    #[tiny(configurable)]
    #[serde(default)]
    pub context: serde_json::Value,
    /// Who to greet.
    pub name: String,
}

/// The greeting.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Greeting {
    /// The input's context, passed through.
    #[tiny(shared)]
    pub context: serde_json::Value,
    /// `<word>, <name>!`
    pub greeting: String,
}

/// Greets a person by name.
#[derive(Debug, Component, Default)]
#[component(name = "greet", settings = GreetSettings)]
pub struct Greet {
    /// The name to greet.
    #[port(position = Left)]
    input: Input<Name>,
    /// The greeting.
    #[port(position = Right)]
    greeting: Output<Greeting>,
    /// Names that could not be greeted, while `enableErrorPort` is on.
    #[port(position = Bottom, catch)]
    error: Output<ErrorMessage>,
}

#[handlers]
impl Greet {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let name = msg.name.trim();
        if name.is_empty() {
            return Err(Error::permanent("name is empty"));
        }
        let greeting = format!("{}, {name}!", ctx.settings().word);
        let greeting = Greeting {
            context: msg.context,
            greeting,
        };
        self.greeting.emit(ctx, greeting).await
    }
}

/// What a `show_last` node's dashboard (its `_control` port) shows.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Shown {
    /// The last message received.
    #[tiny(readonly)]
    pub last: serde_json::Value,
    /// Messages received since the node loaded on this replica.
    #[tiny(readonly)]
    pub received: u64,
}

/// Shows the last message it received on its dashboard, and answers with it. Its name
/// has a `_`: node names write it `show-last` (`my-module components --names`).
#[derive(Debug, Component, Default)]
#[component(name = "show_last", control = Shown)]
pub struct ShowLast {
    /// Any message.
    #[port(position = Left)]
    input: Input<serde_json::Value>,
    received: AtomicU64,
}

#[handlers]
impl ShowLast {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: serde_json::Value) -> Result<Reply> {
        let received = self.received.fetch_add(1, Ordering::Relaxed) + 1;
        ctx.show_control(&Shown {
            last: msg.clone(),
            received,
        });
        // The answer goes back along the edges to whoever sent the message.
        Ok(Reply::value(msg))
    }
}

/// The components of this module.
pub fn registry() -> tiny_sdk::engine::Registry {
    let mut r = tiny_sdk::engine::Registry::default();
    r.register::<Greet>();
    r.register::<ShowLast>();
    r
}

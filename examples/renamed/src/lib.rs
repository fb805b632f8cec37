//! Components written against the SDK under other names: a renamed dependency
//! (`sdk = { package = "tiny-sdk", .. }` in `Cargo.toml`) and a re-export
//! ([`platform::sdk`]), as a company platform crate would offer it. The derives reach
//! the SDK through `#[component(crate = "...")]` and `#[tiny(crate = "...")]`.

use sdk::prelude::*;

/// What a platform crate that re-exports the SDK looks like to its users.
pub mod platform {
    pub use ::sdk;
}

/// The input of [`Shout`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
#[tiny(crate = "sdk")]
pub struct Words {
    /// What to shout.
    #[tiny(title = "Text")]
    pub text: String,
}

/// The output of [`Shout`], reached through the re-export.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
#[tiny(crate = "crate::platform::sdk")]
pub enum Loud {
    /// Nothing to shout.
    #[default]
    Silence,
    /// The text, in capitals.
    Shouted {
        /// The capitals.
        text: String,
    },
}

/// Settings of [`Shout`].
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[tiny(crate = "::sdk")]
#[serde(rename_all = "camelCase")]
pub struct ShoutSettings {
    /// Added after the text.
    pub suffix: String,
    /// Send failures to the `error` port.
    pub enable_error_port: bool,
}

/// Shouts its input.
#[derive(Debug, Component, Default)]
#[component(crate = "sdk", name = "shout", settings = ShoutSettings, hooks)]
pub struct Shout {
    #[port(position = Left)]
    input: Input<Words>,
    #[port(position = Right)]
    out: Output<Loud>,
    #[port(position = Bottom, catch)]
    error: Output<ErrorMessage>,
}

#[handlers(crate = "sdk")]
impl Shout {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Words) -> Result<Reply> {
        if msg.text.is_empty() {
            return Err(Error::permanent("nothing to shout"));
        }
        let text = format!("{}{}", msg.text.to_uppercase(), ctx.settings().suffix);
        self.out.emit(ctx, Loud::Shouted { text: text.clone() }).await?;
        Ok(Reply::value(serde_json::json!({ "shouted": text })))
    }
}

impl Hooks for Shout {}

/// The same component through the re-export, with the derive's own `Hooks`.
#[derive(Debug, Component, Default)]
#[component(crate = "crate::platform::sdk", name = "whisper")]
pub struct Whisper {
    input: Input<Words>,
    out: Output<Words>,
}

#[handlers(crate = "crate::platform::sdk")]
impl Whisper {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Words) -> Result<Reply> {
        let text = msg.text.to_lowercase();
        self.out.emit(ctx, Words { text }).await
    }
}

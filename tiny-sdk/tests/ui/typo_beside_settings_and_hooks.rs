// A misspelt key beside `settings` and `hooks`: only the typo is reported, not the
// author's code that uses the settings or implements `Hooks`.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct HelloSettings {
    pub word: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Name {
    pub name: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Greeting {
    pub greeting: String,
}

#[derive(Component, Default)]
#[component(name = "hello", settings = HelloSettings, hooks, tag("greeting"))]
pub struct Hello {
    input: Input<Name>,
    greeting: Output<Greeting>,
}

impl Hello {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let word = &ctx.settings().word;
        let greeting = format!("{word}, {}!", msg.name);
        self.greeting.emit(ctx, Greeting { greeting }).await
    }
}

impl Hooks for Hello {
    async fn on_settings(&self, _ctx: &Ctx<Self>, settings: &HelloSettings) -> Result<()> {
        if settings.word.is_empty() {
            return Err(Error::permanent("the greeting word is empty"));
        }
        Ok(())
    }
}

fn main() {}

// With `#[handlers]`: an `on_` method that handles no port (a typo of `on_input`).
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Name {
    pub name: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Greeting {
    pub greeting: String,
}

#[derive(Component, Default)]
#[component(name = "hello")]
pub struct Hello {
    input: Input<Name>,
    greeting: Output<Greeting>,
}

#[handlers]
impl Hello {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let greeting = format!("Hello, {}!", msg.name);
        self.greeting.emit(ctx, Greeting { greeting }).await
    }

    async fn on_greting(&self, _ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let _ = msg;
        Ok(Reply::empty())
    }
}

fn main() {}

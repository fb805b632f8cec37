// `on_inptu` for `on_input`, without `#[handlers]`: one error, naming the method nearest.
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

impl Hello {
    async fn on_inptu(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let greeting = format!("Hello, {}!", msg.name);
        self.greeting.emit(ctx, Greeting { greeting }).await
    }
}

fn main() {}

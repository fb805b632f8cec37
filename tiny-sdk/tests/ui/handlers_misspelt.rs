// With `#[handlers]`: `on_inptu` for `on_input`. One error, on the port that has no handler,
// naming the method nearest to it; the method itself is no second error (no port is its).
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
    async fn on_inptu(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let greeting = format!("Hello, {}!", msg.name);
        self.greeting.emit(ctx, Greeting { greeting }).await
    }
}

fn main() {}

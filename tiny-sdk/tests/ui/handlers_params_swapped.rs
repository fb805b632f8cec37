// With `#[handlers]`: a handler whose parameters are in the wrong order.
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
    async fn on_input(&self, msg: Name, ctx: &Ctx<Self>) -> Result<Reply> {
        let greeting = format!("Hello, {}!", msg.name);
        self.greeting.emit(ctx, Greeting { greeting }).await
    }
}

fn main() {}

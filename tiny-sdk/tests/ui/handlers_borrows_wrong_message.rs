// With `#[handlers]`: a handler borrowing a different message type than its port carries.
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
    async fn on_input(&self, ctx: &Ctx<Self>, msg: &Greeting) -> Result<Reply> {
        self.greeting.emit(ctx, msg.clone()).await
    }
}

fn main() {}

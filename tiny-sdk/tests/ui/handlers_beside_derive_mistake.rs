// With `#[handlers]`: a mistake in `#[component(..)]` is the one error; the handlers still find their ports.
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
#[component(nmae = "hello")]
pub struct Hello {
    input: Input<Name>,
    greeting: Output<Greeting>,
}

#[handlers]
impl Hello {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let msg = Greeting { greeting: msg.name };
        self.greeting.emit(ctx, msg).await
    }
}

fn main() {}

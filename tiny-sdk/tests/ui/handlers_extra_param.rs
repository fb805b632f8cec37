// With `#[handlers]`: a handler with a parameter too many.
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
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Name, extra: u32) -> Result<Reply> {
        let _ = (ctx, msg, extra);
        Ok(Reply::empty())
    }
}

fn main() {}

// With `#[handlers]`: a handler taking `&mut self`.
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
    async fn on_input(&mut self, _ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let _ = msg;
        Ok(Reply::empty())
    }
}

fn main() {}

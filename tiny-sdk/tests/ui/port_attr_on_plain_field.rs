// `#[port]` on a field that is not an `Input` or an `Output`.
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
    #[port(position = Right)]
    greeting: String,
}

impl Hello {
    async fn on_input(&self, _ctx: &Ctx<Self>, _msg: Name) -> Result<Reply> {
        Ok(Reply::empty())
    }
}

fn main() {}

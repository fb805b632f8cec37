// A switch given a value that is not `true` or `false`: said how to write it, on the value.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Name {
    #[tiny(configurable = "yes")]
    pub name: String,
}

#[derive(Component, Default)]
#[component(name = "hello")]
pub struct Hello {
    input: Input<Name>,
    #[port(catch = 1)]
    error: Output<ErrorMessage>,
}

impl Hello {
    async fn on_input(&self, _ctx: &Ctx<Self>, _msg: Name) -> Result<Reply> {
        Ok(Reply::empty())
    }
}

fn main() {}

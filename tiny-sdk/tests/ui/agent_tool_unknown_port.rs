// `agent_tool` naming ports the component does not have: one error on each name,
// and one on `agent_tool` for the default `out` it lacks.
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
#[component(name = "hello", agent_tool(input = "nme", description = "Greets"))]
pub struct Hello {
    name: Input<Name>,
    greeting: Output<Greeting>,
}

#[derive(Component, Default)]
#[component(name = "hello2", agent_tool(input = "greeting", output = "name"))]
pub struct Hello2 {
    name: Input<Name>,
    greeting: Output<Greeting>,
}

impl Hello {
    async fn on_name(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let greeting = format!("Hello, {}!", msg.name);
        self.greeting.emit(ctx, Greeting { greeting }).await
    }
}

impl Hello2 {
    async fn on_name(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let greeting = format!("Hello, {}!", msg.name);
        self.greeting.emit(ctx, Greeting { greeting }).await
    }
}

fn main() {}

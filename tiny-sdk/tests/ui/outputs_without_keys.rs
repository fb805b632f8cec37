// A port family (`Outputs<T>`) that does not say which ports it has.
use tiny_sdk::prelude::*;
use tiny_sdk::Outputs;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Routes {
    pub routes: Vec<String>,
}

#[derive(Component, Default)]
#[component(name = "fork", settings = Routes)]
pub struct Fork {
    #[port(position = Left)]
    input: Input<String>,
    #[port(position = Right)]
    out: Outputs<String>,
}

impl Fork {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: String) -> Result<Reply> {
        self.out.emit(ctx, &msg.clone(), msg).await
    }
}

fn main() {}

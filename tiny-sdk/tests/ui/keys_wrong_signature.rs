// `keys` naming a method that does not take the settings.
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
    #[port(position = Right, keys = route_keys)]
    out: Outputs<String>,
}

impl Fork {
    fn route_keys(&self) -> Vec<String> {
        vec!["a".into()]
    }

    async fn on_input(&self, ctx: &Ctx<Self>, msg: String) -> Result<Reply> {
        self.out.emit(ctx, &msg.clone(), msg).await
    }
}

fn main() {}

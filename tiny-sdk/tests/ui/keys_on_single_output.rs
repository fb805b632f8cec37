// `keys` on a single output port, which has no family of ports.
use tiny_sdk::prelude::*;

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
    out: Output<String>,
}

impl Fork {
    fn route_keys(settings: &Routes) -> Vec<String> {
        settings.routes.clone()
    }

    async fn on_input(&self, ctx: &Ctx<Self>, msg: String) -> Result<Reply> {
        self.out.emit(ctx, msg).await
    }
}

fn main() {}

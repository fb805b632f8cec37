// `enabled_by` naming a settings field that is not a `bool`.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct StopperSettings {
    pub stop_port: String,
}

#[derive(Component, Default)]
#[component(name = "stopper", settings = StopperSettings)]
pub struct Stopper {
    #[port(position = Left)]
    input: Input<String>,
    #[port(enabled_by = stop_port)]
    stop: Output<String>,
}

impl Stopper {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: String) -> Result<Reply> {
        self.stop.emit(ctx, msg).await
    }
}

fn main() {}

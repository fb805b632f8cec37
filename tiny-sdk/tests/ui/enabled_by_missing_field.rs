// `enabled_by` naming a field the settings do not have.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct StopperSettings {
    pub enable_stop_port: bool,
}

#[derive(Component, Default)]
#[component(name = "stopper", settings = StopperSettings)]
pub struct Stopper {
    #[port(position = Left)]
    input: Input<String>,
    #[port(enabled_by = enable_stop)]
    stop: Output<String>,
}

impl Stopper {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: String) -> Result<Reply> {
        self.stop.emit(ctx, msg).await
    }
}

fn main() {}

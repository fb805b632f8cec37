// `enabled_by` on a component that has no settings to read the switch from.
use tiny_sdk::prelude::*;

#[derive(Component, Default)]
#[component(name = "stopper")]
pub struct Stopper {
    #[port(position = Left)]
    input: Input<String>,
    #[port(enabled_by = enable_stop_port)]
    stop: Output<String>,
}

impl Stopper {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: String) -> Result<Reply> {
        self.stop.emit(ctx, msg).await
    }
}

fn main() {}

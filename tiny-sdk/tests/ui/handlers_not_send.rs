// With `#[handlers]`: a handler holding a `std::sync::MutexGuard` (not `Send`) across an `.await`.
use std::sync::Mutex;
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
    seen: Mutex<Vec<String>>,
}

#[handlers]
impl Hello {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Name) -> Result<Reply> {
        let mut seen = self.seen.lock().unwrap();
        seen.push(msg.name.clone());
        let greeting = format!("Hello, {}!", msg.name);
        self.greeting.emit(ctx, Greeting { greeting }).await
    }
}

fn main() {}

// A request port whose response type is not a message.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Name {
    pub name: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Question {
    pub question: String,
}

#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub answer: String,
}

#[derive(Component, Default)]
#[component(name = "asker")]
pub struct Asker {
    input: Input<Name>,
    ask: Output<Question, Answer>,
}

impl Asker {
    async fn on_input(&self, _ctx: &Ctx<Self>, _msg: Name) -> Result<Reply> {
        Ok(Reply::empty())
    }
}

fn main() {}

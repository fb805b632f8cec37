// A format the editor does not know.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Request {
    #[tiny(format = "textare")]
    pub body: String,
}

fn main() {}

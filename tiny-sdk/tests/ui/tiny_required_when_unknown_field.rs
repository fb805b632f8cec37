// `required_when` naming a field that does not exist.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Request {
    #[tiny(enum("GET", "POST"))]
    pub method: String,
    #[tiny(required_when("methd", "===", "POST"))]
    pub body: String,
}

fn main() {}

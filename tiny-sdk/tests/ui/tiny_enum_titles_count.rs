// `enum_titles` must give one title per `enum` value.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Request {
    #[tiny(enum("GET", "POST", "PUT"), enum_titles("Get", "Post"))]
    pub method: String,
}

fn main() {}

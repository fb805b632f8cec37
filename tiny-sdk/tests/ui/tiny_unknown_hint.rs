// A misspelt hint in `#[tiny(...)]`.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Request {
    #[tiny(configurabel)]
    pub url: String,
}

fn main() {}

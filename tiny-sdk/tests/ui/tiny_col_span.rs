// A column span wider than the editor's 12-column grid.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Request {
    #[tiny(col_span = 13)]
    pub url: String,
}

fn main() {}

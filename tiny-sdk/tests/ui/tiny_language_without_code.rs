// `language` on a field that is not a code editor.
use tiny_sdk::prelude::*;

#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Script {
    #[tiny(format = "textarea", language = "javascript")]
    pub source: String,
}

fn main() {}

//! `tag`: a component that answers with its setting, so that a test can tell which
//! node, replica or configuration answered.

use serde_json::{Value, json};
use tiny_sdk::prelude::*;

/// `tag`'s settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(default)]
pub struct TagSettings {
    /// What the node answers (a replica's number, a configuration's version).
    pub tag: u32,
}

/// Answers with its setting.
#[derive(Debug, Component, Default)]
#[component(name = "tag", settings = TagSettings)]
pub struct Tag {
    input: Input<Value>,
}

impl Tag {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Reply {
        Reply::value(json!(ctx.settings().tag))
    }
}

//! `sender`: a component whose handler sends `{}` to `t.other-v0.target-1:input` over
//! NATS, so that a test can read what a hop's handler puts on the wire (its trace
//! context). The connection it sends on is [`CLIENT`], set once by the test.

use std::sync::OnceLock;

use serde_json::Value;
use tiny_runtime::nats::{SendOptions, send};
use tiny_sdk::prelude::*;

/// The connection [`Sender`] sends on.
pub static CLIENT: OnceLock<async_nats::Client> = OnceLock::new();

/// Sends `{}` to `t.other-v0.target-1:input` over NATS from its handler.
#[derive(Debug, Component, Default)]
#[component(name = "sender")]
pub struct Sender {
    input: Input<Value>,
}

impl Sender {
    async fn on_input(&self, _: &Ctx<Self>, _: Value) -> Result<Reply> {
        let client = CLIENT.get().ok_or_else(|| Error::permanent("no connection"))?;
        send(
            client,
            "t.other-v0.target-1",
            "input",
            b"{}".to_vec(),
            &SendOptions::default(),
        )
        .await?;
        Ok(Reply::empty())
    }
}

//! Agent-tool calls (Go's `x-mode: rpc`): a component run on its own, outside any
//! flow, for a platform agent that calls it as a tool.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::{
    error::{Error, Result, code},
    hop::Hop,
    message::Reply,
    msg::Msg,
    node::{NodeContext, NodeIdentity},
};

use super::{emitter::NodeEmitter, table::Engine};

impl Engine {
    /// Calls `component` as an agent tool, as Go's scheduler serves `x-mode: rpc`: a
    /// fresh instance with default settings, no state and no edges gets `payload`
    /// (JSON; empty is `{}`) on the tool's input port; the answer is the first message
    /// it emits on the tool's output port, else its handler's reply. The instance is
    /// stopped when the call ends (work it started ends with it); `cancel` stops the
    /// handler as a hop's cancellation does.
    ///
    /// Errors: [`UNKNOWN_COMPONENT`](code::UNKNOWN_COMPONENT) for a component the
    /// module does not have, [`NOT_AGENT_TOOL`](code::NOT_AGENT_TOOL) for one that is
    /// not a tool, [`UNDECODABLE`](code::UNDECODABLE) for a payload that is not the
    /// input port's type, and whatever the handler fails with.
    pub async fn call_tool(&self, component: &str, payload: &[u8], cancel: CancellationToken) -> Result<Reply> {
        let module = self.module().to_owned();
        let Some(entry) = self.registry().get(component) else {
            return Err(Error::permanent(format!(
                "agent tool call: module `{module}` has no component `{component}` (it has: {})",
                self.registry().names().join(", ")
            ))
            .with_code(code::UNKNOWN_COMPONENT));
        };
        let Some(tool) = (entry.agent_tool)() else {
            return Err(Error::permanent(format!(
                "agent tool call: component `{component}` of module `{module}` is not an agent tool"
            ))
            .with_code(code::NOT_AGENT_TOOL));
        };
        // The derive checked that the port exists; a hand-written impl may name one
        // that does not.
        let Some(input) = (entry.ports)()
            .iter()
            .find(|p| p.name == tool.input && !p.is_source())
            .map(|p| p.name)
        else {
            return Err(Error::permanent(format!(
                "agent tool call: component `{component}` has no input port `{}`",
                tool.input
            ))
            .with_code(code::UNKNOWN_PORT));
        };
        let name: Arc<str> = Arc::from(component);
        let emitter = NodeEmitter::capturing(Arc::downgrade(&self.inner), name, tool.output);
        let identity = NodeIdentity {
            node_name: component.to_owned(),
            ..NodeIdentity::default()
        };
        let instance = (entry.create)(Arc::new(NodeContext::new(identity, emitter, None)));
        // Go decodes an empty payload as the port type's zero value.
        let payload = if payload.iter().all(u8::is_ascii_whitespace) {
            b"{}".to_vec()
        } else {
            payload.to_vec()
        };
        // Refused here, naming the tool and its port: the decoder would say only
        // that the bytes are not JSON.
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&payload) {
            return Err(Error::permanent(format!(
                "agent tool call: the payload for `{component}` (input port `{input}`) is not JSON: {e}"
            ))
            .with_code(code::UNDECODABLE));
        }
        let hop = Hop {
            depth: 0,
            cancel: cancel.into(),
            leader: self.is_leader(),
            ..Hop::default()
        };
        let outcome = instance.clone().handle(input, Msg::from_json_bytes(payload), hop).await;
        instance.stop();
        let reply = outcome?;
        Ok(match instance.node().emitter.captured() {
            Some(first) => Reply::msg(first),
            None => reply,
        })
    }
}

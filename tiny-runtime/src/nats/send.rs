//! Sending into a node from outside a flow, as the platform, the editor's buttons and
//! Go's `wire.Publish` do: the signal of a cluster on NATS.

use std::time::Duration;

use async_nats::{Client, HeaderMap};
use bytes::Bytes;
use futures::StreamExt as _;
use tiny_sdk::{Error, Reply, Result, contract::port, error::code, flow::parse_node_name};

use super::wire::{self, header};

/// How [`send`] sends.
#[derive(Debug, Clone)]
pub struct SendOptions {
    /// `x-from`; [`wire::FROM_SIGNAL`] by default, so that the receiver decodes the
    /// payload straight into the port's type (with anything else a Go receiver
    /// evaluates the edge's mapping instead).
    pub from: String,
    /// `x-edge-id`, when not empty.
    pub edge_id: String,
    /// Wait up to this long for the node's reply; `None` sends and returns (fire
    /// and forget, as a plain publish).
    pub wait: Option<Duration>,
}

impl Default for SendOptions {
    fn default() -> Self {
        Self {
            from: wire::FROM_SIGNAL.to_owned(),
            edge_id: String::new(),
            wait: None,
        }
    }
}

impl SendOptions {
    /// Waits for the reply, up to [`wire::DEFAULT_SIGNAL_TIMEOUT`] (30 s, Go's).
    #[must_use]
    pub fn wait(mut self) -> Self {
        self.wait = Some(wire::DEFAULT_SIGNAL_TIMEOUT);
        self
    }
}

/// What [`send`] publishes: the subject and headers for `node`'s `port`; the error
/// says what is wrong with the target before anything is sent.
pub(crate) fn envelope(node: &str, port_name: &str, opts: &SendOptions) -> Result<(String, HeaderMap)> {
    let invalid = |what: String| Error::permanent(what).with_code(code::INVALID_MESSAGE);
    if node.contains(':') {
        return Err(invalid(format!(
            "`{node}` is not a node name: give the node and the port apart (`<node> <port>`)"
        )));
    }
    if port_name.is_empty() {
        return Err(invalid(format!("no port given for node `{node}`")));
    }
    let Some((module, _)) = parse_node_name(node) else {
        return Err(invalid(format!(
            "`{node}` is not a full node name `<flow>.<module>.<component>-<suffix>`: its module decides the subject"
        )));
    };
    let subject = if port::is_system(port_name) {
        wire::system_subject(module)
    } else {
        wire::subject(module)
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        wire::name(header::TO),
        wire::header_value(&format!("{node}:{port_name}")),
    );
    if !opts.from.is_empty() {
        headers.insert(wire::name(header::FROM), wire::header_value(&opts.from));
    }
    if !opts.edge_id.is_empty() {
        headers.insert(wire::name(header::EDGE_ID), wire::header_value(&opts.edge_id));
    }
    Ok((subject, headers))
}

/// Sends `data` (JSON bytes) to `node`'s `port` over NATS, as Go's `wire.Publish`:
/// to `tinymodule.<module>.sysmsg` for a system port (every replica hears it, the
/// leader acts), else to `tinymodule.<module>.msg` (one replica takes it).
///
/// Fire and forget unless [`SendOptions::wait`] is set; then the reply comes back as
/// [`Reply`] (`Ok(None)` when not waiting). For a system port every replica answers
/// and the first answer wins: a follower's empty answer does not prove the leader
/// acted.
///
/// ```no_run
/// # async fn f(client: async_nats::Client) -> tiny_sdk::Result<()> {
/// use tiny_runtime::nats::{SendOptions, send};
/// let reply = send(&client, "f1.common-module-v0.ticker-a1b2", "_control",
///     br#"{"start":true}"#.to_vec(), &SendOptions::default().wait()).await?;
/// # let _ = reply; Ok(()) }
/// ```
pub async fn send(client: &Client, node: &str, port: &str, data: Vec<u8>, opts: &SendOptions) -> Result<Option<Reply>> {
    let (subject, mut headers) = envelope(node, port, opts)?;
    let unreachable = |e: &dyn std::fmt::Display| {
        Error::transient(format!("sending to `{node}:{port}` on `{subject}`: {e}")).with_code(code::UNREACHABLE)
    };
    crate::nats::trace::inject_nats_here(&mut headers);
    let Some(wait) = opts.wait else {
        client
            .publish_with_headers(subject.clone(), headers, Bytes::from(data))
            .await
            .map_err(|e| unreachable(&e))?;
        client.flush().await.map_err(|e| unreachable(&e))?;
        return Ok(None);
    };
    // Two inboxes under one subscription: the native reply subject, where a core
    // receiver answers and where, on a JetStream broker, the stream acknowledges the
    // message it stored; and `x-reply-inbox`, where a JetStream receiver answers. So
    // the broker's acknowledgement is never taken for the node's answer (what Go's
    // `WaitForReply` returns on JetStream).
    let prefix = client.new_inbox();
    let (native, answer_to) = (format!("{prefix}.r"), format!("{prefix}.x"));
    let mut replies = client
        .subscribe(format!("{prefix}.*"))
        .await
        .map_err(|e| unreachable(&e))?;
    headers.insert(wire::name(header::REPLY_INBOX), answer_to.as_str());
    client
        .publish_with_reply_and_headers(subject.clone(), native, headers, Bytes::from(data))
        .await
        .map_err(|e| unreachable(&e))?;
    let deadline = tokio::time::Instant::now() + wait;
    let msg = loop {
        let answer = tokio::time::timeout_at(deadline, replies.next()).await.map_err(|_| {
            Error::transient(format!(
                "no reply from `{node}:{port}` on `{subject}` within {} s",
                wait.as_secs_f64()
            ))
            .with_code(code::TIMEOUT)
        })?;
        let msg = answer.ok_or_else(|| unreachable(&"the connection closed"))?;
        if msg.status == Some(async_nats::StatusCode::NO_RESPONDERS) {
            return Err(
                Error::transient(format!("no replica of the module of `{node}` listens on `{subject}`"))
                    .with_code(code::UNREACHABLE),
            );
        }
        if wire::is_stream_ack(&msg) {
            continue; // stored: the answer comes on `x-reply-inbox`
        }
        break msg;
    };
    wire::decode_reply(msg.headers.as_ref(), msg.payload, || format!("`{node}:{port}`")).map(Some)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn system_ports_go_to_sysmsg_and_business_ports_to_msg() {
        let opts = SendOptions::default();
        let (s, h) = envelope("f.common-module-v0.ticker-1", "_control", &opts).unwrap();
        assert_eq!(s, "tinymodule.common-module-v0.sysmsg");
        assert_eq!(
            wire::get(Some(&h), header::TO),
            Some("f.common-module-v0.ticker-1:_control")
        );
        assert_eq!(wire::get(Some(&h), header::FROM), Some("signal"));
        assert_eq!(wire::get(Some(&h), header::EDGE_ID), None);
        let (s, _) = envelope("f.common-module-v0.ticker-1", "in", &opts).unwrap();
        assert_eq!(s, "tinymodule.common-module-v0.msg");
    }

    #[test]
    fn bad_targets_are_refused_before_anything_is_sent() {
        let opts = SendOptions::default();
        for (node, port, want) in [
            ("f.m.c-1:in", "in", "not a node name"),
            ("greeter", "in", "not a full node name"),
            ("f.m.c-1", "", "no port given"),
        ] {
            let e = envelope(node, port, &opts).unwrap_err();
            assert!(e.message().contains(want), "{e}");
            assert_eq!(e.code(), Some(code::INVALID_MESSAGE));
        }
    }
}

//! Target `grpc`: one raw request through the module server's gRPC service.
//!
//! Input: `mode headers NUL body`. `mode` (the first byte, modulo 3) says what the
//! body is: `0` the HTTP/2 body as it is (gRPC frames, compressed flag and length
//! included), `1` an encoded `MessageRequest` that gets one frame, `2` the fields
//! `to NUL from NUL edge-id NUL payload`, encoded and framed. `headers` are lines
//! `name: value` added to a well-formed request (`x-message-depth: 3`,
//! `grpc-encoding: gzip`...); lines that are not valid headers are skipped.
//!
//! The request goes to the same service the server runs ([`module_service`]) over an
//! engine of module `fuzz` with nodes `fuzz-answer`, `fuzz-relay` (wired to
//! `fuzz-answer:input`, passing the message on) and `fuzz-knob`; the whole response body, trailers included,
//! is read.

use http_body_util::{BodyExt, Full};
use prost::Message;
use serde_json::Value;
use tiny_runtime::grpc::{ServerOptions, module_service, proto::MessageRequest};
use tiny_sdk::flow::{Edge, Node, NodeSpec, PortConfig, RawJson};
use tokio_util::sync::CancellationToken;
use tonic::codegen::{Bytes, Service, http};

/// The largest message the service takes in a fuzz run (the real default is 4 MiB).
const MAX_MESSAGE_SIZE: usize = 64 * 1024;

/// Sends the request in `data` to the service and reads the whole answer.
pub fn run(data: &[u8]) {
    let _ = answer(data);
}

/// What the service answered: the `grpc-status` code and the response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The `grpc-status` of the trailers (or headers, for an error without a body).
    pub status: i32,
    /// The response body: gRPC frames.
    pub body: Vec<u8>,
}

/// [`run`], returning the answer (`None` when `data` is not even a request).
pub fn answer(data: &[u8]) -> Option<Answer> {
    let (&mode, rest) = data.split_first()?;
    let (headers, body) = crate::split(rest);
    let body = match mode % 3 {
        0 => body.unwrap_or_default().to_vec(),
        1 => frame(body.unwrap_or_default()),
        _ => frame(&request_from_fields(body.unwrap_or_default()).encode_to_vec()),
    };
    let request = request(headers, body)?;
    Some(crate::runtime().block_on(call(request)))
}

/// A `MessageRequest` from `to NUL from NUL edge-id NUL payload`.
pub fn request_from_fields(fields: &[u8]) -> MessageRequest {
    let mut parts = fields.splitn(4, |&b| b == 0);
    let mut text = || String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let (to, from, edge_id) = (text(), text(), text());
    MessageRequest {
        id: String::new(),
        from,
        to,
        payload: parts.next().unwrap_or_default().to_vec(),
        edge_id,
    }
}

/// One uncompressed gRPC frame around `message`.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    // Longer than u32 cannot come from a fuzzer; saturate rather than wrap.
    out.extend_from_slice(&u32::try_from(message.len()).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(message);
    out
}

fn request(headers: &[u8], body: Vec<u8>) -> Option<http::Request<Full<Bytes>>> {
    let mut builder = http::Request::builder()
        .method(http::Method::POST)
        .uri("/module.ModuleService/Message")
        .header(http::header::CONTENT_TYPE, "application/grpc")
        .header(http::header::TE, "trailers");
    for line in headers.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.trim_ascii()),
            http::HeaderValue::from_bytes(value),
        ) {
            builder = builder.header(name, value);
        }
    }
    builder.body(Full::new(Bytes::from(body))).ok()
}

/// The engine of module `fuzz` every request of this target (and of `nats`) goes to:
/// [`flow::engine`](crate::flow::engine) with `fuzz-answer` taking the whole message
/// from `fuzz-relay`, `fuzz-relay` wired to it, and `fuzz-knob`.
pub async fn wired_engine() -> tiny_sdk::engine::Engine {
    let engine = crate::flow::engine().await;
    let node = |name: &str, component: &str, ports: Vec<PortConfig>, edges: Vec<Edge>| Node {
        name: name.into(),
        spec: NodeSpec {
            module: "fuzz".into(),
            component: component.into(),
            ports,
            edges,
        },
        ..Default::default()
    };
    // The edge hands the whole message on.
    let mapping = PortConfig {
        from: "fuzz-relay:out".into(),
        port: "input".into(),
        configuration: Some(RawJson(Value::String("{{$}}".into()))),
        ..Default::default()
    };
    let to_answer = Edge {
        id: "e1".into(),
        port: "out".into(),
        to: "fuzz-answer:input".into(),
        ..Default::default()
    };
    let nodes = [
        node("fuzz-answer", "answer", vec![mapping], Vec::new()),
        node("fuzz-relay", "relay", Vec::new(), vec![to_answer]),
        node("fuzz-knob", "knob", Vec::new(), Vec::new()),
    ];
    for n in nodes {
        if let Err(e) = engine.apply(n).await {
            panic!("a fixed node does not apply: {e}");
        }
    }
    engine
}

async fn call(request: http::Request<Full<Bytes>>) -> Answer {
    let engine = wired_engine().await;
    let opts = ServerOptions {
        max_message_size: MAX_MESSAGE_SIZE,
        ..ServerOptions::default()
    };
    let mut service = module_service(engine, &opts, CancellationToken::new());
    let response = match service.call(request).await {
        Ok(r) => r,
        Err(never) => match never {},
    };
    // Every answer, error or not, must be a complete body with a `grpc-status`.
    let (parts, body) = response.into_parts();
    let (trailers, body) = match body.collect().await {
        Ok(c) => (c.trailers().cloned(), c.to_bytes().to_vec()),
        Err(status) => panic!("the response body failed: {status:?}"),
    };
    let status = trailers
        .as_ref()
        .and_then(|t| t.get("grpc-status"))
        .or_else(|| parts.headers.get("grpc-status"))
        .and_then(|v| v.to_str().ok()?.parse().ok());
    match status {
        Some(status) => Answer { status, body },
        None => panic!("a response without a numeric grpc-status: {parts:?} {trailers:?}"),
    }
}

//! Wire compatibility with the Go SDK: the bytes its generated code
//! (`internal/server/api/module-go`) produces for `MessageRequest` and
//! `MessageResponse`, built here by hand from the field numbers and wire types, are
//! exactly tiny's encoding, decode back to the same values, and are what a tiny server
//! takes and answers on the Go SDK's method path.

use prost::{
    Message,
    bytes::{Buf, BufMut},
};
use serde_json::{Value, json};
use tiny_runtime::grpc::{
    ServerOptions,
    proto::{MessageRequest, MessageResponse},
    spawn,
};
use tiny_sdk::{engine::Engine, flow::FlowBuilder, prelude::*};
use tonic::{
    Status,
    codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder},
};

/// Wire type 2: length-delimited (strings, bytes, embedded messages).
const LEN: u8 = 2;

/// Appends a varint.
fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends field `field` as a length-delimited value; proto3 leaves out empty ones.
fn field(out: &mut Vec<u8>, field: u8, value: &[u8]) {
    if value.is_empty() {
        return;
    }
    out.push(field << 3 | LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// The Go encoding of `MessageRequest{ID, From, To, Payload, EdgeID}`: fields in
/// number order (Go's deterministic marshalling order).
fn go_request(id: &str, from: &str, to: &str, payload: &[u8], edge_id: &str) -> Vec<u8> {
    let mut out = Vec::new();
    field(&mut out, 1, id.as_bytes());
    field(&mut out, 2, from.as_bytes());
    field(&mut out, 3, to.as_bytes());
    field(&mut out, 4, payload);
    field(&mut out, 5, edge_id.as_bytes());
    out
}

fn go_response(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    field(&mut out, 1, data);
    out
}

fn request(id: &str, from: &str, to: &str, payload: &[u8], edge_id: &str) -> MessageRequest {
    MessageRequest {
        id: id.into(),
        from: from.into(),
        to: to.into(),
        payload: payload.to_vec(),
        edge_id: edge_id.into(),
    }
}

#[test]
fn a_request_encodes_to_the_go_bytes_and_back() {
    let payload = br#"{"q":42}"#;
    let msg = request("", "f.a.ask-1:out", "f.b.comp-1:input", payload, "edge-1");
    let go = go_request("", "f.a.ask-1:out", "f.b.comp-1:input", payload, "edge-1");
    // Spelled out once, to pin the helper itself: From is field 2 -> tag 0x12.
    assert_eq!(&go[..3], &[0x12, 13, b'f']);
    assert_eq!(msg.encode_to_vec(), go);
    assert_eq!(MessageRequest::decode(go.as_slice()).ok(), Some(msg));
}

#[test]
fn every_field_and_long_lengths_match() {
    // A 300-byte payload needs a two-byte length varint (0xac 0x02).
    let payload = format!(r#"{{"text":"{}"}}"#, "é".repeat(144));
    assert_eq!(payload.len(), 299);
    let payload = format!("{payload} ");
    let msg = request("id-7", "signal", "n.m.c-1:in", payload.as_bytes(), "e");
    let go = go_request("id-7", "signal", "n.m.c-1:in", payload.as_bytes(), "e");
    let at = go.iter().position(|b| *b == (4 << 3 | LEN)).expect("payload tag");
    assert_eq!(&go[at..at + 3], &[0x22, 0xac, 0x02]);
    assert_eq!(msg.encode_to_vec(), go);
    assert_eq!(MessageRequest::decode(go.as_slice()).ok(), Some(msg));
}

#[test]
fn empty_fields_are_absent_and_an_empty_message_is_no_bytes() {
    assert!(MessageRequest::default().encode_to_vec().is_empty());
    assert!(MessageResponse::default().encode_to_vec().is_empty());
    assert_eq!(MessageResponse::decode(&[][..]).ok(), Some(MessageResponse::default()));
    let only_to = request("", "", "x:y", b"", "");
    assert_eq!(only_to.encode_to_vec(), vec![0x1a, 3, b'x', b':', b'y']);
}

#[test]
fn a_response_encodes_to_the_go_bytes_and_back() {
    let data = br#"{"answer":"hi"}"#;
    let msg = MessageResponse { data: data.to_vec() };
    let go = go_response(data);
    assert_eq!(go[0], 0x0a);
    assert_eq!(msg.encode_to_vec(), go);
    assert_eq!(MessageResponse::decode(go.as_slice()).ok(), Some(msg));
}

#[test]
fn decoding_takes_any_field_order_and_skips_unknown_fields() {
    // A newer peer may add fields; parsers may see fields in any order.
    let mut bytes = Vec::new();
    field(&mut bytes, 5, b"edge");
    field(&mut bytes, 3, b"n:p");
    bytes.extend_from_slice(&[9 << 3, 0x96, 0x01]); // field 9, varint 150: unknown
    field(&mut bytes, 4, b"1");
    field(&mut bytes, 2, b"a:o");
    let msg = MessageRequest::decode(bytes.as_slice()).expect("decodes");
    assert_eq!(msg, request("", "a:o", "n:p", b"1", "edge"));
}

/// A codec that sends and takes bytes as they are, as a peer with its own
/// generated code would put them on the wire.
#[derive(Debug, Clone, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        let mut out = vec![0; src.remaining()];
        src.copy_to_slice(&mut out);
        Ok(Some(out))
    }
}

/// Answers with its input and the hop depth it arrived at.
#[derive(Debug, Component, Default)]
#[component(name = "answer")]
struct Answer {
    input: Input<Value>,
}

impl Answer {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Reply {
        Reply::value(json!({"got": msg, "depth": ctx.hop().depth}))
    }
}

#[tokio::test]
async fn a_tiny_server_takes_go_bytes_on_the_go_method_path() {
    let engine = Engine::builder()
        .module("b")
        .node_wait(std::time::Duration::from_millis(50))
        .register::<Answer>()
        .build();
    for node in FlowBuilder::new()
        .module("b")
        .node("f.b.answer-1", "answer")
        .build()
        .nodes
    {
        engine.apply(node).await.expect("loads");
    }
    let local = engine
        .send("f.b.nobody-1:input", json!(1))
        .await
        .expect_err("no such node");
    let server = spawn(engine, ([127, 0, 0, 1], 0).into(), ServerOptions::default())
        .await
        .expect("binds");
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr()))
        .expect("uri")
        .connect()
        .await
        .expect("connects");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let mut request = tonic::Request::new(go_request("", "signal", "f.b.answer-1:input", br#"{"q":1}"#, ""));
    request
        .metadata_mut()
        .insert("x-message-depth", tonic::metadata::MetadataValue::from_static("7"));
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/module.ModuleService/Message");
    let response = grpc.unary(request, path, Raw).await.expect("answers");
    let expected = serde_json::to_vec(&json!({"got": {"q": 1}, "depth": 7})).expect("json");
    assert_eq!(response.into_inner(), go_response(&expected));

    // An error is a status with the error text as its message, which is all a Go
    // client reads, plus tiny's metadata.
    let path = tonic::codegen::http::uri::PathAndQuery::from_static("/module.ModuleService/Message");
    let request = tonic::Request::new(go_request("", "signal", "f.b.nobody-1:input", b"1", ""));
    grpc.ready().await.expect("ready");
    let status = grpc.unary(request, path, Raw).await.expect_err("no such node");
    assert_eq!(status.message(), local.to_string());
    assert!(status.message().contains("`f.b.nobody-1`"), "{status:?}");
    let code = if local.is_retryable() {
        tonic::Code::Unavailable
    } else {
        tonic::Code::NotFound
    };
    assert_eq!(status.code(), code);
    let kind = status.metadata().get("x-error-kind").and_then(|v| v.to_str().ok());
    let expected = match local.kind() {
        tiny_sdk::ErrorKind::Transient => "transient",
        tiny_sdk::ErrorKind::Permanent => "permanent",
    };
    assert_eq!(kind, Some(expected));
}

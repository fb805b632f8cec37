//! The fuzz harnesses reach the code they are meant to fuzz: a well-formed input gets
//! through to a real answer, so a fuzz run that finds nothing means something.

use tiny_fuzz::grpc::{answer, frame, request_from_fields};

/// The `grpc` input of mode 2: headers, then `to NUL from NUL edge NUL payload`.
fn fields(headers: &str, to: &str, payload: &str) -> Vec<u8> {
    format!("\u{2}{headers}\0{to}\0\0\0{payload}").into_bytes()
}

#[test]
fn grpc_requests_reach_the_engine_and_come_back() {
    let ok = answer(&fields("", "fuzz-relay:input", r#"{"a":1}"#));
    let expected = frame(&prost::Message::encode_to_vec(
        &tiny_runtime::grpc::proto::MessageResponse {
            data: br#"{"a":1}"#.to_vec(),
        },
    ));
    assert_eq!(ok.map(|a| (a.status, a.body)), Some((0, expected)));
}

#[test]
fn grpc_refusals_keep_their_codes() {
    let status = |data: Vec<u8>| answer(&data).map(|a| a.status);
    // FailedPrecondition: the cycle guard.
    assert_eq!(
        status(fields("x-message-depth: 300", "fuzz-answer:input", "1")),
        Some(9)
    );
    // InvalidArgument: a depth that is no number, and a payload that is not JSON.
    assert_eq!(
        status(fields("x-message-depth: many", "fuzz-answer:input", "1")),
        Some(3)
    );
    assert_eq!(status(fields("", "fuzz-answer:input", "{")), Some(3));
    // NotFound: a node of another module.
    assert_eq!(status(fields("", "other-x:input", "1")), Some(5));
    // Unimplemented: a compression the server does not take.
    assert_eq!(
        status(fields("grpc-encoding: gzip", "fuzz-answer:input", "1")),
        Some(12)
    );
    let raw = request_from_fields(b"fuzz-answer:input\0\0\0null");
    assert_eq!(raw.to, "fuzz-answer:input");
    assert_eq!(raw.payload, b"null");
}

#[test]
fn flow_specs_run_and_refusals_are_errors() {
    let relay = r#"{"name":"fuzz-r","spec":{"module":"fuzz","component":"relay","edges":[{"id":"e3","port":"out","to":"fuzz-k:input"}]}}"#;
    let knob = r#"{"name":"fuzz-k","spec":{"module":"fuzz","component":"knob","ports":[
        {"port":"_settings","configuration":{"word":"hi","times":2,"case":"Upper"}},
        {"port":"input","from":"fuzz-r:out","configuration":{"name":"{{$.who}}"}}],
        "edges":[{"id":"e1","port":"out","to":"fuzz-r2:input"}]}}"#;
    // An answer that keeps the text, so the chain answers with it.
    let relay2 = r#"{"name":"fuzz-r2","spec":{"module":"fuzz","component":"answer",
        "ports":[{"port":"input","from":"fuzz-k:out","configuration":{"text":"{{$.text}}"}}]}}"#;
    let sends = tiny_fuzz::flow::sends(format!("[{relay},{knob},{relay2}]\0{{\"who\":\"Ann\"}}").as_bytes());
    let reply = sends
        .iter()
        .find(|(to, _)| to == "fuzz-r:input")
        .and_then(|(_, r)| r.as_ref().ok())
        .and_then(|r| r.as_value().cloned());
    assert_eq!(
        reply.map(|v| v["text"].clone()),
        Some("HI AnnHI Ann".into()),
        "{sends:?}"
    );
    let unknown = tiny_fuzz::flow::sends(br#"{"name":"fuzz-u","spec":{"module":"fuzz","component":"nope"}}"#);
    assert!(
        !unknown.is_empty() && unknown.iter().all(|(_, r)| r.is_err()),
        "{unknown:?}"
    );
}

/// A template whose value changes between renders (`rand`, `randint`, `now`, in any
/// case) is rendered, not compared with itself: the target found it a false crash.
#[test]
fn expr_takes_templates_that_change_between_renders() {
    for template in [
        r#"{"r": "{{ rand(1) }}", "u": "{{$.user}}"}"#,
        r#"{"r": "{{ RandInt(1000000) }}"}"#,
        r#"["{{ now() }}", "{{$.user}}"]"#,
    ] {
        for _ in 0..20 {
            tiny_fuzz::expr::run(template.as_bytes());
        }
    }
    // Without such a call the ways of rendering are still compared (and agree).
    tiny_fuzz::expr::run(br#"{"u": "{{$.user}}", "n": "{{$.user.name}}", "a": "{{$.a + 1}}"}"#);
}

/// A `nats` input: flags, subject, header block and payload.
fn nats_frame(flags: u8, headers: &str, payload: &str) -> Vec<u8> {
    let mut out = vec![flags];
    out.extend_from_slice(b"tinymodule.fuzz.msg\0NATS/1.0\r\n");
    out.extend_from_slice(headers.as_bytes());
    out.extend_from_slice(b"\r\n\0");
    out.extend_from_slice(payload.as_bytes());
    out
}

#[test]
fn nats_frames_reach_the_engine_through_both_receivers() {
    use tiny_fuzz::nats::deliver;
    for flags in [0, 2, 2 | 8] {
        let reply = deliver(&nats_frame(
            flags,
            "x-to: fuzz-relay:input\r\nx-from: signal\r\n",
            r#"{"a":1}"#,
        ));
        let value = reply
            .as_ref()
            .ok()
            .and_then(|r| r.as_ref().ok())
            .and_then(|r| r.as_value().cloned());
        assert_eq!(value, Some(serde_json::json!({"a": 1})), "flags {flags}: {reply:?}");
    }
    // A value continued on the next line is joined as the client joins it: as it is.
    let port = match deliver(&nats_frame(0, "x-to: fuzz-relay:\r\n input\r\n", "2")) {
        Ok(Err(e)) => e.to_string(),
        other => panic!("{other:?}"),
    };
    assert!(port.contains("no input port ` input`"), "{port}");
}

#[test]
fn nats_refusals_are_typed() {
    use tiny_fuzz::nats::{FrameError, deliver};
    let code = |data: Vec<u8>| match deliver(&data) {
        Ok(Err(e)) => e.code().map(str::to_owned),
        other => panic!("not a refusal: {other:?}"),
    };
    let invalid = Some(tiny_sdk::error::code::INVALID_MESSAGE.to_owned());
    assert_eq!(code(nats_frame(0, "x-from: signal\r\n", "1")), invalid);
    assert_eq!(
        code(nats_frame(
            0,
            "x-to: fuzz-answer:input\r\nx-message-depth: many\r\n",
            "1"
        )),
        invalid
    );
    assert_eq!(code(nats_frame(0, "x-to: fuzz-answer:input\r\n", "{")), invalid);
    assert_eq!(
        code(nats_frame(
            0,
            "x-to: fuzz-answer:input\r\nx-message-depth: 300\r\n",
            "1"
        )),
        Some(tiny_sdk::error::code::CYCLE.to_owned())
    );
    // What the client itself refuses never reaches the receiver.
    let frame_error = |data: Vec<u8>| deliver(&data).err();
    assert_eq!(
        frame_error(nats_frame(0, "x-to: fuzz-answer:input\r\nx-from: a\rb\r\n", "1")),
        Some(FrameError::Value { line: 2 })
    );
    assert_eq!(
        frame_error(nats_frame(0, "no colon\r\n", "1")),
        Some(FrameError::NoColon { line: 1 })
    );
    assert_eq!(
        frame_error(nats_frame(0, "bad name: v\r\n", "1")),
        Some(FrameError::Name { line: 1 })
    );
    assert_eq!(
        frame_error(b"\0tinymodule.fuzz.msg\0HTTP/1.1\r\n\r\n\0".to_vec()),
        Some(FrameError::Version)
    );
    assert_eq!(frame_error(b"\0a b\0".to_vec()), Some(FrameError::Subject));
}

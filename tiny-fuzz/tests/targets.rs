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

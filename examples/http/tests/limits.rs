//! The limits the example http module sets where Go's sets none (issue 48), over
//! real loopback sockets: `http_server`'s connection cap and idle timeout, and
//! `http_request`'s address guard (no link-local or metadata address, directly or by a
//! redirect, unless the settings allow it). And the module's agent tools
//! (`http_auth_parse`, `http_request`) called as a platform agent calls them.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tiny_example_http::{client::FORBIDDEN_ADDRESS, client::HttpRequest, server::HttpServer};
use tiny_sdk::{flow::FlowBuilder, harness::Harness, prelude::*};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpStream,
};
use tokio_util::sync::CancellationToken;

/// Generous: only a broken feature waits this long.
const WAIT: Duration = Duration::from_secs(30);

/// Answers after a pause longer than the idle timeout of the test that uses it.
#[derive(Component, Default, Debug)]
#[component(name = "late")]
struct Late {
    input: Input<Value>,
    out: Output<Value>,
}

#[handlers]
impl Late {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Value) -> Result<Reply> {
        // The component's behaviour under test (a slow flow), not a wait for a fact.
        tokio::time::sleep(Duration::from_millis(2500)).await;
        self.out.emit(ctx, msg).await
    }
}

async fn harness(flow: tiny_sdk::flow::Flow) -> Harness {
    Harness::builder()
        .register::<Late>()
        .register::<HttpServer>()
        .register::<HttpRequest>()
        .register::<tiny_example_http::auth_parse::HttpAuthParse>()
        .flow(flow)
        .build()
        .await
        .expect("the flow loads")
}

/// Starts `node`'s server and returns its `host:port` on loopback (read from its
/// `_control` view once it shows one).
async fn start(h: &Harness, node: &str) -> String {
    h.send(&format!("{node}:start"), json!({})).await.expect("started");
    tiny_testenv::eventually("the server listens", Duration::from_secs(10), || async {
        let report = h.report(node)?;
        let view = report
            .ports
            .iter()
            .find(|p| p.name == "_control")?
            .configuration
            .clone();
        let addr = view["listenAddr"][0].as_str()?;
        Some(addr.trim_start_matches("http://").replace("localhost", "127.0.0.1"))
    })
    .await
}

/// A server node answering every request with `ok`.
fn server(settings: Value) -> tiny_sdk::flow::Flow {
    FlowBuilder::new()
        .node("srv", "http_server")
        .settings(settings)
        .edge("srv:request", "srv:response", json!({"statusCode": 200, "body": "ok"}))
        .build()
}

/// One keep-alive request on `conn`; the response's head and body, read by its
/// `Content-Length`.
async fn request(conn: &mut TcpStream) -> String {
    conn.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .expect("writes");
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n = tokio::time::timeout(WAIT, conn.read(&mut buf))
            .await
            .expect("an answer")
            .expect("reads");
        assert!(n > 0, "closed before answering: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                return text;
            }
        }
    }
}

/// Everything `conn` receives until the server closes it.
async fn until_closed(conn: &mut TcpStream) -> String {
    let mut got = Vec::new();
    tokio::time::timeout(WAIT, conn.read_to_end(&mut got))
        .await
        .expect("the server closes the connection")
        .expect("reads");
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_past_the_cap_is_answered_503_and_closed() {
    let h = harness(server(json!({"maxConnections": 2}))).await;
    let addr = start(&h, "srv").await;
    // Two connections, each served once and kept open: the cap is taken.
    let mut first = TcpStream::connect(&addr).await.expect("connects");
    let mut second = TcpStream::connect(&addr).await.expect("connects");
    for conn in [&mut first, &mut second] {
        assert!(request(conn).await.starts_with("HTTP/1.1 200"));
    }
    // The third is told so and closed, before it says anything.
    let mut third = TcpStream::connect(&addr).await.expect("connects");
    let refused = until_closed(&mut third).await;
    assert!(refused.starts_with("HTTP/1.1 503 Service Unavailable"), "{refused:?}");
    // One closed, a new connection is served again (once the server has seen it go).
    drop(first);
    tiny_testenv::eventually("a freed slot serves", WAIT, || async {
        let mut again = TcpStream::connect(&addr).await.ok()?;
        again.write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n").await.ok()?;
        let mut buf = [0u8; 64];
        let n = again.read(&mut buf).await.ok()?;
        String::from_utf8_lossy(&buf[..n])
            .starts_with("HTTP/1.1 200")
            .then_some(())
    })
    .await;
    // The one still open was never disturbed.
    assert!(request(&mut second).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_after_the_idle_timeout() {
    let h = harness(server(json!({"idleTimeout": 1}))).await;
    let addr = start(&h, "srv").await;
    let mut conn = TcpStream::connect(&addr).await.expect("connects");
    assert!(request(&mut conn).await.starts_with("HTTP/1.1 200"));
    let asked = Instant::now();
    // Kept alive by HTTP/1.1, then idle: the server closes it, saying nothing more.
    assert_eq!(until_closed(&mut conn).await, "");
    // Not at once: the idle time (1 s) passed first.
    assert!(asked.elapsed() >= Duration::from_millis(900), "{:?}", asked.elapsed());
}

/// A kept-alive connection ends with the server: a message on `stop` closes it, long
/// before its idle timeout would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_closes_a_kept_alive_connection() {
    let h = harness(server(json!({"enableStopPort": true, "idleTimeout": 3600}))).await;
    let addr = start(&h, "srv").await;
    let mut conn = TcpStream::connect(&addr).await.expect("connects");
    assert!(request(&mut conn).await.starts_with("HTTP/1.1 200"));
    h.send("srv:stop", json!({})).await.expect("stopped");
    assert_eq!(until_closed(&mut conn).await, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_under_way_is_not_idle() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .settings(json!({"idleTimeout": 1}))
        .edge("srv:request", "late:input", json!("{{$}}"))
        .node("late", "late")
        .edge("late:out", "srv:response", json!({"statusCode": 200, "body": "late"}))
        .build();
    let h = harness(flow).await;
    let addr = start(&h, "srv").await;
    let mut conn = TcpStream::connect(&addr).await.expect("connects");
    // The flow takes 2.5 s, past the 1 s idle timeout: answered all the same.
    let answer = request(&mut conn).await;
    assert!(
        answer.starts_with("HTTP/1.1 200") && answer.ends_with("late"),
        "{answer:?}"
    );
    // And the connection was not marked for closing meanwhile: it takes the next one.
    let again = request(&mut conn).await;
    assert!(
        again.starts_with("HTTP/1.1 200") && again.ends_with("late"),
        "{again:?}"
    );
}

#[test]
fn the_limits_have_defaults_in_the_settings_the_editor_shows() {
    let settings = serde_json::to_value(tiny_example_http::server::ServerSettings::default()).expect("JSON");
    assert_eq!(settings["maxConnections"], 1024);
    assert_eq!(settings["idleTimeout"], 120);
    // Go's settings, without the keys, get them too.
    let go: tiny_example_http::server::ServerSettings =
        serde_json::from_value(json!({"enableStatusPort": true})).expect("decodes");
    assert_eq!((go.max_connections, go.idle_timeout), (1024, 120));
}

/// `http_request`'s failure, with its error port off: the code and the text.
async fn refused(h: &Harness, request: Value) -> (Option<String>, String) {
    let e = h.send("cli:request", request).await.expect_err("refused");
    (e.code().map(str::to_owned), e.message().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_request_refuses_metadata_and_link_local_addresses_directly_and_by_redirect() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .edge(
            "srv:request",
            "srv:response",
            json!({"statusCode": 302, "headers": [{"key": "Location", "value": "{{$.requestParams.to[0] ?? ''}}"}]}),
        )
        .node("cli", "http_request")
        .node("open", "http_request")
        .settings(json!({"allowInternalAddresses": true}))
        .build();
    let h = harness(flow).await;
    let addr = start(&h, "srv").await;

    // Directly: the metadata address, and a link-local one over IPv6.
    for url in ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]:8080/"] {
        let (code, text) = refused(&h, json!({"url": url, "timeout": 5})).await;
        assert_eq!(code.as_deref(), Some(FORBIDDEN_ADDRESS), "{url}: {text}");
        assert!(text.contains("allowInternalAddresses"), "{text}");
    }

    // By a redirect from a server the flow may call (loopback): refused at the hop.
    let url = format!("http://{addr}/go?to=http://169.254.169.254/latest/meta-data/");
    let (code, text) = refused(&h, json!({"url": url, "timeout": 5})).await;
    assert_eq!(code.as_deref(), Some(FORBIDDEN_ADDRESS), "{text}");
    assert!(text.contains("169.254.169.254"), "{text}");
    assert_eq!(h.emitted("srv:request").len(), 1, "the first hop was made");

    // Allowed by the settings, the request is made: it fails only as the network
    // makes it fail (nothing answers there), not by the guard.
    let e = h
        .send("open:request", json!({"url": "http://169.254.169.254/", "timeout": 1}))
        .await
        .expect_err("nothing answers there");
    assert_ne!(e.code(), Some(FORBIDDEN_ADDRESS), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_modules_tools_answer_an_agent_from_a_fresh_instance() {
    let h = harness(server(json!({}))).await;
    let addr = start(&h, "srv").await;
    let engine = h.engine();
    let call = |component: &'static str, payload: Value| async move {
        let bytes = serde_json::to_vec(&payload).expect("JSON");
        engine.call_tool(component, &bytes, CancellationToken::new()).await
    };
    let parsed = call(
        "http_auth_parse",
        json!({"headers": [{"key": "Authorization", "value": "Basic dXNlcjpwYXNz"}]}),
    )
    .await
    .expect("answers")
    .into_value();
    let parsed = parsed.expect("a value");
    assert_eq!(
        (parsed["found"].clone(), parsed["user"].clone()),
        (json!(true), json!("user"))
    );
    let fetched = call("http_request", json!({"url": format!("http://{addr}/"), "timeout": 5}))
        .await
        .expect("answers")
        .into_value()
        .expect("a value");
    assert_eq!(fetched["response"]["body"], "ok", "{fetched}");
    // The guard holds for an agent too: a fresh instance has the default settings.
    let e = call("http_request", json!({"url": "http://169.254.169.254/", "timeout": 5}))
        .await
        .expect_err("refused");
    assert_eq!(e.code(), Some(FORBIDDEN_ADDRESS));
    // Not a tool: the server.
    let e = call("http_server", json!({})).await.expect_err("not a tool");
    assert_eq!(e.code(), Some(tiny_sdk::error::code::NOT_AGENT_TOOL));
}

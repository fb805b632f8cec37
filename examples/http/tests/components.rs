//! `http_server` and `http_request` in-process (no cluster), with real HTTP on
//! loopback sockets.

use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Request, StatusCode};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::{Value, json};
use tiny_example_http::{client::HttpRequest, server::HttpServer};
use tiny_sdk::{flow::FlowBuilder, harness::Harness, prelude::*};

/// A node that never answers in time, and says when it was abandoned.
#[derive(Component, Default, Debug)]
#[component(name = "slow")]
struct Slow {
    input: Input<Value>,
}

static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// Counts a handler that ended without finishing (dropped or cancelled).
struct Unfinished;

impl Drop for Unfinished {
    fn drop(&mut self) {
        ABANDONED.fetch_add(1, Ordering::SeqCst);
    }
}

#[handlers]
impl Slow {
    async fn on_input(&self, ctx: &Ctx<Self>, _: Value) -> Result<()> {
        let unfinished = Unfinished;
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(30)) => std::mem::forget(unfinished),
            () = ctx.cancelled() => {}
        }
        Ok(())
    }
}

/// Answers as a route would: status, type, a header and the body, from the request.
fn echo_answer() -> Value {
    json!({
        "statusCode": 201,
        "contentType": "text/plain",
        "headers": [{"key": "X-Path", "value": "{{$.path}}"}, {"key": "x-query", "value": "{{$.requestParams.q[0] ?? ''}}"}],
        "body": "{{$.method + ' ' + $.body}}"
    })
}

async fn harness(flow: tiny_sdk::flow::Flow) -> Harness {
    Harness::builder()
        .register::<HttpServer>()
        .register::<HttpRequest>()
        .register::<Slow>()
        .register::<tiny_testkit::components::Flaky>()
        .flow(flow)
        .build()
        .await
        .expect("the flow loads")
}

/// Starts `node`'s server and returns its base URL (read from its `_control` view).
async fn start(h: &Harness, node: &str, start: Value) -> String {
    h.send(&format!("{node}:start"), start).await.expect("started");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let report = h.report(node).expect("report");
        let view = report
            .ports
            .iter()
            .find(|p| p.name == "_control")
            .map(|p| p.configuration.clone());
        if let Some(addr) = view.as_ref().and_then(|v| v["listenAddr"][0].as_str()) {
            assert_eq!(view.as_ref().map(|v| v["status"].clone()), Some(json!("Running")));
            return addr.replace("localhost", "127.0.0.1");
        }
        assert!(Instant::now() < deadline, "the server did not start: {view:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The server's `_control` view.
fn view(h: &Harness, node: &str) -> Value {
    h.report(node)
        .expect("report")
        .ports
        .into_iter()
        .find(|p| p.name == "_control")
        .map(|p| p.configuration)
        .expect("a _control port")
}

fn client() -> Client<HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

async fn call(url: &str, method: &str, body: &str) -> (StatusCode, hyper::HeaderMap, String) {
    let req = Request::builder()
        .method(method)
        .uri(url)
        .header("X-Custom", "yes")
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request");
    let resp = client().request(req).await.expect("an answer");
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    (parts.status, parts.headers, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_travel_the_flow_and_its_answer_is_the_response() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .edge("srv:request", "srv:response", echo_answer())
        .build();
    let h = harness(flow).await;
    let base = start(&h, "srv", json!({"context": {"who": "test"}, "writeTimeout": 5})).await;
    let (status, headers, body) = call(&format!("{base}/a/b%20c?q=1&q=2"), "POST", "hello").await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(body, "POST hello");
    assert_eq!(headers["content-type"], "text/plain");
    assert_eq!(headers["x-path"], "/a/b c");
    assert_eq!(headers["x-query"], "1");
    // What the flow saw: Go's request fields.
    let seen = h.emitted("srv:request");
    let r = &seen[0];
    assert_eq!(r["context"], json!({"who": "test"}));
    assert_eq!(r["pathSegments"], json!(["a", "b c"]));
    assert_eq!(r["requestURI"], "/a/b%20c?q=1&q=2");
    assert_eq!(r["requestParams"], json!({"q": ["1", "2"]}));
    assert_eq!(r["method"], "POST");
    assert_eq!(r["realIP"], "127.0.0.1");
    assert_eq!(r["scheme"], "http");
    assert!(r["host"].as_str().is_some_and(|host| host.starts_with("127.0.0.1:")));
    let headers = r["headers"].as_array().expect("headers");
    assert!(
        headers.contains(&json!({"key": "X-Custom", "value": "yes"})),
        "{headers:?}"
    );
    assert!(
        !headers.iter().any(|h| h["key"] == "Host"),
        "the host has its own field"
    );
}

/// A node that takes the whole request as Go's `Request` and answers from its fields.
#[derive(Component, Default, Debug)]
#[component(name = "route")]
struct Route {
    input: Input<tiny_example_http::server::Request>,
}

#[handlers]
impl Route {
    async fn on_input(&self, _: &Ctx<Self>, r: tiny_example_http::server::Request) -> Result<Reply> {
        let custom = r.headers.iter().find(|h| h.key == "X-Custom").map(|h| h.value.clone());
        let body = format!(
            "{} {:?} {:?} {:?} {} {}",
            r.method,
            r.path_segments,
            r.request_params.get("q"),
            custom,
            r.real_ip,
            r.body
        );
        Ok(Reply::msg(tiny_sdk::Msg::new(tiny_example_http::server::Response {
            body,
            ..Default::default()
        })))
    }
}

/// A node whose input is the whole `Request` (an edge without a mapping) gets every
/// field the server makes, though the server makes them only when read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_taking_the_whole_request_gets_every_field() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .node("route", "route")
        .edge("srv:request", "route:input", json!("{{$}}"))
        .build();
    let h = Harness::builder()
        .register::<HttpServer>()
        .register::<Route>()
        .flow(flow)
        .build()
        .await
        .expect("the flow loads");
    let base = start(&h, "srv", json!({"writeTimeout": 5})).await;
    let (status, _, body) = call(&format!("{base}/a/b%20c?q=1&q=2"), "PUT", "hi").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, r#"PUT ["a", "b c"] Some(["1", "2"]) Some("yes") 127.0.0.1 hi"#);
}

/// What a proxy in front says of the client wins over the socket's peer, as in Go:
/// the first `X-Forwarded-For`, else `X-Real-Ip`; the scheme from `X-Forwarded-Proto`,
/// `X-Forwarded-Protocol`, `X-Forwarded-Ssl: on` or `X-Url-Scheme`, in that order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxys_headers_name_the_client_and_scheme() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .edge("srv:request", "srv:response", echo_answer())
        .build();
    let h = harness(flow).await;
    let base = start(&h, "srv", json!({"writeTimeout": 5})).await;
    // (request headers, realIP, scheme)
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: [Case<'_>; 5] = [
        (
            &[
                ("X-Forwarded-For", "203.0.113.7, 10.0.0.1"),
                ("X-Real-Ip", "198.51.100.2"),
                ("X-Forwarded-Proto", "https"),
            ],
            "203.0.113.7",
            "https",
        ),
        (
            &[("X-Real-Ip", "198.51.100.2"), ("X-Forwarded-Protocol", "https")],
            "198.51.100.2",
            "https",
        ),
        (
            &[("X-Forwarded-Ssl", "on"), ("X-Url-Scheme", "ftp")],
            "127.0.0.1",
            "https",
        ),
        (
            &[("X-Forwarded-Ssl", "off"), ("X-Url-Scheme", "wss")],
            "127.0.0.1",
            "wss",
        ),
        (&[], "127.0.0.1", "http"),
    ];
    for (i, (headers, ip, scheme)) in cases.iter().enumerate() {
        let mut req = Request::builder().method("POST").uri(format!("{base}/p"));
        for (k, v) in *headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Full::new(Bytes::from("x"))).expect("request");
        let resp = client().request(req).await.expect("an answer");
        assert_eq!(resp.status(), StatusCode::CREATED);
        let seen = h.emitted("srv:request");
        let r = &seen[i];
        assert_eq!(r["realIP"], *ip, "case {i}: {headers:?}");
        assert_eq!(r["scheme"], *scheme, "case {i}: {headers:?}");
        assert!(r["host"].as_str().is_some_and(|host| host.starts_with("127.0.0.1:")));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_requests_each_get_their_own_answer() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .edge("srv:request", "srv:response", echo_answer())
        .build();
    let h = harness(flow).await;
    let base = start(&h, "srv", json!({"writeTimeout": 20})).await;
    let calls = (0..200).map(|i| {
        let base = base.clone();
        async move { (i, call(&format!("{base}/n"), "PUT", &format!("body-{i}")).await) }
    });
    for (i, (status, _, body)) in futures::future::join_all(calls).await {
        assert_eq!(status, StatusCode::CREATED);
        assert_eq!(body, format!("PUT body-{i}"));
    }
}

// Paused time: the write timeout is told from the server's default (10 s) and the slow
// node (30 s) by the order its timers fire in, not by a wall-clock ceiling a loaded
// machine can pass.
#[tokio::test(start_paused = true)]
async fn a_flow_that_does_not_answer_in_time_gets_504_and_is_abandoned() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .node("slow", "slow")
        .edge("srv:request", "slow:input", json!("{{$}}"))
        .build();
    let h = harness(flow).await;
    let base = start(&h, "srv", json!({"writeTimeout": 1})).await;
    let before = ABANDONED.load(Ordering::SeqCst);
    let started = tokio::time::Instant::now();
    let (status, headers, body) = call(&format!("{base}/slow"), "GET", "").await;
    assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body, r#"{"message":"Gateway Timeout"}"#);
    // The configured 1 s, not the default 10 s: the first timer after the request.
    let waited = started.elapsed();
    assert!(
        (Duration::from_secs(1)..Duration::from_secs(2)).contains(&waited),
        "{waited:?}"
    );
    // Nothing stays pending: the slow node's handler is stopped. Probed, not slept on:
    // a handler left running ends at 30 s without counting, well after this limit.
    tiny_testkit::eventually(
        "the slow node's handler to be abandoned",
        Duration::from_secs(20),
        || async { (ABANDONED.load(Ordering::SeqCst) > before).then_some(()) },
    )
    .await;
    assert_eq!(ABANDONED.load(Ordering::SeqCst), before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_is_500_and_a_body_over_the_limit_is_413() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .settings(json!({"maxBodySize": 1}))
        .build();
    let h = harness(flow).await;
    let base = start(&h, "srv", json!({})).await;
    let (status, _, body) = call(&format!("{base}/"), "GET", "").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(body, r#"{"message":"Internal Server Error"}"#);
    let big = "x".repeat(1024 * 1024 + 1);
    let (status, _, _) = call(&format!("{base}/"), "POST", &big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_shows_no_listen_address_as_go() {
    let h = harness(FlowBuilder::new().node("srv", "http_server").build()).await;
    assert_eq!(view(&h, "srv"), json!({"status": "Not running", "listenAddr": null}));
    // The schema still says a list of strings, as Go's `[]string`.
    let mut schema = h
        .report("srv")
        .expect("report")
        .ports
        .into_iter()
        .find(|p| p.name == "_control")
        .expect("_control")
        .schema;
    let addr = tiny_sdk::schema::at_path_mut(&mut schema, "$.listenAddr").expect("listenAddr");
    assert_eq!(addr["type"], "array", "{addr}");
    assert_eq!(addr["items"]["$ref"], "#/$defs/String", "{addr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_ran_under_go_listens_again_on_its_port() {
    // A port Go's server would have recorded. Named before anything listens, so not
    // one bound and released (another process's port-0 bind could take it in between):
    // one below the ephemeral range, which only a process naming this very port takes.
    // Should one hold it (another test drawing the same port), the server says so in
    // its view and the test draws another.
    let mut tries = 0;
    let (_harness, free, shown) = loop {
        tries += 1;
        let free = tiny_testenv::random_port().expect("a port");
        let mut flow = FlowBuilder::new()
            .node("srv", "http_server")
            .edge(
                "srv:request",
                "srv:response",
                json!({"statusCode": 200, "contentType": "text/plain", "body": "{{$.context.from}}"}),
            )
            .build();
        // What Go's http_server leaves on a node it ran: the start message as JSON text,
        // the port in decimal.
        flow.nodes[0].metadata = [
            (
                "http-start".to_owned(),
                r#"{"context":{"from":"go"},"autoHostName":true,"readTimeout":60,"writeTimeout":10}"#.to_owned(),
            ),
            ("port".to_owned(), free.to_string()),
        ]
        .into_iter()
        .collect();
        let h = harness(flow).await;
        let shown = tiny_testkit::eventually("the server to listen or give up", Duration::from_secs(60), || {
            let v = view(&h, "srv");
            let given_up = v["status"].as_str().is_some_and(|s| s.starts_with("Not running: "));
            async move { (!v["listenAddr"].is_null() || given_up).then_some(v) }
        })
        .await;
        if !shown["listenAddr"].is_null() {
            break (h, free, shown);
        }
        assert!(tries < 3, "port after port taken: {shown}");
    };
    assert_eq!(shown["status"], "Running");
    assert_eq!(shown["listenAddr"], json!([format!("http://localhost:{free}")]));
    let (status, _, body) = call(&format!("http://127.0.0.1:{free}/"), "GET", "").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "go"), "the start's context");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_closes_the_listener_and_start_reopens_it_on_the_same_port() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .settings(json!({"enableStopPort": true, "enableStatusPort": true}))
        .edge("srv:request", "srv:response", echo_answer())
        .build();
    let h = harness(flow).await;
    let ports: Vec<String> = h
        .report("srv")
        .expect("report")
        .ports
        .iter()
        .map(|p| p.name.clone())
        .collect();
    assert!(
        ports.contains(&"stop".to_owned()) && ports.contains(&"status".to_owned()),
        "{ports:?}"
    );
    let base = start(&h, "srv", json!({})).await;
    assert_eq!(call(&format!("{base}/x"), "GET", "").await.0, StatusCode::CREATED);
    h.send("srv:stop", json!({})).await.expect("stopped");
    // Stop cancels the server's work; its listener closes as that task ends.
    tiny_testkit::eventually("the listener to close", Duration::from_secs(10), || async {
        let refused = client().get(format!("{base}/x").parse().expect("uri")).await;
        refused.is_err().then_some(())
    })
    .await;
    assert_eq!(view(&h, "srv"), json!({"status": "Not running", "listenAddr": null}));
    let again = start(&h, "srv", json!({})).await;
    assert_eq!(again, base, "the same port");
    assert_eq!(call(&format!("{base}/x"), "GET", "").await.0, StatusCode::CREATED);
    // The status port told both.
    let status: Vec<bool> = h
        .emitted("srv:status")
        .iter()
        .map(|s| s["isRunning"].as_bool().unwrap_or_default())
        .collect();
    assert_eq!(status, [true, false, true]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_request_calls_the_server_and_reports_failures_by_status() {
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .edge(
            "srv:request",
            "srv:response",
            json!({"statusCode": "{{$.path == '/fail' ? 503 : ($.path == '/missing' ? 404 : 200)}}", "contentType": "application/json", "body": "{{$.body}}"}),
        )
        .node("cli", "http_request")
        .settings(json!({"enableErrorPort": true}))
        .build();
    let h = harness(flow).await;
    let base = start(&h, "srv", json!({})).await;
    let request = |path: &str| {
        json!({"context": {"path": path}, "method": "POST", "url": format!("{base}{path}"), "timeout": 5,
               "body": "{\"n\":1}", "headers": [{"key": "x-trace", "value": "t1"}]})
    };
    h.send("cli:request", request("/ok")).await.expect("sent");
    let ok = h.emitted("cli:response");
    assert_eq!(ok.len(), 1, "{ok:?}");
    assert_eq!(ok[0]["context"], json!({"path": "/ok"}));
    assert_eq!(ok[0]["response"]["statusCode"], 200);
    assert_eq!(ok[0]["response"]["status"], "200 OK");
    assert_eq!(ok[0]["response"]["body"], "{\"n\":1}");
    // What the server saw of the client's headers.
    let seen = h.emitted("srv:request");
    let headers = seen[0]["headers"].as_array().expect("headers");
    assert!(
        headers.contains(&json!({"key": "X-Trace", "value": "t1"})),
        "{headers:?}"
    );
    assert!(
        headers.contains(&json!({"key": "Content-Type", "value": "application/json"})),
        "{headers:?}"
    );

    h.send("cli:request", request("/missing")).await.expect("sent");
    h.send("cli:request", request("/fail")).await.expect("sent");
    let errors = h.emitted("cli:error");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(
        (
            errors[0]["response"]["statusCode"].clone(),
            errors[0]["retryable"].clone()
        ),
        (json!(404), json!(false))
    );
    assert_eq!(
        (
            errors[1]["response"]["statusCode"].clone(),
            errors[1]["retryable"].clone()
        ),
        (json!(503), json!(true))
    );
    // A connection that fails is retryable too.
    h.send(
        "cli:request",
        json!({"method": "GET", "url": "http://127.0.0.1:1/", "timeout": 2}),
    )
    .await
    .expect("sent");
    assert_eq!(h.emitted("cli:error")[2]["retryable"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_request_without_its_error_port_fails_the_message() {
    let flow = FlowBuilder::new().node("cli", "http_request").build();
    let h = harness(flow).await;
    let ports: Vec<String> = h
        .report("cli")
        .expect("report")
        .ports
        .iter()
        .map(|p| p.name.clone())
        .collect();
    assert!(!ports.contains(&"error".to_owned()), "{ports:?}");
    let err = h
        .send(
            "cli:request",
            json!({"method": "GET", "url": "not a url", "timeout": 2}),
        )
        .await
        .expect_err("fails");
    assert_eq!(err.kind(), tiny_sdk::ErrorKind::Permanent, "{err}");
    assert!(err.to_string().contains("invalid URL"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_flow_answers_with_a_status_that_fits_its_code() {
    for (code, want) in [
        ("MESSAGE_TOO_LARGE", StatusCode::PAYLOAD_TOO_LARGE),
        ("TIMEOUT", StatusCode::GATEWAY_TIMEOUT),
        ("UNREACHABLE", StatusCode::BAD_GATEWAY),
        ("MODULE_UNKNOWN", StatusCode::BAD_GATEWAY),
        ("DECLINED", StatusCode::INTERNAL_SERVER_ERROR),
    ] {
        let flow = FlowBuilder::new()
            .node("srv", "http_server")
            .node("fail", "flaky")
            .settings(json!({"failures": 1000, "permanent": true, "code": code}))
            .edge("srv:request", "fail:input", json!("{{$}}"))
            .build();
        let h = harness(flow).await;
        let base = start(&h, "srv", json!({"writeTimeout": 5})).await;
        let (status, headers, body) = call(&format!("{base}/x"), "GET", "").await;
        assert_eq!(status, want, "{code}");
        assert_eq!(headers["content-type"], "application/json");
        let body: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(body["code"], code, "{code}");
        assert_eq!(body["message"], want.canonical_reason().unwrap_or_default());
        assert!(!body.to_string().contains("attempt"), "no internals: {body}");
    }
}

/// Redirects as Go's client follows them: 301/302/303 go on as a GET without the body,
/// 307 repeats the request; credentials go only to the first host (or its subdomains),
/// and each redirected request names the page that sent it in `Referer`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_request_follows_redirects_as_go_and_keeps_credentials_on_their_host() {
    let answer = json!({
        "statusCode": "{{$.path == '/302' ? 302 : ($.path == '/307' ? 307 : 200)}}",
        "headers": [{"key": "Location", "value": "{{$.requestParams.to[0] ?? ''}}"}],
        "body": "{{$.method + ' ' + $.body}}"
    });
    let flow = FlowBuilder::new()
        .node("first", "http_server")
        .edge("first:request", "first:response", answer.clone())
        .node("other", "http_server")
        .edge("other:request", "other:response", answer)
        .node("cli", "http_request")
        .build();
    let h = harness(flow).await;
    let first = start(&h, "first", json!({})).await;
    // The same server under another name is another host.
    let other = start(&h, "other", json!({})).await.replace("127.0.0.1", "localhost");
    let request = |method: &str, url: String| {
        json!({"method": method, "url": url, "timeout": 5, "body": "{\"n\":1}", "bearerToken": "s3cret",
               "headers": [{"key": "Cookie", "value": "id=1"}, {"key": "X-Trace", "value": "t1"}]})
    };
    let header = |seen: &Value, key: &str| {
        seen["headers"]
            .as_array()
            .and_then(|hs| hs.iter().find(|h| h["key"] == key))
            .map(|h| h["value"].clone())
    };

    // 302 to another host: a GET, no body, no credentials; the rest of the headers stay.
    let to_other = format!("{first}/302?to={other}/landing");
    h.send("cli:request", request("PUT", to_other.clone()))
        .await
        .expect("sent");
    assert_eq!(h.emitted("cli:response")[0]["response"]["body"], "GET ");
    let seen = h.emitted("other:request");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["method"], "GET");
    assert_eq!(header(&seen[0], "Authorization"), None, "{seen:?}");
    assert_eq!(header(&seen[0], "Cookie"), None, "{seen:?}");
    assert_eq!(header(&seen[0], "X-Trace"), Some(json!("t1")));
    assert_eq!(header(&seen[0], "Referer"), Some(json!(to_other)));
    assert_eq!(header(&seen[0], "User-Agent"), Some(json!("Go-http-client/1.1")));

    // 307 on the same host: the request as it was, credentials included.
    let same = format!("{first}/307?to={first}/landing");
    h.send("cli:request", request("POST", same)).await.expect("sent");
    assert_eq!(h.emitted("cli:response")[1]["response"]["body"], "POST {\"n\":1}");
    let seen = h.emitted("first:request");
    let landing = seen.last().expect("the landing request");
    assert_eq!(landing["path"], "/landing");
    assert_eq!(header(landing, "Authorization"), Some(json!("Bearer s3cret")));
    assert_eq!(header(landing, "Cookie"), Some(json!("id=1")));

    // Once dropped, credentials stay dropped, even back on the first host.
    let back = format!("{other}/302?to={first}/landing");
    let round = format!("{first}/307?to={}", urlencode(&back));
    h.send("cli:request", request("POST", round)).await.expect("sent");
    let landing = h.emitted("first:request").last().cloned().expect("the landing request");
    assert_eq!(
        (landing["path"].clone(), landing["method"].clone()),
        (json!("/landing"), json!("GET"))
    );
    assert_eq!(header(&landing, "Authorization"), None, "{landing:?}");
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// `readTimeout` covers the body, as Go's `ReadTimeout` does: a client that stalls
/// half-way through its body is answered 408 rather than held forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stalls_past_the_read_timeout_is_refused() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .edge("srv:request", "srv:response", json!({"body": "{{$.body}}"}))
        .build();
    let h = harness(flow).await;
    let base = start(&h, "srv", json!({"readTimeout": 1})).await;
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connects");
    stream
        .write_all(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        .await
        .expect("writes");
    let started = Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "answered within the read timeout, not held");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert!(h.emitted("srv:request").is_empty(), "the flow never saw it");

    // A whole body within the limit goes through.
    let (status, _, body) = call(&format!("{base}/y"), "POST", "whole").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "whole"));
}

/// As Go's: `tlsCert` and `tlsKey` (PEM, or base64 of PEM) make the server speak HTTPS,
/// and its requests say `scheme: https`; a certificate that does not read fails the
/// start, naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_with_a_certificate_serves_https() {
    use base64::Engine as _;
    const CERT: &str = include_str!("fixtures/localhost.crt");
    const KEY: &str = include_str!("fixtures/localhost.key");
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .edge(
            "srv:request",
            "srv:response",
            json!({"body": "{{$.scheme + ' ' + $.body}}"}),
        )
        .build();
    let h = harness(flow).await;
    let bad = h
        .send("srv:start", json!({"tlsCert": "not a certificate", "tlsKey": KEY}))
        .await
        .expect_err("refused");
    assert!(bad.to_string().contains("tlsCert"), "{bad}");
    // The key as base64 of its PEM, as an edge configuration may carry it.
    let key = base64::engine::general_purpose::STANDARD.encode(KEY);
    let base = start(&h, "srv", json!({"tlsCert": CERT, "tlsKey": key})).await;
    assert!(base.starts_with("https://"), "{base}");
    // A client that trusts the certificate (and only it).
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(CERT.as_bytes()) {
        roots.add(cert.expect("a certificate")).expect("a root");
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocols")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_http1()
        .build();
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(https);
    let url = base.replace("127.0.0.1", "localhost");
    let req = Request::builder()
        .method("POST")
        .uri(format!("{url}/tls"))
        .body(Full::new(Bytes::from_static(b"hello")))
        .expect("request");
    let resp = client.request(req).await.expect("an HTTPS answer");
    assert_eq!(resp.status(), StatusCode::OK);
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(&body[..], b"https hello");
    // Plain HTTP to it is not served.
    let plain = tokio::time::timeout(
        Duration::from_secs(5),
        client_plain().request(
            Request::builder()
                .uri(format!("{}/tls", url.replace("https://", "http://")))
                .body(Full::new(Bytes::new()))
                .expect("request"),
        ),
    )
    .await
    .expect("answered or refused in time");
    assert!(plain.is_err() || plain.is_ok_and(|r| r.status() != StatusCode::OK));
}

fn client_plain() -> Client<HttpConnector, Full<Bytes>> {
    client()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_keeps_every_setting() {
    // Issue 47: the server a restart brings back from `http-start` took the default
    // settings (10 MiB, no status port), as the node's hooks run before its settings.
    let flow = FlowBuilder::new()
        .node("srv", "http_server")
        .settings(json!({"maxBodySize": 1, "enableStatusPort": true, "enableStopPort": true}))
        .edge("srv:request", "srv:response", echo_answer())
        .build();
    let h = harness(flow).await;
    let base = start(&h, "srv", json!({})).await;
    let big = "x".repeat(1024 * 1024 + 512 * 1024);
    assert_eq!(
        call(&format!("{base}/"), "POST", &big).await.0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    h.restart_node("srv").await.expect("restarted");
    let deadline = Instant::now() + Duration::from_secs(5);
    while view(&h, "srv")["listenAddr"].is_null() {
        assert!(Instant::now() < deadline, "it did not start again: {}", view(&h, "srv"));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // maxBodySize
    assert_eq!(
        call(&format!("{base}/"), "POST", &big).await.0,
        StatusCode::PAYLOAD_TOO_LARGE,
        "the limit holds after a restart"
    );
    assert_eq!(call(&format!("{base}/"), "POST", "small").await.0, StatusCode::CREATED);
    // enableStatusPort: the restarted server says it is up, as a started one does.
    let deadline = Instant::now() + Duration::from_secs(5);
    while h.emitted("srv:status").len() < 2 {
        assert!(
            Instant::now() < deadline,
            "no status after the restart: {:?}",
            h.emitted("srv:status")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(h.emitted("srv:status")[1]["isRunning"], true);
    // enableStopPort: the restarted node has its stop port, and it stops the server.
    h.send("srv:stop", json!({})).await.expect("stopped");
    tiny_testkit::eventually("the listener to close", Duration::from_secs(10), || async {
        let refused = client().get(format!("{base}/").parse().expect("uri")).await;
        refused.is_err().then_some(())
    })
    .await;
}

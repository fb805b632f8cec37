//! `promql_query` against a real Prometheus (Debian's `prometheus` package, unpacked
//! into the per-user cache by `tools/prometheus/install.sh`, or the binary
//! `TINY_PROMETHEUS` names), scraping itself; `logql_query` against a small
//! server of this test that speaks Loki's documented `query_range` API (no Grafana
//! Loki is packaged in Debian or on PyPI; Debian's `loki` is another program).

use std::{
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tiny_example_http::{
    logql::{LogqlQuery, parse as parse_loki},
    promql::{PromqlQuery, parse as parse_prom},
};
use tiny_sdk::{
    flow::FlowBuilder,
    harness::{Harness, Relay},
};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A Prometheus on loopback, scraping itself every second; killed on drop.
struct Prometheus {
    child: Child,
    url: String,
    _dir: tempdir::Dir,
}

mod tempdir {
    /// A directory removed on drop.
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Debian's Prometheus, unpacked into the per-user cache on first use by
/// `tools/prometheus/install.sh` (or the system's, where the package is installed).
fn installed_prometheus() -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tools/prometheus/install.sh");
    let out = Command::new("bash")
        .arg(script)
        .stderr(Stdio::inherit())
        .output()
        .expect("tools/prometheus/install.sh runs");
    assert!(out.status.success(), "tools/prometheus/install.sh failed");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

impl Prometheus {
    async fn start() -> Prometheus {
        let bin = std::env::var("TINY_PROMETHEUS").unwrap_or_else(|_| installed_prometheus());
        assert!(
            std::path::Path::new(&bin).exists(),
            "no Prometheus at {bin} (TINY_PROMETHEUS)"
        );
        static STARTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let nth = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("tiny-prom-{}-{nth}", std::process::id()));
        std::fs::create_dir_all(dir.join("data")).expect("a data dir");
        let config = dir.join("prometheus.yml");
        let targets = dir.join("targets.json");
        // Its own port is not known before it starts: it binds port 0, and the scrape
        // target comes from a file written once the port is read from the kernel
        // (file-based discovery watches the file).
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: self\n    file_sd_configs:\n      - files: ['{}']\n",
                targets.display()
            ),
        )
        .expect("the config");
        let child = Command::new(&bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg("--web.listen-address=127.0.0.1:0")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts");
        let mut prom = Prometheus {
            child,
            url: String::new(),
            _dir: tempdir::Dir(dir),
        };
        let end = Instant::now() + Duration::from_secs(30);
        let port = loop {
            assert!(
                prom.child.try_wait().expect("its status").is_none(),
                "Prometheus exited"
            );
            match tiny_testenv::listening_ports(prom.child.id()).expect("its sockets")[..] {
                [port] => break port,
                [] => assert!(Instant::now() < end, "Prometheus did not listen within 30 s"),
                ref ports => panic!("Prometheus listens on {ports:?}, expected one port"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        prom.url = format!("http://127.0.0.1:{port}");
        // Written whole, then renamed: discovery never reads half a file.
        let partial = targets.with_extension("json.partial");
        std::fs::write(&partial, format!("[{{\"targets\": [\"127.0.0.1:{port}\"]}}]")).expect("the targets");
        std::fs::rename(&partial, &targets).expect("the targets");
        // Ready once its own `up` has been scraped.
        loop {
            let answered = query_up(port).await;
            if answered {
                return prom;
            }
            assert!(Instant::now() < end, "Prometheus did not scrape itself within 30 s");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `up` has a sample yet (a bare HTTP/1.0 GET).
async fn query_up(port: u16) -> bool {
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return false;
    };
    let req = "GET /api/v1/query?query=up HTTP/1.0\r\nHost: x\r\n\r\n";
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body).await;
    body.contains("\"job\":\"self\"")
}

async fn harness(component: &str, settings: Value) -> Harness {
    Harness::builder()
        .register::<PromqlQuery>()
        .register::<LogqlQuery>()
        .register::<Relay>()
        .flow(
            FlowBuilder::new()
                .node("n", component)
                .settings(settings)
                .node("sink", "relay")
                .edge("n:result", "sink:input", json!("{{$}}"))
                .build(),
        )
        .build()
        .await
        .expect("the flow loads")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promql_queries_a_real_prometheus_at_an_instant_and_over_a_range() {
    let prom = Prometheus::start().await;
    let h = harness(
        "promql_query",
        json!({"baseURL": format!("{}/", prom.url), "timeoutSeconds": 10}),
    )
    .await;
    h.send("n:request", json!({"context": {"ask": 1}, "query": "up{job=\"self\"}"}))
        .await
        .expect("queried");
    let out = h.emitted("n:result").pop().expect("a result");
    assert_eq!(out["context"], json!({"ask": 1}));
    assert_eq!(out["count"], 1);
    assert_eq!(out["truncated"], false);
    let series = &out["series"][0];
    assert_eq!(series["labels"]["job"], "self");
    assert_eq!(series["labels"]["__name__"], "up");
    assert_eq!(series["value"], 1.0);
    assert!(
        series.get("points").is_none(),
        "an instant query has no points: {series}"
    );

    // A range: points oldest first, the value the newest point's. Asked until
    // Prometheus holds two scrapes of itself (one a second), not after a guessed wait.
    let out = tiny_testkit::eventually("a range of two points", Duration::from_secs(30), || {
        let h = &h;
        async move {
            h.send(
                "n:request",
                json!({"query": "up{job=\"self\"}", "rangeMinutes": 1, "stepSeconds": 1}),
            )
            .await
            .expect("queried");
            let out = h.emitted("n:result").pop().expect("a result");
            let points = out["series"][0]["points"].as_array().map_or(0, Vec::len);
            (points >= 2).then_some(out)
        }
    })
    .await;
    let points = out["series"][0]["points"].as_array().expect("points");
    assert!(
        points
            .iter()
            .all(|p| p["value"] == 1.0 && p["at"].as_str().is_some_and(|t| t.ends_with('Z')))
    );
    let ats: Vec<&str> = points.iter().filter_map(|p| p["at"].as_str()).collect();
    assert!(ats.windows(2).all(|w| w[0] <= w[1]), "{ats:?}");

    // A malformed query: Prometheus' 400, permanent.
    let err = h
        .send("n:request", json!({"query": "sum(("}))
        .await
        .expect_err("a bad query");
    assert!(!err.is_retryable(), "{err}");
    assert!(err.to_string().contains("metrics API 400"), "{err}");
    assert!(err.to_string().contains("bad_data"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promql_failures_go_to_the_error_port_with_their_class() {
    let prom = Prometheus::start().await;
    let settings = json!({"baseURL": prom.url, "timeoutSeconds": 10, "enableErrorPort": true});
    let h = harness("promql_query", settings).await;
    h.send("n:request", json!({"context": "c", "query": "sum(("}))
        .await
        .expect("to the error port");
    let e = h.emitted("n:error").pop().expect("an error message");
    assert_eq!(
        (e["context"].clone(), e["retryable"].clone()),
        (json!("c"), json!(false))
    );
    h.send("n:request", json!({"context": "c", "query": " "}))
        .await
        .expect("to the error port");
    assert_eq!(h.emitted("n:error").pop().expect("error")["error"], "query is required");

    // Nobody listening: retryable.
    let (_held, port) = tiny_testenv::refusing_port().expect("a held port");
    let gone = format!("http://127.0.0.1:{port}");
    let h = harness("promql_query", json!({"baseURL": gone, "timeoutSeconds": 5})).await;
    let err = h.send("n:request", json!({"query": "up"})).await.expect_err("refused");
    assert!(err.is_retryable(), "{err}");
}

#[tokio::test]
async fn query_settings_need_an_http_base_url() {
    for (settings, says) in [
        (json!({"baseURL": "", "timeoutSeconds": 30}), "baseURL is required"),
        (
            json!({"baseURL": "prometheus:9090", "timeoutSeconds": 30}),
            "must be http:// or https://",
        ),
    ] {
        for component in ["promql_query", "logql_query"] {
            let (_h, errors) = Harness::builder()
                .register::<PromqlQuery>()
                .register::<LogqlQuery>()
                .flow(
                    FlowBuilder::new()
                        .node("n", component)
                        .settings(settings.clone())
                        .build(),
                )
                .build_lenient()
                .await
                .expect("the harness builds");
            assert!(
                errors.iter().any(|(_, e)| e.to_string().contains(says)),
                "{component}: {errors:?}"
            );
        }
    }
}

#[test]
fn promql_reads_the_api_envelope() {
    let nan =
        br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"b"},"value":[1.5,"NaN"]}]}}"#;
    let (series, truncated) = parse_prom(nan).expect("parsed");
    assert!(series[0].value.is_nan() && !truncated);
    // 200 with status "error".
    let err = parse_prom(br#"{"status":"error","errorType":"execution","error":"boom"}"#).expect_err("an error");
    assert_eq!(err.message(), "metrics API error: boom");
    let err = parse_prom(b"<html>").expect_err("not JSON");
    assert!(err.message().contains("not JSON"));
    let many: Vec<Value> = (0..501)
        .map(|i| json!({"metric": {"i": i.to_string()}, "value": [0, "1"]}))
        .collect();
    let body = serde_json::to_vec(&json!({"status": "success", "data": {"result": many}})).expect("json");
    let (series, truncated) = parse_prom(&body).expect("parsed");
    assert_eq!((series.len(), truncated), (500, true));
}

// ---------------------------------------------------------------------------------
// logql: a server speaking Loki's query_range API

/// What the Loki stand-in saw of each request: the request line and headers.
type Seen = Arc<Mutex<Vec<String>>>;

/// Serves `status` and `body` for every request on a loopback port; returns its URL.
async fn loki(status: u16, body: Value) -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen: Seen = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 16 * 1024];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            log.lock()
                .expect("log")
                .push(String::from_utf8_lossy(&got).into_owned());
            let body = body.to_string();
            let answer = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(answer.as_bytes()).await;
        }
    });
    (url, seen)
}

#[tokio::test]
async fn logql_searches_loki_and_returns_lines_with_their_labels() {
    let streams = json!({"status": "success", "data": {"resultType": "streams", "result": [
        {"stream": {"namespace": "prod", "pod": "api-1"}, "values": [
            ["1785369600000000000", "error: db timeout"],
            ["1785369599000000000", "error: retry"]]},
        {"stream": {"namespace": "prod", "pod": "api-2"}, "values": [["1785369598500000000", "error: oom"]]}
    ]}});
    let (url, seen) = loki(200, streams).await;
    let h = harness(
        "logql_query",
        json!({"baseURL": url, "orgID": "team-a", "timeoutSeconds": 5, "headers": [{"key": "X-Extra", "value": "1"}]}),
    )
    .await;
    h.send(
        "n:request",
        json!({"context": 9, "query": "{namespace=\"prod\"} |= \"error\"", "rangeMinutes": 5, "limit": 3, "token": "t0k", "username": "42"}),
    )
    .await
    .expect("searched");
    let out = h.emitted("n:result").pop().expect("a result");
    assert_eq!(out["count"], 3);
    assert_eq!(out["truncated"], true, "as many lines as the limit");
    assert_eq!(
        out["entries"][0],
        json!({"at": "2026-07-30T00:00:00Z", "line": "error: db timeout", "labels": {"namespace": "prod", "pod": "api-1"}})
    );
    assert_eq!(out["entries"][2]["labels"]["pod"], "api-2");

    let request = seen.lock().expect("log")[0].clone();
    let line = request.lines().next().expect("a request line");
    assert!(
        line.starts_with("GET /loki/api/v1/query_range?query=%7Bnamespace%3D%22prod%22%7D"),
        "{line}"
    );
    assert!(
        line.contains("&limit=3&") && line.contains("&direction=backward"),
        "{line}"
    );
    let params: Vec<(String, String)> =
        form_urlencoded::parse(line.split(['?', ' ']).nth(2).expect("query").as_bytes())
            .into_owned()
            .collect();
    let get = |k: &str| {
        params
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.parse::<i128>().expect("nanos"))
    };
    let (start, end) = (get("start").expect("start"), get("end").expect("end"));
    assert_eq!(end - start, 5 * 60 * 1_000_000_000, "a 5-minute window in nanoseconds");
    let lower = request.to_lowercase();
    // Basic auth: "42:t0k".
    assert!(lower.contains("authorization: basic ndi6ddbr"), "{request}");
    assert!(
        lower.contains("x-scope-orgid: team-a") && lower.contains("x-extra: 1"),
        "{request}"
    );
}

#[tokio::test]
async fn logql_failures_have_gos_classes() {
    let (url, _) = loki(
        400,
        json!("parse error at line 1, col 1: syntax error: unexpected IDENTIFIER"),
    )
    .await;
    let h = harness("logql_query", json!({"baseURL": url, "timeoutSeconds": 5})).await;
    let err = h
        .send("n:request", json!({"query": "error"}))
        .await
        .expect_err("a bare search");
    assert!(
        !err.is_retryable() && err.to_string().contains("loki 400: \"parse error"),
        "{err}"
    );

    let (url, _) = loki(503, json!("overloaded")).await;
    let h = harness(
        "logql_query",
        json!({"baseURL": url, "timeoutSeconds": 5, "enableErrorPort": true}),
    )
    .await;
    h.send("n:request", json!({"context": "c", "query": "{a=\"b\"}"}))
        .await
        .expect("to the error port");
    let e = h.emitted("n:error").pop().expect("error");
    assert_eq!(
        (e["context"].clone(), e["retryable"].clone()),
        (json!("c"), json!(true))
    );
    assert!(e["error"].as_str().is_some_and(|s| s.starts_with("loki 503")), "{e}");

    let err = parse_loki(b"nope").expect_err("not JSON");
    assert!(err.message().contains("not JSON"));
}

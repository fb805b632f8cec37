//! `make bench-http`: requests per second and p50/p99 latency, in one run, of
//!
//! - **tiny**: `http_server` whose `request` is wired to its own `response` (the flow
//!   answers the request body as text), in-process;
//! - **bare**: a hyper server on the same stack answering the body itself;
//! - **node-red** (with `--peer`): Node-RED 4.1.15's `http in` -> `http response`,
//!   from `bench/node-red/serve-http.js`.
//!
//! Every server runs on one thread (Node-RED has one); the load generator, written
//! here, runs on another: `--conc` keep-alive connections each send requests one
//! after another over loopback until `--n` requests are done or `--secs` pass.
//!
//! `cargo bench -p tiny-example-http --bench http -- [--peer] [--n N] [--conc C] [--secs S]`

use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Request, Response, service::service_fn};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::{TokioExecutor, TokioIo},
};
use serde_json::json;
use tiny_sdk::{engine::Engine, flow::FlowBuilder};

struct Args {
    peer: bool,
    n: usize,
    conc: usize,
    secs: u64,
}

fn args() -> Args {
    let mut a = Args {
        peer: false,
        n: 20_000,
        conc: 32,
        secs: 20,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num = |d: usize| it.next().and_then(|v| v.parse().ok()).unwrap_or(d);
        match arg.as_str() {
            "--peer" => a.peer = true,
            "--n" => a.n = num(a.n),
            "--conc" => a.conc = num(a.conc),
            "--secs" => a.secs = num(a.secs as usize) as u64,
            _ => {}
        }
    }
    a
}

/// One measured run.
struct Figures {
    rps: f64,
    p50_us: f64,
    p99_us: f64,
    done: usize,
}

/// Drives `url` with `conc` connections until `n` requests or `secs` pass.
async fn load(url: &str, n: usize, conc: usize, secs: u64) -> Figures {
    let client: Client<HttpConnector, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(conc)
        .build_http();
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let started = Instant::now();
    let workers = (0..conc).map(|_| {
        let (client, next, url) = (client.clone(), next.clone(), url.to_owned());
        tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n || Instant::now() > deadline {
                    return lat;
                }
                let body = format!("{{\"n\":{i}}}");
                let req = Request::post(&url)
                    .header("content-type", "text/plain")
                    .body(Full::new(Bytes::from(body.clone())))
                    .expect("request");
                let t = Instant::now();
                let Ok(resp) = client.request(req).await else { continue };
                let Ok(got) = resp.into_body().collect().await else {
                    continue;
                };
                // A wrong answer is not a measurement.
                if got.to_bytes() == body.as_bytes() {
                    lat.push(t.elapsed().as_micros() as u64);
                }
            }
        })
    });
    let mut lat: Vec<u64> = Vec::new();
    for w in workers {
        lat.extend(w.await.unwrap_or_default());
    }
    let took = started.elapsed().as_secs_f64();
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0) as f64
    };
    Figures {
        rps: lat.len() as f64 / took,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        done: lat.len(),
    }
}

/// A runtime with one worker thread, for a server.
fn one_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The bare hyper server: answers the body.
fn bare(rt: &tokio::runtime::Runtime) -> u16 {
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                tokio::spawn(async move {
                    let service = service_fn(|req: Request<hyper::body::Incoming>| async move {
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let mut resp = Response::new(Full::new(body));
                        resp.headers_mut()
                            .insert("content-type", hyper::header::HeaderValue::from_static("text/plain"));
                        Ok::<_, std::convert::Infallible>(resp)
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        port
    })
}

/// tiny's flow: `http_server.request` -> `http_server.response`.
fn tiny(rt: &tokio::runtime::Runtime) -> (Engine, u16) {
    rt.block_on(async {
        let flow = FlowBuilder::new()
            .node("srv", "http_server")
            .edge(
                "srv:request",
                "srv:response",
                json!({"statusCode": 200, "contentType": "text/plain", "body": "{{$.body}}"}),
            )
            .build();
        // The engine as a module runs it: no harness recording every hop.
        let engine = Engine::builder()
            .register::<tiny_example_http::server::HttpServer>()
            .build();
        for node in flow.nodes {
            engine.apply(node).await.expect("the node loads");
        }
        engine
            .send("srv:start", json!({"writeTimeout": 30}))
            .await
            .expect("started");
        let port = loop {
            let addr = listen_addr(&engine);
            if let Some(p) = addr {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        (engine, port)
    })
}

fn listen_addr(engine: &Engine) -> Option<u16> {
    let report = engine.report("srv")?;
    let view = &report.ports.iter().find(|p| p.name == "_control")?.configuration;
    view["listenAddr"][0].as_str()?.rsplit(':').next()?.parse().ok()
}

/// Node-RED, when `--peer`: its process and port.
fn node_red() -> Option<(std::process::Child, u16)> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/node-red/run.sh");
    let mut child = Command::new(script)
        .env("BENCH_SCRIPT", "serve-http.js")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| eprintln!("node-red could not start: {e}"))
        .ok()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take()?).read_line(&mut line).ok()?;
    let v: serde_json::Value = serde_json::from_str(&line).ok()?;
    let port = u16::try_from(v["listening"].as_u64()?).ok()?;
    Some((child, port))
}

fn main() {
    let a = args();
    let (bare_rt, tiny_rt) = (one_thread(), one_thread());
    let bare_port = bare(&bare_rt);
    let (_flow, tiny_port) = tiny(&tiny_rt);
    let peer = if a.peer { node_red() } else { None };
    let driver = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let url = |port: u16, path: &str| format!("http://127.0.0.1:{port}{path}");
    let mut rows = Vec::new();
    let targets = [
        ("bare", Some(bare_port), "/"),
        ("tiny", Some(tiny_port), "/bench"),
        ("node-red", peer.as_ref().map(|p| p.1), "/bench"),
    ];
    for (name, port, path) in targets {
        let Some(port) = port else { continue };
        // Warm up (connections, caches, the JIT), then measure.
        driver.block_on(load(&url(port, path), a.n / 10, a.conc, a.secs));
        let f = driver.block_on(load(&url(port, path), a.n, a.conc, a.secs));
        println!(
            "{name:>8}: {:>8.0} req/s  p50 {:>7.0} us  p99 {:>7.0} us  ({} requests, {} connections)",
            f.rps, f.p50_us, f.p99_us, f.done, a.conc
        );
        rows.push((name, f));
    }
    let get = |n: &str| rows.iter().find(|(k, _)| *k == n).map(|(_, f)| f);
    if let (Some(t), Some(b)) = (get("tiny"), get("bare")) {
        println!(
            "tiny / bare server: {:.2}x requests per second (goal >= 0.5x)",
            t.rps / b.rps
        );
    }
    if let (Some(t), Some(r)) = (get("tiny"), get("node-red")) {
        println!(
            "tiny / node-red: {:.1}x requests per second (goal >= 5x), p50 {:.1}x lower",
            t.rps / r.rps,
            r.p50_us / t.p50_us.max(1.0)
        );
    }
    if let Some((mut child, _)) = peer {
        drop(child.stdin.take());
        let _ = child.wait();
    }
}

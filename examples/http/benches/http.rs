//! `make bench-http`: requests per second and p50/p99 latency, in one run, of
//!
//! - **tiny**: `http_server` whose `request` is wired to its own `response` (the flow
//!   answers the request body as text), in-process;
//! - **bare**: a hyper server on the same stack answering the body itself;
//! - **node-red** (with `--peer`): Node-RED 4.1.15's `http in` -> `http response`,
//!   from `bench/node-red/serve-http.js`.
//!
//! Every server runs on one thread (Node-RED has one); the load generator, written
//! here, runs on another: `--conc` keep-alive connections (raw sockets, see [`load`])
//! each send requests one after another over loopback until `--n` requests are done
//! or `--secs` pass.
//!
//! `cargo bench -p tiny-example-http --bench http -- [--peer] [--n N] [--conc C] [--secs S]
//! [--only tiny|bare|node-red]`

#[cfg(feature = "fast-alloc")]
#[global_allocator]
static ALLOC: tiny_runtime::FastAlloc = tiny_runtime::FastAlloc;

use std::{
    fmt::Write as _,
    io::{BufRead as _, BufReader, Write as _},
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use http_body_util::{BodyExt as _, Full};
use hyper::{Request, Response, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tiny_sdk::{engine::Engine, flow::FlowBuilder};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

struct Args {
    peer: bool,
    /// `--only tiny|bare|node-red`: drive that server alone (for a profiler).
    only: Option<String>,
    n: usize,
    conc: usize,
    secs: u64,
}

fn args() -> Args {
    let mut a = Args {
        peer: false,
        only: None,
        n: 100_000,
        conc: 32,
        secs: 20,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num = |d: usize| it.next().and_then(|v| v.parse().ok()).unwrap_or(d);
        match arg.as_str() {
            "--peer" => a.peer = true,
            "--only" => a.only = it.next(),
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

/// Drives `127.0.0.1:port` `path` with `conc` connections until `n` requests or `secs`
/// pass.
///
/// Each connection is a raw keep-alive socket that writes one request and reads its
/// answer: a few hundred instructions a request beside the server's thousands, so the
/// figure is the server's, not the client's. (hyper's pooled client, the first load
/// generator here, cost as much as the servers it drove and held every server near
/// the same rate.) Every answer is parsed and its body compared with what was sent:
/// a wrong answer is not a measurement.
async fn load(port: u16, path: &str, n: usize, conc: usize, secs: u64) -> Figures {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let started = Instant::now();
    let workers = (0..conc).map(|_| {
        let (next, path) = (next.clone(), path.to_owned());
        tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut conn = None;
            let (mut req, mut body, mut buf) = (Vec::new(), String::new(), Vec::new());
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n || Instant::now() > deadline {
                    return lat;
                }
                body.clear();
                let _ = write!(body, "{{\"n\":{i}}}");
                req.clear();
                let _ = write!(
                    req,
                    "POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                let t = Instant::now();
                let stream = match &mut conn {
                    Some(s) => s,
                    None => match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            conn.insert(s)
                        }
                        Err(_) => continue,
                    },
                };
                match exchange(stream, &req, &mut buf).await {
                    Some((got, keep)) => {
                        if got == body.as_bytes() {
                            lat.push(t.elapsed().as_micros() as u64);
                        }
                        if !keep {
                            conn = None;
                        }
                    }
                    None => conn = None,
                }
            }
        })
    });
    // Spawned all before any is awaited: a lazy iterator here would run one
    // connection at a time.
    let workers: Vec<_> = workers.collect();
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

/// Writes `req` and reads one answer into `buf`: its body (`Content-Length` or chunked)
/// and whether the connection stays open; `None` when the exchange failed.
async fn exchange<'b>(
    stream: &mut tokio::net::TcpStream,
    req: &[u8],
    buf: &'b mut Vec<u8>,
) -> Option<(&'b [u8], bool)> {
    stream.write_all(req).await.ok()?;
    buf.clear();
    // The head.
    let (head_len, framing, keep) = loop {
        read_more(stream, buf).await?;
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut resp = httparse::Response::new(&mut headers);
        let httparse::Status::Complete(len) = resp.parse(buf).ok()? else {
            continue;
        };
        let header = |name: &str| {
            resp.headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value)
        };
        let keep = !header("connection").is_some_and(|v| v.eq_ignore_ascii_case(b"close"));
        let framing = match header("content-length") {
            Some(v) => Framing::Length(std::str::from_utf8(v).ok()?.trim().parse().ok()?),
            None if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case(b"chunked")) => Framing::Chunked,
            None => return None,
        };
        break (len, framing, keep);
    };
    match framing {
        Framing::Length(len) => {
            while buf.len() < head_len + len {
                read_more(stream, buf).await?;
            }
            Some((&buf[head_len..head_len + len], keep))
        }
        Framing::Chunked => {
            // Decoded in place: each chunk's data moved down over the sizes before it.
            let (mut at, mut out) = (head_len, head_len);
            loop {
                let line_end = loop {
                    if let Some(p) = buf[at..].windows(2).position(|w| w == b"\r\n") {
                        break at + p;
                    }
                    read_more(stream, buf).await?;
                };
                let size_text = std::str::from_utf8(&buf[at..line_end]).ok()?;
                let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
                let data = line_end + 2;
                while buf.len() < data + size + 2 {
                    read_more(stream, buf).await?;
                }
                if size == 0 {
                    // No trailers are sent here: the closing CRLF follows at once.
                    return Some((&buf[head_len..out], keep));
                }
                buf.copy_within(data..data + size, out);
                out += size;
                at = data + size + 2;
            }
        }
    }
}

enum Framing {
    Length(usize),
    Chunked,
}

/// Appends what the socket has to `buf`; `None` at its end or on an error.
async fn read_more(stream: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> Option<()> {
    buf.reserve(4096);
    match stream.read_buf(buf).await {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(()),
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
    let mut rows = Vec::new();
    let targets = [
        ("bare", Some(bare_port), "/"),
        ("tiny", Some(tiny_port), "/bench"),
        ("node-red", peer.as_ref().map(|p| p.1), "/bench"),
    ];
    for (name, port, path) in targets {
        let Some(port) = port else { continue };
        if a.only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        // Warm up (connections, caches, the JIT), then measure.
        driver.block_on(load(port, path, a.n / 10, a.conc, a.secs));
        let f = driver.block_on(load(port, path, a.n, a.conc, a.secs));
        println!(
            "{name:>8}: {:>8.0} req/s  p50 {:>7.0} us  p99 {:>7.0} us  ({} requests, {} connections)",
            f.rps, f.p50_us, f.p99_us, f.done, a.conc
        );
        rows.push((name, f));
    }
    let get = |n: &str| rows.iter().find(|(k, _)| *k == n).map(|(_, f)| f);
    if let (Some(t), Some(b)) = (get("tiny"), get("bare")) {
        println!(
            "tiny / bare server: {:.2}x requests per second (goal >= 0.9x)",
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

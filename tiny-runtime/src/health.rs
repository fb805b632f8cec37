//! The probe and metrics endpoints: `/healthz`, `/readyz`, `/metrics`. A few lines of
//! HTTP/1.1 over a socket: probes need nothing more, and no HTTP server is linked.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
};

use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpListener,
};

use crate::metrics::Metrics;

/// What `/readyz` says: ready once the module started and every watch it depends on
/// has listed its objects, and not while a watch cannot list (the module would then
/// run on a partial or empty view of its nodes and signals).
#[derive(Debug, Default)]
pub struct Readiness {
    started: AtomicBool,
    watches: Mutex<BTreeMap<&'static str, WatchState>>,
    /// The wire to other modules: not ready while it cannot carry (a module told to
    /// use NATS, while the broker does not answer).
    carrier: std::sync::OnceLock<Arc<dyn crate::carrier::Carrier>>,
}

#[derive(Debug, Clone)]
enum WatchState {
    Listing,
    Listed,
    Failing(String),
}

impl Readiness {
    /// The module finished (or, `false`, stopped) starting.
    pub fn set_started(&self, started: bool) {
        self.started.store(started, Ordering::Relaxed);
    }

    fn set(&self, watch: &'static str, state: WatchState) {
        if let Ok(mut w) = self.watches.lock() {
            w.insert(watch, state);
        }
    }

    /// `watch` is starting: not ready until it has listed.
    pub fn listing(&self, watch: &'static str) {
        self.set(watch, WatchState::Listing);
    }

    /// `watch` listed every object.
    pub fn listed(&self, watch: &'static str) {
        self.set(watch, WatchState::Listed);
    }

    /// `watch` could not list; `why` is shown by `/readyz`.
    pub fn failing(&self, watch: &'static str, why: String) {
        self.set(watch, WatchState::Failing(why));
    }

    /// Readiness also depends on `carrier` (see [`Carrier::health`](crate::carrier::Carrier::health)).
    pub fn watch_carrier(&self, carrier: Arc<dyn crate::carrier::Carrier>) {
        let _ = self.carrier.set(carrier);
    }

    /// `Ok` when ready, else every reason why not.
    pub fn check(&self) -> Result<(), String> {
        let mut reasons = Vec::new();
        if !self.started.load(Ordering::Relaxed) {
            reasons.push("the module is starting".to_owned());
        }
        if let Ok(w) = self.watches.lock() {
            for (name, state) in w.iter() {
                match state {
                    WatchState::Listed => {}
                    WatchState::Listing => reasons.push(format!("{name}: not listed yet")),
                    WatchState::Failing(why) => reasons.push(format!("{name}: cannot list: {why}")),
                }
            }
        }
        if let Some(Err(why)) = self.carrier.get().map(|c| c.health()) {
            reasons.push(why);
        }
        if reasons.is_empty() {
            Ok(())
        } else {
            Err(reasons.join("\n"))
        }
    }
}

/// Serves probes and metrics on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, ready: Arc<Readiness>, metrics: Arc<Metrics>) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            continue;
        };
        let (ready, metrics) = (ready.clone(), metrics.clone());
        tokio::spawn(async move {
            // The request line may come in pieces: read to the end of the headers
            // (bounded in size and time) before answering.
            let mut buf = [0u8; 1024];
            let mut n = 0;
            let read = async {
                while n < buf.len() && !buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf[n..]).await {
                        Ok(0) | Err(_) => break,
                        Ok(k) => n += k,
                    }
                }
            };
            if tokio::time::timeout(std::time::Duration::from_secs(5), read)
                .await
                .is_err()
                || n == 0
            {
                return;
            }
            let request = String::from_utf8_lossy(&buf[..n]);
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let (status, body) = match path {
                "/healthz" => ("200 OK", "ok".to_owned()),
                "/readyz" => match ready.check() {
                    Ok(()) => ("200 OK", "ok".to_owned()),
                    Err(why) => ("503 Service Unavailable", why),
                },
                "/metrics" => ("200 OK", metrics.render()),
                _ => ("404 Not Found", "not found".to_owned()),
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        });
    }
}

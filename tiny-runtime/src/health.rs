//! The probe and metrics endpoints: `/healthz`, `/readyz`, `/metrics`. A few lines of
//! HTTP/1.1 over a socket: probes need nothing more, and no HTTP server is linked.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::TcpListener,
};

use crate::metrics::Metrics;

/// Serves probes and metrics on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, ready: Arc<AtomicBool>, metrics: Arc<Metrics>) {
    loop {
        let Ok((mut socket, _)) = listener.accept().await else {
            continue;
        };
        let (ready, metrics) = (ready.clone(), metrics.clone());
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            let n = match socket.read(&mut buf).await {
                Ok(n) => n,
                Err(_) => return,
            };
            let request = String::from_utf8_lossy(&buf[..n]);
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let (status, body) = match path {
                "/healthz" => ("200 OK", "ok".to_owned()),
                "/readyz" if ready.load(Ordering::Relaxed) => ("200 OK", "ok".to_owned()),
                "/readyz" => ("503 Service Unavailable", "starting".to_owned()),
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

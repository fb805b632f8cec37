//! Listening sockets as Go's `net.Listen` makes them: `:port` is every interface, IPv6
//! and IPv4 alike, so the chart's `:8081` answers probes on IPv6-only, IPv4-only and
//! dual-stack clusters.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use tokio::net::TcpListener;

/// A bind address from the command line: `host:port`, `[v6]:port`, `localhost:port`, or
/// Go's `:port`, which is `[::]:port` (and [`bind`] makes that every interface).
pub(crate) fn parse(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    let full = match s.strip_prefix(':') {
        Some(port) => format!("[::]:{port}"),
        None => s.replacen("localhost:", "127.0.0.1:", 1),
    };
    full.parse()
        .map_err(|_| format!("`{s}` is not a bind address (`:8081`, `0.0.0.0:8081`, `[::]:8081`)"))
}

/// Listens on `addr`. The IPv6 wildcard `[::]` takes IPv4 connections too, whatever the
/// host's `bindv6only` says (as Go sets it); on a host without IPv6 it is the IPv4
/// wildcard instead.
pub(crate) async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    if addr.ip() != IpAddr::V6(Ipv6Addr::UNSPECIFIED) {
        return TcpListener::bind(addr).await;
    }
    match dual_stack(addr) {
        Ok(listener) => Ok(listener),
        // A port taken is the answer; anything else means no IPv6 here.
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(e),
        Err(_) => TcpListener::bind((Ipv4Addr::UNSPECIFIED, addr.port())).await,
    }
}

fn dual_stack(addr: SocketAddr) -> std::io::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV6, Type::STREAM, None)?;
    socket.set_only_v6(false)?;
    // As std and tokio do for a listener: a restarted process rebinds at once.
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(1024)?;
    TcpListener::from_std(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_addresses_take_the_go_chart_forms() {
        for (given, want) in [
            (":8081", "[::]:8081"),
            ("0.0.0.0:8081", "0.0.0.0:8081"),
            ("[::]:8081", "[::]:8081"),
            ("127.0.0.1:8080", "127.0.0.1:8080"),
            ("localhost:8080", "127.0.0.1:8080"),
        ] {
            assert_eq!(parse(given).map(|a| a.to_string()), Ok(want.to_owned()), "{given}");
        }
        let err = parse("8081").err().unwrap_or_default();
        assert!(err.contains("`8081` is not a bind address"), "{err}");
    }

    #[tokio::test]
    async fn the_wildcard_takes_ipv4_and_ipv6() {
        let listener = bind(parse(":0").expect("an address")).await.expect("bound");
        let port = listener.local_addr().expect("an address").port();
        tokio::net::TcpStream::connect((Ipv4Addr::LOCALHOST, port))
            .await
            .expect("IPv4 connects");
        if std::fs::read_to_string("/proc/sys/net/ipv6/conf/lo/disable_ipv6").is_ok_and(|v| v.trim() == "0") {
            tokio::net::TcpStream::connect((Ipv6Addr::LOCALHOST, port))
                .await
                .expect("IPv6 connects");
        }
    }

    #[tokio::test]
    async fn a_taken_port_is_an_error_not_a_fallback() {
        let first = bind(parse(":0").expect("an address")).await.expect("bound");
        let port = first.local_addr().expect("an address").port();
        let again = bind(parse(&format!(":{port}")).expect("an address")).await;
        assert_eq!(again.err().map(|e| e.kind()), Some(std::io::ErrorKind::AddrInUse));
    }
}

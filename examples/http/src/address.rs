//! Where `http_request` may connect: the guard against a flow (or an agent calling it
//! as a tool) being pointed, directly or by a redirect, at the node's own
//! surroundings: the cloud's metadata service, link-local addresses, and the
//! cluster's internal network.
//!
//! The check is made on the addresses a name resolves to, in the connector's own
//! resolver, so a public name that resolves to `169.254.169.254` is refused as the
//! literal address is, and no second lookup can answer differently.

use std::{
    future::Future,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    pin::Pin,
    task::{Context, Poll},
};

use hyper_util::client::legacy::connect::dns::Name;

/// What an address is, for the guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Link-local (`169.254.0.0/16`, `fe80::/10`) or a cloud metadata address
    /// (`169.254.169.254`, `fd00:ec2::254`, `100.100.100.200`): never reached unless
    /// the settings allow it.
    LinkLocal,
    /// Loopback, private (`10/8`, `172.16/12`, `192.168/16`), shared (`100.64/10`,
    /// where some clusters put pods), unique-local (`fc00::/7`) or unspecified: the
    /// cluster's and the pod's own network.
    Internal,
    /// Anything else.
    Public,
}

impl Class {
    /// The class of `ip` (an IPv4 address mapped into IPv6 is read as IPv4).
    pub fn of(ip: IpAddr) -> Class {
        match ip {
            IpAddr::V4(v4) => Self::of_v4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self::of_v4(v4),
                None => Self::of_v6(v6),
            },
        }
    }

    fn of_v4(ip: Ipv4Addr) -> Class {
        let [a, b, ..] = ip.octets();
        if ip.is_link_local() || ip == Ipv4Addr::new(100, 100, 100, 200) {
            Class::LinkLocal
        } else if ip.is_loopback() || ip.is_private() || ip.is_unspecified() || (a == 100 && (64..128).contains(&b)) {
            Class::Internal
        } else {
            Class::Public
        }
    }

    fn of_v6(ip: Ipv6Addr) -> Class {
        let first = ip.segments()[0];
        if (first & 0xffc0) == 0xfe80 || ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
            Class::LinkLocal
        } else if ip.is_loopback() || ip.is_unspecified() || (first & 0xfe00) == 0xfc00 {
            Class::Internal
        } else {
            Class::Public
        }
    }
}

/// Which classes one hop of a request may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reach {
    /// Everything (`allowInternalAddresses`).
    All,
    /// Internal and public addresses: a request's own target (a flow calling a
    /// service of its cluster is the usual case), and a redirect from one.
    NoLinkLocal,
    /// Public addresses only: a redirect from a public address, which must not lead
    /// into the cluster.
    PublicOnly,
}

impl Reach {
    /// Whether this reach allows `class`.
    pub fn allows(self, class: Class) -> bool {
        match self {
            Reach::All => true,
            Reach::NoLinkLocal => class != Class::LinkLocal,
            Reach::PublicOnly => class == Class::Public,
        }
    }

    /// The reach of a request's hops: its first (`redirected` false) or a later one,
    /// whose first target was of `first` class (`None`: it could not be told).
    pub fn of_hop(allow_internal: bool, redirected: bool, first: Option<Class>) -> Reach {
        match (allow_internal, redirected, first) {
            (true, ..) => Reach::All,
            (false, false, _) | (false, true, Some(Class::Internal)) => Reach::NoLinkLocal,
            (false, true, _) => Reach::PublicOnly,
        }
    }

    /// `Err` with the refusal when this reach does not allow `ip`, the address of `host`.
    pub fn check(self, host: &str, ip: IpAddr) -> Result<(), Refused> {
        let class = Class::of(ip);
        if self.allows(class) {
            Ok(())
        } else {
            Err(Refused {
                host: host.to_owned(),
                ip,
                class,
            })
        }
    }
}

/// A connection the guard refused: the error a request fails with (found in the
/// connector's error chain by its type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The host as the URL named it.
    pub host: String,
    /// The address it is or resolved to.
    pub ip: IpAddr,
    /// What that address is.
    pub class: Class,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.class {
            Class::LinkLocal => "a link-local or cloud metadata address",
            Class::Internal => "an internal address, reached by a redirect from a public one",
            Class::Public => "a public address",
        };
        write!(
            f,
            "refused to connect to `{}` ({}): {what}; the allowInternalAddresses setting allows it",
            self.host, self.ip
        )
    }
}

impl std::error::Error for Refused {}

/// The refusal in `error`'s chain of sources, if the guard refused it.
pub fn refusal<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(r) = e.downcast_ref::<Refused>() {
            return Some(r);
        }
        next = e.source();
    }
    None
}

/// The connector's resolver: the system's lookup, keeping only the addresses `reach`
/// allows; a name with none left is refused.
#[derive(Debug, Clone, Copy)]
pub struct Guarded(pub Reach);

type Resolving = Pin<
    Box<dyn Future<Output = Result<std::vec::IntoIter<SocketAddr>, Box<dyn std::error::Error + Send + Sync>>> + Send>,
>;

impl tower_service::Service<Name> for Guarded {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = Box<dyn std::error::Error + Send + Sync>;
    type Future = Resolving;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let reach = self.0;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            // The connector sets the port.
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let kept: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| match reach.check(&host, a.ip()) {
                    Ok(()) => true,
                    Err(r) => {
                        refused.get_or_insert(r);
                        false
                    }
                })
                .collect();
            match (kept.is_empty(), refused) {
                (true, Some(r)) => Err(Box::new(r) as Self::Error),
                _ => Ok(kept.into_iter()),
            }
        })
    }
}

/// The class of what `host` names: a literal address's own, else the classes its
/// addresses have (the most internal of them); `None` when it does not resolve.
pub async fn class_of_host(host: &str) -> Option<Class> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Some(Class::of(ip));
    }
    let found = tokio::net::lookup_host((bare, 0)).await.ok()?;
    found.map(|a| Class::of(a.ip())).reduce(|a, b| match (a, b) {
        (Class::LinkLocal, _) | (_, Class::LinkLocal) => Class::LinkLocal,
        (Class::Internal, _) | (_, Class::Internal) => Class::Internal,
        _ => Class::Public,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(ip: &str) -> Class {
        Class::of(ip.parse().expect("an address"))
    }

    #[test]
    fn addresses_are_classed_as_the_guard_needs() {
        for ip in [
            "169.254.169.254",
            "169.254.0.1",
            "fe80::1",
            "fd00:ec2::254",
            "100.100.100.200",
            "::ffff:169.254.169.254",
        ] {
            assert_eq!(class(ip), Class::LinkLocal, "{ip}");
        }
        for ip in [
            "127.0.0.1",
            "10.96.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "100.64.0.1",
            "fd12::1",
            "::1",
            "0.0.0.0",
            "::ffff:10.0.0.1",
        ] {
            assert_eq!(class(ip), Class::Internal, "{ip}");
        }
        for ip in ["8.8.8.8", "100.128.0.1", "172.32.0.1", "2001:4860::8888"] {
            assert_eq!(class(ip), Class::Public, "{ip}");
        }
    }

    #[test]
    fn a_redirect_from_a_public_address_stays_public() {
        use Class::*;
        assert_eq!(Reach::of_hop(false, false, Some(Public)), Reach::NoLinkLocal);
        assert_eq!(Reach::of_hop(false, true, Some(Public)), Reach::PublicOnly);
        assert_eq!(Reach::of_hop(false, true, None), Reach::PublicOnly);
        assert_eq!(Reach::of_hop(false, true, Some(Internal)), Reach::NoLinkLocal);
        assert_eq!(Reach::of_hop(true, true, Some(Public)), Reach::All);
        assert!(!Reach::NoLinkLocal.allows(LinkLocal));
        assert!(!Reach::PublicOnly.allows(Internal));
        assert!(Reach::All.allows(LinkLocal));
    }
}

//! A module's place on the broker, as the cluster is told of it: connected once at
//! start from `TINY_NATS_URL` (a broker that does not answer yet leaves the module on
//! gRPC meanwhile; the link reconnects by itself), the address it advertises there and
//! why it is not there now. The transport layer reports it as a
//! [`Presence`](crate::carrier::Presence), knowing nothing of the link.

use futures::stream::BoxStream;

use super::{Credentials, Link, LinkError, LinkState, wire};
use crate::carrier::{Down, Presence};

/// The broker a module was told to use: its link, or why there is none.
#[derive(Debug)]
pub struct Broker {
    module: String,
    /// The connection, or why the URL or credentials cannot be used.
    link: Result<Link, LinkError>,
}

impl Broker {
    /// Connects `module` to the broker at `url` (`TINY_NATS_URL`), proving who it is
    /// with `credentials` (its own nkey or `.creds` file), waiting up to
    /// [`CONNECT_TIMEOUT`](super::CONNECT_TIMEOUT) for the broker to answer and going
    /// on without it (it reconnects by itself). A URL or credentials that cannot be
    /// used give a broker that is [unusable](Down::Unusable), logged and shown.
    pub async fn connect(module: &str, url: &str, credentials: Result<Credentials, LinkError>) -> Self {
        let link = match credentials {
            Ok(c) => Link::connect_with_credentials(url, Some(module), &c).await,
            Err(e) => Err(e),
        };
        let link = match link {
            Ok(link) => {
                if link.wait_up(super::CONNECT_TIMEOUT).await {
                    // What the broker takes, read once at connect: components whose
                    // own limits are larger say so (a default broker takes 1 MiB).
                    let max = link.client().server_info().max_payload;
                    tiny_sdk::limits::set_wire_max(max);
                    tracing::info!(url = %link.url(), max_payload = max, "NATS broker connected");
                } else {
                    tracing::warn!(
                        url = %link.url(),
                        "NATS does not answer; serving gRPC meanwhile and reconnecting every 2 s (see /readyz and the TinyModule's Transport condition)"
                    );
                }
                Ok(link)
            }
            Err(e) => {
                tracing::error!(error = %e, "NATS cannot be used; serving gRPC only");
                Err(e)
            }
        };
        Self {
            module: module.to_owned(),
            link,
        }
    }

    /// The connection, unless the broker cannot be used.
    pub fn link(&self) -> Option<&Link> {
        self.link.as_ref().ok()
    }

    /// Why the broker cannot be used (its URL or credentials), if it cannot.
    pub fn unusable(&self) -> Option<&LinkError> {
        self.link.as_ref().err()
    }
}

impl Presence for Broker {
    fn name(&self) -> &'static str {
        "nats"
    }

    fn reason(&self) -> &'static str {
        "Nats"
    }

    fn label(&self) -> &'static str {
        "NATS"
    }

    fn address(&self) -> String {
        wire::advertised_addr(&self.module)
    }

    fn state(&self) -> Result<(), Down> {
        match &self.link {
            Ok(link) => super::router::link_health(link).map_err(Down::Unreachable),
            Err(why) => Err(Down::Unusable(why.to_string())),
        }
    }

    fn changes(&self) -> Option<BoxStream<'static, ()>> {
        let state: tokio::sync::watch::Receiver<LinkState> = self.link().map(Link::state)?;
        let changed = futures::stream::unfold(state, |mut state| async move {
            state.changed().await.ok().map(|()| ((), state))
        });
        Some(Box::pin(changed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_url_that_cannot_be_used_is_an_unusable_broker_that_says_why() {
        let broker = Broker::connect("m-v0", "http://10.0.0.1:4222", Ok(Credentials::Url)).await;
        assert!(broker.link().is_none());
        assert_eq!(broker.address(), "nats://tinymodule.m-v0.msg");
        assert!(
            matches!(broker.unusable(), Some(LinkError::Url { .. })),
            "{:?}",
            broker.unusable()
        );
        let down = broker.state().err();
        // The `Transport` condition's reason is `NatsUnusable`, its message the error's.
        assert_eq!(
            (broker.reason(), down.as_ref().map(Down::reason)),
            ("Nats", Some("Unusable"))
        );
        assert_eq!(
            down.as_ref().map(Down::why),
            broker.unusable().map(ToString::to_string).as_deref()
        );
    }
}

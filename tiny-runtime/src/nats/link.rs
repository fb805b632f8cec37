//! The module's connection to the broker, as the Go SDK makes it (`cli/nats.go`):
//! named `tiny-module`, 5 s to connect, a reconnect every 2 s without end, the
//! credentials taken from the URL (`nats://<token>@host:4222`, as the TinySystems
//! NATS chart writes it, or `nats://user:pass@host`).
//!
//! Where Go falls back to gRPC in silence when the first connection fails, a [`Link`]
//! keeps trying in the background and tells, through [`Link::state`], whether the
//! broker answers: the runtime shows it in `/readyz`, in the TinyModule's `Transport`
//! condition and in the address it advertises.

use std::{fmt, time::Duration};

use async_nats::{Client, ConnectOptions, Event};
use tokio::sync::watch;

/// How long one connection attempt may take (Go's `nats.Timeout(5s)`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// The pause between reconnection attempts (Go's `nats.ReconnectWait(2s)`).
pub const RECONNECT_WAIT: Duration = Duration::from_secs(2);

/// Whether the broker answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    /// Not connected yet (the first attempts are under way).
    Connecting,
    /// Connected: messages flow.
    Connected,
    /// The connection was lost or refused; reconnecting. The text says why.
    Down(String),
}

impl LinkState {
    /// `true` while connected.
    pub fn is_up(&self) -> bool {
        matches!(self, LinkState::Connected)
    }
}

/// Why a NATS URL cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// The URL is not a NATS URL (`nats://[token@]host:port`).
    #[error("TINY_NATS_URL `{url}` is not a NATS URL: {reason}")]
    Url {
        /// The URL, its credentials masked.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// An nkey seed or `.creds` file that cannot be used; the seed itself is never
    /// in the message.
    #[error("{what}: {reason}")]
    Credentials {
        /// Where the credentials came from: the variable, or the file's path.
        what: String,
        /// What is wrong with them.
        reason: CredentialsProblem,
    },
    /// The URL carries a token or a user beside an nkey or `.creds` file: one way of
    /// saying who the module is, not two the broker would choose between.
    #[error("TINY_NATS_URL `{url}` carries credentials beside an nkey or a .creds file: give one of them")]
    TwoCredentials {
        /// The URL, its credentials masked.
        url: String,
    },
    /// The client could not be made.
    #[error("connecting to {url}: {source}")]
    Connect {
        /// The URL, its credentials masked.
        url: String,
        /// Why.
        #[source]
        source: async_nats::ConnectError,
    },
}

/// What is wrong with an nkey seed or a `.creds` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CredentialsProblem {
    /// The file could not be read.
    #[error("cannot be read")]
    Unreadable,
    /// Empty, or only white space.
    #[error("is empty")]
    Empty,
    /// Not an nkey seed (`SU...`, as `nk -gen user` or the `nkeys` crate writes one).
    #[error("is not an nkey seed (a user seed starts with `SU`)")]
    NotASeed,
    /// A seed, but of an operator, account or server, not of a user.
    #[error("is the seed of an operator, account or server key, not of a user (`SU...`)")]
    NotAUserSeed,
    /// Not a `.creds` file: no user JWT and nkey seed between their `-----BEGIN` lines.
    #[error("is not a .creds file (a user JWT and its nkey seed, as `nsc` writes them)")]
    NotCreds,
}

/// How the module proves to the broker who it is, beside what the URL carries: an
/// nkey of its own (the broker knows its public key and gives it subject permissions)
/// or a `.creds` file (a user JWT and its seed, for a broker in operator mode). The
/// seed stays in memory only: `Debug` shows which kind and the public key, never the
/// seed.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Credentials {
    /// What the URL carries (a token, a user and password), or nothing.
    #[default]
    Url,
    /// An nkey user seed (`SU...`).
    Nkey {
        /// The seed.
        seed: String,
        /// Its public key (`U...`), the name the broker knows it by.
        public: String,
    },
    /// The text of a `.creds` file.
    Creds {
        /// The text (a JWT and a seed).
        text: String,
        /// Where it was read, for messages.
        path: String,
    },
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::Url => f.write_str("Credentials::Url"),
            Credentials::Nkey { public, .. } => f
                .debug_struct("Credentials::Nkey")
                .field("public", public)
                .finish_non_exhaustive(),
            Credentials::Creds { path, .. } => f
                .debug_struct("Credentials::Creds")
                .field("path", path)
                .finish_non_exhaustive(),
        }
    }
}

impl Credentials {
    /// An nkey user seed given in `what` (a variable's name, for messages), checked
    /// now: a bad seed is an error naming `what`, not a connection that never comes up.
    pub fn nkey(what: &str, seed: &str) -> Result<Self, LinkError> {
        let problem = |reason| LinkError::Credentials {
            what: what.to_owned(),
            reason,
        };
        let seed = seed.trim();
        if seed.is_empty() {
            return Err(problem(CredentialsProblem::Empty));
        }
        let pair = nkeys::KeyPair::from_seed(seed).map_err(|_| problem(CredentialsProblem::NotASeed))?;
        if pair.key_pair_type() != nkeys::KeyPairType::User {
            return Err(problem(CredentialsProblem::NotAUserSeed));
        }
        Ok(Credentials::Nkey {
            seed: seed.to_owned(),
            public: pair.public_key(),
        })
    }

    /// An nkey user seed read from the file at `path` (a mounted Secret).
    pub fn nkey_file(path: &std::path::Path) -> Result<Self, LinkError> {
        let what = format!("the nkey seed file {}", path.display());
        let text = std::fs::read_to_string(path).map_err(|_| LinkError::Credentials {
            what: what.clone(),
            reason: CredentialsProblem::Unreadable,
        })?;
        Self::nkey(&what, &text)
    }

    /// The `.creds` file at `path` (a user JWT and its seed), read and checked now.
    pub fn creds_file(path: &std::path::Path) -> Result<Self, LinkError> {
        let shown = path.display().to_string();
        let problem = |reason| LinkError::Credentials {
            what: format!("the .creds file {shown}"),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|_| problem(CredentialsProblem::Unreadable))?;
        if text.trim().is_empty() {
            return Err(problem(CredentialsProblem::Empty));
        }
        // The client's own reading, so that what is checked is what will be sent.
        ConnectOptions::new()
            .credentials(&text)
            .map_err(|_| problem(CredentialsProblem::NotCreds))?;
        Ok(Credentials::Creds { text, path: shown })
    }

    /// `true` unless the URL alone says who the module is.
    pub fn is_own(&self) -> bool {
        !matches!(self, Credentials::Url)
    }
}

/// A connection to the broker that reconnects by itself.
#[derive(Clone)]
pub struct Link {
    client: Client,
    url: std::sync::Arc<str>,
    state: watch::Receiver<LinkState>,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("url", &self.url)
            .field("state", &*self.state.borrow())
            .finish()
    }
}

/// The servers and credentials of a NATS URL (a comma-separated list, as Go takes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// `nats://host:port` each, without credentials.
    pub servers: Vec<String>,
    /// A token (`nats://<token>@host`).
    pub token: Option<String>,
    /// A user and password (`nats://user:pass@host`).
    pub user: Option<(String, String)>,
    /// The URL for logs and conditions, credentials masked.
    pub shown: String,
}

/// Reads `url`: servers, and credentials from the first server that has them.
pub(crate) fn parse_url(url: &str) -> Result<Target, LinkError> {
    let mut target = Target {
        servers: Vec::new(),
        token: None,
        user: None,
        shown: String::new(),
    };
    let mut shown = Vec::new();
    for part in url.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (scheme, rest) = match part.split_once("://") {
            Some((s, r)) => (s, r),
            None => ("nats", part),
        };
        // The authority ends where a path, query or fragment begins; Go's client ignores
        // those (`nats://host:4222/` works).
        let rest = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let (userinfo, host) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let masked = userinfo.map_or(String::new(), |_| "***@".to_owned());
        shown.push(format!("{scheme}://{masked}{host}"));
        if host.is_empty() {
            return Err(LinkError::Url {
                url: shown.join(","),
                reason: format!("`{scheme}://{masked}{host}` has no host:port"),
            });
        }
        match userinfo {
            Some(u) if target.token.is_none() && target.user.is_none() => match u.split_once(':') {
                Some((user, pass)) => target.user = Some((decode(user), decode(pass))),
                None => target.token = Some(decode(u)),
            },
            _ => {}
        }
        target.servers.push(format!("{scheme}://{host}"));
    }
    target.shown = shown.join(",");
    if target.servers.is_empty() {
        return Err(LinkError::Url {
            url: url.to_owned(),
            reason: "no server in it".to_owned(),
        });
    }
    Ok(target)
}

/// `url` with `token` as the user info of each of its servers (any user info it had
/// replaced), percent-encoded: a token from a Secret may hold `/`, `@` or `:`, which
/// written raw into a URL would end its authority early (and show part of the token
/// where the URL is logged masked).
///
/// ```
/// use tiny_runtime::nats::with_token;
/// assert_eq!(
///     with_token("tls://old@nats-a:4222,nats-b:4222", "a/b@c"),
///     "tls://a%2Fb%40c@nats-a:4222,nats://a%2Fb%40c@nats-b:4222"
/// );
/// ```
pub fn with_token(url: &str, token: &str) -> String {
    with_userinfo(url, &encode(token))
}

/// `url` with `user` and `password` as the user info of each of its servers (any user
/// info it had replaced), each percent-encoded as [`with_token`] does: the module's own
/// NATS user (`TINY_NATS_USER`, `TINY_NATS_PASSWORD`), which the broker gives subject
/// permissions of its own.
///
/// ```
/// use tiny_runtime::nats::with_user;
/// assert_eq!(with_user("nats://nats:4222", "a-v0", "p:w@d"), "nats://a-v0:p%3Aw%40d@nats:4222");
/// ```
pub fn with_user(url: &str, user: &str, password: &str) -> String {
    with_userinfo(url, &format!("{}:{}", encode(user), encode(password)))
}

/// Percent-encoding of everything but URL-safe characters.
fn encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(b));
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    encoded
}

/// `url` with `encoded` as the user info of each server.
fn with_userinfo(url: &str, encoded: &str) -> String {
    url.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|part| {
            let (scheme, rest) = part.split_once("://").unwrap_or(("nats", part));
            let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
            format!("{scheme}://{encoded}@{host}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The inbox prefix of module `module` (its sanitised name): `_INBOX.<module>`.
pub fn inbox_prefix(module: &str) -> String {
    format!("_INBOX.{module}")
}

/// Percent-decoding of URL user info (a token with `@` or `:` must be escaped).
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Link {
    /// Starts connecting to `url` and returns at once: the client buffers what is
    /// sent and subscribed until the broker answers. [`wait_up`](Self::wait_up)
    /// waits for the first connection.
    pub async fn connect(url: &str) -> Result<Link, LinkError> {
        Self::connect_with(url, None, &Credentials::Url).await
    }

    /// [`connect`](Self::connect) for module `module`: its reply inboxes are
    /// `_INBOX.<module>.>`, so that a broker can let each module subscribe to its own
    /// inboxes only (a module that could subscribe to `_INBOX.>` would read every other
    /// module's answers). The inbox is opaque to whoever answers: the wire is Go's.
    pub async fn connect_as(url: &str, module: &str) -> Result<Link, LinkError> {
        Self::connect_with(url, Some(inbox_prefix(module)), &Credentials::Url).await
    }

    /// [`connect`](Self::connect), or [`connect_as`](Self::connect_as) when `module`
    /// is given, proving who it is with `credentials` (an nkey or a `.creds` file);
    /// the URL must then carry no token or user of its own.
    pub async fn connect_with_credentials(
        url: &str,
        module: Option<&str>,
        credentials: &Credentials,
    ) -> Result<Link, LinkError> {
        Self::connect_with(url, module.map(inbox_prefix), credentials).await
    }

    async fn connect_with(url: &str, inbox: Option<String>, credentials: &Credentials) -> Result<Link, LinkError> {
        let target = parse_url(url)?;
        if credentials.is_own() && (target.token.is_some() || target.user.is_some()) {
            return Err(LinkError::TwoCredentials { url: target.shown });
        }
        let (tx, state) = watch::channel(LinkState::Connecting);
        let mut opts = ConnectOptions::new()
            .name("tiny-module")
            .connection_timeout(CONNECT_TIMEOUT)
            .reconnect_delay_callback(|attempts| if attempts <= 1 { Duration::ZERO } else { RECONNECT_WAIT })
            .max_reconnects(None)
            .retry_on_initial_connect()
            // Each hop has its own deadline (the edge's or the default 5 min).
            .request_timeout(None)
            .event_callback(move |event| {
                let tx = tx.clone();
                async move { on_event(&tx, event) }
            });
        if let Some(prefix) = inbox {
            opts = opts.custom_inbox_prefix(prefix);
        }
        if let Some(token) = target.token.clone() {
            opts = opts.token(token);
        }
        if let Some((user, pass)) = target.user.clone() {
            opts = opts.user_and_password(user, pass);
        }
        match credentials {
            Credentials::Url => {}
            Credentials::Nkey { seed, .. } => opts = opts.nkey(seed.clone()),
            Credentials::Creds { text, path } => {
                opts = opts.credentials(text).map_err(|_| LinkError::Credentials {
                    what: format!("the .creds file {path}"),
                    reason: CredentialsProblem::NotCreds,
                })?;
            }
        }
        let servers: Vec<async_nats::ServerAddr> = target
            .servers
            .iter()
            .map(|s| {
                s.parse().map_err(|e: std::io::Error| LinkError::Url {
                    url: target.shown.clone(),
                    reason: e.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        let client = opts.connect(servers).await.map_err(|source| LinkError::Connect {
            url: target.shown.clone(),
            source,
        })?;
        Ok(Link {
            client,
            url: target.shown.into(),
            state,
        })
    }

    /// The client, for subscribing and sending.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The URL, credentials masked.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether the broker answers now, and a receiver that sees it change.
    pub fn state(&self) -> watch::Receiver<LinkState> {
        self.state.clone()
    }

    /// `true` while connected.
    pub fn is_up(&self) -> bool {
        self.state.borrow().is_up()
    }

    /// Waits up to `limit` for the connection; `true` once connected.
    pub async fn wait_up(&self, limit: Duration) -> bool {
        let mut state = self.state.clone();
        tokio::time::timeout(limit, state.wait_for(LinkState::is_up))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// Whether a `Down` came from closing the client (this process's own doing).
enum Closing {
    Closed,
    Lost,
}

/// Counts a message dropped because the module took its messages too slowly (the
/// in-flight cap held them back until the subscription's buffer filled); logged at
/// the 1st, 2nd, 4th, 8th... drop, so that a flood does not flood the log too.
fn slow_consumer(why: std::fmt::Arguments<'_>) {
    crate::metrics::slow_consumer_drop();
    let total = crate::metrics::slow_consumer_drops();
    if total.is_power_of_two() {
        tracing::warn!(dropped = total, "NATS slow consumer: a message was dropped ({why})");
    }
}

fn on_event(tx: &watch::Sender<LinkState>, event: Event) {
    let event_kind = if matches!(event, Event::Closed) {
        Closing::Closed
    } else {
        Closing::Lost
    };
    let next = match event {
        Event::Connected => LinkState::Connected,
        Event::Disconnected => LinkState::Down("disconnected from the broker".to_owned()),
        Event::Closed => LinkState::Down("the connection was closed".to_owned()),
        Event::ClientError(e) => {
            tracing::debug!(error = %e, "NATS client error");
            return;
        }
        Event::SlowConsumer(sid) => {
            slow_consumer(format_args!("the client's buffer of subscription {sid} was full"));
            return;
        }
        Event::ServerError(async_nats::ServerError::SlowConsumer(sid)) => {
            slow_consumer(format_args!("the broker dropped messages for subscription {sid}"));
            return;
        }
        Event::ServerError(e) => {
            tracing::warn!(error = %e, "NATS server error");
            return;
        }
        other => {
            tracing::debug!(event = %other, "NATS");
            return;
        }
    };
    tx.send_if_modified(|s| {
        let changed = *s != next;
        if changed {
            // Only a change worth a person's attention is logged above debug: the first
            // connection is what was asked for (a command-line `send` prints nothing
            // else), and a close is this process's own (its shutdown, a `send` done;
            // the client reconnects for ever otherwise).
            match (&*s, &next) {
                (LinkState::Down(_), LinkState::Connected) => tracing::info!("NATS reconnected"),
                (_, LinkState::Connected) => tracing::debug!("NATS connected"),
                (_, LinkState::Down(why)) if matches!(event_kind, Closing::Closed) => {
                    tracing::debug!(why = %why, "NATS connection closed");
                }
                (_, LinkState::Down(why)) => {
                    tracing::warn!(why = %why, "NATS connection lost; reconnecting every 2 s");
                }
                (_, LinkState::Connecting) => {}
            }
            *s = next;
        }
        changed
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_charts_token_url_gives_a_token_and_a_masked_url() {
        let t = parse_url("nats://s3cr3t@tinysystems-nats.tinysystems.svc:4222").unwrap();
        assert_eq!(t.servers, ["nats://tinysystems-nats.tinysystems.svc:4222"]);
        assert_eq!(t.token.as_deref(), Some("s3cr3t"));
        assert_eq!(t.shown, "nats://***@tinysystems-nats.tinysystems.svc:4222");
    }

    #[test]
    fn user_and_password_lists_and_escapes() {
        let t = parse_url("nats://a%40b:p%3Aw@h1:4222, h2:4223").unwrap();
        assert_eq!(t.user, Some(("a@b".to_owned(), "p:w".to_owned())));
        assert_eq!(t.servers, ["nats://h1:4222", "nats://h2:4223"]);
        assert!(!t.shown.contains("p:w") && !t.shown.contains("a@b"), "{}", t.shown);
    }

    #[test]
    fn bad_urls_say_what_is_wrong_without_the_secret() {
        let e = parse_url("nats://tok@").unwrap_err().to_string();
        assert!(e.contains("has no host:port") && !e.contains("tok"), "{e}");
        assert!(parse_url(" , ").is_err());
        assert!(parse_url("nats:///path").is_err());
    }

    #[test]
    fn an_nkey_seed_is_checked_and_never_shown() {
        let user = nkeys::KeyPair::new_user();
        let seed = user.seed().unwrap();
        let c = Credentials::nkey("TINY_NATS_NKEY_SEED", &format!(" {seed}\n")).unwrap();
        let shown = format!("{c:?}");
        assert!(shown.contains(&user.public_key()) && !shown.contains(&seed), "{shown}");
        let e = Credentials::nkey("TINY_NATS_NKEY_SEED", "SUnotaseed").unwrap_err();
        assert!(matches!(
            &e,
            LinkError::Credentials {
                reason: CredentialsProblem::NotASeed,
                ..
            }
        ));
        assert!(e.to_string().starts_with("TINY_NATS_NKEY_SEED: ") && !e.to_string().contains("SUnotaseed"));
        let account = nkeys::KeyPair::new_account().seed().unwrap();
        let e = Credentials::nkey("X", &account).unwrap_err();
        assert!(matches!(
            e,
            LinkError::Credentials {
                reason: CredentialsProblem::NotAUserSeed,
                ..
            }
        ));
    }

    #[test]
    fn a_creds_file_that_is_not_one_is_refused_naming_it() {
        let dir = std::env::temp_dir().join(format!("tiny-creds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("module.creds");
        std::fs::write(&path, "SUsomething that is no creds file").unwrap();
        let e = Credentials::creds_file(&path).unwrap_err();
        assert!(matches!(
            e,
            LinkError::Credentials {
                reason: CredentialsProblem::NotCreds,
                ..
            }
        ));
        assert!(
            e.to_string().contains("module.creds") && !e.to_string().contains("SUsomething"),
            "{e}"
        );
        let e = Credentials::creds_file(&dir.join("missing.creds")).unwrap_err();
        assert!(matches!(
            e,
            LinkError::Credentials {
                reason: CredentialsProblem::Unreadable,
                ..
            }
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn an_nkey_beside_a_token_in_the_url_is_refused() {
        let seed = nkeys::KeyPair::new_user().seed().unwrap();
        let c = Credentials::nkey("TINY_NATS_NKEY_SEED", &seed).unwrap();
        let e = Link::connect_with_credentials("nats://tok@127.0.0.1:1", None, &c)
            .await
            .unwrap_err();
        assert!(matches!(e, LinkError::TwoCredentials { .. }), "{e}");
        assert!(!e.to_string().contains("tok@"), "{e}");
    }

    #[test]
    fn a_path_after_the_host_is_ignored_as_go_does() {
        let t = parse_url("tls://tok@broker:4222/?x=1").unwrap();
        assert_eq!(t.servers, ["tls://broker:4222"]);
        assert_eq!(t.token.as_deref(), Some("tok"));
    }
}

//! `http_auth_parse`: Basic credentials out of a header list.

use base64::Engine as _;
use serde_json::Value;
use tiny_sdk::prelude::*;

use crate::headers::Header;

/// What `in` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct AuthParseIn {
    /// Arbitrary message to be sent further.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// HTTP headers list.
    #[tiny(title = "Headers")]
    #[serde(default)]
    pub headers: Vec<Header>,
}

/// What `out` sends, found or not.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct AuthParseOut {
    #[serde(default)]
    pub context: Value,
    /// Whether an `Authorization: Basic` header with a `user:password` pair was found.
    pub found: bool,
    pub user: String,
    pub password: String,
}

/// Extracts Basic Auth credentials from HTTP headers: always emits
/// `{context, found, user, password}`.
#[derive(Component, Default, Debug)]
#[component(
    name = "http_auth_parse",
    description = "Basic Auth Headers Parser",
    info = "Extracts Basic Auth credentials from HTTP headers. Out always emits {context, found, user, password}: found is true with the decoded user and password when an Authorization header with the Basic scheme holds one.",
    tags("HTTP", "Auth"),
    // Pure: a fresh instance answers from the call alone.
    agent_tool()
)]
pub struct HttpAuthParse {
    #[port(label = "In", position = Left)]
    r#in: Input<AuthParseIn>,
    #[port(label = "Out", position = Right)]
    out: Output<AuthParseOut>,
}

/// The `(user, password)` of a Basic `Authorization` value, if it holds one.
///
/// The pair splits at the first colon (RFC 7617: a user id holds none, a password
/// may); Go's split keeps only the text up to a second colon of the password.
pub fn basic_credentials(value: &str) -> Option<(String, String)> {
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded).ok()?;
    let text = String::from_utf8_lossy(&decoded);
    let (user, password) = text.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

#[handlers]
impl HttpAuthParse {
    async fn on_in(&self, ctx: &Ctx<Self>, msg: AuthParseIn) -> Result<Reply> {
        // The first Authorization header that decodes wins; the others are skipped,
        // as in Go.
        let found = msg
            .headers
            .iter()
            .filter(|h| h.key.eq_ignore_ascii_case("authorization"))
            .find_map(|h| basic_credentials(&h.value));
        let out = match found {
            Some((user, password)) => AuthParseOut {
                context: msg.context,
                found: true,
                user,
                password,
            },
            None => AuthParseOut {
                context: msg.context,
                ..AuthParseOut::default()
            },
        };
        self.out.emit(ctx, out).await
    }
}

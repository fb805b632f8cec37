//! What `promql_query` and `logql_query` share: the settings of a query API, the
//! request's credentials, one call with a deadline, and Go's failure classes.

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::{Method, Request as HttpReq, header};
use serde_json::Value;
use tiny_sdk::prelude::*;

use crate::headers::Header;

/// The largest answer read, in bytes: a careless query must not fill the memory.
const MAX_BODY: usize = 32 * 1024 * 1024;

/// Settings of a query API, as Go's promql and logql components take them.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct QuerySettings {
    /// Root of the API; the API's own path is appended.
    #[tiny(title = "Base URL")]
    #[serde(rename = "baseURL")]
    pub base_url: String,
    /// Tenant header for multi-tenant backends (Mimir, Grafana Cloud, Cortex); empty
    /// for a single tenant.
    #[tiny(title = "Tenant (X-Scope-OrgID)")]
    #[serde(rename = "orgID", default, skip_serializing_if = "String::is_empty")]
    pub org_id: String,
    /// Sent with every request, for backends that authenticate with a custom header.
    #[tiny(title = "Extra Headers")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    #[tiny(title = "Timeout (seconds)")]
    pub timeout_seconds: i64,
    /// Emit failures on the error port instead of failing the flow.
    #[tiny(title = "Enable Error Port")]
    #[serde(default)]
    pub enable_error_port: bool,
}

impl Default for QuerySettings {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            org_id: String::new(),
            headers: Vec::new(),
            timeout_seconds: 30,
            enable_error_port: false,
        }
    }
}

impl QuerySettings {
    /// Go's check of the base URL, made when the settings are applied.
    pub fn check(&self) -> Result<()> {
        let base = self.base_url.trim();
        if base.is_empty() {
            return Err(Error::permanent("settings: baseURL is required"));
        }
        if !base.starts_with("http://") && !base.starts_with("https://") {
            return Err(Error::permanent(format!(
                "settings: baseURL must be http:// or https://, got {base:?}"
            )));
        }
        Ok(())
    }

    /// `path` under the base URL.
    pub fn endpoint(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim().trim_end_matches('/'))
    }
}

/// The credentials a request carries (from the widget a person fills, not the flow).
pub struct Credentials<'a> {
    /// A bearer token, or the basic-auth password when `username` is set.
    pub token: &'a str,
    /// The basic-auth user; empty for a bearer token.
    pub username: &'a str,
}

impl std::fmt::Debug for Credentials<'_> {
    /// The token never shows in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("token", &if self.token.is_empty() { "" } else { "<redacted>" })
            .field("username", &self.username)
            .finish()
    }
}

/// Sends one request and returns the body of a successful answer.
///
/// A network failure, a timeout, 429 and 5xx are transient (a retry may help); other
/// statuses of 400 and above are permanent. `what` names the API in errors
/// (`metrics API`, `loki`), as Go's messages do. The answer (status and body) is
/// kept through [`Ctx::outside`], named after `what` (`metrics-API`, `loki`).
pub async fn call<C: Component>(
    ctx: &Ctx<C>,
    settings: &QuerySettings,
    method: Method,
    url: &str,
    form: Option<String>,
    creds: &Credentials<'_>,
    what: &str,
) -> Result<Bytes> {
    let mut req = HttpReq::builder().method(method).uri(url);
    if form.is_some() {
        req = req.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    }
    if !creds.token.is_empty() {
        let value = if creds.username.is_empty() {
            format!("Bearer {}", creds.token)
        } else {
            let pair = format!("{}:{}", creds.username, creds.token);
            format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
        };
        req = req.header(header::AUTHORIZATION, value);
    }
    if !settings.org_id.is_empty() {
        req = req.header("X-Scope-OrgID", &settings.org_id);
    }
    for h in settings.headers.iter().filter(|h| !h.key.is_empty()) {
        req = req.header(h.key.as_str(), h.value.as_str());
    }
    let req = req
        .body(Full::new(Bytes::from(form.unwrap_or_default())))
        .map_err(|e| Error::permanent(format!("{what}: invalid request to {url:?}: {e}")))?;
    let timeout = Duration::from_secs(
        u64::try_from(settings.timeout_seconds)
            .ok()
            .filter(|s| *s > 0)
            .unwrap_or(30),
    );
    let client = crate::client::client()?;
    let answer = async {
        let response = client
            .request(req)
            .await
            .map_err(|e| Error::transient(format!("query {url}: {e}")))?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| Error::transient(format!("read response: {e}")))?
            .to_bytes();
        // The API answers JSON: text keeps the recorded answer readable.
        Ok::<_, Error>((status, String::from_utf8_lossy(&body).into_owned()))
    };
    let answer = async {
        tokio::time::timeout(timeout, answer)
            .await
            .map_err(|_| Error::transient(format!("query {url}: no answer within {} s", timeout.as_secs())))?
    };
    // Kept as an outside call (a ledger key has no spaces): a replay, or a step
    // delivered again, gets the answer without asking the API again.
    let (status, body) = ctx.outside(&what.replace(' ', "-"), answer).await?;
    if status >= 400 {
        let text: String = body.trim().chars().take(400).collect();
        let message = format!("{what} {status}: {text}");
        return Err(if status == 429 || status >= 500 {
            Error::transient(message)
        } else {
            Error::permanent(message)
        });
    }
    Ok(Bytes::from(body))
}

/// An error-port message (`{context, error, retryable}`, the SDK's shape) for `err`.
pub fn error_message(context: Value, err: &Error) -> ErrorMessage {
    ErrorMessage::new(&serde_json::json!({ "context": context }), err)
}

/// Now, in Unix nanoseconds.
pub fn now_nanos() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

/// Unix seconds as RFC 3339 in UTC, seconds precision (Go's `time.RFC3339`).
pub fn rfc3339(seconds: i64) -> String {
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil, in the proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

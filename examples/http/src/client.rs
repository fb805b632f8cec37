//! `http_request`: the HTTP client component.

use std::{sync::OnceLock, time::Duration};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::{Method, Request as HttpReq, StatusCode, Uri, header};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use serde_json::Value;
use tiny_sdk::prelude::*;

use crate::{
    address::{self, Reach},
    headers::{Header, canonical, to_list},
};

/// Settings, as Go's client.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct ClientSettings {
    /// On a failure, and on a response with status 400 or above, emit on Error
    /// instead of failing the message.
    #[tiny(title = "Enable Error Port")]
    #[serde(default)]
    pub enable_error_port: bool,
    /// A larger response body fails the request.
    #[tiny(title = "Max Response Bytes")]
    #[serde(default = "default_max")]
    pub max_response_bytes: i64,
    /// Off (default): a request to a link-local or cloud metadata address
    /// (`169.254.0.0/16`, `fe80::/10`, `169.254.169.254`) is refused, and so is a
    /// redirect there or, from a public address, into the cluster's internal network
    /// (loopback, private, `100.64.0.0/10`, `fc00::/7`). On: anything is reached.
    #[tiny(title = "Allow Internal Addresses")]
    #[serde(default)]
    pub allow_internal_addresses: bool,
}

fn default_max() -> i64 {
    10 * 1024 * 1024
}

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            enable_error_port: false,
            max_response_bytes: default_max(),
            allow_internal_addresses: false,
        }
    }
}

/// What `request` takes. Fields left out keep the port's defaults (`GET`, 10 s,
/// `application/json`), on purpose: Go decodes into zero values, so a request without
/// a `timeout` fails at once there, and one without a `contentType` sends none. (The
/// editor fills every field from the port's default, so a flow built there is the
/// same on both.)
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct ClientRequest {
    /// Message to be sent further.
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
    #[tiny(
        title = "Method",
        enum("GET", "POST", "PATCH", "PUT", "DELETE"),
        col_span = "col-span-6"
    )]
    pub method: String,
    /// Seconds; 0 fails at once.
    #[tiny(title = "Request Timeout", col_span = "col-span-6")]
    pub timeout: i64,
    #[tiny(title = "URL", format = "uri")]
    pub url: String,
    /// `Authorization: Bearer`; beats basic auth; an explicit header beats both.
    #[tiny(title = "Bearer Token", format = "password", secret)]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub bearer_token: String,
    #[tiny(title = "Basic Auth User", col_span = "col-span-6")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub basic_auth_user: String,
    #[tiny(title = "Basic Auth Password", format = "password", col_span = "col-span-6", secret)]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub basic_auth_password: String,
    #[tiny(title = "Headers")]
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    #[tiny(
        title = "Request Content Type",
        enum(
            "application/json",
            "application/xml",
            "text/xml",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "text/html",
            "text/plain"
        )
    )]
    pub content_type: String,
    #[tiny(title = "Request Body", format = "textarea")]
    pub body: String,
}

impl Default for ClientRequest {
    fn default() -> Self {
        Self {
            context: Value::Null,
            method: "GET".into(),
            timeout: 10,
            url: String::new(),
            bearer_token: String::new(),
            basic_auth_user: String::new(),
            basic_auth_password: String::new(),
            headers: Vec::new(),
            content_type: "application/json".into(),
            body: String::new(),
        }
    }
}

/// The HTTP response.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct HttpResponse {
    #[tiny(title = "Headers")]
    #[serde(default)]
    pub headers: Vec<Header>,
    /// e.g. `200 OK`.
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub status_code: u16,
    #[tiny(title = "Body")]
    #[serde(default)]
    pub body: String,
}

/// What `response` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct ClientResponse {
    /// Message to be sent further.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// HTTP Response.
    #[tiny(title = "Response")]
    pub response: HttpResponse,
}

/// What `error` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct ClientError {
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    pub error: String,
    /// True for network failures, 429 and 5xx; false for other 4xx.
    pub retryable: bool,
    #[serde(default)]
    pub response: HttpResponse,
}

/// HTTP client: sends the request, waits for the answer; a status below 400 goes on
/// Response, a failure or a status of 400 and above fails the message (retryable for
/// network failures, 429 and 5xx) or, with the error port on, goes to Error.
#[derive(Component, Default, Debug)]
#[component(
    name = "http_request",
    description = "HTTP Client",
    tags("HTTP", "Client"),
    settings = ClientSettings,
    // A one-shot call, Go's own example of a tool; the defaults cap the body.
    agent_tool(input = "request", output = "response")
)]
pub struct HttpRequest {
    #[port(position = Left)]
    request: Input<ClientRequest>,
    #[port(position = Right)]
    response: Output<ClientResponse>,
    #[port(position = Bottom, enabled_by = enable_error_port)]
    error: Output<ClientError>,
}

type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// One connection pool for the module (keep-alive across messages and nodes).
pub(crate) fn client() -> std::result::Result<&'static Client<Https, Full<Bytes>>, Error> {
    static CLIENT: OnceLock<std::result::Result<Client<Https, Full<Bytes>>, String>> = OnceLock::new();
    let made = CLIENT.get_or_init(|| {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(provider)
            .map_err(|e| format!("TLS setup: {e}"))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Client::builder(TokioExecutor::new()).build(https))
    });
    made.as_ref().map_err(|e| Error::permanent(e.clone()))
}

/// The code of a request refused by the address guard (see [`crate::address`]).
pub const FORBIDDEN_ADDRESS: &str = "FORBIDDEN_ADDRESS";

type Guarded = hyper_rustls::HttpsConnector<HttpConnector<address::Guarded>>;

/// `http_request`'s connection pools, one for each [`Reach`]: a connection one made
/// is never reused by a hop the other may not make.
fn guarded(reach: Reach) -> std::result::Result<&'static Client<Guarded, Full<Bytes>>, Error> {
    type Made = std::result::Result<Client<Guarded, Full<Bytes>>, String>;
    static POOLS: [OnceLock<Made>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match reach {
        Reach::All => &POOLS[0],
        Reach::NoLinkLocal => &POOLS[1],
        Reach::PublicOnly => &POOLS[2],
    };
    let made = slot.get_or_init(|| {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let mut http = HttpConnector::new_with_resolver(address::Guarded(reach));
        // The TLS layer over it speaks `https`.
        http.enforce_http(false);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(provider)
            .map_err(|e| format!("TLS setup: {e}"))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        Ok(Client::builder(TokioExecutor::new()).build(https))
    });
    made.as_ref().map_err(|e| Error::permanent(e.clone()))
}

/// A hop's target checked against `reach` when it is a literal address (a name is
/// checked by the resolver, on what it resolves to).
fn check_literal(reach: Reach, uri: &Uri) -> Result<()> {
    let host = uri.host().unwrap_or_default();
    match host.trim_start_matches('[').trim_end_matches(']').parse() {
        Ok(ip) => reach.check(host, ip).map_err(refused),
        Err(_) => Ok(()),
    }
}

/// The failure of a request the guard refused.
fn refused(r: address::Refused) -> Error {
    Error::permanent(r.to_string()).with_code(FORBIDDEN_ADDRESS)
}

/// A failed request: what went wrong, whether a retry may help, the response if any.
struct Failure {
    error: Error,
    response: HttpResponse,
}

#[handlers]
impl HttpRequest {
    async fn on_request(&self, ctx: &Ctx<Self>, req: ClientRequest) -> Result<Reply> {
        let context = req.context.clone();
        // The answer (any status) is kept as an outside call: a replay, or a step
        // delivered again, gets it without sending the request again.
        let sent = ctx
            .outside("http", fetch(&req, ctx.settings()))
            .await
            .map_err(|error| Failure {
                error,
                response: HttpResponse::default(),
            })
            .and_then(judge);
        match sent {
            Ok(response) => self.response.emit(ctx, ClientResponse { context, response }).await,
            Err(f) if ctx.settings().enable_error_port => {
                let msg = ClientError {
                    context,
                    error: f.error.message().to_owned(),
                    retryable: f.error.kind() == tiny_sdk::ErrorKind::Transient,
                    response: f.response,
                };
                self.error.emit(ctx, msg).await
            }
            Err(f) => Err(f.error),
        }
    }
}

/// Redirects followed, as Go's client does.
const MAX_REDIRECTS: usize = 10;

/// A response of 400 and above as the failure it is (transient for 429 and 5xx).
fn judge(out: HttpResponse) -> std::result::Result<HttpResponse, Failure> {
    if out.status_code < 400 {
        return Ok(out);
    }
    let text = if out.body.is_empty() {
        out.status.clone()
    } else {
        out.body.clone()
    };
    let error = if out.status_code == 429 || out.status_code >= 500 {
        Error::transient(text)
    } else {
        Error::permanent(text)
    };
    Err(Failure {
        error: error.with_code(out.status_code.to_string()),
        response: out,
    })
}

/// Sends the request, following redirects, to its final response whatever its
/// status; `Err` only when no response came (or the body broke its cap).
async fn fetch(req: &ClientRequest, settings: &ClientSettings) -> Result<HttpResponse> {
    let timeout = Duration::from_secs(u64::try_from(req.timeout).unwrap_or(0));
    let method = Method::from_bytes(req.method.to_uppercase().as_bytes())
        .map_err(|_| Error::permanent(format!("invalid method {:?}", req.method)))?;
    let req_uri: Uri = req
        .url
        .parse()
        .map_err(|e| Error::permanent(format!("invalid URL {:?}: {e}", req.url)))?;
    let mut uri = req_uri.clone();
    let limit = usize::try_from(settings.max_response_bytes)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(10 * 1024 * 1024);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut method = method;
    let mut body = Bytes::from(req.body.clone());
    // What a redirect keeps, as Go's client: see `Redirect`.
    let mut hop = Redirect::default();
    // What the first target is, once a redirect asks: a redirect from a public
    // address may not lead into the cluster.
    let mut first = None;
    for redirects in 0..=MAX_REDIRECTS {
        let redirected = redirects > 0;
        if redirected && first.is_none() {
            first = Some(address::class_of_host(req_uri.host().unwrap_or_default()).await);
        }
        let reach = Reach::of_hop(settings.allow_internal_addresses, redirected, first.flatten());
        check_literal(reach, &uri)?;
        let client = guarded(reach)?;
        let http = build(req, &method, &uri, body.clone(), &hop)?;
        let response = tokio::time::timeout_at(deadline, client.request(http))
            .await
            .map_err(|_| Error::transient(format!("{} {uri}: timed out after {timeout:?}", method)))?
            .map_err(|e| match address::refusal(&e) {
                Some(r) => refused(r.clone()),
                None => Error::transient(format!("{} {uri}: {e}", method)),
            })?;
        let status = response.status();
        // As Go's client: 301, 302 and 303 go on without the body, as a GET (a HEAD
        // stays a HEAD); 307 and 308 repeat the request as it was; any other status
        // (300, 304) is the answer.
        let rewrite = matches!(
            status,
            StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER
        );
        let redirect = rewrite || matches!(status, StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT);
        if redirect && let Some(next) = location(&uri, response.headers()) {
            if rewrite {
                if method != Method::HEAD {
                    method = Method::GET;
                }
                body = Bytes::new();
            }
            hop = hop.to(&req_uri, &uri, &next);
            uri = next;
            continue;
        }
        let headers = to_list(response.headers());
        let collected = tokio::time::timeout_at(deadline, Limited::new(response.into_body(), limit).collect())
            .await
            .map_err(|_| Error::transient(format!("{method} {uri}: timed out reading the body")))?;
        let bytes = match collected {
            Ok(b) => b.to_bytes(),
            Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
                return Err(Error::permanent(format!(
                    "response body exceeds the {limit} byte cap (maxResponseBytes setting)"
                )));
            }
            Err(e) => return Err(Error::transient(format!("{method} {uri}: reading the body: {e}"))),
        };
        let out = HttpResponse {
            headers,
            status: format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or_default()),
            status_code: status.as_u16(),
            body: String::from_utf8_lossy(&bytes).into_owned(),
        };
        return Ok(out);
    }
    Err(Error::permanent(format!(
        "{}: more than {MAX_REDIRECTS} redirects",
        req.url
    )))
}

/// What a redirected request keeps of the first one's headers, as Go's client: the
/// credentials (`Authorization`, cookies and their kin) only while every hop stays on the
/// first host or its subdomains (once dropped, they stay dropped); and a `Referer`
/// naming the page that redirected, unless that was HTTPS and the next one is not.
#[derive(Debug, Default)]
struct Redirect {
    strip_credentials: bool,
    referer: Option<String>,
}

/// Headers that carry credentials, dropped on a redirect to another host.
const CREDENTIALS: [&str; 6] = [
    "authorization",
    "www-authenticate",
    "cookie",
    "cookie2",
    "proxy-authorization",
    "proxy-authenticate",
];

impl Redirect {
    /// The hop from `from` to `to`, in a chain that began at `first`.
    fn to(self, first: &Uri, from: &Uri, to: &Uri) -> Self {
        let same_host = first.authority() == to.authority()
            || to
                .host()
                .zip(first.host())
                .is_some_and(|(to, first)| is_domain_or_subdomain(to, first));
        let referer = (from.scheme_str() != Some("https") || to.scheme_str() == Some("https")).then(|| {
            // Without the user's name and password, and without a fragment.
            let mut parts = from.clone().into_parts();
            if let Some(a) = &parts.authority
                && let Some((_, host)) = a.as_str().rsplit_once('@')
            {
                parts.authority = host.parse().ok();
            }
            Uri::from_parts(parts).map(|u| u.to_string()).unwrap_or_default()
        });
        Self {
            strip_credentials: self.strip_credentials || !same_host,
            referer: referer.filter(|r| !r.is_empty()),
        }
    }
}

/// `sub` is `parent` or a subdomain of it (never for an IPv6 address).
fn is_domain_or_subdomain(sub: &str, parent: &str) -> bool {
    let (sub, parent) = (sub.to_ascii_lowercase(), parent.to_ascii_lowercase());
    if sub == parent {
        return true;
    }
    if sub.contains(':') || sub.starts_with('[') {
        return false;
    }
    sub.strip_suffix(parent.as_str())
        .is_some_and(|rest| rest.ends_with('.'))
}

/// What the client says it is when the request does not (Go's client's default, so
/// that a server's rules for the Go module's requests hold for these).
const USER_AGENT: &str = "Go-http-client/1.1";

/// The request, with headers in Go's order: content type, then auth, then the
/// request's own headers (which win); on a redirect, without what `hop` drops.
fn build(req: &ClientRequest, method: &Method, uri: &Uri, body: Bytes, hop: &Redirect) -> Result<HttpReq<Full<Bytes>>> {
    let mut http = HttpReq::builder().method(method.clone()).uri(uri.clone());
    let headers = http
        .headers_mut()
        .ok_or_else(|| Error::permanent(format!("invalid request to {uri}")))?;
    let mut set = |k: &str, v: &str| -> Result<()> {
        if hop.strip_credentials && CREDENTIALS.contains(&k.to_ascii_lowercase().as_str()) {
            return Ok(());
        }
        let name = header::HeaderName::from_bytes(canonical(k).as_bytes())
            .map_err(|_| Error::permanent(format!("invalid header name {k:?}")))?;
        let value = header::HeaderValue::from_str(v)
            .map_err(|_| Error::permanent(format!("invalid value for header {k:?}")))?;
        headers.insert(name, value);
        Ok(())
    };
    set("User-Agent", USER_AGENT)?;
    if !req.content_type.is_empty() {
        set("Content-Type", &req.content_type)?;
    }
    if !req.bearer_token.is_empty() {
        set("Authorization", &format!("Bearer {}", req.bearer_token))?;
    } else if !req.basic_auth_user.is_empty() || !req.basic_auth_password.is_empty() {
        use base64::Engine as _;
        let pair = format!("{}:{}", req.basic_auth_user, req.basic_auth_password);
        set(
            "Authorization",
            &format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)),
        )?;
    }
    for h in &req.headers {
        set(&h.key, &h.value)?;
    }
    // A `Referer` the request sets itself is kept, as Go's client keeps it.
    if let Some(referer) = &hop.referer
        && !req.headers.iter().any(|h| h.key.eq_ignore_ascii_case("referer"))
    {
        set("Referer", referer)?;
    }
    http.body(Full::new(body))
        .map_err(|e| Error::permanent(format!("invalid request to {uri}: {e}")))
}

/// Where a redirect points, resolved against `base`.
/// An absolute URL, a scheme-relative one (`//host/path`: on the base's scheme), an
/// absolute path, or a path relative to the base's directory (`next?page=2`).
fn location(base: &Uri, headers: &hyper::HeaderMap) -> Option<Uri> {
    let loc = headers.get(header::LOCATION)?.to_str().ok()?.trim();
    if loc.contains("://") {
        return loc.parse().ok();
    }
    if let Some(rest) = loc.strip_prefix("//") {
        return format!("{}://{rest}", base.scheme_str().unwrap_or("http")).parse().ok();
    }
    let path = if loc.starts_with('/') {
        loc.to_owned()
    } else {
        // The base's path up to its last `/`, then the location.
        let dir = base.path().rsplit_once('/').map_or("", |(dir, _)| dir);
        format!("{dir}/{loc}")
    };
    let mut parts = base.clone().into_parts();
    parts.path_and_query = Some(path.parse().ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: &str, loc: &str) -> Option<String> {
        let mut headers = hyper::HeaderMap::new();
        headers.insert(header::LOCATION, header::HeaderValue::from_str(loc).ok()?);
        location(&base.parse().ok()?, &headers).map(|u| u.to_string())
    }

    #[test]
    fn a_location_resolves_as_a_browser_resolves_it() {
        let base = "https://api.example.com/v1/items?page=1";
        assert_eq!(at(base, "https://other.org/x").as_deref(), Some("https://other.org/x"));
        // Scheme-relative: another host, not a path on this one.
        assert_eq!(
            at(base, "//cdn.example.net/a").as_deref(),
            Some("https://cdn.example.net/a")
        );
        assert_eq!(
            at(base, "/v2/items").as_deref(),
            Some("https://api.example.com/v2/items")
        );
        assert_eq!(
            at(base, "next?page=2").as_deref(),
            Some("https://api.example.com/v1/next?page=2")
        );
    }

    #[test]
    fn credentials_follow_the_host_and_its_subdomains_only() {
        assert!(is_domain_or_subdomain("api.example.com", "example.com"));
        assert!(is_domain_or_subdomain("Example.COM", "example.com"));
        assert!(!is_domain_or_subdomain("badexample.com", "example.com"));
        assert!(!is_domain_or_subdomain("example.com", "api.example.com"));
        assert!(!is_domain_or_subdomain("[::1]", "1"));
    }
}

//! The flow's [`Request`] message made lazily: each field is worked out of the HTTP
//! request only when something serialises it.
//!
//! An edge such as `{"body": "{{$.body}}"}` reads one field, and the engine serialises
//! only the fields a template reads (`Msg`'s field projection never calls `serialize`
//! on the others). So a request whose flow reads its body never has its headers listed
//! and canonicalised, its query parsed or its path split: that was most of what making
//! the message cost. Whatever reads the whole message (an observer, a receiver of
//! `Request`, the wire to another module) gets exactly the JSON `Request` serialises
//! to, field for field and in the same order: [`Arrived`] serialises as `Request`, and
//! its schema is `Request`'s.

use std::{borrow::Cow, collections::BTreeMap, net::SocketAddr, sync::Arc};

use bytes::Bytes;
use hyper::{header, http::request::Parts};
use serde::{Deserialize, Serialize, Serializer, ser::SerializeStruct as _};
use serde_json::Value;

use super::request::Request;
use crate::headers::to_list_without;

/// A request on its way into the flow: as it came off the connection, or (decoded from
/// JSON, which the engine never asks of it) a [`Request`].
pub(super) enum Arrived {
    Http(Box<Http>),
    Decoded(Box<Request>),
}

/// What one HTTP request's message is made from.
pub(super) struct Http {
    pub parts: Parts,
    pub body: Bytes,
    pub peer: SocketAddr,
    /// The connection is TLS: the scheme is `https` whatever a header says.
    pub tls: bool,
    /// The start message's context.
    pub context: Value,
    pub pod: Arc<str>,
}

impl Http {
    /// The path without the query string, percent-decoded.
    fn path(&self) -> Cow<'_, str> {
        percent_encoding::percent_decode_str(self.parts.uri.path()).decode_utf8_lossy()
    }

    /// The request target with its query string.
    fn request_uri(&self) -> &str {
        let uri = &self.parts.uri;
        uri.path_and_query().map_or_else(|| uri.path(), |p| p.as_str())
    }

    fn request_params(&self) -> BTreeMap<String, Vec<String>> {
        let mut params: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let query = self.parts.uri.query().unwrap_or_default();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            params.entry(k.into_owned()).or_default().push(v.into_owned());
        }
        params
    }

    /// The client: the first `X-Forwarded-For`, else `X-Real-Ip`, else the peer.
    fn real_ip(&self) -> Cow<'_, str> {
        let seen = Forwarded::scan(&self.parts.headers);
        seen.forwarded_for
            .and_then(|v| v.split(',').next().map(|s| Cow::Borrowed(s.trim())))
            .or_else(|| seen.real_ip.map(Cow::Borrowed))
            .unwrap_or_else(|| Cow::Owned(ip_text(self.peer.ip())))
    }

    fn scheme(&self) -> &str {
        let seen = Forwarded::scan(&self.parts.headers);
        // As Echo: a TLS connection is `https` whatever a header says.
        (self.tls.then_some("https"))
            .or(seen.proto)
            .or(seen.protocol)
            .or_else(|| (seen.ssl == Some("on")).then_some("https"))
            .or(seen.url_scheme)
            .unwrap_or("http")
    }

    fn host(&self) -> &str {
        Forwarded::scan(&self.parts.headers).host.unwrap_or_default()
    }

    /// `true` when the headers list is not empty: a header other than `Host`.
    fn has_headers(&self) -> bool {
        self.parts.headers.keys().any(|k| *k != header::HOST)
    }

    /// The whole message, made now (what a `Decoded` one holds).
    #[cfg(test)]
    pub fn to_request(&self) -> Request {
        Request {
            context: self.context.clone(),
            path: self.path().into_owned(),
            path_segments: self
                .path()
                .split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            request_uri: self.request_uri().to_owned(),
            request_params: self.request_params(),
            host: self.host().to_owned(),
            method: self.parts.method.as_str().to_owned(),
            real_ip: self.real_ip().into_owned(),
            headers: to_list_without(&self.parts.headers, Some(&header::HOST)),
            body: String::from_utf8_lossy(&self.body).into_owned(),
            scheme: self.scheme().to_owned(),
            pod_name: self.pod.to_string(),
        }
    }
}

/// A field's value, made when it is serialised.
struct Made<F>(F);

impl<T: Serialize, F: Fn() -> T> Serialize for Made<F> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (self.0)().serialize(s)
    }
}

/// The path's segments: split on `/`, empty parts dropped.
struct Segments<'a>(&'a Http);

impl Serialize for Segments<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let path = self.0.path();
        s.collect_seq(path.split('/').filter(|p| !p.is_empty()))
    }
}

/// As `Request`'s derived `Serialize`: the same fields, names, order and skipped
/// empty `headers`.
impl Serialize for Arrived {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let http = match self {
            Arrived::Http(http) => http,
            Arrived::Decoded(request) => return request.serialize(s),
        };
        let headers = http.has_headers();
        let mut out = s.serialize_struct("Request", if headers { 12 } else { 11 })?;
        out.serialize_field("context", &http.context)?;
        out.serialize_field("path", &Made(|| http.path()))?;
        out.serialize_field("pathSegments", &Segments(http))?;
        out.serialize_field("requestURI", &Made(|| http.request_uri()))?;
        out.serialize_field("requestParams", &Made(|| http.request_params()))?;
        out.serialize_field("host", &Made(|| http.host()))?;
        out.serialize_field("method", &Made(|| http.parts.method.as_str()))?;
        out.serialize_field("realIP", &Made(|| http.real_ip()))?;
        if headers {
            out.serialize_field(
                "headers",
                &Made(|| to_list_without(&http.parts.headers, Some(&header::HOST))),
            )?;
        } else {
            out.skip_field("headers")?;
        }
        out.serialize_field("body", &Made(|| String::from_utf8_lossy(&http.body)))?;
        out.serialize_field("scheme", &Made(|| http.scheme()))?;
        out.serialize_field("podName", &*http.pod)?;
        out.end()
    }
}

impl<'de> Deserialize<'de> for Arrived {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Request::deserialize(d).map(|r| Arrived::Decoded(Box::new(r)))
    }
}

/// `Request`'s schema: the port declares `Request`, and this is what travels on it.
impl schemars::JsonSchema for Arrived {
    fn schema_name() -> Cow<'static, str> {
        Request::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        Request::schema_id()
    }
    fn inline_schema() -> bool {
        Request::inline_schema()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Request::json_schema(generator)
    }
}

/// The request headers that say where it came from, found in one pass over the
/// headers (each `get` by name would hash the name again).
#[derive(Default)]
struct Forwarded<'a> {
    host: Option<&'a str>,
    forwarded_for: Option<&'a str>,
    real_ip: Option<&'a str>,
    proto: Option<&'a str>,
    protocol: Option<&'a str>,
    ssl: Option<&'a str>,
    url_scheme: Option<&'a str>,
}

impl<'a> Forwarded<'a> {
    fn scan(headers: &'a hyper::HeaderMap) -> Self {
        let mut seen = Forwarded::default();
        for (name, value) in headers {
            let slot = match name.as_str() {
                "host" => &mut seen.host,
                "x-forwarded-for" => &mut seen.forwarded_for,
                "x-real-ip" => &mut seen.real_ip,
                "x-forwarded-proto" => &mut seen.proto,
                "x-forwarded-protocol" => &mut seen.protocol,
                "x-forwarded-ssl" => &mut seen.ssl,
                "x-url-scheme" => &mut seen.url_scheme,
                _ => continue,
            };
            // As `HeaderMap::get`: the first value of a repeated name.
            if slot.is_none() {
                *slot = value.to_str().ok();
            }
        }
        seen
    }
}

/// `ip` as text; an IPv4 address without the formatting machinery, which costs more
/// than the rest of the request's fields together.
fn ip_text(ip: std::net::IpAddr) -> String {
    let std::net::IpAddr::V4(v4) = ip else {
        return ip.to_string();
    };
    let mut out = String::with_capacity(15);
    for (i, octet) in v4.octets().into_iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        if octet >= 100 {
            out.push(char::from(b'0' + octet / 100));
        }
        if octet >= 10 {
            out.push(char::from(b'0' + octet / 10 % 10));
        }
        out.push(char::from(b'0' + octet % 10));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

    use serde_json::json;

    use super::*;

    #[test]
    fn ip_text_writes_what_display_writes() {
        for ip in [
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
            IpAddr::V4(Ipv4Addr::new(0, 0, 0, 0)),
            IpAddr::V4(Ipv4Addr::new(255, 255, 255, 255)),
            IpAddr::V4(Ipv4Addr::new(10, 99, 100, 9)),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        ] {
            assert_eq!(ip_text(ip), ip.to_string());
        }
    }

    fn arrived(req: hyper::Request<()>, tls: bool) -> Http {
        let (parts, ()) = req.into_parts();
        Http {
            parts,
            body: Bytes::from_static(b"caf\xc3\xa9 \xff"),
            peer: SocketAddr::from(([10, 0, 0, 7], 4321)),
            tls,
            context: json!({"who": "test"}),
            pod: Arc::from("pod-1"),
        }
    }

    /// The lazy message writes the very JSON (text and field order) that the whole
    /// `Request` writes, with and without headers beside `Host`.
    #[test]
    fn serialises_as_the_request_it_stands_for() {
        let full = hyper::Request::builder()
            .method("PATCH")
            .uri("/a/b%20c//d?q=1&q=2&e=%C3%A9&flag")
            .header("host", "example.com:8080")
            .header("x-forwarded-for", " 1.2.3.4 , 5.6.7.8")
            .header("x-forwarded-proto", "https")
            .header("X-Custom", "one")
            .header("x-custom", "two")
            .header("accept", "*/*")
            .body(())
            .expect("a request");
        let bare = hyper::Request::builder()
            .uri("/")
            .header("host", "h")
            .body(())
            .expect("a request");
        let no_host = hyper::Request::builder()
            .uri("http://x/p?")
            .header("x-real-ip", "9.9.9.9")
            .body(())
            .expect("a request");
        for (req, tls) in [(full, false), (bare, true), (no_host, false)] {
            let http = arrived(req, tls);
            let eager = serde_json::to_string(&http.to_request()).expect("serialises");
            let lazy = Arrived::Http(Box::new(http));
            assert_eq!(serde_json::to_string(&lazy).expect("serialises"), eager);
            // The tree too (the engine's observers and templates read it).
            assert_eq!(
                serde_json::to_value(&lazy).expect("serialises"),
                serde_json::from_str::<Value>(&eager).expect("parses")
            );
        }
    }

    /// What the old eager making gave for a request with every kind of field, written
    /// out: the lazy message must keep it.
    #[test]
    fn fields_are_gos() {
        let req = hyper::Request::builder()
            .method("PATCH")
            .uri("/a/b%20c//d?q=1&q=2&e=%C3%A9")
            .header("host", "example.com:8080")
            .header("x-forwarded-for", " 1.2.3.4 , 5.6.7.8")
            .header("x-custom", "two")
            .body(())
            .expect("a request");
        let lazy = Arrived::Http(Box::new(arrived(req, false)));
        assert_eq!(
            serde_json::to_value(&lazy).expect("serialises"),
            json!({
                "context": {"who": "test"},
                "path": "/a/b c//d",
                "pathSegments": ["a", "b c", "d"],
                "requestURI": "/a/b%20c//d?q=1&q=2&e=%C3%A9",
                "requestParams": {"e": ["é"], "q": ["1", "2"]},
                "host": "example.com:8080",
                "method": "PATCH",
                "realIP": "1.2.3.4",
                "headers": [
                    {"key": "X-Custom", "value": "two"},
                    {"key": "X-Forwarded-For", "value": " 1.2.3.4 , 5.6.7.8"}
                ],
                "body": "café \u{fffd}",
                "scheme": "http",
                "podName": "pod-1"
            })
        );
    }

    /// Decoded from JSON (the engine never asks), it is the `Request` the JSON held.
    #[test]
    fn decodes_as_a_request() {
        let json = json!({"path": "/x", "requestURI": "/x", "host": "h", "method": "GET", "realIP": "1.1.1.1",
                          "scheme": "http", "headers": [{"key": "A", "value": "b"}]});
        let back: Arrived = serde_json::from_value(json.clone()).expect("decodes");
        let again = serde_json::to_value(&back).expect("serialises");
        assert_eq!(again["headers"], json["headers"]);
        assert_eq!(again["path"], "/x");
    }
}

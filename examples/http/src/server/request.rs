//! The flow's [`Request`]: kept apart from the server, which emits it, and from
//! [`arrived`](super::arrived), which serialises as it, so that both import it and
//! neither the other's parent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tiny_sdk::prelude::*;

use crate::headers::Header;

/// One HTTP request, as the flow sees it (Go's fields).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// The start message's context.
    #[serde(default)]
    pub context: Value,
    /// The path without the query string, percent-decoded: route on this.
    #[tiny(title = "Path")]
    pub path: String,
    /// The path split on `/`, empty parts dropped.
    #[tiny(title = "Path Segments")]
    #[serde(default)]
    pub path_segments: Vec<String>,
    /// The request target with its query string.
    #[tiny(title = "Request URI")]
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// The query string: each name with its values.
    #[serde(default)]
    pub request_params: BTreeMap<String, Vec<String>>,
    pub host: String,
    #[tiny(title = "Method", enum("GET", "POST", "PATCH", "PUT", "DELETE"))]
    pub method: String,
    /// The client: the first `X-Forwarded-For`, else `X-Real-Ip`, else the peer.
    #[serde(rename = "realIP")]
    pub real_ip: String,
    /// Every header, sorted by name, one entry per value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<Header>,
    /// The body as text.
    #[serde(default)]
    pub body: String,
    pub scheme: String,
    /// The pod that took the request.
    #[tiny(title = "Pod Name")]
    #[serde(default)]
    pub pod_name: String,
}

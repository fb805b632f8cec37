//! `logql_query`: a LogQL search against Loki's HTTP API
//! (`/loki/api/v1/query_range`).

use std::collections::BTreeMap;

use hyper::Method;
use serde_json::Value;
use tiny_sdk::prelude::*;

use crate::query::{Credentials, QuerySettings, call, error_message, now_nanos, rfc3339};

/// Most lines returned.
pub const MAX_ENTRIES: usize = 500;
/// The window searched when the request names none.
pub const DEFAULT_RANGE_MINUTES: i64 = 60;

/// What `request` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct LokiRequest {
    /// Passed through to the result unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// LogQL with a stream selector in braces: `{namespace="prod"} |= "error"`.
    #[tiny(title = "LogQL", format = "textarea")]
    pub query: String,
    /// Window to search; 60 by default.
    #[tiny(title = "Range (minutes)")]
    #[serde(skip_serializing_if = "is_zero")]
    pub range_minutes: i64,
    /// Most log lines; capped at 500.
    #[tiny(title = "Limit")]
    #[serde(skip_serializing_if = "is_zero")]
    pub limit: i64,
    /// Carried per request, so that the credential is not stored in the flow.
    #[tiny(title = "Bearer Token", format = "password", secret)]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub token: String,
    /// For basic auth (the token is then the password).
    #[tiny(title = "Username")]
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

/// One log line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct Entry {
    /// RFC 3339.
    #[tiny(title = "At")]
    pub at: String,
    #[tiny(title = "Line")]
    pub line: String,
    /// Stream labels: namespace, pod, container.
    #[tiny(title = "Labels")]
    pub labels: BTreeMap<String, String>,
}

/// What `result` sends.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
pub struct LokiResult {
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Matching lines, in the order Loki gives them (newest first per stream).
    #[tiny(title = "Entries")]
    pub entries: Vec<Entry>,
    #[tiny(title = "Count")]
    pub count: usize,
    /// True when as many lines came as the limit allows: there may be more.
    #[tiny(title = "Truncated")]
    pub truncated: bool,
}

impl Default for LokiResult {
    /// Go's example.
    fn default() -> Self {
        Self {
            context: Value::Null,
            entries: vec![Entry {
                at: "2026-07-30T00:00:00Z".into(),
                line: "example log line".into(),
                labels: BTreeMap::from([
                    ("namespace".into(), "prod".into()),
                    ("pod".into(), "example-pod".into()),
                ]),
            }],
            count: 1,
            truncated: false,
        }
    }
}

/// Searches Loki for log lines across every pod at once; returns each line with its
/// stream labels.
#[derive(Component, Default, Debug)]
#[component(
    name = "logql_query",
    description = "LogQL Query",
    info = "Searches Loki for log lines and returns each with its stream labels. The query needs a stream selector in braces: {namespace=\"prod\"} |= \"error\". Check truncated before concluding anything: a capped sample is not the whole picture.",
    tags("Observability", "Logs", "Agent"),
    settings = QuerySettings,
    hooks
)]
pub struct LogqlQuery {
    #[port(label = "Request", position = Left)]
    request: Input<LokiRequest>,
    #[port(label = "Result", position = Right)]
    result: Output<LokiResult>,
    #[port(label = "Error", position = Bottom, enabled_by = enable_error_port)]
    error: Output<ErrorMessage>,
}

/// The query string of `req` at `now` (Unix nanoseconds), and the limit it asks.
pub fn build_query(req: &LokiRequest, now: i128) -> (String, usize) {
    let minutes = if req.range_minutes <= 0 {
        DEFAULT_RANGE_MINUTES
    } else {
        req.range_minutes
    };
    let limit = usize::try_from(req.limit)
        .ok()
        .filter(|l| (1..=MAX_ENTRIES).contains(l))
        .unwrap_or(MAX_ENTRIES);
    let start = now - i128::from(minutes) * 60 * 1_000_000_000;
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("query", &req.query)
        .append_pair("limit", &limit.to_string())
        .append_pair("start", &start.to_string())
        .append_pair("end", &now.to_string())
        .append_pair("direction", "backward")
        .finish();
    (query, limit)
}

/// Reads a `query_range` answer of streams: the lines, at most [`MAX_ENTRIES`].
pub fn parse(body: &[u8]) -> Result<Vec<Entry>> {
    let resp: Value = serde_json::from_slice(body)
        .map_err(|e| Error::permanent(format!("loki returned a body that is not JSON: {e}")))?;
    let mut entries = Vec::new();
    let empty = Vec::new();
    for stream in resp.pointer("/data/result").and_then(Value::as_array).unwrap_or(&empty) {
        let labels: BTreeMap<String, String> = stream
            .get("stream")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        for v in stream.get("values").and_then(Value::as_array).unwrap_or(&empty) {
            let Some([Value::String(at), Value::String(line)]) = v.as_array().map(Vec::as_slice) else {
                continue;
            };
            if entries.len() >= MAX_ENTRIES {
                return Ok(entries);
            }
            let at = at
                .parse::<i128>()
                .ok()
                .and_then(|n| i64::try_from(n.div_euclid(1_000_000_000)).ok())
                .map(rfc3339)
                .unwrap_or_default();
            entries.push(Entry {
                at,
                line: line.clone(),
                labels: labels.clone(),
            });
        }
    }
    Ok(entries)
}

#[handlers]
impl LogqlQuery {
    async fn on_request(&self, ctx: &Ctx<Self>, req: LokiRequest) -> Result<Reply> {
        match run(ctx, &req).await {
            Ok((entries, limit)) => {
                let out = LokiResult {
                    context: req.context,
                    count: entries.len(),
                    truncated: entries.len() >= limit,
                    entries,
                };
                self.result.emit(ctx, out).await
            }
            Err(e) if ctx.settings().enable_error_port => self.error.emit(ctx, error_message(req.context, &e)).await,
            Err(e) => Err(e),
        }
    }
}

async fn run(ctx: &Ctx<LogqlQuery>, req: &LokiRequest) -> Result<(Vec<Entry>, usize)> {
    let settings = ctx.settings();
    if req.query.trim().is_empty() {
        return Err(Error::permanent("query is required"));
    }
    let (query, limit) = build_query(req, now_nanos());
    let url = format!("{}?{query}", settings.endpoint("/loki/api/v1/query_range"));
    let creds = Credentials {
        token: &req.token,
        username: &req.username,
    };
    let answer = call(ctx, settings, Method::GET, &url, None, &creds, "loki").await?;
    Ok((parse(&answer)?, limit))
}

impl Hooks for LogqlQuery {
    async fn on_settings(&self, _: &Ctx<Self>, settings: &QuerySettings) -> Result<()> {
        settings.check()
    }
}

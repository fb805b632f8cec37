//! `promql_query`: a PromQL query against any Prometheus-compatible API (the HTTP
//! API's `/api/v1/query` and `/api/v1/query_range`).

use std::collections::BTreeMap;

use hyper::Method;
use serde_json::Value;
use tiny_sdk::prelude::*;

use crate::query::{Credentials, QuerySettings, call, error_message, now_nanos, rfc3339};

/// Most series returned: a careless query can match tens of thousands.
pub const MAX_SERIES: usize = 500;
/// Most points per series of a range query.
pub const MAX_POINTS: usize = 500;

/// What `request` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct PromRequest {
    /// Passed through to the result unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// PromQL expression, e.g. `sum(rate(container_cpu_usage_seconds_total[5m])) by (pod)`.
    #[tiny(title = "PromQL", format = "textarea")]
    pub query: String,
    /// Query over a window instead of at an instant; 0 evaluates once, now.
    #[tiny(title = "Range (minutes)")]
    #[serde(skip_serializing_if = "is_zero")]
    pub range_minutes: i64,
    /// Resolution of a range query; by default a step that keeps a series under 500
    /// points (at least 15 s).
    #[tiny(title = "Step (seconds)")]
    #[serde(skip_serializing_if = "is_zero")]
    pub step_seconds: i64,
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

/// One sample of a range query.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct Point {
    /// RFC 3339.
    #[tiny(title = "At")]
    pub at: String,
    #[tiny(title = "Value")]
    pub value: f64,
}

/// One metric stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Schema)]
pub struct Series {
    #[tiny(title = "Labels")]
    pub labels: BTreeMap<String, String>,
    /// The latest sample; for a range query the most recent point.
    #[tiny(title = "Value")]
    pub value: f64,
    /// Samples over the window, oldest first; empty for an instant query.
    #[tiny(title = "Points")]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<Point>,
}

/// What `result` sends.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
pub struct PromResult {
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Matching metric streams.
    #[tiny(title = "Series")]
    pub series: Vec<Series>,
    #[tiny(title = "Count")]
    pub count: usize,
    /// True when the query matched more series (or points) than were returned.
    #[tiny(title = "Truncated")]
    pub truncated: bool,
}

impl Default for PromResult {
    /// Go's example, so that an edge reading `$.series[0].value` is checkable.
    fn default() -> Self {
        Self {
            context: Value::Null,
            series: vec![Series {
                labels: BTreeMap::from([("pod".into(), "example-pod".into())]),
                value: 0.42,
                points: vec![Point {
                    at: "2026-07-30T00:00:00Z".into(),
                    value: 0.42,
                }],
            }],
            count: 1,
            truncated: false,
        }
    }
}

/// Runs a PromQL query against any Prometheus-compatible API and returns the
/// matching series with their labels; `rangeMinutes` queries a window.
#[derive(Component, Default, Debug)]
#[component(
    name = "promql_query",
    description = "PromQL Query",
    info = "Runs a PromQL query against any Prometheus-compatible API and returns the matching series with their labels. Set rangeMinutes to query a window instead of an instant. A malformed query is permanent; an unreachable or overloaded backend is retryable.",
    tags("Observability", "Metrics", "Agent"),
    settings = QuerySettings,
    hooks
)]
pub struct PromqlQuery {
    #[port(label = "Request", position = Left)]
    request: Input<PromRequest>,
    #[port(label = "Result", position = Right)]
    result: Output<PromResult>,
    #[port(label = "Error", position = Bottom, enabled_by = enable_error_port)]
    error: Output<ErrorMessage>,
}

/// The endpoint path and form of `req` at `now` (Unix seconds).
pub fn build_query(req: &PromRequest, now: i64) -> (&'static str, Vec<(&'static str, String)>) {
    let mut form = vec![("query", req.query.clone())];
    if req.range_minutes <= 0 {
        return ("/api/v1/query", form);
    }
    let window = req.range_minutes.saturating_mul(60);
    let step = if req.step_seconds > 0 {
        req.step_seconds
    } else {
        (window / MAX_POINTS as i64).max(15)
    };
    form.push(("start", (now - window).to_string()));
    form.push(("end", now.to_string()));
    form.push(("step", step.to_string()));
    ("/api/v1/query_range", form)
}

/// A sample value: Prometheus writes numbers as strings (NaN and ±Inf included).
fn sample_value(v: &Value) -> f64 {
    match v {
        Value::String(s) => match s.as_str() {
            "NaN" => f64::NAN,
            "+Inf" | "Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            s => s.parse().unwrap_or(0.0),
        },
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        _ => 0.0,
    }
}

fn sample_time(v: &Value) -> String {
    let secs = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    };
    secs.map(|s| rfc3339(s.trunc() as i64)).unwrap_or_default()
}

/// Reads a query answer: the series (capped) and whether any were left out.
pub fn parse(body: &[u8]) -> Result<(Vec<Series>, bool)> {
    let resp: Value = serde_json::from_slice(body)
        .map_err(|e| Error::permanent(format!("metrics API returned a body that is not JSON: {e}")))?;
    // The API may answer 200 with status "error".
    match resp.get("status").and_then(Value::as_str) {
        None | Some("" | "success") => {}
        Some(_) => {
            let error = resp.get("error").and_then(Value::as_str).unwrap_or_default();
            return Err(Error::permanent(format!("metrics API error: {error}")));
        }
    }
    let empty = Vec::new();
    let results = resp.pointer("/data/result").and_then(Value::as_array).unwrap_or(&empty);
    let mut truncated = results.len() > MAX_SERIES;
    let mut series = Vec::new();
    for r in results.iter().take(MAX_SERIES) {
        let labels = r
            .get("metric")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let mut s = Series {
            labels,
            ..Series::default()
        };
        if let Some([_, v]) = r.get("value").and_then(Value::as_array).map(Vec::as_slice) {
            s.value = sample_value(v);
        }
        for v in r.get("values").and_then(Value::as_array).unwrap_or(&empty) {
            let Some([at, value]) = v.as_array().map(Vec::as_slice) else {
                continue;
            };
            if s.points.len() >= MAX_POINTS {
                truncated = true;
                break;
            }
            s.points.push(Point {
                at: sample_time(at),
                value: sample_value(value),
            });
        }
        if let Some(last) = s.points.last() {
            s.value = last.value;
        }
        series.push(s);
    }
    Ok((series, truncated))
}

#[handlers]
impl PromqlQuery {
    async fn on_request(&self, ctx: &Ctx<Self>, req: PromRequest) -> Result<Reply> {
        match run(ctx, &req).await {
            Ok((series, truncated)) => {
                let out = PromResult {
                    context: req.context,
                    count: series.len(),
                    series,
                    truncated,
                };
                self.result.emit(ctx, out).await
            }
            Err(e) if ctx.settings().enable_error_port => self.error.emit(ctx, error_message(req.context, &e)).await,
            Err(e) => Err(e),
        }
    }
}

async fn run(ctx: &Ctx<PromqlQuery>, req: &PromRequest) -> Result<(Vec<Series>, bool)> {
    let settings = ctx.settings();
    if req.query.trim().is_empty() {
        return Err(Error::permanent("query is required"));
    }
    let now = i64::try_from(now_nanos() / 1_000_000_000).unwrap_or(0);
    let (path, form) = build_query(req, now);
    let body = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let creds = Credentials {
        token: &req.token,
        username: &req.username,
    };
    // POST: a long expression may not fit in a URL some proxy allows.
    let answer = call(
        ctx,
        settings,
        Method::POST,
        &settings.endpoint(path),
        Some(body),
        &creds,
        "metrics API",
    )
    .await?;
    parse(&answer)
}

impl Hooks for PromqlQuery {
    async fn on_settings(&self, _: &Ctx<Self>, settings: &QuerySettings) -> Result<()> {
        settings.check()
    }
}

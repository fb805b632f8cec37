//! `array_filter`: keeps the elements of an array for which a JSONPath predicate
//! holds, and counts them.
//!
//! The predicate is the expression dialect kv's `query` port reads, evaluated with
//! each item as `$`. Only a boolean `true` keeps an item: a number or a string is
//! an error, not a truthy value, as in Go.

use serde_json::Value;
use tiny_sdk::{expr::Expr, prelude::*};

/// Settings, as Go's array_filter.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct ArrayFilterSettings {
    /// On: an item the predicate cannot be evaluated against counts as not matching.
    /// Off (default): it fails, so that a mistyped field name is reported rather than
    /// filtering everything away.
    #[tiny(title = "Skip Items The Query Cannot Evaluate")]
    pub skip_unevaluable: bool,
    /// Output errors to the error port instead of failing the run.
    #[tiny(title = "Enable Error Port")]
    pub enable_error_port: bool,
}

/// What `request` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct FilterRequest {
    /// Passthrough, emitted with the result.
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// The items to filter.
    #[tiny(title = "Array")]
    #[serde(default)]
    pub array: Vec<Value>,
    /// Predicate evaluated against each item: `$.phase == 'Running'`, `$.restarts > 3`.
    #[tiny(title = "Query")]
    #[serde(default)]
    pub query: String,
}

/// What `result` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct FilterResult {
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// The items the predicate kept, in their original order.
    #[tiny(title = "Items")]
    pub items: Vec<Value>,
    /// How many matched.
    #[tiny(title = "Count")]
    pub count: usize,
    /// How many were examined.
    #[tiny(title = "Total")]
    pub total: usize,
}

/// What `error` sends (Go's `{context, error}`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct FilterError {
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    #[tiny(title = "Error")]
    pub error: String,
}

/// Keeps the array elements matching a JSONPath predicate and counts them.
#[derive(Component, Default, Debug)]
#[component(
    name = "array_filter",
    description = "Array Filter",
    info = "Keeps the array elements for which a JSONPath predicate, evaluated against each item, is true; returns items, count and total.",
    agent_tool(input = "request", output = "result"),
    tags("SDK", "ARRAY"),
    settings = ArrayFilterSettings
)]
pub struct ArrayFilter {
    #[port(label = "Request", position = Left)]
    request: Input<FilterRequest>,
    #[port(label = "Result", position = Right)]
    result: Output<FilterResult>,
    #[port(label = "Error", position = Bottom, enabled_by = enable_error_port)]
    error: Output<FilterError>,
}

/// Whether `query` keeps `item`: `Err` names why it could not say.
fn matches(query: &Expr, item: &Value) -> std::result::Result<bool, String> {
    match query.eval(item) {
        Ok(Value::Bool(kept)) => Ok(kept),
        Ok(other) => Err(format!("predicate answered {other}, not true or false")),
        Err(e) => Err(e.to_string()),
    }
}

#[handlers]
impl ArrayFilter {
    async fn on_request(&self, ctx: &Ctx<Self>, req: FilterRequest) -> Result<Reply> {
        let settings = ctx.settings();
        if req.query.trim().is_empty() {
            return self
                .fail(
                    ctx,
                    req.context,
                    "query is required: a filter with no predicate is the array it was given".into(),
                )
                .await;
        }
        let query = match Expr::parse(&req.query) {
            Ok(q) => q,
            Err(e) => return self.fail(ctx, req.context, format!("query {:?}: {e}", req.query)).await,
        };
        let total = req.array.len();
        let mut items = Vec::new();
        for (i, item) in req.array.into_iter().enumerate() {
            match matches(&query, &item) {
                Ok(true) => items.push(item),
                Ok(false) => {}
                Err(_) if settings.skip_unevaluable => {}
                Err(why) => {
                    let error = format!(
                        "query {:?} could not be evaluated against item {i}: {why}; check the field name, or turn on skipUnevaluable if the array is ragged",
                        req.query
                    );
                    return self.fail(ctx, req.context, error).await;
                }
            }
        }
        let out = FilterResult {
            context: req.context,
            count: items.len(),
            items,
            total,
        };
        self.result.emit(ctx, out).await
    }

    /// To Error when the port is on, else a failed message.
    async fn fail(&self, ctx: &Ctx<Self>, context: Value, error: String) -> Result<Reply> {
        if ctx.settings().enable_error_port {
            return self.error.emit(ctx, FilterError { context, error }).await;
        }
        Err(Error::permanent(error))
    }
}

//! `array_get`: one element of an array by its 1-based number.

use serde_json::{Value, json};
use tiny_sdk::prelude::*;

/// Settings, as Go's array_get.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct ArrayGetSettings {
    /// Output errors to the error port instead of failing.
    #[tiny(title = "Enable Error Port")]
    pub enable_error_port: bool,
}

/// What `request` takes.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
pub struct GetRequest {
    /// Arbitrary context to pass through.
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Array to get the element from.
    #[tiny(configurable, title = "Array")]
    #[serde(default)]
    pub array: Vec<Value>,
    /// 1-based item number.
    #[tiny(title = "Index")]
    #[serde(default)]
    pub index: i64,
}

impl Default for GetRequest {
    /// Go's example configuration.
    fn default() -> Self {
        Self {
            context: Value::Null,
            array: vec![json!("first"), json!("second"), json!("third")],
            index: 1,
        }
    }
}

/// What `result` sends.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
pub struct GetResult {
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    #[tiny(configurable, title = "Item")]
    #[serde(default)]
    pub item: Value,
    /// 1-based index of the returned item.
    #[tiny(title = "Index")]
    pub index: i64,
}

impl Default for GetResult {
    fn default() -> Self {
        Self {
            context: Value::Null,
            item: json!("first"),
            index: 1,
        }
    }
}

/// What `error` sends (Go's `{context, error}`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct GetError {
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    #[tiny(title = "Error")]
    pub error: String,
}

/// Gets an element from an array by 1-based index: the item, or an error when the
/// index is out of range.
#[derive(Component, Default, Debug)]
#[component(
    name = "array_get",
    description = "Array Get",
    // As Go's published catalog: an agent tool (request in, result out), its
    // description the catalogue's info.
    agent_tool(
        input = "request",
        output = "result",
        description = "Get an array element by 1-based index. Input: {array, index}; returns {item, index} or an error if the index is out of range."
    ),
    tags("SDK", "ARRAY"),
    settings = ArrayGetSettings
)]
pub struct ArrayGet {
    #[port(label = "Request", position = Left)]
    request: Input<GetRequest>,
    #[port(label = "Result", position = Right)]
    result: Output<GetResult>,
    #[port(label = "Error", position = Bottom, enabled_by = enable_error_port)]
    error: Output<GetError>,
}

#[handlers]
impl ArrayGet {
    async fn on_request(&self, ctx: &Ctx<Self>, req: GetRequest) -> Result<Reply> {
        let problem = if req.array.is_empty() {
            Some("array is empty: run a list command first".to_owned())
        } else if req.index < 1 {
            Some(format!("index must be >= 1, got {}", req.index))
        } else if usize::try_from(req.index).map_or(true, |i| i > req.array.len()) {
            Some(format!(
                "item #{} not found: list has {} item(s)",
                req.index,
                req.array.len()
            ))
        } else {
            None
        };
        if let Some(error) = problem {
            if ctx.settings().enable_error_port {
                return self
                    .error
                    .emit(
                        ctx,
                        GetError {
                            context: req.context,
                            error,
                        },
                    )
                    .await;
            }
            return Err(Error::permanent(error));
        }
        let GetRequest { context, array, index } = req;
        // In range: checked above.
        let item = usize::try_from(index - 1)
            .ok()
            .and_then(|i| array.into_iter().nth(i))
            .unwrap_or_default();
        self.result.emit(ctx, GetResult { context, item, index }).await
    }
}

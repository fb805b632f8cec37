//! `array_split`: one message per array element.

use serde_json::Value;
use tiny_sdk::prelude::*;

/// What `in` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct SplitIn {
    /// Message to be sent further with each item.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// Array of items to be split.
    #[tiny(shared, title = "Array")]
    #[serde(default)]
    pub array: Vec<Value>,
}

/// What `out` sends, once per item.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct SplitOut {
    #[serde(default)]
    pub context: Value,
    #[tiny(shared)]
    pub item: Value,
    /// 0-based position of the item in the array.
    #[tiny(title = "Index")]
    pub index: usize,
    /// Number of items in the source array.
    #[tiny(title = "Total")]
    pub total: usize,
}

/// Sends each element of the array on Out as `{context, item, index, total}`, one
/// after another (each waits for the flow downstream); stops at the first failure.
#[derive(Component, Default, Debug)]
#[component(name = "array_split", description = "Split Array", tags("SDK", "ARRAY"))]
pub struct ArraySplit {
    #[port(position = Left)]
    r#in: Input<SplitIn>,
    #[port(position = Right)]
    out: Output<SplitOut>,
}

#[handlers]
impl ArraySplit {
    async fn on_in(&self, ctx: &Ctx<Self>, msg: SplitIn) -> Result<()> {
        let total = msg.array.len();
        for (index, item) in msg.array.into_iter().enumerate() {
            let out = SplitOut {
                context: msg.context.clone(),
                item,
                index,
                total,
            };
            self.out.emit(ctx, out).await?;
        }
        Ok(())
    }
}

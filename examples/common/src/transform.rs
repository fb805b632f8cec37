//! `transform` (Go's `modify` package): passes the context on, for the edges on
//! either side to reshape it.

use serde_json::Value;
use tiny_sdk::prelude::*;

/// What `in` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct TransformIn {
    /// Arbitrary message to be modified.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// What `out` sends: the context under `context`, so that a downstream edge reads
/// `$.context.<field>`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct TransformOut {
    /// Passthrough: the message, unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// Data transformer: emits the context it is given on Out. Meant for a loop back
/// into the same node (an http_server's request to its response); between two
/// different nodes, the edge's own mapping does the job.
#[derive(Component, Default, Debug)]
#[component(
    name = "transform",
    description = "Modify",
    info = "Data transformer for connecting an output back to an input of the same node (e.g. http_server request to response). Between different nodes, map the data on the edge instead.",
    tags("SDK")
)]
pub struct Transform {
    #[port(label = "In", position = Left)]
    r#in: Input<TransformIn>,
    #[port(label = "Out", position = Right)]
    out: Output<TransformOut>,
}

#[handlers]
impl Transform {
    async fn on_in(&self, ctx: &Ctx<Self>, msg: TransformIn) -> Result<Reply> {
        self.out.emit(ctx, TransformOut { context: msg.context }).await
    }
}

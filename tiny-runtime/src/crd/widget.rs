use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tiny_sdk::flow::RawJson;

/// A dashboard page of widgets.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.tinysystems.io",
    version = "v1alpha1",
    kind = "TinyWidgetPage",
    namespaced,
    status = "TinyWidgetPageStatus"
)]
pub struct TinyWidgetPageSpec {
    /// The widgets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub widgets: Vec<Widget>,
}

/// `spec.widgets[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Widget {
    /// `node:port` shown.
    pub port: String,
    /// Title.
    #[serde(default)]
    pub name: String,
    /// JSON patch of the port's schema (base64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_patch: Option<RawJson>,
    /// Grid placement.
    #[serde(default)]
    pub grid_x: i32,
    /// Grid placement.
    #[serde(default)]
    pub grid_y: i32,
    /// Grid width.
    #[serde(default)]
    pub grid_w: i32,
    /// Grid height.
    #[serde(default)]
    pub grid_h: i32,
}

/// Empty, as in the Go SDK.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TinyWidgetPageStatus {}

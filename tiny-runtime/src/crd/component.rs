use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The runtime a definition names when it names none, as in Go (`+kubebuilder:default=js`).
pub const DEFAULT_RUNTIME: &str = "js";

/// The finalizer a module that serves a definition's runtime puts on it, so that a
/// delete reaches it and stops the nodes running the component (Go's name).
pub const COMPONENT_FINALIZER: &str = "io.tinysystems/component-finalizer";

/// A component defined as data (Go's TinyComponent): a script and the JSON Schemas of
/// its input and output, served by a module that offers the definition's runtime. Its
/// nodes name `spec.component` as they name a compiled component.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.tinysystems.io",
    version = "v1alpha1",
    kind = "TinyComponent",
    namespaced,
    status = "TinyComponentStatus",
    printcolumn = r#"{"name":"Component","type":"string","jsonPath":".spec.component"}"#,
    printcolumn = r#"{"name":"Runtime","type":"string","jsonPath":".spec.runtime"}"#,
    printcolumn = r#"{"name":"Installed","type":"boolean","jsonPath":".status.installed"}"#,
    printcolumn = r#"{"name":"Reason","type":"string","jsonPath":".status.reason"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TinyComponentSpec {
    /// The name nodes give in `spec.component`; a name a compiled component of the
    /// serving module holds is refused.
    pub component: String,
    /// One line for the palette.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The longer help.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub info: String,
    /// Which runtime runs the script (`js`, `expr`, or one a module adds); only a
    /// module serving it installs the definition.
    #[serde(default = "default_runtime")]
    pub runtime: String,
    /// The implementation, in the runtime's language.
    pub script: String,
    /// The JSON Schema of the `request` port's `inputData`, as JSON text.
    pub input: String,
    /// The JSON Schema of the `response` port's `outputData`, as JSON text.
    pub output: String,
    /// Adds an `error` port that receives the script's failures.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enable_error_port: bool,
}

fn default_runtime() -> String {
    DEFAULT_RUNTIME.to_owned()
}

impl TinyComponentSpec {
    /// The runtime, `js` when empty (a definition written without one behaves the
    /// same whichever path made it).
    pub fn runtime(&self) -> &str {
        if self.runtime.is_empty() {
            DEFAULT_RUNTIME
        } else {
            &self.runtime
        }
    }
}

/// Whether a module serves the definition, written only by a module that serves its
/// runtime.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TinyComponentStatus {
    /// A module serves the component.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub installed: bool,
    /// The module that serves it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub module: String,
    /// Why it is not served: a name a compiled component holds, a script that does
    /// not compile, a schema that is not JSON.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

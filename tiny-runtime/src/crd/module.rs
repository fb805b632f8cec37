use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tiny_sdk::flow::{ComponentSchema, PortSchema, RawJson};

/// A module: its image, and (in status) where to reach it and what it offers.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "operator.tinysystems.io",
    version = "v1alpha1",
    kind = "TinyModule",
    namespaced,
    status = "TinyModuleStatus",
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".status.version"}"#,
    printcolumn = r#"{"name":"Address","type":"string","jsonPath":".status.addr"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TinyModuleSpec {
    /// `name:version`.
    #[serde(default)]
    pub image: String,
}

/// Written by the module's leader.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TinyModuleStatus {
    /// gRPC address other modules call.
    #[serde(default)]
    pub addr: String,
    /// Module name.
    #[serde(default)]
    pub name: String,
    /// Module version.
    #[serde(default)]
    pub version: String,
    /// SDK version.
    #[serde(default)]
    pub sdk_version: String,
    /// The components it offers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<ModuleComponent>,
    /// Kubernetes-style conditions; `Permitted` is `False` while the API server refuses
    /// an operation the module needs (a missing RBAC rule), saying which.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// `status.components[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModuleComponent {
    /// Component name.
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Help text.
    #[serde(default)]
    pub info: String,
    /// Tags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Ports with their schemas (system ports `_reconcile` and `_client` excluded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ModulePort>,
}

/// `status.components[].ports[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModulePort {
    /// Port name.
    pub name: String,
    /// Label.
    #[serde(default)]
    pub label: String,
    /// `true` for outputs.
    #[serde(default)]
    pub source: bool,
    /// 0=Top, 1=Right, 2=Bottom, 3=Left.
    #[serde(default)]
    pub position: i32,
    /// JSON Schema (base64 of JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<RawJson>,
}

/// The keyword a published port schema carries for a member of a port family: the
/// family's name (tiny's; JSON Schema readers ignore it).
pub(crate) const FAMILY: &str = "tinyFamily";
/// The keyword a published port schema carries for a blocking output (one with a
/// response type, Go's `ResponseConfiguration`): `true`.
pub(crate) const BLOCKING: &str = "tinyBlocking";

/// Why a YAML stream of TinyModules could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModuleYamlError {
    /// A document is not YAML, or a TinyModule in it does not decode.
    #[error("YAML document {document}: {source}")]
    Yaml {
        /// Which document (1 for the first).
        document: usize,
        /// Why.
        #[source]
        source: serde_yaml::Error,
    },
}

impl TinyModuleStatus {
    /// What the module publishes of its components, as
    /// [`validate`](tiny_sdk::flow::validate()) checks a flow's nodes of this module
    /// against. A port without a schema takes any value.
    pub fn component_schemas(&self) -> Vec<ComponentSchema> {
        self.components
            .iter()
            .map(|c| ComponentSchema {
                name: c.name.clone(),
                ports: c.ports.iter().fold(Vec::new(), |mut ports: Vec<PortSchema>, p| {
                    let mut schema = p.schema.as_ref().map_or(Value::Bool(true), |s| s.value().clone());
                    let marks = schema.as_object_mut();
                    let blocking = marks
                        .as_ref()
                        .is_some_and(|m| m.get(BLOCKING) == Some(&Value::Bool(true)));
                    let family = marks
                        .and_then(|m| m.remove(FAMILY))
                        .and_then(|f| f.as_str().map(str::to_owned));
                    if let Some(o) = schema.as_object_mut() {
                        o.remove(BLOCKING);
                    }
                    // A family's published members are one family port again.
                    let name = family.clone().unwrap_or_else(|| p.name.clone());
                    if !ports.iter().any(|known| known.family && known.name == name) {
                        let mut port = PortSchema::new(name, p.source, schema);
                        port.family = family.is_some();
                        port.blocking = blocking;
                        ports.push(port);
                    }
                    ports
                }),
            })
            .collect()
    }
}

/// The TinyModules of a YAML stream (documents of kind `TinyModule`, or a `List` of
/// them as `kubectl get tinymodules -o yaml` prints), each as its name (the module
/// segment of its nodes' names) and published components. Other kinds are skipped.
///
/// ```
/// let yaml = "kind: TinyModule\nmetadata: { name: common-module-v0 }\nstatus:\n  components:\n    - name: debug\n      ports: [{ name: in, schema: { type: object } }]\n";
/// let modules = tiny_runtime::crd::module_catalog(yaml).unwrap();
/// assert_eq!(modules[0].0, "common-module-v0");
/// assert_eq!(modules[0].1[0].ports[0].schema["type"], "object");
/// ```
pub fn module_catalog(yaml: &str) -> Result<Vec<(String, Vec<ComponentSchema>)>, ModuleYamlError> {
    use serde::Deserialize as _;
    let mut out = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
        let document = i + 1;
        let value = serde_yaml::Value::deserialize(doc).map_err(|source| ModuleYamlError::Yaml { document, source })?;
        let items = match value.get("kind").and_then(serde_yaml::Value::as_str) {
            Some("List") => value
                .get("items")
                .and_then(serde_yaml::Value::as_sequence)
                .cloned()
                .unwrap_or_default(),
            _ => vec![value],
        };
        for item in items {
            if item.get("kind").and_then(serde_yaml::Value::as_str) != Some("TinyModule") {
                continue;
            }
            // Only the name and status matter here: a TinyModule written by hand may
            // leave out the rest.
            let module: Published =
                serde_yaml::from_value(item).map_err(|source| ModuleYamlError::Yaml { document, source })?;
            let status = module.status.unwrap_or_default();
            let name = module.metadata.name.unwrap_or_else(|| status.name.clone());
            out.push((name, status.component_schemas()));
        }
    }
    Ok(out)
}

/// What [`module_catalog`] reads of a TinyModule.
#[derive(Deserialize)]
struct Published {
    #[serde(default)]
    metadata: kube::api::ObjectMeta,
    #[serde(default)]
    status: Option<TinyModuleStatus>,
}

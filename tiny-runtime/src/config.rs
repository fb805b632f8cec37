//! Who this module is: name, version, namespace, replica identity, published address.

use std::collections::BTreeMap;

/// The version of tiny this module was built with (`status.module.sdkVersion`).
pub const SDK_VERSION: &str = concat!("tiny-", env!("CARGO_PKG_VERSION"));

/// The module's identity and where it runs.
#[derive(Debug, Clone)]
pub struct ModuleConfig {
    /// Sanitised module name (the middle segment of its node names).
    pub name: String,
    /// Module version, without a leading `v`.
    pub version: String,
    /// Namespace of its resources.
    pub namespace: String,
    /// This replica's identity (the pod name; `HOSTNAME`).
    pub identity: String,
    /// The gRPC address other modules reach it at, once known.
    pub grpc_addr: Option<String>,
    /// Labels of the module's pods: Services made by `expose_port` select them.
    pub pod_selector: BTreeMap<String, String>,
    /// Ingress class for exposed ports (`None`: `nginx`, as the Go chart).
    pub ingress_class: Option<String>,
    /// Suffix of generated hostnames (`<prefix>-<suffix>`).
    pub hostname_suffix: Option<String>,
}

impl ModuleConfig {
    /// A module called `name` (sanitised) at `version` in `namespace`.
    pub fn new(name: &str, version: &str, namespace: &str, identity: &str) -> Self {
        let name = sanitize(name);
        Self {
            pod_selector: BTreeMap::from([("app.kubernetes.io/name".to_owned(), name.clone())]),
            name,
            version: version.trim_start_matches('v').to_owned(),
            namespace: namespace.to_owned(),
            identity: identity.to_owned(),
            grpc_addr: None,
            ingress_class: None,
            hostname_suffix: None,
        }
    }

    /// The Lease that elects this module's leader.
    pub fn lease_name(&self) -> String {
        format!("{}-lock", self.name)
    }
}

/// The Go SDK's `GetNameSanitised`: lowercase, runs of other characters become `-`,
/// the last 48 characters, no leading or trailing `-`.
///
/// ```
/// assert_eq!(tiny_runtime::config::sanitize("ghcr.io/Tiny/Common_Module:v0"), "ghcr-io-tiny-common-module-v0");
/// ```
pub fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let start = out.len().saturating_sub(48);
    out[start..].trim_matches('-').to_owned()
}

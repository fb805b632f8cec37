//! Who this module is: name, version, namespace, replica identity, published address.

use std::collections::BTreeMap;

/// The version of tiny this module was built with (`status.module.sdkVersion`).
pub const SDK_VERSION: &str = concat!("tiny-", env!("CARGO_PKG_VERSION"));

/// The module's identity and where it runs.
#[derive(Debug, Clone)]
pub struct ModuleConfig {
    /// The module's name as the Go SDK forms it: the sanitised `{name}-v{major}` (see
    /// [`module_name`]). It is the middle segment of its node names and the name of
    /// its TinyModule.
    pub name: String,
    /// `{name}:{version}` as given (the TinyModule's `spec.image`).
    pub image: String,
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
    /// Fail a hop whose edge expression fails, instead of going on with `null` as the
    /// Go SDK does (see [`tiny_sdk::engine::EngineBuilder::strict_expressions`]).
    pub strict_expressions: bool,
    /// The Secrets `[[secret:<name>/<key>]]` placeholders may name (the module's
    /// declared ones; see [`crate::secrets`]).
    pub secrets: Vec<String>,
    /// How long a read Secret is trusted, and how often nodes with placeholders are
    /// re-applied so that a rotated Secret reaches them.
    pub secret_ttl: std::time::Duration,
}

impl ModuleConfig {
    /// A module started as `--name name --version version` in `namespace`: it owns
    /// the nodes of module [`module_name(name, version)`](module_name), as a Go module
    /// started with the same flags does.
    pub fn new(name: &str, version: &str, namespace: &str, identity: &str) -> Self {
        let version = version.trim_start_matches('v');
        let image = format!("{name}:{version}");
        let name = module_name(name, version);
        Self {
            pod_selector: BTreeMap::from([("app.kubernetes.io/name".to_owned(), name.clone())]),
            name,
            image,
            version: version.to_owned(),
            namespace: namespace.to_owned(),
            identity: identity.to_owned(),
            grpc_addr: None,
            ingress_class: None,
            hostname_suffix: None,
            strict_expressions: false,
            secrets: Vec::new(),
            secret_ttl: crate::secrets::DEFAULT_TTL,
        }
    }

    /// Whether a module name written on an object (`spec.module`) means this module:
    /// its module name, or the name it was started with, with or without a version
    /// tag (`hello-module`, `hello-module:0.1.0`, `hello-module-v0`).
    pub fn answers_to(&self, written: &str) -> bool {
        let base = self.image.rsplit_once(':').map_or(self.image.as_str(), |(n, _)| n);
        let written_module = match written.rsplit_once(':') {
            Some((name, version)) => module_name(name, version),
            None => sanitize(written),
        };
        tiny_sdk::flow::module_matches(&written_module, &self.name)
            || tiny_sdk::flow::module_matches(&written_module, &sanitize(base))
    }

    /// The Lease that elects this module's leader.
    pub fn lease_name(&self) -> String {
        format!("{}-lock", self.name)
    }
}

/// The name a module started with `--name name --version version` goes by, as the Go
/// SDK's `GetMajorNameSanitised`: `{name}-v{major}` for a semantic version (so that
/// 0.1.0 and 0.2.0 serve the same nodes and 1.0.0 does not), `{name}-{version}` for
/// any other version, sanitised.
///
/// ```
/// use tiny_runtime::config::module_name;
/// assert_eq!(module_name("hello-module", "0.1.0"), "hello-module-v0");
/// assert_eq!(module_name("ghcr.io/Tiny/http-module", "v1.4.2-rc.1+b7"), "ghcr-io-tiny-http-module-v1");
/// assert_eq!(module_name("hello-module", "latest"), "hello-module-latest");
/// ```
pub fn module_name(name: &str, version: &str) -> String {
    match semver_major(version.trim_start_matches('v')) {
        Some(major) => sanitize(&format!("{name}:v{major}")),
        None => sanitize(&format!("{name}:{version}")),
    }
}

/// The major version of `MAJOR.MINOR.PATCH[-pre][+build]`, `None` for anything else.
fn semver_major(version: &str) -> Option<u64> {
    let core = version.split(['-', '+']).next()?;
    let parts: Vec<&str> = core.split('.').collect();
    let [major, minor, patch] = parts.as_slice() else {
        return None;
    };
    let number = |s: &str| (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u64>().ok())?;
    number(minor)?;
    number(patch)?;
    number(major)
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

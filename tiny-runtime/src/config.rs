//! Who this module is: name, version, namespace, replica identity, published address.

use std::collections::BTreeMap;

/// The version of tiny this module was built with (`status.module.sdkVersion`).
pub const SDK_VERSION: &str = concat!("tiny-", env!("CARGO_PKG_VERSION"));

/// Whom a message to a system port (`_settings`, `_control`, ...) from the wire
/// (NATS, JetStream or gRPC) is taken from (`--system-ports-from`). Who sent it is
/// read from what the message says: the platform sends with `x-from` empty or
/// `signal`, over NATS on the module's system subject (`tinymodule.<module>.sysmsg`);
/// a module sends along an edge, `x-from` naming its node. The header is the sender's
/// word: see the README's "Security" for what this is worth with shared credentials
/// and with a NATS user per module.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
#[non_exhaustive]
pub enum SystemPortsFrom {
    /// From anyone, as the Go SDK takes them.
    #[default]
    Any,
    /// From the platform only.
    Platform,
    /// From the platform and this module's own nodes.
    #[value(name = "self")]
    PlatformOrSelf,
}

/// The process's [`SystemPortsFrom`]: one module runs in a module process, and every
/// receiver (NATS, JetStream, gRPC) reads it per message.
static SYSTEM_PORTS_FROM: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

impl SystemPortsFrom {
    /// Makes `self` what every receiver of this process checks from now on (`run` sets
    /// it from `--system-ports-from` before it listens).
    pub fn install(self) {
        SYSTEM_PORTS_FROM.store(self.stored(), std::sync::atomic::Ordering::Relaxed);
    }

    /// What the receivers of this process check now.
    pub fn current() -> Self {
        Self::from_stored(SYSTEM_PORTS_FROM.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn from_stored(stored: u8) -> Self {
        match stored {
            0 => SystemPortsFrom::Any,
            2 => SystemPortsFrom::PlatformOrSelf,
            // 1, and a value no variant stores (fails closed, never open).
            _ => SystemPortsFrom::Platform,
        }
    }

    fn stored(self) -> u8 {
        match self {
            SystemPortsFrom::Any => 0,
            SystemPortsFrom::Platform => 1,
            SystemPortsFrom::PlatformOrSelf => 2,
        }
    }

    /// The flag's value, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            SystemPortsFrom::Any => "any",
            SystemPortsFrom::Platform => "platform",
            SystemPortsFrom::PlatformOrSelf => "self",
        }
    }
}

/// The module's identity and where it runs.
#[derive(Debug, Clone)]
pub struct ModuleConfig {
    /// The module's name as the Go SDK forms it: `--name`, [sanitised](sanitize). It is
    /// the middle segment of its node names, its NATS subjects and queue group, and the
    /// name of its TinyModule and Lease. (The platform puts the major version in the
    /// name it gives, as in `common-module-v0`.)
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
    /// How many messages from other modules are handled at once (see
    /// [`tiny_sdk::engine::EngineBuilder::max_in_flight`]).
    pub max_in_flight: usize,
    /// The hops one root message may cause (see
    /// [`tiny_sdk::engine::EngineBuilder::hop_budget`]).
    pub hop_budget: u32,
    /// The Secrets `[[secret:<name>/<key>]]` placeholders may name (the module's
    /// declared ones; see [`crate::secrets`]).
    pub secrets: Vec<String>,
    /// How long a read Secret is trusted, and how often nodes with placeholders are
    /// re-applied so that a rotated Secret reaches them.
    pub secret_ttl: std::time::Duration,
}

impl ModuleConfig {
    /// A module started as `--name name --version version` in `namespace`: it owns
    /// the nodes of module [`sanitize(name)`](sanitize), as a Go module started with
    /// the same flags does (the version is only the TinyModule's `spec.image`).
    pub fn new(name: &str, version: &str, namespace: &str, identity: &str) -> Self {
        let version = version.trim_start_matches('v');
        let image = format!("{name}:{version}");
        let name = sanitize(name);
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
            max_in_flight: tiny_sdk::engine::MAX_IN_FLIGHT,
            hop_budget: tiny_sdk::engine::HOP_BUDGET,
            secrets: Vec::new(),
            secret_ttl: crate::secrets::DEFAULT_TTL,
        }
    }

    /// Whether a module name written on an object (`spec.module`, a node name's middle
    /// part) means this module, by the Go SDK's `NameMatches`: a publisher prefix is
    /// optional either way, and `/` is `-` (`http-module-v0`,
    /// `tinysystems/http-module-v0` and `tinysystems-http-module-v0` are one module).
    pub fn answers_to(&self, written: &str) -> bool {
        tiny_sdk::flow::module_matches(written, &self.name)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_ports_setting_reads_back_as_stored_and_fails_closed() {
        // (The process-wide value itself is left alone: other tests read it.)
        for policy in [
            SystemPortsFrom::Platform,
            SystemPortsFrom::PlatformOrSelf,
            SystemPortsFrom::Any,
        ] {
            assert_eq!(SystemPortsFrom::from_stored(policy.stored()), policy);
        }
        // A value no variant stores reads as the strictest, never as `any`.
        assert_eq!(SystemPortsFrom::from_stored(u8::MAX), SystemPortsFrom::Platform);
    }
}

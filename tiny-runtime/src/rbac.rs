//! What a module's ServiceAccount may do: the runtime's own needs, derived from the API
//! calls this crate makes, plus what the module's components declare ([`Requirements`],
//! Go's `registry.SetRequirements`).
//!
//! `<module> rbac` prints [`values_yaml`]: the `rbac:` block of the `tiny-module` chart's
//! values. The chart turns `rbac.rules` and `rbac.extraRules` into a Role in the release
//! namespace, `rbac.extraClusterRules` into a ClusterRole, and `rbac.cleanupRules` into the
//! Role of the cleanup hook (`pre-delete`, run after the module is gone); `rbac.secrets` (the
//! Secrets declared with [`Requirements::secret`]) into a rule of the Role that may `get`
//! those Secrets by name, and into the module's `TINY_SECRETS`; `rbac.namespaceRules` into
//! a ClusterRole on the release namespace only. Least privilege: every rule names its
//! group, resources and verbs (no wildcard), and every one of them is used by the call
//! named in [`Need::why`]. What can be limited by name is ([`Need::names`]): a module may
//! write its own Lease and its own TinyModule's status, not another module's, and touches
//! Services and Ingresses only if it declares that it exposes ports.

use serde::{Deserialize, Serialize};

use tiny_sdk::contract::GROUP;

/// One RBAC policy rule (the shape of `rbac.authorization.k8s.io/v1` `PolicyRule`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// API groups (`""` is the core group).
    pub api_groups: Vec<String>,
    /// Resources, with subresources as `resource/subresource`.
    pub resources: Vec<String>,
    /// Verbs.
    pub verbs: Vec<String>,
    /// Object names the rule is limited to (empty: any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
}

impl Rule {
    /// A rule on `resources` of `group` with `verbs`.
    pub fn new(group: &str, resources: &[&str], verbs: &[&str]) -> Self {
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        Self {
            api_groups: vec![group.to_owned()],
            resources: owned(resources),
            verbs: owned(verbs),
            resource_names: Vec::new(),
        }
    }

    /// Limited to the objects named `names` (with [`MODULE`] for the module's name).
    #[must_use]
    pub fn named(mut self, names: &[&str]) -> Self {
        self.resource_names = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// The rule for module `module` (its sanitised name) in `namespace`: [`MODULE`] and
    /// [`NAMESPACE`] in `resourceNames` replaced, as the chart does when it renders the
    /// Roles.
    #[must_use]
    pub fn for_module(mut self, module: &str, namespace: &str) -> Self {
        for name in &mut self.resource_names {
            *name = name.replace(MODULE, module).replace(NAMESPACE, namespace);
        }
        self
    }

    /// Why a rule is not least privilege, if it is not: a wildcard or an empty list.
    pub fn wildcard(&self) -> Option<String> {
        let lists = [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("verbs", &self.verbs),
        ];
        for (field, list) in lists {
            if list.is_empty() {
                return Some(format!("`{field}` is empty"));
            }
            if list.iter().any(|v| v.contains('*')) {
                return Some(format!("`{field}` holds a wildcard: {list:?}"));
            }
        }
        None
    }
}

/// One permission the runtime needs, and the call that needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// API group (`""`: core).
    pub group: &'static str,
    /// Resource (or `resource/subresource`).
    pub resource: &'static str,
    /// Verbs.
    pub verbs: &'static [&'static str],
    /// The code that makes the calls.
    pub why: &'static str,
    /// The objects the rule is limited to (`resourceNames`), with [`MODULE`] standing for
    /// the module's sanitised name; empty: any (a `create`, a `list` or a `watch` cannot
    /// be limited by name).
    pub names: &'static [&'static str],
    /// When the module needs it.
    pub when: When,
}

/// Stands for the module's sanitised name (`--name`, as [`crate::config::sanitize`]
/// makes it) in a rule's `resourceNames`: the chart replaces it when it renders the Role,
/// [`Rule::for_module`] in code.
pub const MODULE: &str = "$(MODULE)";

/// The module's Lease (`<module>-lock`, [`crate::config::ModuleConfig::lease_name`]) in
/// a rule's `resourceNames`.
pub const LEASE: &str = "$(MODULE)-lock";

/// Stands for the module's namespace in a rule's `resourceNames` (of a ClusterRole).
pub const NAMESPACE: &str = "$(NAMESPACE)";

/// When a [`Need`] is part of a module's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Every module.
    Always,
    /// Only a module that declares it exposes ports ([`Requirements::exposes_ports`]):
    /// otherwise it may not touch the namespace's Services and Ingresses at all.
    ExposesPorts,
}

/// Everything the runtime itself calls, in the module's namespace. Keep in step with the
/// code: the chart's values and a test on the real API server check it.
pub const RUNTIME_NEEDS: &[Need] = &[
    Need {
        group: GROUP,
        resource: "tinynodes",
        verbs: &["get", "list", "watch", "patch", "create"],
        why: "node controller (watch, finalizer patch); signal owner lookup (get); _client get_node/create_node",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinynodes/status",
        verbs: &["patch"],
        why: "node controller status; _client update_metadata",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinynodes/finalizers",
        verbs: &["update"],
        why: "exposed Services and Ingresses are owned by their TinyNode with blockOwnerDeletion (OwnerReferencesPermissionEnforcement)",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinysignals",
        verbs: &["get", "list", "watch", "create"],
        why: "signal controller (watch; a claim read back); _client create_signal",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinysignals/status",
        verbs: &["patch"],
        why: "signal controller: claim, reply, error",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinymodules",
        verbs: &["list", "watch", "create"],
        why: "module registration (create), discovery of other modules (watch)",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinymodules/status",
        verbs: &["patch"],
        why: "the leader publishes components and its gRPC address, in its own TinyModule only",
        names: &[MODULE],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinytrackers",
        verbs: &["list", "watch"],
        why: "tracker controller: which flows to track",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinytrackers/status",
        verbs: &["patch"],
        why: "tracker controller: recorded hops",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinycomponents",
        verbs: &["list", "watch", "patch"],
        why: "component controller (a module serving a runtime): definitions to install, finalizer patch",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinycomponents/status",
        verbs: &["patch"],
        why: "component controller: installed, module, reason",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinyflows",
        verbs: &["get", "create"],
        why: "_client create_node (owner flow) and create_flow",
        names: &[],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinyprojects",
        verbs: &["get"],
        why: "_client create_flow (owner project)",
        names: &[],
        when: When::Always,
    },
    Need {
        group: "coordination.k8s.io",
        resource: "leases",
        verbs: &["create"],
        why: "leader election: the first replica creates `<module>-lock`",
        names: &[],
        when: When::Always,
    },
    Need {
        group: "coordination.k8s.io",
        resource: "leases",
        verbs: &["get", "patch"],
        why: "leader election: renews or takes over its own `<module>-lock`, no other module's",
        names: &[LEASE],
        when: When::Always,
    },
    Need {
        group: "events.k8s.io",
        resource: "events",
        verbs: &["create", "patch"],
        why: "node error Events",
        names: &[],
        when: When::Always,
    },
    Need {
        group: "",
        resource: "services",
        verbs: &["create", "patch", "delete"],
        why: "_client expose_port (server-side apply: patch, and create for a new object), unexpose_port (delete)",
        names: &[],
        when: When::ExposesPorts,
    },
    Need {
        group: "networking.k8s.io",
        resource: "ingresses",
        verbs: &["create", "patch", "delete"],
        why: "_client expose_port (server-side apply: patch, and create for a new object), unexpose_port (delete)",
        names: &[],
        when: When::ExposesPorts,
    },
];

/// What the runtime reads outside its namespace (a ClusterRole, as namespaces are not
/// namespaced): its own namespace, by name.
pub const NAMESPACE_NEEDS: &[Need] = &[Need {
    group: "",
    resource: "namespaces",
    verbs: &["get"],
    why: "whether its namespace terminates: then it removes tiny's finalizer from nodes whose module is gone",
    names: &[NAMESPACE],
    when: When::Always,
}];

/// What `<module> pre-delete` calls: the chart's cleanup
/// hook runs it, after the module is gone, with a ServiceAccount of its own.
pub const CLEANUP_NEEDS: &[Need] = &[
    Need {
        group: GROUP,
        resource: "tinymodules",
        verbs: &["delete"],
        why: "the module's TinyModule",
        names: &[MODULE],
        when: When::Always,
    },
    Need {
        group: "coordination.k8s.io",
        resource: "leases",
        verbs: &["get", "delete"],
        why: "waits until the module's Lease is free, then deletes it",
        names: &[LEASE],
        when: When::Always,
    },
    Need {
        group: GROUP,
        resource: "tinynodes",
        verbs: &["list", "patch"],
        why: "removes the module's finalizer from its TinyNodes",
        names: &[],
        when: When::Always,
    },
    Need {
        group: "",
        resource: "services",
        verbs: &["list", "delete"],
        why: "Services exposed for the module's nodes",
        names: &[],
        when: When::Always,
    },
    Need {
        group: "networking.k8s.io",
        resource: "ingresses",
        verbs: &["list", "delete"],
        why: "Ingresses exposed for the module's nodes",
        names: &[],
        when: When::Always,
    },
];

/// `needs` as rules: one per need, in order.
pub fn rules_of(needs: &[Need]) -> Vec<Rule> {
    needs
        .iter()
        .map(|n| Rule::new(n.group, &[n.resource], n.verbs).named(n.names))
        .collect()
}

/// The runtime's needs for a module with `requirements`: [`RUNTIME_NEEDS`] in order,
/// without Services and Ingresses unless it [exposes ports](Requirements::exposes_ports).
pub fn runtime_needs(requirements: &Requirements) -> Vec<Need> {
    RUNTIME_NEEDS
        .iter()
        .filter(|n| match n.when {
            When::Always => true,
            When::ExposesPorts => requirements.exposes_ports,
        })
        .copied()
        .collect()
}

/// The runtime's rules of a module that exposes no port (the chart's default values):
/// one per need, in [`RUNTIME_NEEDS`] order.
pub fn runtime_rules() -> Vec<Rule> {
    runtime_rules_for(&Requirements::none())
}

/// The runtime's rules of a module with `requirements` ([`runtime_needs`]).
pub fn runtime_rules_for(requirements: &Requirements) -> Vec<Rule> {
    rules_of(&runtime_needs(requirements))
}

/// The runtime's rules outside its namespace ([`NAMESPACE_NEEDS`]).
pub fn namespace_rules() -> Vec<Rule> {
    rules_of(NAMESPACE_NEEDS)
}

/// The cleanup hook's needs as rules, in [`CLEANUP_NEEDS`] order.
pub fn cleanup_rules() -> Vec<Rule> {
    rules_of(CLEANUP_NEEDS)
}

/// What a module's components need beyond the runtime (Go's `registry.SetRequirements`):
/// given to [`crate::cli::Module::requirements`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirements {
    /// Rules in the module's own namespace (a Role).
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// Rules across the cluster (a ClusterRole): only for what a namespace cannot hold.
    #[serde(default)]
    pub cluster_rules: Vec<Rule>,
    /// Secrets of the module's namespace that `[[secret:<name>/<key>]]` placeholders
    /// may name (Go's `Requirements.Secrets.Names`): granted `get` on these names only.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// A component exposes ports (`expose_port`): the module may create, patch and
    /// delete Services and Ingresses of its namespace. Without it, it may not touch them.
    #[serde(default)]
    pub exposes_ports: bool,
}

impl Requirements {
    /// No extra permissions.
    pub fn none() -> Self {
        Self::default()
    }

    /// Adds a rule in the module's namespace.
    #[must_use]
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Declares a Secret that node configurations may name in `[[secret:<name>/<key>]]`
    /// placeholders: the module may `get` it, and only it (see [`tiny_sdk::secret`]).
    #[must_use]
    pub fn secret(mut self, name: &str) -> Self {
        if !self.secrets.iter().any(|s| s == name) {
            self.secrets.push(name.to_owned());
        }
        self
    }

    /// Declares that a component exposes ports (`expose_port`, as `http_server` does):
    /// the runtime's rules then include Services and Ingresses.
    #[must_use]
    pub fn exposes_ports(mut self) -> Self {
        self.exposes_ports = true;
        self
    }

    /// Adds a cluster-wide rule.
    #[must_use]
    pub fn cluster_rule(mut self, rule: Rule) -> Self {
        self.cluster_rules.push(rule);
        self
    }

    /// The first rule that is not least privilege, named.
    pub fn check(&self) -> Result<(), RbacError> {
        let named = self
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("rules[{i}]"), r))
            .chain(
                self.cluster_rules
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (format!("clusterRules[{i}]"), r)),
            );
        for (at, rule) in named {
            if let Some(reason) = rule.wildcard() {
                return Err(RbacError::NotLeastPrivilege { at, reason });
            }
        }
        for (i, name) in self.secrets.iter().enumerate() {
            let probe = format!("[[secret:{name}/k]]");
            if !matches!(tiny_sdk::secret::Placeholder::parse(&probe), Some(Ok(_))) {
                return Err(RbacError::SecretName {
                    at: format!("secrets[{i}]"),
                    name: name.clone(),
                });
            }
        }
        Ok(())
    }
}

/// A requirement that cannot be granted as declared.
#[derive(Debug, thiserror::Error)]
pub enum RbacError {
    /// A rule with a wildcard or an empty list.
    #[error("RBAC requirement {at}: {reason}; name every group, resource and verb")]
    NotLeastPrivilege {
        /// Which rule (`rules[0]`, `clusterRules[1]`).
        at: String,
        /// What is wrong.
        reason: String,
    },
    /// A declared Secret name that a placeholder could not name.
    #[error("RBAC requirement {at}: `{name}` is not a Secret name (letters, digits, `.`, `_`, `-`)")]
    SecretName {
        /// Which one (`secrets[0]`).
        at: String,
        /// The name as declared.
        name: String,
    },
    /// The values could not be written.
    #[error("writing RBAC values: {0}")]
    Yaml(#[from] serde_yaml::Error),
}

/// The `rbac:` values of the `tiny-module` chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Values {
    /// The runtime's own rules (a Role).
    pub rules: Vec<Rule>,
    /// The runtime's rules on its own namespace object (a ClusterRole).
    #[serde(default)]
    pub namespace_rules: Vec<Rule>,
    /// The cleanup hook's rules (a Role of the hook's own ServiceAccount).
    pub cleanup_rules: Vec<Rule>,
    /// The components' rules in the namespace (the same Role).
    pub extra_rules: Vec<Rule>,
    /// The components' cluster-wide rules (a ClusterRole).
    pub extra_cluster_rules: Vec<Rule>,
    /// The Secrets placeholders may name: the chart grants `get` on them by name (in
    /// the Role) and tells the module (`TINY_SECRETS`).
    #[serde(default)]
    pub secrets: Vec<String>,
}

impl Values {
    /// The runtime's rules with `requirements` added.
    pub fn new(requirements: &Requirements) -> Result<Self, RbacError> {
        requirements.check()?;
        Ok(Self {
            rules: runtime_rules_for(requirements),
            namespace_rules: namespace_rules(),
            cleanup_rules: cleanup_rules(),
            extra_rules: requirements.rules.clone(),
            extra_cluster_rules: requirements.cluster_rules.clone(),
            secrets: requirements.secrets.clone(),
        })
    }
}

/// `rbac:` values YAML for `requirements`, each runtime rule preceded by a comment that
/// names the calls needing it.
pub fn values_yaml(requirements: &Requirements) -> Result<String, RbacError> {
    #[derive(Serialize)]
    struct Top<'a> {
        rbac: &'a Values,
    }
    let values = Values::new(requirements)?;
    let yaml = serde_yaml::to_string(&Top { rbac: &values })?;
    // Annotate the generated rules: the n-th `- apiGroups:` of a list is needs[n].
    let mut out =
        String::from("# RBAC of a tiny module: `<module> rbac` prints it; pass it to the tiny-module chart.\n");
    let runtime = runtime_needs(requirements);
    let (mut needs, mut n): (&[Need], usize) = (&[], 0);
    for line in yaml.lines() {
        if line.starts_with("  ") && !line.starts_with("   ") && !line.starts_with("  -") {
            needs = match line.trim_end() {
                "  rules:" => &runtime,
                "  namespaceRules:" => NAMESPACE_NEEDS,
                "  cleanupRules:" => CLEANUP_NEEDS,
                _ => &[],
            };
            n = 0;
        }
        if line.trim_start().starts_with("- apiGroups:") {
            if let Some(need) = needs.get(n) {
                out.push_str(&format!("  # {}\n", need.why));
            }
            n += 1;
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_runtime_rules_are_least_privilege_and_one_per_resource_and_names() {
        let exposing = runtime_rules_for(&Requirements::none().exposes_ports());
        for rules in [runtime_rules(), exposing, cleanup_rules()] {
            let mut seen = std::collections::BTreeSet::new();
            for r in &rules {
                assert_eq!(r.wildcard(), None, "{r:?}");
                let key = (r.api_groups.clone(), r.resources.clone(), r.resource_names.clone());
                assert!(seen.insert(key), "{r:?} twice");
            }
        }
        assert!(Requirements::none().check().is_ok());
    }

    #[test]
    fn a_module_may_write_only_its_own_lease_and_status_and_services_only_when_it_exposes() {
        let named = |rules: &[Rule], resource: &str| -> Vec<(Vec<String>, Vec<String>)> {
            rules
                .iter()
                .filter(|r| r.resources == [resource])
                .map(|r| (r.verbs.clone(), r.resource_names.clone()))
                .collect()
        };
        let rules: Vec<Rule> = runtime_rules()
            .into_iter()
            .map(|r| r.for_module("a-v0", "ns"))
            .collect();
        let s = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            named(&rules, "leases"),
            [(s(&["create"]), vec![]), (s(&["get", "patch"]), s(&["a-v0-lock"]))]
        );
        assert_eq!(named(&rules, "tinymodules/status"), [(s(&["patch"]), s(&["a-v0"]))]);
        for resource in ["services", "ingresses"] {
            assert!(named(&rules, resource).is_empty(), "{resource} without exposes_ports");
            let exposing = runtime_rules_for(&Requirements::none().exposes_ports());
            assert_eq!(named(&exposing, resource).len(), 1, "{resource} with exposes_ports");
        }
        let cleanup: Vec<Rule> = cleanup_rules()
            .into_iter()
            .map(|r| r.for_module("a-v0", "ns"))
            .collect();
        assert_eq!(named(&cleanup, "tinymodules"), [(s(&["delete"]), s(&["a-v0"]))]);
        let namespace: Vec<Rule> = namespace_rules()
            .into_iter()
            .map(|r| r.for_module("a-v0", "ns"))
            .collect();
        assert_eq!(named(&namespace, "namespaces"), [(s(&["get"]), s(&["ns"]))]);
    }

    #[test]
    fn a_wildcard_requirement_is_refused_and_named() {
        let req = Requirements::none()
            .rule(Rule::new("", &["configmaps"], &["get"]))
            .cluster_rule(Rule::new("batch", &["jobs"], &["*"]));
        let err = req.check().unwrap_err().to_string();
        assert!(err.contains("clusterRules[0]") && err.contains("verbs"), "{err}");
        let empty = Requirements::none().rule(Rule::new("", &[], &["get"]));
        assert!(
            empty
                .check()
                .unwrap_err()
                .to_string()
                .contains("rules[0]: `resources` is empty")
        );
    }

    #[test]
    fn declared_secrets_are_checked_and_go_to_the_values() {
        let req = Requirements::none().secret("creds").secret("creds").secret("api.v1");
        assert_eq!(req.secrets, ["creds", "api.v1"]);
        let yaml = values_yaml(&req).unwrap();
        assert!(yaml.contains("  secrets:\n  - creds\n  - api.v1\n"), "{yaml}");
        let bad = Requirements::none().secret("creds").secret("a/b");
        let err = bad.check().unwrap_err().to_string();
        assert!(err.contains("secrets[1]: `a/b` is not a Secret name"), "{err}");
    }

    #[test]
    fn values_yaml_round_trips_and_names_each_runtime_rule() {
        let req = Requirements::none()
            .rule(Rule::new("", &["configmaps"], &["get"]))
            .exposes_ports();
        let yaml = values_yaml(&req).unwrap();
        #[derive(Deserialize)]
        struct Top {
            rbac: Values,
        }
        let back: Top = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(back.rbac, Values::new(&req).unwrap());
        for need in RUNTIME_NEEDS.iter().chain(CLEANUP_NEEDS).chain(NAMESPACE_NEEDS) {
            assert!(yaml.contains(&format!("# {}", need.why)), "{}", need.why);
        }
    }
}

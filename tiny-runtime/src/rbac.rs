//! What a module's ServiceAccount may do: the runtime's own needs, derived from the API
//! calls this crate makes, plus what the module's components declare ([`Requirements`],
//! Go's `registry.SetRequirements`).
//!
//! `<module> rbac` prints [`values_yaml`]: the `rbac:` block of the `tiny-module` chart's
//! values. The chart turns `rbac.rules` and `rbac.extraRules` into a Role in the release
//! namespace, `rbac.extraClusterRules` into a ClusterRole, and `rbac.cleanupRules` into the
//! Role of the cleanup hook (`pre-delete`, run after the module is gone); `rbac.secrets` (the
//! Secrets declared with [`Requirements::secret`]) into a rule of the Role that may `get`
//! those Secrets by name, and into the module's `TINY_SECRETS`. Least privilege: every
//! rule names its group, resources and verbs (no wildcard), and every one of them is
//! used by the call named in [`Need::why`].

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
}

/// Everything the runtime itself calls, in the module's namespace. Keep in step with the
/// code: the chart's values and a test on the real API server check it.
pub const RUNTIME_NEEDS: &[Need] = &[
    Need {
        group: GROUP,
        resource: "tinynodes",
        verbs: &["get", "list", "watch", "patch", "create"],
        why: "node controller (watch, finalizer patch); signal owner lookup (get); _client get_node/create_node",
    },
    Need {
        group: GROUP,
        resource: "tinynodes/status",
        verbs: &["patch"],
        why: "node controller status; _client update_metadata",
    },
    Need {
        group: GROUP,
        resource: "tinynodes/finalizers",
        verbs: &["update"],
        why: "exposed Services and Ingresses are owned by their TinyNode with blockOwnerDeletion (OwnerReferencesPermissionEnforcement)",
    },
    Need {
        group: GROUP,
        resource: "tinysignals",
        verbs: &["get", "list", "watch", "create"],
        why: "signal controller (watch; a claim read back); _client create_signal",
    },
    Need {
        group: GROUP,
        resource: "tinysignals/status",
        verbs: &["patch"],
        why: "signal controller: claim, reply, error",
    },
    Need {
        group: GROUP,
        resource: "tinymodules",
        verbs: &["list", "watch", "create"],
        why: "module registration (create), discovery of other modules (watch)",
    },
    Need {
        group: GROUP,
        resource: "tinymodules/status",
        verbs: &["patch"],
        why: "the leader publishes components and its gRPC address",
    },
    Need {
        group: GROUP,
        resource: "tinytrackers",
        verbs: &["list", "watch"],
        why: "tracker controller: which flows to track",
    },
    Need {
        group: GROUP,
        resource: "tinytrackers/status",
        verbs: &["patch"],
        why: "tracker controller: recorded hops",
    },
    Need {
        group: GROUP,
        resource: "tinyflows",
        verbs: &["get", "create"],
        why: "_client create_node (owner flow) and create_flow",
    },
    Need {
        group: GROUP,
        resource: "tinyprojects",
        verbs: &["get"],
        why: "_client create_flow (owner project)",
    },
    Need {
        group: "coordination.k8s.io",
        resource: "leases",
        verbs: &["get", "create", "patch"],
        why: "leader election on `<module>-lock`",
    },
    Need {
        group: "events.k8s.io",
        resource: "events",
        verbs: &["create", "patch"],
        why: "node error Events",
    },
    Need {
        group: "",
        resource: "services",
        verbs: &["create", "patch", "delete"],
        why: "_client expose_port (server-side apply: patch, and create for a new object), unexpose_port (delete)",
    },
    Need {
        group: "networking.k8s.io",
        resource: "ingresses",
        verbs: &["create", "patch", "delete"],
        why: "_client expose_port (server-side apply: patch, and create for a new object), unexpose_port (delete)",
    },
];

/// What `<module> pre-delete` calls: the chart's cleanup
/// hook runs it, after the module is gone, with a ServiceAccount of its own.
pub const CLEANUP_NEEDS: &[Need] = &[
    Need {
        group: GROUP,
        resource: "tinymodules",
        verbs: &["delete"],
        why: "the module's TinyModule",
    },
    Need {
        group: "coordination.k8s.io",
        resource: "leases",
        verbs: &["get", "delete"],
        why: "waits until the module's Lease is free, then deletes it",
    },
    Need {
        group: GROUP,
        resource: "tinynodes",
        verbs: &["list", "patch"],
        why: "removes the module's finalizer from its TinyNodes",
    },
    Need {
        group: "",
        resource: "services",
        verbs: &["list", "delete"],
        why: "Services exposed for the module's nodes",
    },
    Need {
        group: "networking.k8s.io",
        resource: "ingresses",
        verbs: &["list", "delete"],
        why: "Ingresses exposed for the module's nodes",
    },
];

/// `needs` as rules: one per resource, in order.
pub fn rules_of(needs: &[Need]) -> Vec<Rule> {
    needs
        .iter()
        .map(|n| Rule::new(n.group, &[n.resource], n.verbs))
        .collect()
}

/// The runtime's needs as rules: one per resource, in [`RUNTIME_NEEDS`] order.
pub fn runtime_rules() -> Vec<Rule> {
    rules_of(RUNTIME_NEEDS)
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
            rules: runtime_rules(),
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
    let (mut needs, mut n): (&[Need], usize) = (&[], 0);
    for line in yaml.lines() {
        if line.starts_with("  ") && !line.starts_with("   ") && !line.starts_with("  -") {
            needs = match line.trim_end() {
                "  rules:" => RUNTIME_NEEDS,
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
    fn the_runtime_rules_are_least_privilege_and_one_per_resource() {
        for rules in [runtime_rules(), cleanup_rules()] {
            let mut seen = std::collections::BTreeSet::new();
            for r in &rules {
                assert_eq!(r.wildcard(), None, "{r:?}");
                assert!(seen.insert((r.api_groups.clone(), r.resources.clone())), "{r:?} twice");
            }
        }
        assert!(Requirements::none().check().is_ok());
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
        let req = Requirements::none().rule(Rule::new("", &["configmaps"], &["get"]));
        let yaml = values_yaml(&req).unwrap();
        #[derive(Deserialize)]
        struct Top {
            rbac: Values,
        }
        let back: Top = serde_yaml::from_str(&yaml).unwrap();
        assert_eq!(back.rbac, Values::new(&req).unwrap());
        for need in RUNTIME_NEEDS.iter().chain(CLEANUP_NEEDS) {
            assert!(yaml.contains(&format!("# {}", need.why)), "{}", need.why);
        }
    }
}

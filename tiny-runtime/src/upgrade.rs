//! `<module> check-upgrade`: whether this build still accepts what is deployed. The old
//! side is the module's TinyModule (the components its running build published) or a
//! snapshot of `<module> components`; the deployed side is the namespace's TinyNodes,
//! or flow files. The comparison is [`tiny_sdk::flow::check_upgrade`].

use std::path::{Path, PathBuf};

use kube::{Api, api::ListParams};
use serde::Serialize;
use tiny_sdk::{
    engine::Registry,
    flow::{Change, ComponentSchema, Finding, Flow, Node, Verdict, check_upgrade, schema_changes},
};

use crate::{
    config::ModuleConfig,
    crd::{Decoded, ModuleComponent, TinyModule, TinyModuleStatus, TinyNode},
};

/// Why the check could not be made (exit status 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckError {
    /// A file could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A components snapshot is not the JSON `<module> components` prints.
    #[error("{}: not the JSON array `components` prints: {source}", path.display())]
    Snapshot {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A flow file could not be parsed.
    #[error("{}: {message}", path.display())]
    Flow { path: PathBuf, message: String },
    /// The cluster could not be read.
    #[error("reading the {what} of namespace `{namespace}`: {source}")]
    Cluster {
        what: &'static str,
        namespace: String,
        #[source]
        source: kube::Error,
    },
}

/// What is deployed: the old build's components (`None`: the module never published
/// any) and every node of the namespace.
pub(crate) struct Deployed {
    pub old: Option<Vec<ComponentSchema>>,
    pub nodes: Vec<Node>,
    /// Why each node that does not decode was left out: it runs under no build, so
    /// an upgrade changes nothing for it.
    pub undecodable: Vec<String>,
}

/// The components `<module> components` printed (a snapshot of a build), as the
/// TinyModule would publish them.
pub(crate) fn snapshot(path: &Path) -> Result<Vec<ComponentSchema>, CheckError> {
    let text = read(path)?;
    let components: Vec<ModuleComponent> = serde_json::from_str(&text).map_err(|source| CheckError::Snapshot {
        path: path.to_owned(),
        source,
    })?;
    Ok(published(components))
}

/// This build's components, through the same publication as the old side's, so that
/// both are compared in one form.
pub(crate) fn this_build(registry: &Registry) -> Vec<ComponentSchema> {
    let config = ModuleConfig::new("module", "0", "", "");
    published(crate::controller::module::module_status(&config, registry).components)
}

fn published(components: Vec<ModuleComponent>) -> Vec<ComponentSchema> {
    TinyModuleStatus {
        components,
        ..TinyModuleStatus::default()
    }
    .component_schemas()
}

/// The nodes of flow files, as `render` hands them to the API server.
pub(crate) fn flow_files(paths: &[PathBuf]) -> Result<Vec<Node>, CheckError> {
    let mut nodes = Vec::new();
    for path in paths {
        let text = read(path)?;
        let flow = crate::crd::render(&text)
            .map_err(|e| e.to_string())
            .and_then(|t| Flow::from_yaml(&t).map_err(|e| e.to_string()))
            .map_err(|message| CheckError::Flow {
                path: path.clone(),
                message,
            })?;
        nodes.extend(flow.nodes);
    }
    Ok(nodes)
}

fn read(path: &Path) -> Result<String, CheckError> {
    std::fs::read_to_string(path).map_err(|source| CheckError::Read {
        path: path.to_owned(),
        source,
    })
}

/// The module's published components (its TinyModule `module`, if there is one), and,
/// with `nodes`, every TinyNode of `namespace`.
pub(crate) async fn from_cluster(
    client: kube::Client,
    namespace: &str,
    module: &str,
    components: bool,
    nodes: bool,
) -> Result<Deployed, CheckError> {
    let failed = |what| {
        move |source| CheckError::Cluster {
            what,
            namespace: namespace.to_owned(),
            source,
        }
    };
    let old = if components {
        let api: Api<TinyModule> = Api::namespaced(client.clone(), namespace);
        api.get_opt(module)
            .await
            .map_err(failed("TinyModules"))?
            .map(|m| m.status.map(|s| s.component_schemas()).unwrap_or_default())
    } else {
        None
    };
    let (mut decoded, mut undecodable) = (Vec::new(), Vec::new());
    if nodes {
        // One at a time: a malformed node fails alone, not the whole list.
        let api: Api<Decoded<TinyNode>> = Api::namespaced(client, namespace);
        for node in api
            .list(&ListParams::default())
            .await
            .map_err(failed("TinyNodes"))?
            .items
        {
            match node.object() {
                Ok(n) => decoded.push(crate::controller::node::to_flow_node(n)),
                Err(e) => undecodable.push(e.to_string()),
            }
        }
    }
    Ok(Deployed {
        old,
        nodes: decoded,
        undecodable,
    })
}

/// What `check-upgrade` found.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// The module checked.
    pub module: String,
    /// `breaking` when any finding is.
    pub verdict: Verdict,
    /// What each deployed edge and setting meets.
    pub findings: Vec<Finding>,
    /// Every schema change, deployed or not.
    pub changes: Vec<Change>,
    /// Nodes of the module checked.
    pub nodes: usize,
}

/// Checks `nodes` (every node of the namespace) against the change from `old` to `new`.
pub(crate) fn report(module: &str, old: &[ComponentSchema], new: &[ComponentSchema], nodes: &[Node]) -> Report {
    let findings = check_upgrade(nodes, module, old, new);
    let verdict = if findings.iter().any(|f| f.verdict == Verdict::Breaking) {
        Verdict::Breaking
    } else {
        Verdict::Compatible
    };
    let own = nodes
        .iter()
        .filter(|n| {
            tiny_sdk::flow::parse_node_name(&n.name).map_or_else(
                || tiny_sdk::flow::module_matches(&n.spec.module, module),
                |(m, _)| tiny_sdk::flow::module_matches(m, module),
            )
        })
        .count();
    Report {
        module: module.to_owned(),
        verdict,
        findings,
        changes: schema_changes(old, new),
        nodes: own,
    }
}

impl Report {
    /// One line a finding, breaking ones first.
    pub fn lines(&self) -> Vec<String> {
        let mut lines: Vec<(bool, String)> = self
            .findings
            .iter()
            .map(|f| (f.verdict != Verdict::Breaking, f.to_string()))
            .collect();
        lines.sort_by_key(|(compatible, _)| *compatible);
        lines.into_iter().map(|(_, l)| l).collect()
    }

    /// The one-line summary (standard error).
    pub fn summary(&self) -> String {
        let breaking = self.findings.iter().filter(|f| f.verdict == Verdict::Breaking).count();
        let compatible = self.findings.len() - breaking;
        let unused = self
            .changes
            .iter()
            .filter(|c| c.kind.verdict() == Verdict::Breaking)
            .count();
        format!(
            "module `{}`: {}: {breaking} breaking, {compatible} compatible for what is deployed ({} nodes of the \
             module checked; {} schema changes, {unused} of them breaking for a configuration that meets them)",
            self.module,
            if breaking > 0 {
                "the upgrade breaks deployed flows"
            } else {
                "the upgrade keeps every deployed flow working"
            },
            self.nodes,
            self.changes.len(),
        )
    }
}

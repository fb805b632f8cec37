//! Installing and uninstalling components defined as data in a running engine (see
//! `defined`): above the node table, which it re-applies and stops nodes in.

use std::sync::Arc;

use crate::{
    error::{Error, code},
    flow::Node,
};

use super::{
    defined::{DefineError, Definition, Installed},
    table::Engine,
};

impl Engine {
    /// Whether this module runs definitions of `runtime`.
    pub fn serves(&self, runtime: &str) -> bool {
        self.inner.registry.defined.serves(runtime)
    }

    /// Compiles `definition` with `runtime` and serves it: nodes of its name load
    /// (those applied before it included), and nodes of an earlier version restart
    /// with the new one. Refused, with nothing changed, when a compiled component holds
    /// the name, the runtime is not served here, or the script does not compile.
    pub async fn install(&self, runtime: &str, definition: Definition) -> std::result::Result<(), DefineError> {
        let registry = &self.inner.registry;
        if definition.name.is_empty() {
            return Err(DefineError::EmptyName);
        }
        if registry.get(&definition.name).is_some() {
            return Err(DefineError::Builtin { name: definition.name });
        }
        let Some(rt) = registry.defined.runtimes.get(runtime) else {
            return Err(DefineError::Unserved {
                runtime: runtime.to_owned(),
                served: registry.defined.runtime_names().join(", "),
            });
        };
        if registry
            .defined
            .get(&definition.name)
            .is_some_and(|i| i.runtime == runtime && i.definition == definition)
        {
            // The same definition again (a periodic reconcile): the nodes keep running.
            return Ok(());
        }
        // A runtime may run the script to check it (up to its time limit): off the
        // caller's worker.
        let (rt, def) = (rt.clone(), definition.clone());
        let compiled = tokio::task::spawn_blocking(move || rt.compile(&def))
            .await
            .map_err(|e| DefineError::Script {
                line: None,
                column: None,
                reason: format!("the runtime failed while compiling it: {e}"),
            })??;
        let name = definition.name.clone();
        registry
            .defined
            .write()
            .insert(name.clone(), Arc::new(Installed::new(runtime, definition, compiled)));
        for node in self.nodes_of(&name) {
            // A node that does not load records why in its report.
            let _ = self.apply(node.clone()).await;
            self.status_changed(&node.name);
        }
        Ok(())
    }

    /// Stops serving the defined component `name`: its nodes stop (handlers running
    /// are stopped, and their report says why) until it is installed again. `false`
    /// when it was not installed.
    pub fn uninstall(&self, name: &str) -> bool {
        if self.inner.registry.defined.write().remove(name).is_none() {
            return false;
        }
        let mut stopped = Vec::new();
        {
            let mut nodes = self.inner.nodes_mut();
            for (node, slot) in nodes.iter_mut() {
                if slot.node.spec.component != name {
                    continue;
                }
                if let Some(runner) = slot.runner.take() {
                    self.inner.set_cell(node, None);
                    stopped.push(runner);
                }
                slot.error = Some(
                    Error::permanent(format!(
                        "component `{name}` is no longer served: its definition (TinyComponent) was deleted"
                    ))
                    .with_code(code::UNKNOWN_COMPONENT),
                );
            }
        }
        for runner in stopped {
            runner.instance.stop();
            runner.instance.node().emitter.detach();
            self.status_changed(&runner.node.name);
        }
        true
    }

    /// Has the runtime rewrite the node's status (it shows the component's ports or
    /// why it stopped).
    fn status_changed(&self, node: &str) {
        if let Some(changed) = &self.inner.on_change {
            changed(node);
        }
    }

    fn nodes_of(&self, component: &str) -> Vec<Node> {
        self.inner
            .nodes_read()
            .values()
            .filter(|s| s.node.spec.component == component)
            .map(|s| s.node.clone())
            .collect()
    }
}

//! Components defined as data (Go's TinyComponent): a [`Definition`] names a runtime, a
//! [`ComponentRuntime`] compiles it, and the engine runs nodes of it beside the
//! compiled components, under the definition's name.
//!
//! A module offers a runtime with [`Registry::runtime`](super::Registry::runtime) (or
//! [`EngineBuilder::runtime`](super::EngineBuilder::runtime)); tiny's own is
//! [`ExprRuntime`]. The runtime's controller calls
//! [`Engine::install`](super::Engine::install) when a definition is applied or edited
//! and [`Engine::uninstall`](super::Engine::uninstall) when it is deleted.
//!
//! Every defined component has Go's js-module ports: `request` (`{context, inputData}`),
//! `response` (`{context, outputData}`), and `error` when the definition enables it. The
//! script maps `inputData` to `outputData`; `context` passes through.

use std::{
    collections::BTreeMap,
    fmt,
    sync::{Arc, RwLock},
};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::{
    client::ResourceManager,
    component::ComponentInfo,
    context::Hop,
    contract::port as system,
    error::{Error, ErrorMessage, Result, code},
    flow::Node,
    message::Reply,
    msg::Msg,
    node::{Emit as _, NodeContext},
    port::{Direction, PortShape, PortSpec, Position},
};

use super::instance::{LivePort, NodeInstance};

/// The tag of every defined component's catalogue entry (Go's `Defined`), which tells
/// it from a compiled one.
pub const DEFINED_TAG: &str = "Defined";

/// The input port of a defined component: `{context, inputData}`.
pub const REQUEST_PORT: &str = "request";
/// The output port of a defined component: `{context, outputData}`.
pub const RESPONSE_PORT: &str = "response";

/// A TinyComponent reduced to what a runtime needs (Go's `ComponentDefinition`): no
/// Kubernetes types, so a runtime knows of scripts only.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Definition {
    /// What nodes name in `spec.component`.
    pub name: String,
    /// One line for the palette.
    pub description: String,
    /// The longer help.
    pub info: String,
    /// The implementation, in the runtime's language.
    pub script: String,
    /// The JSON Schema of `inputData`.
    pub input: Value,
    /// The JSON Schema of `outputData`.
    pub output: Value,
    /// Whether the component has an `error` port for the script's failures.
    pub enable_error_port: bool,
}

/// Why a definition is not served. Its `Display` is the sentence a TinyComponent's
/// `status.reason` shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DefineError {
    /// `spec.component` is empty.
    #[error("spec.component is empty")]
    EmptyName,
    /// A compiled component of this module holds the name; a definition never
    /// replaces something that already works.
    #[error("`{name}` is a built-in component of this module; a definition may not replace it")]
    Builtin {
        /// The name.
        name: String,
    },
    /// This module serves no runtime of that name.
    #[error("this module does not serve runtime `{runtime}` (it serves: {served})")]
    Unserved {
        /// The runtime the definition names.
        runtime: String,
        /// The runtimes this module serves, comma-separated.
        served: String,
    },
    /// `spec.input` or `spec.output` is not a JSON Schema.
    #[error("spec.{field} is not a JSON Schema object: {reason}")]
    Schema {
        /// `input` or `output`.
        field: &'static str,
        /// What is wrong, with the line and column for text that is not JSON.
        reason: String,
    },
    /// The script does not compile.
    #[error("the script does not compile{}: {reason}", at(*line, *column))]
    Script {
        /// Line of the script (from 1), when the runtime knows it.
        line: Option<u32>,
        /// Column (from 1), when the runtime knows it.
        column: Option<u32>,
        /// What is wrong.
        reason: String,
    },
    /// The script asks for something a runtime refuses (a network or file import).
    #[error("the script imports `{specifier}`, which is refused: {reason}")]
    Import {
        /// What it imports.
        specifier: String,
        /// Why it is refused.
        reason: String,
    },
}

impl Definition {
    /// The ports of a node of this definition (`error` when enabled), with the
    /// schemas its status shows: what a module publishes for the component.
    pub fn ports(&self) -> Vec<(&'static PortSpec, Value)> {
        PORTS
            .iter()
            .filter(|p| p.name != system::ERROR || self.enable_error_port)
            .map(|p| (p, port_schema(self, p.name)))
            .collect()
    }
}

fn at(line: Option<u32>, column: Option<u32>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" at line {l}, column {c}"),
        (Some(l), None) => format!(" at line {l}"),
        _ => String::new(),
    }
}

impl DefineError {
    /// The schema field's JSON text, parsed and checked to be an object (or `true`).
    pub fn parse_schema(field: &'static str, text: &str) -> std::result::Result<Value, DefineError> {
        let value: Value = serde_json::from_str(text).map_err(|e| DefineError::Schema {
            field,
            reason: format!("{e}"),
        })?;
        match value {
            Value::Object(_) | Value::Bool(true) => Ok(value),
            other => Err(DefineError::Schema {
                field,
                reason: format!("a schema is a JSON object, not `{other}`"),
            }),
        }
    }
}

/// A language a module can run definitions in (Go's `RuntimeFactory`). Compiling
/// checks everything it can: a script that will never run is refused when it is
/// applied, while someone is looking at it.
pub trait ComponentRuntime: Send + Sync + 'static {
    /// The name definitions give in `spec.runtime` (`expr`, `js`).
    fn name(&self) -> &str;
    /// Compiles `definition` once; each node of it then starts from the result.
    fn compile(&self, definition: &Definition) -> std::result::Result<Arc<dyn CompiledScript>, DefineError>;
}

/// A compiled definition, shared by its nodes.
pub trait CompiledScript: Send + Sync + 'static {
    /// What one node runs: a fresh interpreter for a runtime that has one, so that
    /// nodes share no state.
    fn start(&self) -> Result<Box<dyn Script>>;
}

/// One node's script.
pub trait Script: Send + Sync + 'static {
    /// Maps one `inputData` to its `outputData`. A failure goes to the `error` port
    /// when the definition has one and an edge leaves it, else it fails the message.
    fn call(&self, input: Value) -> BoxFuture<'_, Result<Value>>;
    /// The node stops (deleted, or its definition changed): a runtime interrupts a
    /// script still running.
    fn stop(&self) {}
}

/// A definition being served.
pub(crate) struct Installed {
    /// The runtime it was compiled with: the same script in another runtime is another
    /// definition.
    pub(crate) runtime: String,
    pub(crate) definition: Definition,
    compiled: Arc<dyn CompiledScript>,
}

impl Installed {
    pub(crate) fn new(runtime: &str, definition: Definition, compiled: Arc<dyn CompiledScript>) -> Self {
        Self {
            runtime: runtime.to_owned(),
            definition,
            compiled,
        }
    }
}

/// The runtimes a module serves and the definitions installed. Clones share the table
/// (an engine's nodes read the one it installs into); an engine takes a table of its
/// own when it is built ([`Defined::own_table`]), so two engines built from clones of
/// one registry do not see each other's installs.
#[derive(Clone, Default)]
pub(crate) struct Defined {
    pub(crate) runtimes: BTreeMap<String, Arc<dyn ComponentRuntime>>,
    installed: Arc<RwLock<BTreeMap<String, Arc<Installed>>>>,
}

impl fmt::Debug for Defined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Defined")
            .field("runtimes", &self.runtimes.keys().collect::<Vec<_>>())
            .field("installed", &self.read().keys().cloned().collect::<Vec<_>>())
            .finish()
    }
}

impl Defined {
    pub(crate) fn add_runtime(&mut self, runtime: Arc<dyn ComponentRuntime>) {
        self.runtimes.insert(runtime.name().to_owned(), runtime);
    }

    pub(crate) fn serves(&self, runtime: &str) -> bool {
        self.runtimes.contains_key(runtime)
    }

    /// The same runtimes, with an empty table of definitions of its own.
    pub(crate) fn own_table(self) -> Self {
        Self {
            runtimes: self.runtimes,
            installed: Arc::default(),
        }
    }

    pub(crate) fn runtime_names(&self) -> Vec<&str> {
        self.runtimes.keys().map(String::as_str).collect()
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<Installed>> {
        self.read().get(name).cloned()
    }

    pub(crate) fn definitions(&self) -> Vec<Definition> {
        self.read().values().map(|i| i.definition.clone()).collect()
    }

    pub(crate) fn definition(&self, name: &str) -> Option<Definition> {
        self.read().get(name).map(|i| i.definition.clone())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Installed>>> {
        self.installed.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<Installed>>> {
        self.installed
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// tiny's own runtime, `expr`: the script is a JSON document whose strings may hold
/// `{{...}}` expressions over `inputData` as `$` (the language of edge mappings), so
/// reshaping needs no interpreter at all.
///
/// ```
/// # use tiny_sdk::engine::{ComponentRuntime, Definition, ExprRuntime};
/// let def = Definition { name: "who".into(), script: r#"{"name": "{{$.user.name}}"}"#.into(), ..Default::default() };
/// assert!(ExprRuntime.compile(&def).is_ok());
/// let bad = Definition { script: "{\n \"name\": \"{{$.user.}}\"}".into(), ..def };
/// assert!(ExprRuntime.compile(&bad).is_err());
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ExprRuntime;

/// The name of [`ExprRuntime`].
pub const EXPR_RUNTIME: &str = "expr";

impl ComponentRuntime for ExprRuntime {
    fn name(&self) -> &str {
        EXPR_RUNTIME
    }

    fn compile(&self, definition: &Definition) -> std::result::Result<Arc<dyn CompiledScript>, DefineError> {
        let doc: Value = serde_json::from_str(&definition.script).map_err(|e| DefineError::Script {
            line: u32::try_from(e.line()).ok(),
            column: u32::try_from(e.column()).ok(),
            reason: format!("not JSON: {e}"),
        })?;
        let template = tiny_expr::Template::compile(&doc).map_err(|e| {
            // Where in the text the failing string is: its line, and the expression's
            // column within the line when the string has no escapes before it.
            let (line, column) = locate(&definition.script, &e.expression, e.offset);
            DefineError::Script {
                line,
                column,
                reason: e.to_string(),
            }
        })?;
        Ok(Arc::new(ExprScript(Arc::new(template))))
    }
}

/// Line and column (from 1) of char `offset` of `expression` in `script`, when the
/// expression appears there verbatim.
fn locate(script: &str, expression: &str, offset: usize) -> (Option<u32>, Option<u32>) {
    let Some(start) = script.find(expression) else {
        return (None, None);
    };
    let before = &script[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = script[line_start..start].chars().count() + offset + 1;
    (u32::try_from(line).ok(), u32::try_from(column).ok())
}

struct ExprScript(Arc<tiny_expr::Template>);

impl CompiledScript for ExprScript {
    fn start(&self) -> Result<Box<dyn Script>> {
        Ok(Box::new(ExprScript(self.0.clone())))
    }
}

impl Script for ExprScript {
    fn call(&self, input: Value) -> BoxFuture<'_, Result<Value>> {
        let out = self
            .0
            .render(&input)
            .map_err(|e| Error::permanent(format!("the script failed: {e}")));
        Box::pin(std::future::ready(out))
    }
}

fn any_schema() -> Value {
    json!({"type": "object"})
}

fn null() -> Value {
    Value::Null
}

fn error_schema() -> Value {
    crate::schema::cached_port_schema::<ErrorMessage>()
}

/// The ports of every defined component; their schemas are the definition's, in each
/// node's status.
static PORTS: [PortSpec; 3] = [
    PortSpec {
        name: REQUEST_PORT,
        label: "Request",
        description: "",
        direction: Direction::Target,
        position: Position::Left,
        schema: any_schema,
        default_config: null,
        response_schema: None,
        family: false,
    },
    PortSpec {
        name: RESPONSE_PORT,
        label: "Response",
        description: "",
        direction: Direction::Source,
        position: Position::Right,
        schema: any_schema,
        default_config: null,
        response_schema: None,
        family: false,
    },
    PortSpec {
        name: system::ERROR,
        label: "Error",
        description: "",
        direction: Direction::Source,
        position: Position::Bottom,
        schema: error_schema,
        default_config: null,
        response_schema: None,
        family: false,
    },
];

/// One node of a defined component.
struct DefinedInstance {
    installed: Arc<Installed>,
    table: Defined,
    script: Box<dyn Script>,
    node: Arc<NodeContext>,
}

/// A node of the installed definition `installed`.
pub(crate) async fn create(
    installed: Arc<Installed>,
    table: &Defined,
    node: Arc<NodeContext>,
) -> Result<Arc<dyn NodeInstance>> {
    // A runtime may start an interpreter here (load the module, run its top-level
    // code, up to its time limit): off the caller's worker.
    let compiled = installed.compiled.clone();
    let script = tokio::task::spawn_blocking(move || compiled.start())
        .await
        .map_err(|e| Error::permanent(format!("the script's runtime failed while starting it: {e}")))??;
    Ok(Arc::new(DefinedInstance {
        installed,
        table: table.clone(),
        script,
        node,
    }))
}

impl DefinedInstance {
    fn error_port(&self) -> bool {
        self.installed.definition.enable_error_port
    }

    async fn run(&self, input: Msg, hop: Hop) -> Result<Reply> {
        let request = input.json()?;
        let context = request.get("context").cloned().unwrap_or(Value::Null);
        let data = request.get("inputData").cloned().unwrap_or(Value::Null);
        // A node removed or changed stops waiting for its script (which the runtime
        // interrupts, see `Script::stop`).
        let result = {
            let work = self.script.call(data);
            let stopped = std::pin::pin!(self.node.stopped());
            match futures::future::select(work, stopped).await {
                futures::future::Either::Left((result, _)) => result,
                futures::future::Either::Right(_) => Err(Error::permanent(
                    "the node was stopped while its script ran (removed, or its definition changed or was deleted)",
                )
                .with_code(code::NODE_REMOVED)),
            }
        };
        match result {
            Ok(output) => {
                let response = json!({"context": context, "outputData": output});
                self.node
                    .emitter
                    .emit(RESPONSE_PORT, Msg::from_json(response), hop)
                    .await
            }
            Err(e) if self.error_port() && self.node.connected(system::ERROR) => {
                let failure = ErrorMessage::new(request, &e);
                self.node.emitter.emit(system::ERROR, Msg::new(failure), hop).await
            }
            Err(e) => Err(e),
        }
    }

    fn schema_of(&self, port: &str) -> Value {
        port_schema(&self.installed.definition, port)
    }
}

/// The schema of a defined component's port: Go's request/response envelopes around
/// the definition's schemas.
fn port_schema(def: &Definition, port: &str) -> Value {
    match port {
        REQUEST_PORT => json!({
            "type": "object",
            "properties": {"context": {"title": "Context", "configurable": true}, "inputData": def.input},
            "propertyOrder": ["context", "inputData"],
        }),
        RESPONSE_PORT => json!({
            "type": "object",
            "properties": {"context": {"title": "Context"}, "outputData": def.output},
            "propertyOrder": ["context", "outputData"],
        }),
        _ => error_schema(),
    }
}

impl NodeInstance for DefinedInstance {
    fn info(&self) -> ComponentInfo {
        let def = &self.installed.definition;
        ComponentInfo {
            name: def.name.clone(),
            description: def.description.clone(),
            info: def.info.clone(),
            tags: vec![DEFINED_TAG.to_owned()],
        }
    }

    fn ports(&self) -> &'static [PortSpec] {
        &PORTS
    }

    fn node(&self) -> &Arc<NodeContext> {
        &self.node
    }

    fn handle(self: Arc<Self>, port: &'static str, input: Msg, hop: Hop) -> BoxFuture<'static, Result<Reply>> {
        Box::pin(async move {
            if port != REQUEST_PORT {
                return Err(
                    Error::permanent(format!("a defined component has no input port `{port}`"))
                        .with_code(code::UNKNOWN_PORT),
                );
            }
            self.run(input, hop).await
        })
    }

    fn settings<'a>(&'a self, _value: Option<&'a Value>) -> BoxFuture<'a, Result<bool>> {
        // A definition has no settings: its spec is the configuration.
        Box::pin(std::future::ready(Ok(false)))
    }

    fn preset_settings(&self, _value: Option<&Value>) {}

    fn live_ports(&self) -> Vec<LivePort> {
        PORTS
            .iter()
            .filter(|p| p.name != system::ERROR || self.error_port())
            .map(|spec| LivePort {
                spec,
                name: spec.name.into(),
                key: None,
            })
            .collect()
    }

    fn shaped_ports(&self) -> Vec<(&'static PortSpec, PortShape)> {
        self.live_ports()
            .into_iter()
            .map(|p| {
                let shape = PortShape {
                    name: p.name.into_owned(),
                    label: p.spec.label.to_owned(),
                    schema: self.schema_of(p.spec.name),
                    configuration: Value::Null,
                };
                (p.spec, shape)
            })
            .collect()
    }

    fn stop(&self) {
        self.script.stop();
        self.node.stop();
    }

    fn stale(&self) -> bool {
        self.table
            .get(&self.installed.definition.name)
            .is_none_or(|now| !Arc::ptr_eq(&now, &self.installed))
    }

    fn control<'a>(&'a self, _input: &'a Value, _hop: Hop) -> BoxFuture<'a, Result<Reply>> {
        Box::pin(std::future::ready(Err(Error::permanent(
            "a defined component has no `_control` port",
        )
        .with_code(code::UNKNOWN_PORT))))
    }

    fn reconcile<'a>(&'a self, _node: &'a Node) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn client(&self, _client: Arc<dyn ResourceManager>) -> BoxFuture<'_, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn node_client(&self) -> Option<Arc<dyn ResourceManager>> {
        self.node.client().cloned()
    }

    fn destroy(&self) -> BoxFuture<'_, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

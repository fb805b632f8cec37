//! `kv`: a key-value store of documents, kept in node state.
//!
//! One record per primary-key value, under `_state/<key>` on the TinyNode, as Go's
//! kv stores it: records survive restarts, every replica reads them, and a node moved
//! between a Go and a Rust module keeps its data.

use serde_json::{Map, Value, json};
use tiny_sdk::{PortShape, expr::Expr, flow::Node, prelude::*};

/// The largest record, in bytes of JSON (Go's limit).
const MAX_RECORD: usize = 32 * 1024;
/// The default (and the value of 0) record limit.
const DEFAULT_MAX_RECORDS: usize = 100;

/// Settings, as Go's kv.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct KvSettings {
    /// The shape of a document; it must hold the primary key.
    #[tiny(configurable, title = "Document")]
    pub document: Map<String, Value>,
    #[tiny(title = "Primary Key")]
    pub primary_key: String,
    /// 0 means the default, 100; the real ceiling is the node's ~900 KB state budget.
    #[tiny(title = "Max Records")]
    #[serde(default)]
    pub max_records: i64,
    /// Emits an acknowledgement after store and delete operations.
    #[tiny(title = "Enable Store Ack Port")]
    #[serde(default)]
    pub enable_store_ack_port: bool,
}

impl Default for KvSettings {
    fn default() -> Self {
        Self {
            document: Map::from_iter([("id".to_owned(), json!("ID"))]),
            primary_key: "id".into(),
            max_records: DEFAULT_MAX_RECORDS as i64,
            enable_store_ack_port: false,
        }
    }
}

/// Store or delete.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, Schema)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    #[default]
    Store,
    Delete,
}

/// What `store` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct StoreRequest {
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    #[tiny(title = "Operation")]
    #[serde(default)]
    pub operation: Operation,
    /// Document to store or delete.
    #[tiny(title = "Document")]
    pub document: Map<String, Value>,
}

/// What `store_ack` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct StoreAck {
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    #[tiny(title = "Request")]
    pub request: StoreRequest,
}

/// What `query` takes.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
pub struct QueryRequest {
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// An expression evaluated against each record, e.g. `$.status == 'DOWN'`; a record
    /// is in the result when it is `true`. Empty: every record.
    #[tiny(title = "Query")]
    #[serde(default)]
    pub query: String,
}

impl Default for QueryRequest {
    fn default() -> Self {
        Self {
            context: Value::Null,
            query: "$.status == 'DOWN'".into(),
        }
    }
}

/// One record of a query result.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Record {
    pub key: String,
    pub document: Map<String, Value>,
}

/// What `query_result` sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct QueryResult {
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    pub results: Vec<Record>,
    pub count: usize,
    pub query: String,
}

/// The dashboard: how many records, and a Reset button.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct KvControl {
    #[tiny(title = "Records", readonly)]
    #[serde(default)]
    pub records: usize,
    #[tiny(title = "Reset", format = "button")]
    #[serde(default)]
    pub reset: bool,
}

/// Key-value store on node state: `store` stores or deletes a document by its primary
/// key, `query` sends the documents an expression selects on Query Result.
#[derive(Component, Default, Debug)]
#[component(name = "kv", description = "Key-Value Store", tags("KV", "Storage", "Data"), settings = KvSettings, control = KvControl, hooks)]
pub struct Kv {
    #[port(position = Left)]
    store: Input<StoreRequest>,
    #[port(position = Left)]
    query: Input<QueryRequest>,
    #[port(position = Right)]
    query_result: Output<QueryResult>,
    /// After each store or delete, when the settings switch it on.
    #[port(position = Right, enabled_by = enable_store_ack_port)]
    store_ack: Output<StoreAck>,
}

#[handlers]
impl Kv {
    fn show(ctx: &Ctx<Self>) {
        ctx.show_control(&KvControl {
            records: ctx.state().keys().len(),
            reset: false,
        });
    }

    async fn on_store(&self, ctx: &Ctx<Self>, req: StoreRequest) -> Result<Reply> {
        let pk = &ctx.settings().primary_key;
        let key = match req.document.get(pk) {
            None => return Err(Error::permanent(format!("primary key {pk:?} not found in document"))),
            Some(Value::String(k)) if !k.is_empty() => k.clone(),
            Some(Value::String(_)) => return Err(Error::permanent(format!("primary key {pk:?} is empty"))),
            Some(other) => {
                return Err(Error::permanent(format!(
                    "primary key {pk:?} must be a string, got {other}"
                )));
            }
        };
        let state = ctx.state();
        match req.operation {
            Operation::Store => {
                let bytes = serde_json::to_vec(&req.document)?;
                if bytes.len() > MAX_RECORD {
                    return Err(Error::permanent(format!(
                        "document too large: {} bytes (max {MAX_RECORD})",
                        bytes.len()
                    )));
                }
                let max = usize::try_from(ctx.settings().max_records)
                    .ok()
                    .filter(|n| *n > 0)
                    .unwrap_or(DEFAULT_MAX_RECORDS);
                let keys = state.keys();
                if !keys.contains(&key) && keys.len() >= max {
                    return Err(Error::permanent(format!(
                        "store full: {} records (max {max})",
                        keys.len()
                    )));
                }
                state.set_bytes(&key, &bytes).await?;
            }
            Operation::Delete => state.delete(&key).await?,
        }
        // Acknowledged once stored, as Go's kv answers after its write: a store the
        // API server refused fails the message rather than vanish.
        state.flush().await?;
        Self::show(ctx);
        if ctx.settings().enable_store_ack_port {
            let ack = StoreAck {
                context: req.context.clone(),
                request: req,
            };
            return self.store_ack.emit(ctx, ack).await;
        }
        Ok(Reply::empty())
    }

    async fn on_query(&self, ctx: &Ctx<Self>, req: QueryRequest) -> Result<Reply> {
        let filter = if req.query.trim().is_empty() {
            None
        } else {
            Some(Expr::parse(&req.query).map_err(|e| Error::permanent(format!("query {:?}: {e}", req.query)))?)
        };
        let state = ctx.state();
        let mut results = Vec::new();
        for key in state.keys() {
            let Some(document) = state.get::<Map<String, Value>>(&key)? else {
                continue;
            };
            let keep = match &filter {
                None => true,
                Some(f) => f
                    .eval(&Value::Object(document.clone()))
                    .is_ok_and(|v| v == Value::Bool(true)),
            };
            if keep {
                results.push(Record { key, document });
            }
        }
        let result = QueryResult {
            context: req.context,
            count: results.len(),
            results,
            query: req.query,
        };
        self.query_result.emit(ctx, result).await
    }
}

impl Hooks for Kv {
    async fn on_settings(&self, _: &Ctx<Self>, settings: &KvSettings) -> Result<()> {
        if settings.document.is_empty() {
            return Err(Error::permanent("settings: `document` must not be empty"));
        }
        if settings.primary_key.is_empty() {
            return Err(Error::permanent("settings: `primaryKey` must not be empty"));
        }
        if !settings.document.contains_key(&settings.primary_key) {
            return Err(Error::permanent(format!(
                "settings: `primaryKey` {:?} is not a field of `document`",
                settings.primary_key
            )));
        }
        Ok(())
    }

    async fn on_reconcile(&self, ctx: &Ctx<Self>, _: &Node) -> Result<()> {
        Self::show(ctx);
        Ok(())
    }

    async fn on_control(&self, ctx: &Ctx<Self>, control: KvControl) -> Result<Reply> {
        if control.reset {
            for key in ctx.state().keys() {
                ctx.state().delete(&key).await?;
            }
            ctx.state().flush().await?;
            Self::show(ctx);
        }
        Ok(Reply::empty())
    }

    fn shape_port(&self, settings: &KvSettings, port: &mut PortShape) {
        // The document examples follow the configured shape.
        let document = Value::Object(settings.document.clone());
        match port.name.as_str() {
            "store" => port.configuration = json!({ "operation": "store", "document": document }),
            "query_result" => port.configuration = json!({ "results": [{ "document": document }] }),
            "store_ack" => port.configuration = json!({ "request": { "document": document } }),
            _ => {}
        }
    }
}

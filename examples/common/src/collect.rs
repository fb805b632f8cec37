//! `collect`: the fan-in after `array_split`, reassembling a group's items.
//!
//! Each group is buffered in node state under its group key (Go's layout: the
//! group's first arrival time, total, last context and items by index), so that
//! assembly survives restarts. Groups older than the timeout are reported on the
//! error port (or dropped with a warning) when the next message arrives: expiry is
//! passive, as in Go.

use std::collections::BTreeMap;

use serde_json::Value;
use tiny_sdk::prelude::*;

const DEFAULT_TIMEOUT_SECONDS: i64 = 300;
const DEFAULT_MAX_GROUPS: i64 = 100;

/// Settings, as Go's collect.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct CollectSettings {
    /// Emit timed-out groups on the Error port; without it they are dropped with a
    /// warning in the log.
    #[tiny(title = "Enable Error Port")]
    #[serde(default)]
    pub enable_error_port: bool,
    /// How long to wait for a group's stragglers after its first item (0: 300).
    #[tiny(title = "Timeout Seconds", default = 300)]
    #[serde(default)]
    pub timeout_seconds: i64,
    /// Most groups in flight at once (0: 100); guards the node's state budget.
    #[tiny(title = "Max Groups", default = 100)]
    #[serde(default)]
    pub max_groups: i64,
}

impl Default for CollectSettings {
    fn default() -> Self {
        Self {
            enable_error_port: false,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            max_groups: DEFAULT_MAX_GROUPS,
        }
    }
}

/// What `item` takes: one item of a fan-out.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct CollectItem {
    /// Passthrough; the group's Response carries the context of its last item.
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// The fan-out this item belongs to: the same for every item of one array,
    /// different between runs.
    #[tiny(title = "Group Key")]
    #[serde(default)]
    pub group_key: String,
    /// 0-based position of the item (array_split's index); a duplicate overwrites.
    #[tiny(title = "Index")]
    #[serde(default)]
    pub index: i64,
    /// Number of items the group expects (array_split's total).
    #[tiny(title = "Total")]
    #[serde(default)]
    pub total: i64,
    /// The per-item payload.
    #[tiny(title = "Item")]
    #[serde(default)]
    pub item: Value,
}

impl Default for CollectItem {
    fn default() -> Self {
        Self {
            context: Value::Null,
            group_key: String::new(),
            index: 0,
            total: 1,
            item: Value::Null,
        }
    }
}

/// What `response` sends: the reassembled group.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct CollectResponse {
    /// Context of the group's last arriving item.
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// The group's items, ordered by index.
    #[tiny(title = "Items")]
    pub items: Vec<Value>,
}

/// What `error` sends: a group that timed out before it was complete.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct CollectError {
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    #[tiny(title = "Group Key")]
    pub group_key: String,
    #[tiny(title = "Received")]
    pub received: usize,
    #[tiny(title = "Total")]
    pub total: i64,
    #[tiny(title = "Error")]
    pub error: String,
}

/// One group's buffer in node state, in Go's JSON layout.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupState {
    /// When the group's first item arrived (RFC 3339).
    pub first_seen: String,
    pub total: i64,
    #[serde(default)]
    pub context: Value,
    /// Items by index (JSON object keys are the indexes, as Go writes them).
    #[serde(default)]
    pub items: BTreeMap<i64, Value>,
}

impl GroupState {
    /// Whether the group is older than `timeout` at `now`.
    fn expired(&self, now: jiff::Timestamp, timeout: i64) -> bool {
        // A time that does not parse cannot be aged; the group then waits for its
        // items, which is what a fresh one does.
        self.first_seen
            .parse::<jiff::Timestamp>()
            .is_ok_and(|t| now.as_millisecond() - t.as_millisecond() > timeout.saturating_mul(1000))
    }

    fn timeout_error(&self, group_key: &str) -> CollectError {
        CollectError {
            context: self.context.clone(),
            group_key: group_key.to_owned(),
            received: self.items.len(),
            total: self.total,
            error: format!("collect timeout: got {} of {}", self.items.len(), self.total),
        }
    }
}

/// Fan-in for map-reduce, the pair of `array_split`: buffers items per group key in
/// node state and emits `{context, items}` once a group holds all `total` items.
#[derive(Component, Default, Debug)]
#[component(
    name = "collect",
    description = "Collect",
    info = "Fan-in for map-reduce, the pair of array_split: map groupKey (unique per fan-out), index and total into Item. Items are buffered per groupKey in the node's state; once a group holds all total items, Response emits {context, items} ordered by index. Groups older than timeoutSeconds fail onto Error as {context, groupKey, received, total, error}; expiry is checked when messages arrive.",
    tags("SDK", "ARRAY"),
    settings = CollectSettings
)]
pub struct Collect {
    #[port(label = "Item", position = Left)]
    item: Input<CollectItem>,
    #[port(label = "Response", position = Right)]
    response: Output<CollectResponse>,
    #[port(label = "Error", position = Bottom, enabled_by = enable_error_port)]
    error: Output<CollectError>,
    /// Serialises the read-modify-write of the buffers on this replica, so that two
    /// items of one group cannot lose each other's update.
    lock: tokio::sync::Mutex<()>,
}

/// What one arriving item decided; emitted after the buffers are written.
#[derive(Default)]
struct Outcome {
    expired: Vec<CollectError>,
    response: Option<CollectResponse>,
    own_error: Option<CollectError>,
}

#[handlers]
impl Collect {
    async fn on_item(&self, ctx: &Ctx<Self>, msg: CollectItem) -> Result<Reply> {
        if msg.group_key.is_empty() {
            return Err(Error::permanent(
                "groupKey is required: map something unique per fan-out (e.g. $.context.runId)",
            ));
        }
        if msg.total < 1 {
            return Err(Error::permanent(format!(
                "total must be >= 1, got {}: map array_split's total",
                msg.total
            )));
        }
        if msg.index < 0 || msg.index >= msg.total {
            return Err(Error::permanent(format!(
                "index {} out of range [0, {}): map array_split's index",
                msg.index, msg.total
            )));
        }
        let settings = ctx.settings();
        let outcome = self.process(ctx, msg, settings).await?;
        for e in outcome.expired {
            // Expired groups belong to older messages: sent apart from this item's
            // call, as Go's detached emit.
            if settings.enable_error_port {
                let port = self.error;
                ctx.detach(move |ctx| async move { port.emit(&ctx, e).await.map(|_| ()) });
            } else {
                tracing::warn!(node = ctx.node_name(), group_key = %e.group_key, "{} (error port disabled; group dropped)", e.error);
            }
        }
        if let Some(response) = outcome.response {
            return self.response.emit(ctx, response).await;
        }
        if let Some(e) = outcome.own_error {
            if settings.enable_error_port {
                return self.error.emit(ctx, e).await;
            }
            return Err(Error::permanent(e.error));
        }
        Ok(Reply::empty())
    }

    async fn process(&self, ctx: &Ctx<Self>, msg: CollectItem, settings: &CollectSettings) -> Result<Outcome> {
        let _guard = self.lock.lock().await;
        let timeout = if settings.timeout_seconds <= 0 {
            DEFAULT_TIMEOUT_SECONDS
        } else {
            settings.timeout_seconds
        };
        let max_groups = if settings.max_groups <= 0 {
            DEFAULT_MAX_GROUPS
        } else {
            settings.max_groups
        };
        let state = ctx.state();
        let now = jiff::Timestamp::now();
        let mut outcome = Outcome::default();
        // Other groups past their deadline go first, freeing their places; this
        // item's own group is left out: a straggler that completes it is a success.
        for key in state.keys() {
            if key == msg.group_key {
                continue;
            }
            match state.get::<GroupState>(&key) {
                Ok(Some(g)) if g.expired(now, timeout) => {
                    state.delete(&key).await?;
                    outcome.expired.push(g.timeout_error(&key));
                }
                Ok(_) => {}
                // A buffer that does not read can never complete.
                Err(_) => state.delete(&key).await?,
            }
        }
        let existing = state.get::<GroupState>(&msg.group_key).ok().flatten();
        let mut group = match existing {
            Some(g) => g,
            None => {
                let groups = state.keys().len();
                if i64::try_from(groups).unwrap_or(i64::MAX) >= max_groups {
                    return Err(Error::permanent(format!(
                        "too many in-flight groups: {groups} (max {max_groups}); raise maxGroups or check that groups complete or time out"
                    )));
                }
                GroupState {
                    first_seen: now.to_string(),
                    total: msg.total,
                    context: Value::Null,
                    items: BTreeMap::new(),
                }
            }
        };
        if group.total != msg.total {
            return Err(Error::permanent(format!(
                "total mismatch for group {:?}: got {}, group started with {}; every item of a group must carry the same total",
                msg.group_key, msg.total, group.total
            )));
        }
        group.items.insert(msg.index, msg.item);
        group.context = msg.context;
        if i64::try_from(group.items.len()).unwrap_or(i64::MAX) >= group.total {
            state.delete(&msg.group_key).await?;
            let items = (0..group.total)
                .map(|i| group.items.remove(&i).unwrap_or(Value::Null))
                .collect();
            outcome.response = Some(CollectResponse {
                context: group.context,
                items,
            });
            return Ok(outcome);
        }
        if group.expired(now, timeout) {
            // This straggler cannot save its group: failed now, with it counted.
            state.delete(&msg.group_key).await?;
            outcome.own_error = Some(group.timeout_error(&msg.group_key));
            return Ok(outcome);
        }
        state.set(&msg.group_key, &group).await.map_err(|e| {
            Error::permanent(format!(
                "group {:?} could not be stored (the node's state holds at most {} KiB; collect smaller items, IDs rather than payloads, or lower maxGroups): {e}",
                msg.group_key,
                tiny_sdk::state::MAX_STATE_BYTES / 1024
            ))
        })?;
        Ok(outcome)
    }
}

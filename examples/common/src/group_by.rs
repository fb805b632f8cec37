//! `group_by`: buckets an array by the value at a dotted path of each item.

use std::collections::BTreeMap;

use serde_json::Value;
use tiny_sdk::prelude::*;

/// What `in` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct GroupByIn {
    /// Arbitrary data passed through to the output.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    /// Array of items to group.
    #[tiny(configurable, title = "Items")]
    #[serde(default)]
    pub items: Vec<Value>,
    /// Dotted path to group by (`labels.app`, `namespace`, `kind`).
    #[tiny(configurable, title = "Group By Path")]
    #[serde(default)]
    pub group_by_path: String,
}

/// One group.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Group {
    /// The group's key: the value at the path as text; empty when an item lacks it.
    #[tiny(title = "Key")]
    pub key: String,
    /// Items in this group, in their original order.
    #[tiny(title = "Items")]
    pub items: Vec<Value>,
    /// Number of items in the group.
    #[tiny(title = "Count")]
    pub count: usize,
}

/// What `out` sends.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
pub struct GroupByOut {
    #[tiny(title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Groups, sorted by key.
    #[tiny(title = "Groups")]
    pub groups: Vec<Group>,
    /// Total number of items.
    #[tiny(title = "Total")]
    pub total: usize,
}

impl Default for GroupByOut {
    /// Go's example configuration.
    fn default() -> Self {
        let group = |key: &str, count| Group {
            key: key.into(),
            items: Vec::new(),
            count,
        };
        Self {
            context: Value::Null,
            groups: vec![group("group-a", 2), group("group-b", 1)],
            total: 3,
        }
    }
}

/// Groups an array of items by a field path; the groups come sorted by key, each
/// with its items and count.
#[derive(Component, Default, Debug)]
#[component(
    name = "group_by",
    description = "Group By",
    info = "Groups an array of items by a field path (e.g. 'labels.app'). Output: the groups sorted by key, each with key, items and count.",
    tags("SDK", "Array", "Aggregate"),
    // Pure: a fresh instance answers from the call alone.
    agent_tool()
)]
pub struct GroupBy {
    #[port(label = "In", position = Left)]
    r#in: Input<GroupByIn>,
    #[port(label = "Out", position = Right)]
    out: Output<GroupByOut>,
}

/// The key of `item` at `path`, as Go prints it: a string as is, other values as
/// their text (`%v`), missing or null as "".
fn key_of(item: &Value, path: &[&str]) -> String {
    let mut current = item;
    for part in path {
        match current {
            Value::Object(map) => match map.get(*part) {
                Some(next) => current = next,
                None => return String::new(),
            },
            _ => return String::new(),
        }
    }
    go_text(current)
}

/// Go's `fmt.Sprintf("%v")` of a decoded JSON value, for the scalars keys are made
/// of; arrays and objects in Go's `[a b]` / `map[k:v]` forms.
fn go_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            // Go decodes every JSON number to float64; %v prints whole ones bare.
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        Value::Array(items) => format!("[{}]", items.iter().map(go_text_nested).collect::<Vec<_>>().join(" ")),
        Value::Object(map) => format!(
            "map[{}]",
            map.iter()
                .map(|(k, v)| format!("{k}:{}", go_text_nested(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// As [`go_text`], with Go's `<nil>` for a null inside a container.
fn go_text_nested(v: &Value) -> String {
    if v.is_null() { "<nil>".into() } else { go_text(v) }
}

#[handlers]
impl GroupBy {
    async fn on_in(&self, ctx: &Ctx<Self>, msg: GroupByIn) -> Result<Reply> {
        if msg.group_by_path.is_empty() {
            return Err(Error::permanent("groupByPath is required"));
        }
        let path: Vec<&str> = msg.group_by_path.split('.').collect();
        let total = msg.items.len();
        let mut groups: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for item in msg.items {
            groups.entry(key_of(&item, &path)).or_default().push(item);
        }
        let groups = groups
            .into_iter()
            .map(|(key, items)| Group {
                key,
                count: items.len(),
                items,
            })
            .collect();
        let out = GroupByOut {
            context: msg.context,
            groups,
            total,
        };
        self.out.emit(ctx, out).await
    }
}

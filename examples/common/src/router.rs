//! `router`: sends each message to the first route whose condition holds.
//!
//! The output ports follow the settings: one `out_<route>` per route (lower-cased,
//! labelled in upper case, as Go names them) and, with `enableDefaultPort`, a
//! `default` port. The input's route field offers the routes as an enum.

use serde_json::{Value, json};
use tiny_sdk::{Outputs, PortShape, prelude::*};

/// Settings, as Go's router.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct RouterSettings {
    /// Route names; each gets a port `out_<route>`.
    #[tiny(title = "Routes")]
    pub routes: Vec<String>,
    #[tiny(title = "Enable default port")]
    #[serde(default)]
    pub enable_default_port: bool,
}

impl Default for RouterSettings {
    fn default() -> Self {
        Self {
            routes: vec!["A".into(), "B".into()],
            enable_default_port: false,
        }
    }
}

/// One route and whether to take it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Condition {
    /// One of the routes in the settings.
    #[tiny(title = "Route")]
    pub route: String,
    #[tiny(title = "Condition")]
    pub condition: bool,
}

/// What `input` takes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct RouterIn {
    /// Arbitrary message to be routed.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
    #[tiny(title = "Conditions")]
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// What every route port sends.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct RouterOut {
    /// Passthrough: the routed message, unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(default)]
    pub context: Value,
}

/// Routes a message to the first route whose condition is true; to `default` when
/// none is and the default port is on; otherwise fails.
#[derive(Component, Default, Debug)]
#[component(name = "router", description = "Router", tags("SDK"), settings = RouterSettings, hooks)]
pub struct Router {
    #[port(label = "IN", position = Left)]
    input: Input<RouterIn>,
    /// One port per route.
    #[port(position = Right, keys = route_keys)]
    out: Outputs<RouterOut>,
    /// Where a message goes when no condition holds.
    #[port(position = Bottom, enabled_by = enable_default_port)]
    default: Output<RouterOut>,
}

#[handlers]
impl Router {
    fn route_keys(settings: &RouterSettings) -> Vec<String> {
        settings.routes.iter().map(|r| r.to_lowercase()).collect()
    }

    async fn on_input(&self, ctx: &Ctx<Self>, msg: RouterIn) -> Result<Reply> {
        let settings = ctx.settings();
        let first = msg.conditions.iter().find(|c| c.condition);
        // As Go: only the first true condition counts.
        // Compared as the port names are made (lower case), so that a route that
        // matches always has its port.
        let key = first.map(|c| c.route.to_lowercase());
        if let Some(key) = key.filter(|k| settings.routes.iter().any(|r| r.to_lowercase() == *k)) {
            let out = RouterOut { context: msg.context };
            return self.out.emit(ctx, &key, out).await;
        }
        if settings.enable_default_port {
            return self.default.emit(ctx, RouterOut { context: msg.context }).await;
        }
        let conditions: Vec<String> = msg
            .conditions
            .iter()
            .map(|c| format!("{}={}", c.route, c.condition))
            .collect();
        Err(Error::permanent(format!(
            "no matching route: conditions [{}], routes [{}]",
            conditions.join(", "),
            settings.routes.join(", ")
        )))
    }
}

impl Hooks for Router {
    fn shape_port(&self, settings: &RouterSettings, port: &mut PortShape) {
        if let Some(key) = port.name.strip_prefix("out_") {
            port.label = key.to_uppercase();
        }
        if port.name == "input" {
            let first = settings.routes.first().cloned().unwrap_or_else(|| "A".into());
            if let Some(route) = tiny_sdk::schema::at_path_mut(&mut port.schema, "$.conditions[0].route") {
                route["enum"] = json!(settings.routes);
                route["default"] = json!(first);
                route["shared"] = json!(true);
            }
            port.configuration = json!({ "context": null, "conditions": [{ "route": first, "condition": true }] });
        }
    }
}

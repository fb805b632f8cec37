//! The module of `docs/guide.md`: one component, `convert`, that turns a temperature
//! in degrees Celsius into Fahrenheit or Kelvin.

use tiny_sdk::prelude::*;

/// A temperature to convert.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Celsius {
    /// Anything the sender wants back with the result.
    #[tiny(configurable)]
    #[serde(default)]
    pub context: serde_json::Value,
    /// Degrees Celsius.
    #[tiny(title = "Celsius")]
    pub celsius: f64,
}

/// The converted temperature.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
pub struct Converted {
    /// The input's context, passed through.
    #[tiny(shared)]
    pub context: serde_json::Value,
    /// The temperature in `unit`.
    pub value: f64,
    /// `F` or `K`.
    pub unit: String,
}

/// What a `convert` node is set to, in the editor.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(default, rename_all = "camelCase")]
pub struct ConvertSettings {
    /// The unit to convert to.
    #[tiny(enum("F", "K"), enum_titles("Fahrenheit", "Kelvin"))]
    pub unit: String,
    /// Failures go to the `error` port instead of failing the message.
    pub enable_error_port: bool,
}

impl Default for ConvertSettings {
    fn default() -> Self {
        ConvertSettings {
            unit: "F".into(),
            enable_error_port: false,
        }
    }
}

/// Converts a temperature from degrees Celsius.
#[derive(Debug, Component, Default)]
#[component(name = "convert", tags("guide"), settings = ConvertSettings)]
pub struct Convert {
    #[port(position = Left)]
    input: Input<Celsius>,
    #[port(position = Right)]
    output: Output<Converted>,
    #[port(position = Bottom, catch)]
    error: Output<ErrorMessage>,
}

#[handlers]
impl Convert {
    async fn on_input(&self, ctx: &Ctx<Self>, msg: Celsius) -> Result<Reply> {
        if msg.celsius < -273.15 {
            return Err(Error::permanent("below absolute zero"));
        }
        let unit = ctx.settings().unit.clone();
        let value = match unit.as_str() {
            "K" => msg.celsius + 273.15,
            _ => msg.celsius * 9.0 / 5.0 + 32.0,
        };
        let converted = Converted {
            context: msg.context,
            value,
            unit,
        };
        self.output.emit(ctx, converted).await
    }
}

/// The components of this module.
pub fn registry() -> tiny_sdk::engine::Registry {
    let mut r = tiny_sdk::engine::Registry::default();
    r.register::<Convert>();
    r
}

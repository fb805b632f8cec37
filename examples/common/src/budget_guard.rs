//! `budget_guard`: a ceiling for a loop in a flow (an agent's ReAct cycle).
//!
//! The counters travel in the message, not in the node, so one guard supervises
//! many loops at once without their counts mixing: `proceed` sends the next pass's
//! counters, ready to be mapped back into `request`.

use serde_json::Value;
use tiny_sdk::prelude::*;

/// Settings, as Go's budget_guard.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetSettings {
    /// How many times the loop may go round before it is cut off.
    #[tiny(title = "Max Iterations")]
    pub max_iterations: i64,
    /// Total input+output tokens the loop may spend; 0 means no token ceiling.
    #[tiny(title = "Max Tokens")]
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_tokens: i64,
    /// Total spend the loop may reach, from the cost given per iteration; 0 means no
    /// cost ceiling.
    #[tiny(title = "Max Cost (USD)")]
    #[serde(rename = "maxCostUSD", default, skip_serializing_if = "is_zero_f")]
    pub max_cost_usd: f64,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

fn is_zero_f(n: &f64) -> bool {
    *n == 0.0
}

impl Default for BudgetSettings {
    fn default() -> Self {
        Self {
            max_iterations: 10,
            max_tokens: 0,
            max_cost_usd: 0.0,
        }
    }
}

/// What `request` takes: this pass's usage and the totals so far.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase", default)]
pub struct BudgetRequest {
    /// Loop payload, passed through unchanged.
    #[tiny(configurable, title = "Context")]
    #[serde(skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Zero or absent on the first pass; then the value from Proceed.
    #[tiny(title = "Iteration")]
    #[serde(skip_serializing_if = "is_zero")]
    pub iteration: i64,
    /// Tokens used by this iteration.
    #[tiny(title = "Input Tokens")]
    #[serde(skip_serializing_if = "is_zero")]
    pub input_tokens: i64,
    /// Tokens produced by this iteration.
    #[tiny(title = "Output Tokens")]
    #[serde(skip_serializing_if = "is_zero")]
    pub output_tokens: i64,
    /// Cost of this iteration, if priced.
    #[tiny(title = "Cost (USD)")]
    #[serde(rename = "costUSD", skip_serializing_if = "is_zero_f")]
    pub cost_usd: f64,
    /// Running token total so far (from Proceed).
    #[tiny(title = "Spent Tokens")]
    #[serde(skip_serializing_if = "is_zero")]
    pub spent_tokens: i64,
    /// Running cost total so far (from Proceed).
    #[tiny(title = "Spent (USD)")]
    #[serde(rename = "spentUSD", skip_serializing_if = "is_zero_f")]
    pub spent_usd: f64,
}

/// What `proceed` sends: the loop is within budget; the next pass's counters.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct Proceed {
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Incremented; map it back into the guard on the next pass.
    #[tiny(title = "Iteration")]
    pub iteration: i64,
    /// Running total including this iteration.
    #[tiny(title = "Spent Tokens")]
    pub spent_tokens: i64,
    /// Running total including this iteration.
    #[tiny(title = "Spent (USD)")]
    #[serde(rename = "spentUSD")]
    pub spent_usd: f64,
    #[tiny(title = "Remaining Iterations")]
    pub remaining_iterations: i64,
}

impl Default for Proceed {
    /// Go's example, so that an edge mapping the counters back is checkable.
    fn default() -> Self {
        Self {
            context: Value::Null,
            iteration: 1,
            spent_tokens: 0,
            spent_usd: 0.0,
            remaining_iterations: 9,
        }
    }
}

/// What `exceeded` sends: the loop was cut off, and which ceiling did it.
#[derive(Debug, Clone, Serialize, Deserialize, Schema)]
#[serde(rename_all = "camelCase")]
pub struct Exceeded {
    /// The loop payload at the moment it was cut off.
    #[tiny(configurable, title = "Context")]
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub context: Value,
    /// Which ceiling was reached: iterations, tokens or cost.
    #[tiny(title = "Reason")]
    pub reason: String,
    #[tiny(title = "Iteration")]
    pub iteration: i64,
    #[tiny(title = "Spent Tokens")]
    pub spent_tokens: i64,
    #[tiny(title = "Spent (USD)")]
    #[serde(rename = "spentUSD")]
    pub spent_usd: f64,
}

impl Default for Exceeded {
    fn default() -> Self {
        Self {
            context: Value::Null,
            reason: "iteration limit reached (10)".into(),
            iteration: 11,
            spent_tokens: 0,
            spent_usd: 0.0,
        }
    }
}

/// Bounds a loop: Proceed while it is within its iteration, token and cost
/// ceilings, Exceeded (with the reason) once it is not.
#[derive(Component, Default, Debug)]
#[component(
    name = "budget_guard",
    description = "Budget Guard",
    info = "Bounds an agent loop: emits on Proceed while the loop is within budget, on Exceeded once it is not. Ceilings: iterations always, plus optional total tokens and cost. Map iteration/spentTokens/spentUSD from Proceed back into the guard on each pass.",
    tags("SDK", "Agent", "Safety"),
    settings = BudgetSettings,
    hooks
)]
pub struct BudgetGuard {
    #[port(label = "Request", position = Left)]
    request: Input<BudgetRequest>,
    #[port(label = "Proceed", position = Right)]
    proceed: Output<Proceed>,
    #[port(label = "Exceeded", position = Bottom)]
    exceeded: Output<Exceeded>,
}

/// The ceiling `iteration`, `tokens` and `usd` pass, if any; iterations first, as
/// that one always exists.
fn exceeded(s: &BudgetSettings, iteration: i64, tokens: i64, usd: f64) -> Option<String> {
    if iteration > s.max_iterations {
        return Some(format!("iteration limit reached ({})", s.max_iterations));
    }
    if s.max_tokens > 0 && tokens > s.max_tokens {
        return Some(format!("token budget reached ({tokens} of {})", s.max_tokens));
    }
    if s.max_cost_usd > 0.0 && usd > s.max_cost_usd {
        return Some(format!("cost budget reached ({usd:.4} of {:.4} USD)", s.max_cost_usd));
    }
    None
}

#[handlers]
impl BudgetGuard {
    async fn on_request(&self, ctx: &Ctx<Self>, req: BudgetRequest) -> Result<Reply> {
        let settings = ctx.settings();
        // This pass's usage counts before the test, so that one iteration that
        // spends the whole budget is caught on the pass that spent it.
        let iteration = req.iteration.saturating_add(1);
        let spent_tokens = req
            .spent_tokens
            .saturating_add(req.input_tokens)
            .saturating_add(req.output_tokens);
        let spent_usd = req.spent_usd + req.cost_usd;
        if let Some(reason) = exceeded(settings, iteration, spent_tokens, spent_usd) {
            let out = Exceeded {
                context: req.context,
                reason,
                iteration,
                spent_tokens,
                spent_usd,
            };
            return self.exceeded.emit(ctx, out).await;
        }
        let out = Proceed {
            context: req.context,
            iteration,
            spent_tokens,
            spent_usd,
            remaining_iterations: settings.max_iterations - iteration,
        };
        self.proceed.emit(ctx, out).await
    }
}

impl Hooks for BudgetGuard {
    async fn on_settings(&self, _: &Ctx<Self>, s: &BudgetSettings) -> Result<()> {
        // A ceiling of 0 would let every loop through: refused when configured, not
        // discovered on a bill.
        if s.max_iterations <= 0 {
            return Err(Error::permanent("settings: maxIterations must be at least 1"));
        }
        if s.max_tokens < 0 {
            return Err(Error::permanent("settings: maxTokens cannot be negative"));
        }
        if s.max_cost_usd < 0.0 || !s.max_cost_usd.is_finite() {
            return Err(Error::permanent("settings: maxCostUSD must be a number of 0 or more"));
        }
        Ok(())
    }
}

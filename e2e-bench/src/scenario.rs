//! The scenario both clients play and the mock server checks: one user message, 10 rounds of 3
//! tool calls (`tool_00`, `tool_07`, `tool_13`), a final answer, with 20 tools declared.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::{Value, json};

/// The model name both clients send.
pub const MODEL: &str = "bench-model";

/// The user's message that opens every conversation.
pub const PROMPT: &str = "Plan my week: what will the weather be in the cities I visit?";

/// How many tools every request declares.
pub const TOOLS: usize = 20;

/// How many tool rounds a conversation has before the final answer.
pub const ROUNDS: usize = 10;

/// The tools the model calls in every round, in call order.
pub const CALLED: [&str; 3] = ["tool_00", "tool_07", "tool_13"];

/// Tool calls per round.
pub const CALLS_PER_ROUND: usize = CALLED.len();

/// Requests per conversation: one per round and one for the final answer.
pub const REQUESTS_PER_CONVERSATION: usize = ROUNDS + 1;

/// Tool executions per conversation.
pub const EXECUTIONS_PER_CONVERSATION: usize = ROUNDS * CALLS_PER_ROUND;

/// The model's final answer.
pub const FINAL_ANSWER: &str = "Berlin stays dry at 18 degrees all week, Paris gets light rain on Wednesday and \
     Tokyo is warm and sunny: pack an umbrella for Paris only.";

/// The description of every tool (the number keeps them apart).
pub fn description(index: usize) -> String {
    format!(
        "Gets the weather forecast for a city: temperature, wind and rain for the coming days (source {index:02})"
    )
}

/// The description of the `city` argument.
pub const CITY_DOC: &str = "City name, e.g. Berlin";
/// The description of the `days` argument.
pub const DAYS_DOC: &str = "Number of days to forecast, 1 to 14";
/// The description of the `units` argument.
pub const UNITS_DOC: &str = "Unit system of the answer";

/// The unit system a tool answers in: `metric` (°C, km/h) or `imperial` (°F, mph). The
/// variants carry no doc comments, so the schema is a plain string enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Units {
    Metric,
    Imperial,
}

impl Units {
    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Units::Metric => "metric",
            Units::Imperial => "imperial",
        }
    }
}

/// The tool definitions as a hand-written client declares them (Chat Completions
/// `tools` array): one JSON Schema per tool, with nothing the provider does not need.
pub fn tool_definitions() -> Value {
    let tools: Vec<Value> = (0..TOOLS)
        .map(|i| {
            json!({
                "type": "function",
                "function": {
                    "name": format!("tool_{i:02}"),
                    "description": description(i),
                    "parameters": {
                        "type": "object",
                        "properties": {
                            "city": {"description": CITY_DOC, "type": "string"},
                            "days": {"description": DAYS_DOC, "type": "integer", "minimum": 0},
                            "units": {"description": UNITS_DOC, "type": "string", "enum": ["metric", "imperial"]}
                        },
                        "required": ["city", "days", "units"],
                        "additionalProperties": false
                    }
                }
            })
        })
        .collect();
    Value::Array(tools)
}

/// One tool call the model makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: &'static str,
    /// The arguments, as the JSON text the model sends.
    pub arguments: String,
    /// The text the tool returns for these arguments.
    pub result: String,
}

const CITIES: [&str; 5] = ["Berlin", "Paris", "Tokyo", "Lisbon", "Montreal"];

/// The calls of round `round` (from 0), in call order.
pub fn calls(round: usize) -> Vec<Call> {
    CALLED
        .iter()
        .enumerate()
        .map(|(j, &name)| {
            let city = CITIES[(round + j) % CITIES.len()];
            let days = 1 + (round + 2 * j) % 7;
            let units = if (round + j).is_multiple_of(2) {
                Units::Metric
            } else {
                Units::Imperial
            };
            Call {
                id: format!("call_{round:02}{j}Xq7LmN2pRt5VwY8zKb3Dc"),
                name,
                arguments: format!(
                    r#"{{"city":"{city}","days":{days},"units":"{}"}}"#,
                    units.as_str()
                ),
                result: result_text(name, city, days as u32, units),
            }
        })
        .collect()
}

/// What a tool returns.
pub fn result_text(tool: &str, city: &str, days: u32, units: Units) -> String {
    let temperature = match units {
        Units::Metric => "18°C",
        Units::Imperial => "64°F",
    };
    format!("{city}, next {days} days: {temperature}, light wind, 20% chance of rain ({tool})")
}

static EXECUTIONS: AtomicU64 = AtomicU64::new(0);

/// The body of every tool, in both clients: counts the execution and returns the forecast.
pub async fn forecast(tool: &str, city: &str, days: u32, units: Units) -> String {
    EXECUTIONS.fetch_add(1, Ordering::Relaxed);
    result_text(tool, city, days, units)
}

/// How many tool executions this process ran.
pub fn executions() -> u64 {
    EXECUTIONS.load(Ordering::Relaxed)
}

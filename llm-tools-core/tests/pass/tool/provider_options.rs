// `provider_options`: inline JSON (every kind of value) and expressions, on a fn, an `impl` and
// a toolset method, kept in the spec under each protocol's id.
use std::sync::Arc;

use llm_tools_core::serde_json::{json, Value};
use llm_tools_core::{tool, toolset, Tool};

/// Gets the weather
#[tool(provider_options(
    anthropic = {
        "cache_control": { "type": "ephemeral" },
        "input_examples": [
            { "city": "Paris", "days": 3, "ratio": -0.5, "offset": -2, "big": 18446744073709551615 },
            { "city": "Z\u{fc}rich \"quoted\"", "exact": true, "unknown": null, "list": [] },
        ],
    },
    openai_responses = { "allowed_callers": ["direct"] },
    gemini = { "behavior": "NON_BLOCKING", "scale": 1.5e3 },
    bedrock = { "strict": true, "cachePoint": { "type": "default" } },
))]
async fn weather(city: String) -> String {
    city
}

fn computed() -> Value {
    json!({ "cache_control": { "type": "ephemeral" } })
}

/// Echoes
#[tool(provider_options(anthropic = computed(), gemini = json!({ "behavior": "BLOCKING" })))]
async fn echo(text: String) -> String {
    text
}

struct Lookup;

#[tool(provider_options(anthropic = { "eager_input_streaming": true }))]
impl Lookup {
    /// Looks up
    async fn execute(&self, id: u64) -> String {
        id.to_string()
    }
}

struct Crm;

#[toolset]
impl Crm {
    /// Finds a customer
    #[tool(provider_options(openai_responses = { "allowed_callers": ["direct"] }))]
    async fn find(&self, email: String) -> String {
        email
    }
}

fn main() {
    let spec = Weather::tool_spec();
    assert_eq!(
        spec.provider_options("anthropic"),
        Some(&json!({
            "cache_control": { "type": "ephemeral" },
            "input_examples": [
                { "city": "Paris", "days": 3, "ratio": -0.5, "offset": -2, "big": 18446744073709551615u64 },
                { "city": "Zürich \"quoted\"", "exact": true, "unknown": null, "list": [] },
            ],
        }))
    );
    assert_eq!(
        spec.provider_options("openai-responses"),
        Some(&json!({ "allowed_callers": ["direct"] }))
    );
    assert_eq!(
        spec.provider_options("gemini"),
        Some(&json!({ "behavior": "NON_BLOCKING", "scale": 1500.0 }))
    );
    assert_eq!(
        spec.provider_options("bedrock.converse"),
        Some(&json!({ "strict": true, "cachePoint": { "type": "default" } }))
    );
    assert_eq!(spec.provider_options("openai-chat"), None);
    assert_eq!(
        Echo::tool_spec().provider_options("anthropic"),
        Some(&computed())
    );
    assert_eq!(
        Echo::tool_spec().provider_options("gemini"),
        Some(&json!({ "behavior": "BLOCKING" }))
    );
    assert_eq!(
        Lookup.spec().provider_options("anthropic"),
        Some(&json!({ "eager_input_streaming": true }))
    );
    let tools = Crm::tools(Arc::new(Crm));
    assert_eq!(
        tools[0].spec().provider_options("openai-responses"),
        Some(&json!({ "allowed_callers": ["direct"] }))
    );
}

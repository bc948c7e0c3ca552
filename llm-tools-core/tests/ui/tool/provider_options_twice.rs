use llm_tools_core::tool;

/// Gets the weather
#[tool(provider_options(
    anthropic = { "cache_control": { "type": "ephemeral" } },
    anthropic = { "input_examples": [] },
))]
async fn weather(city: String) -> String {
    city
}

fn main() {}

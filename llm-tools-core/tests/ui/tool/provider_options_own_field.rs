use llm_tools_core::tool;

/// Gets the weather
#[tool(provider_options(anthropic = { "cache_control": { "type": "ephemeral" }, "input_schema": {} }))]
async fn weather(city: String) -> String {
    city
}

/// Gets the time
#[tool(provider_options(openai_responses = { "strict": false }))]
async fn time(city: String) -> String {
    city
}

fn main() {}

use llm_tools_core::tool;

/// Gets the weather
#[tool(provider_options(antropic = { "cache_control": { "type": "ephemeral" } }))]
async fn weather(city: String) -> String {
    city
}

/// Gets the time
#[tool(provider_options(openai = { "allowed_callers": ["direct"] }))]
async fn time(city: String) -> String {
    city
}

fn main() {}

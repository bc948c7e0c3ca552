use llm_tools_core::tool;

/// Gets the weather
#[tool(provider_options(anthropic = { "cache_control": { "type": ephemeral } }))]
async fn weather(city: String) -> String {
    city
}

/// Gets the time
#[tool(provider_options(gemini = { behavior: "NON_BLOCKING" }))]
async fn time(city: String) -> String {
    city
}

/// Gets the date
#[tool(provider_options(bedrock = { "strict": true "cachePoint": {} }))]
async fn date(city: String) -> String {
    city
}

fn main() {}

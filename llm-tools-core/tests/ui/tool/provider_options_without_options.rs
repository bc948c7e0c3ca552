use llm_tools_core::tool;

/// Gets the weather
#[tool(provider_options(cohere = { "strict": true }))]
async fn weather(city: String) -> String {
    city
}

fn main() {}

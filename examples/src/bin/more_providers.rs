//! The same `weather` tool on Cohere (v2 chat), Ollama's native API and Gemini on Vertex AI,
//! each through its real provider and the real chat loop, offline: each conversation replays a
//! recording (`examples/recordings/`) from a loopback HTTP server. Cohere's answer cites the
//! tool's result; Ollama streams NDJSON with thinking (from the documented format: no
//! recording of its native API exists); Vertex AI exchanges a refresh token for an access
//! token first. Bedrock has its own example (`bedrock`).
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin more_providers
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use futures::StreamExt;
use llm_tools_core::{Chat, OutputSchema, Role, tool};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig, GoogleCredentials};
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::record::Recording;
use llm_tools_providers::replay::ReplayServer;

/// Gets current weather for a location
///
/// # Arguments
/// * `latitude` - Latitude (e.g., 52.5200)
/// * `longitude` - Longitude (e.g., 13.4050)
#[tool]
async fn weather(latitude: String, longitude: String) -> String {
    // A real tool would call a weather service here.
    format!("Current weather at {latitude}, {longitude}: 15°C, Wind: 10 km/h")
}

const COHERE: &str = include_str!("../../recordings/cohere-v2-weather.json");
const OLLAMA: &str = include_str!("../../recordings/ollama-weather-documented-format.json");
const VERTEX: &str = include_str!("../../recordings/vertex-ai-person.json");

const QUESTION: &str = "What's the weather in Berlin? (52.5200, 13.4050)";

/// Prints a chat's tool calls and results.
fn show_tools(chat: &Chat) {
    for m in chat.messages() {
        match m.role {
            Role::Assistant => {
                for call in &m.tool_calls {
                    println!("  [tool call] {}({})", call.joined_name(), call.arguments);
                }
            }
            Role::Tool => println!("  [tool result] {}", m.text()),
            _ => {}
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    llm_tools_core::debug_log::init_from_env();
    println!("> {QUESTION}");

    // Cohere: a tool plan, a call, then an answer that cites the result.
    let server = ReplayServer::start(Recording::from_json(COHERE)?).await?;
    let mut chat = Chat::new(Cohere::new(
        CohereConfig::new("command-a-03-2025")
            .with_base_url(format!("{}/v2", server.url()))
            .with_api_key("offline-replay"),
    )?);
    chat.with_tools(Weather)?;
    let outcome = chat.ask(QUESTION).await?;
    println!("\nCohere (replayed from {}):", server.url());
    show_tools(&chat);
    println!("  {}", outcome.text().unwrap_or_default());
    let citations = chat
        .messages()
        .last()
        .and_then(|m| m.provider_data.as_ref())
        .and_then(|d| d.for_protocol("cohere"))
        .and_then(|d| d.get("citations"))
        .and_then(|c| c.as_array())
        .map_or(0, Vec::len);
    println!("  ({citations} citation of the tool's result)");

    // Ollama's native API, streamed: thinking, a call, the answer.
    let server = ReplayServer::start(Recording::from_json(OLLAMA)?).await?;
    let mut chat = Chat::new(Ollama::new(
        OllamaConfig::new("qwen3")
            .with_base_url(server.url())
            .with_think(true),
    )?);
    chat.with_tools(Weather)?;
    println!(
        "\nOllama (replayed from {}, the documented format):",
        server.url()
    );
    let mut thinking = String::new();
    let mut text = String::new();
    let mut events = chat.ask_stream(QUESTION);
    while let Some(event) = events.next().await {
        let event = event?;
        thinking.push_str(event.reasoning_delta().unwrap_or_default());
        text.push_str(event.text_delta().unwrap_or_default());
    }
    drop(events);
    println!("  [thinking] {thinking}");
    show_tools(&chat);
    println!("  {text}");

    // Gemini on Vertex AI: a refresh token exchanged for an access token, then the request.
    let server = ReplayServer::start(Recording::from_json(VERTEX)?).await?;
    let mut chat = Chat::new(Gemini::new(
        GeminiConfig::vertex("my-project", "global", "gemini-3-flash-preview")
            .with_base_url(format!(
                "{}/v1beta1/projects/my-project/locations/global/publishers/google",
                server.url()
            ))
            .with_token_uri(format!("{}/token", server.url()))
            .with_google_credentials(GoogleCredentials::refresh_token(
                "offline-client",
                "offline-secret",
                "offline-refresh-token",
            )),
    )?);
    chat.with_output_schema(OutputSchema::new(
        "response",
        serde_json::json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name", "age"]
        }),
    )?);
    let question = "Generate a person named John who is 30 years old";
    let outcome = chat.ask(question).await?;
    let received = server.received();
    println!("\nVertex AI (replayed from {}):", server.url());
    println!("  > {question}");
    let person: serde_json::Value = outcome.parsed()?;
    println!("  {person}");
    println!(
        "  (a token exchange at {}, then {} with a bearer token)",
        received[0].path,
        received[1].path.rsplit('/').next().unwrap_or_default()
    );
    Ok(())
}

//! The quickstart: a chat with two tools, the guide's weather and current time.
//!
//! With `OPENAI_API_KEY` set it talks to OpenAI (the Responses API, `gpt-5-nano`, or the model
//! in `OPENAI_MODEL`). Without it, it replays a real recorded conversation
//! (`examples/recordings/openai-responses-weather.json`) from a loopback HTTP server, through
//! the same provider and the same chat loop, and says so.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin quickstart
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use llm_tools_core::{Chat, Role, ToolError, tool};
use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::Recording;
use llm_tools_providers::replay::ReplayServer;

/// Gets current weather for a location
///
/// # Arguments
/// * `latitude` - Latitude (e.g., 52.5200)
/// * `longitude` - Longitude (e.g., 13.4050)
#[tool]
async fn weather(latitude: String, longitude: String) -> Result<String, ToolError> {
    // A real tool would call a weather service here.
    Ok(format!(
        "Current weather at {latitude}, {longitude}: 15°C, Wind: 10 km/h"
    ))
}

/// Returns the current date, time, and time zone
#[tool]
async fn current_time() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{secs} seconds since 1970-01-01T00:00:00Z (UTC)")
}

/// The recorded conversation replayed when there is no API key.
const RECORDING: &str = include_str!("../../recordings/openai-responses-weather.json");

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let live = std::env::var("OPENAI_API_KEY").is_ok_and(|k| !k.trim().is_empty());
    let model = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-5-nano".into());
    let mut config = OpenAiConfig::openai(&model);

    // Kept alive for the whole conversation when replaying.
    let mut _replay = None;
    if live {
        println!("Talking to OpenAI ({model}).");
    } else {
        let server = ReplayServer::start(Recording::from_json(RECORDING)?).await?;
        println!(
            "OPENAI_API_KEY is not set: replaying a recorded OpenAI conversation \
             (examples/recordings/openai-responses-weather.json) from {} through the real \
             provider and chat loop. Set OPENAI_API_KEY to talk to OpenAI.",
            server.url()
        );
        config = config
            .with_base_url(server.url())
            .with_api_key("offline-replay");
        _replay = Some(server);
    }

    let mut chat = Chat::new(OpenAiResponses::new(config)?);
    chat.with_tools((Weather, CurrentTime))?;

    let question = "What's the weather in Berlin? (52.5200, 13.4050)";
    println!("\n> {question}");
    let outcome = chat.ask(question).await?;

    for message in chat.messages() {
        match message.role {
            Role::Assistant => {
                for call in &message.tool_calls {
                    println!("  [tool call] {}({})", call.joined_name(), call.arguments);
                }
            }
            Role::Tool => println!("  [tool result] {}", message.text()),
            _ => {}
        }
    }
    match outcome.text() {
        Some(answer) => println!("\n{answer}"),
        None => println!("\nThe chat paused: {outcome:?}"),
    }
    let usage = chat.usage();
    println!(
        "\n({} input and {} output tokens)",
        usage.input_tokens, usage.output_tokens
    );
    Ok(())
}

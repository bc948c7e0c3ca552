//! The quickstart: a chat with two tools, the guide's weather and current time.
//!
//! With `OPENAI_API_KEY` set it talks to OpenAI (the Responses API, `gpt-5-nano`, or the model
//! in `OPENAI_MODEL`); else with `ANTHROPIC_API_KEY` to Anthropic (`claude-haiku-4-5`, or
//! `ANTHROPIC_MODEL`); else with `GEMINI_API_KEY` (or `GOOGLE_API_KEY`) to Gemini
//! (`gemini-2.5-flash`, or `GEMINI_MODEL`). Without any key, it replays a real recorded conversation
//! (`examples/recordings/openai-responses-weather.json`) from a loopback HTTP server, through
//! the same provider and the same chat loop, and says so. With `LLM_TOOLS_DEBUG=1` it also
//! prints each request, answer and tool call to stderr (API keys never appear).
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin quickstart
//! LLM_TOOLS_DEBUG=1 cargo run -p llm-tools-examples --bin quickstart
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use llm_tools_core::{Chat, Provider, Role, ToolError, tool};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
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
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    let set = |var: &str| std::env::var(var).is_ok_and(|k| !k.trim().is_empty());
    let model_from =
        |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.into());
    let live = set("OPENAI_API_KEY");
    let model = model_from("OPENAI_MODEL", "gpt-5-nano");
    let mut config = OpenAiConfig::openai(&model);

    // Kept alive for the whole conversation when replaying.
    let mut _replay = None;
    let mut other: Option<Box<dyn Provider>> = None;
    if live {
        println!("Talking to OpenAI ({model}).");
    } else if set("ANTHROPIC_API_KEY") {
        let model = model_from("ANTHROPIC_MODEL", "claude-haiku-4-5");
        println!("Talking to Anthropic ({model}).");
        other = Some(Box::new(Anthropic::new(AnthropicConfig::new(model))?));
    } else if set("GEMINI_API_KEY") || set("GOOGLE_API_KEY") {
        let model = model_from("GEMINI_MODEL", "gemini-2.5-flash");
        println!("Talking to Gemini ({model}).");
        other = Some(Box::new(Gemini::new(GeminiConfig::new(model))?));
    } else {
        let server = ReplayServer::start(Recording::from_json(RECORDING)?).await?;
        println!(
            "No API key is set: replaying a recorded OpenAI conversation \
             (examples/recordings/openai-responses-weather.json) from {} through the real \
             provider and chat loop. Set OPENAI_API_KEY, ANTHROPIC_API_KEY or GEMINI_API_KEY \
             to talk to a model.",
            server.url()
        );
        config = config
            .with_base_url(server.url())
            .with_api_key("offline-replay");
        _replay = Some(server);
    }

    let mut chat = match other {
        Some(provider) => Chat::new(provider),
        None => Chat::new(OpenAiResponses::new(config)?),
    };
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

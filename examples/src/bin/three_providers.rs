//! The same tools on three providers: OpenAI (Responses), Anthropic (Messages) and Google
//! Gemini, each through its real provider and the real chat loop, offline: each conversation
//! replays a real recording of that provider (`examples/recordings/`) from a loopback HTTP
//! server. Then the portability check says what each provider's dialect makes of the tools.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin three_providers
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::sync::Arc;

use llm_tools_core::{Chat, Provider, Role, Tool, ToolError, tool};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::Recording;
use llm_tools_providers::replay::ReplayServer;
use llm_tools_providers::schema::{Dialect, check_portability};

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

/// The recorded conversations, one per provider.
const OPENAI: &str = include_str!("../../recordings/openai-responses-weather.json");
const ANTHROPIC: &str = include_str!("../../recordings/anthropic-messages-weather.json");
const GEMINI: &str = include_str!("../../recordings/gemini-weather.json");

/// The provider for one recording, pointed at the server replaying it.
fn provider(name: &str, url: String) -> Result<Box<dyn Provider>, llm_tools_core::Error> {
    Ok(match name {
        "OpenAI" => Box::new(OpenAiResponses::new(
            OpenAiConfig::openai("gpt-5-nano")
                .with_base_url(url)
                .with_api_key("offline-replay"),
        )?),
        "Anthropic" => Box::new(Anthropic::new(
            AnthropicConfig::new("claude-haiku-4-5-20251001")
                .with_base_url(url)
                .with_api_key("offline-replay"),
        )?),
        _ => Box::new(Gemini::new(
            GeminiConfig::new("gemini-2.5-flash")
                .with_base_url(url)
                .with_api_key("offline-replay"),
        )?),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    let question = "What's the weather in Berlin? (52.5200, 13.4050)";
    println!("> {question}");
    for (name, recording) in [
        ("OpenAI", OPENAI),
        ("Anthropic", ANTHROPIC),
        ("Gemini", GEMINI),
    ] {
        let server = ReplayServer::start(Recording::from_json(recording)?).await?;
        let mut chat = Chat::new(provider(name, server.url())?);
        chat.with_tools(Weather)?;
        let outcome = chat.ask(question).await?;
        println!(
            "\n{name} ({}, replayed from {}):",
            chat.provider().protocol(),
            server.url()
        );
        for message in chat.messages() {
            match message.role {
                Role::Assistant => {
                    for call in &message.tool_calls {
                        // The arguments as the model sent them, shown on one line.
                        let arguments: serde_json::Value =
                            serde_json::from_str(&call.arguments).unwrap_or_default();
                        println!("  [tool call] {}({arguments})", call.joined_name());
                    }
                }
                Role::Tool => println!("  [tool result] {}", message.text()),
                _ => {}
            }
        }
        println!("  {}", outcome.text().unwrap_or_default());
    }

    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let report = check_portability(&tools, Dialect::ALL);
    let verdict = if report.is_portable() {
        "portable"
    } else {
        "not portable"
    };
    println!("\nThe tools on every dialect: {verdict}.");
    for finding in report.findings() {
        println!("  {finding}");
    }
    Ok(())
}

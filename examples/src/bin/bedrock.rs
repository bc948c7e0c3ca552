//! A tool on Amazon Bedrock (Converse, streamed with ConverseStream), through the real provider
//! and the real chat loop: every request SigV4-signed, every answer an AWS event stream. Offline
//! it replays a real recording (`examples/recordings/`) from a loopback HTTP server; with
//! `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (or `AWS_BEARER_TOKEN_BEDROCK`) and
//! `LLM_TOOLS_LIVE=1` it asks Bedrock itself, in `AWS_REGION`.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin bedrock
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::io::Write as _;

use futures::StreamExt;
use llm_tools_core::chat::ChatEvent;
use llm_tools_core::{Chat, StreamEvent, tool};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
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

const RECORDING: &str = include_str!("../../recordings/bedrock-converse-weather-streaming.json");
const MODEL: &str = "us.amazon.nova-2-lite-v1:0";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    llm_tools_core::debug_log::init_from_env();
    let live = std::env::var("LLM_TOOLS_LIVE").is_ok_and(|v| v == "1");
    // Offline: the recording's server, and made-up credentials (the server does not check the
    // signature; every request is signed all the same).
    let (provider, server) = if live {
        (Bedrock::new(BedrockConfig::new(MODEL))?, None)
    } else {
        let server = ReplayServer::start(Recording::from_json(RECORDING)?).await?;
        let config = BedrockConfig::new(MODEL)
            .with_region("us-east-1")
            .with_endpoint(server.url())
            .with_credentials(AwsCredentials::new("AKIDOFFLINE", "offline-secret"));
        (Bedrock::new(config)?, Some(server))
    };
    let mut chat = Chat::new(provider);
    chat.with_tools(Weather)?;
    for question in [
        "What's the weather in Berlin? (52.5200, 13.4050)",
        "What's the weather in Paris? (48.8575, 2.3514)",
    ] {
        println!("> {question}");
        let mut events = chat.ask_stream(question);
        while let Some(event) = events.next().await {
            match event? {
                ChatEvent::Model(StreamEvent::TextDelta(text)) => {
                    print!("{text}");
                    std::io::stdout().flush()?;
                }
                ChatEvent::ToolResult { call, result, .. } => {
                    println!("[tool call] {}({})", call.name, call.arguments);
                    println!("[tool result] {}", result.text());
                }
                _ => {}
            }
        }
        println!();
    }
    if let Some(server) = server {
        let signed = server
            .received()
            .iter()
            .filter(|r| {
                r.header("authorization")
                    .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256"))
            })
            .count();
        println!(
            "(replayed from {}: {signed} of {} requests SigV4-signed)",
            server.url(),
            server.received().len()
        );
    }
    Ok(())
}

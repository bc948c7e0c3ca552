//! A typed answer: the chat asks for a `Person`, the provider is told its JSON Schema (here
//! Anthropic's `output_config.format`), and the answer decodes straight into the struct. Then
//! the schema is removed and the same chat answers in prose.
//!
//! Offline (no `ANTHROPIC_API_KEY`), the conversation replays a recording
//! (`examples/recordings/anthropic-messages-person-schema.json`) from a loopback HTTP server;
//! with the key set it runs live against Claude.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin structured_output
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use llm_tools_core::Chat;
use llm_tools_providers::anthropic::Anthropic;

/// What the model must answer with.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Person {
    name: String,
    age: i64,
}

const RECORDING: &str = include_str!("../../recordings/anthropic-messages-person-schema.json");

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    llm_tools_core::debug_log::init_from_env();
    // Offline, a loopback server answers with the recorded responses.
    let (config, _server) =
        llm_tools_examples::anthropic_live_or_replayed("claude-haiku-4-5-20251001", RECORDING)
            .await?;
    let mut chat = Chat::new(Anthropic::new(config)?);

    chat.with_output::<Person>()?;
    println!("> Generate a person named Bob");
    let person: Person = chat.ask("Generate a person named Bob").await?.parsed()?;
    println!("{} is {} years old", person.name, person.age);

    chat.without_output();
    println!("> Now just tell me about Ruby");
    let prose = chat.ask("Now just tell me about Ruby").await?;
    let text = prose.text().unwrap_or_default();
    println!("{}", text.lines().next().unwrap_or_default());
    Ok(())
}

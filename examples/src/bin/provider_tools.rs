//! A provider tool: Claude searches the web on Anthropic's servers, answers with citations, and
//! the next turn carries the search back so the conversation continues. The chat never runs
//! the search; the answer says what the provider did (`server_tool_uses`, `citations`, and
//! `usage.server_tool_requests`).
//!
//! Offline (no `ANTHROPIC_API_KEY`), the conversation replays a recording
//! (`examples/recordings/anthropic-messages-web-search.json`) from a loopback HTTP server;
//! with the key set it runs live.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin provider_tools
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use llm_tools_core::{Chat, ProviderTool, WebSearch};
use llm_tools_providers::anthropic::Anthropic;

const RECORDING: &str = include_str!("../../recordings/anthropic-messages-web-search.json");

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    llm_tools_core::debug_log::init_from_env();
    // Offline, a loopback server answers with the recorded responses.
    let (config, _server) =
        llm_tools_examples::anthropic_live_or_replayed("claude-haiku-4-5-20251001", RECORDING)
            .await?;
    let mut chat = Chat::new(Anthropic::new(config)?);
    chat.with_provider_tool(ProviderTool::WebSearch(
        WebSearch::default().with_max_uses(3),
    ));

    let question = "Search the web: what is the latest stable Ruby version?";
    println!("> {question}");
    let answer = chat
        .ask(question)
        .await?
        .into_message()
        .ok_or("the turn paused")?;
    for used in &answer.server_tool_uses {
        println!("[{} ran on the provider] {}", used.name, used.input);
    }
    println!("{}", answer.text());
    for citation in &answer.citations {
        println!(
            "  cites: {} ({})",
            citation.title.as_deref().unwrap_or("untitled"),
            citation.url.as_deref().unwrap_or("no URL")
        );
    }
    if let Some(usage) = answer.usage {
        println!(
            "  ({} provider tool request(s), {} input tokens)",
            usage.server_tool_requests, usage.input_tokens
        );
    }

    // The search and its results go back with this request, so the model keeps its context.
    let follow_up = "Thanks. Now just say OK.";
    println!("> {follow_up}");
    let ok = chat.ask(follow_up).await?;
    println!("{}", ok.text().unwrap_or_default());
    Ok(())
}

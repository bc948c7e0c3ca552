//! Runnable examples of `llm-tools`; each program is in `examples/src/bin/`, one per section of
//! the guide, and runs offline:
//!
//! | program | what it shows |
//! |---|---|
//! | `quickstart` | two tools through a real provider (live with `OPENAI_API_KEY`, `ANTHROPIC_API_KEY` or `GEMINI_API_KEY`, or a recording) |
//! | `three_providers` | the same tools on OpenAI, Anthropic and Gemini (recordings of each), and the portability check |
//! | `tools` | declaring tools (fns and types with context), adding, replacing, unknown tools |
//! | `namespaces` | namespaces, toolsets, joined names, forcing a namespaced tool |
//! | `options` | tool choice, the calls cap, concurrency and barriers, the round budget, callbacks |
//! | `driving_the_loop` | `step`, saving and restoring a chat, streaming |
//! | `long_running` | `max_run_time` per tool and per chat |
//! | `pausing` | tasks and `resume`, approvals, cancelling |
//! | `asking_the_user` | questions with form fields, answers and declines |
//! | `error_handling` | recoverable and fatal errors, panics, bad arguments |
//! | `agents` | an `Agent` definition, a sub-agent as a tool (its approval through the parent, its events in the parent's stream), handoffs and back |
//! | `durable` | a chat in a SQLite file: ask in one process, approve and finish in the next |
//! | `workers` | the web side enqueues messages, workers answer them (SQLite, or PostgreSQL with `DATABASE_URL`) |
//! | `structured_output` | a typed answer (`with_output::<T>()`), then prose again (Anthropic, a recording or live) |
//! | `provider_tools` | Anthropic's web search: the searches, citations and usage of an answer (a recording or live) |
//! | `bedrock` | Bedrock Converse and ConverseStream, SigV4-signed (a recording) |
//! | `mcp` | an MCP server's tools in a chat (progress, a question from the server), and `#[tool]`s served over MCP |
//! | `more_providers` | Cohere, Ollama's native API and Gemini on Vertex AI (recordings) |
//!
//! The offline programs use [`ScriptedProvider`](llm_tools_core::testing::ScriptedProvider)
//! in place of a model: it plays the answers a model would give, so each program shows exactly
//! what the loop does with them.

use llm_tools_core::{Message, Role};
use llm_tools_providers::anthropic::AnthropicConfig;
use llm_tools_providers::record::Recording;
use llm_tools_providers::replay::ReplayServer;

/// An Anthropic configuration for `model`: live when `ANTHROPIC_API_KEY` is set, otherwise
/// pointed at a loopback server replaying `recording` (returned with it; keep it alive while the
/// chat runs).
///
/// # Errors
///
/// When the recording cannot be read or the server cannot start.
#[allow(clippy::print_stdout)] // the examples talk to their user
pub async fn anthropic_live_or_replayed(
    model: &str,
    recording: &str,
) -> Result<(AnthropicConfig, Option<ReplayServer>), Box<dyn std::error::Error>> {
    let config = AnthropicConfig::new(model);
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        return Ok((config, None));
    }
    println!("No ANTHROPIC_API_KEY is set: replaying a recorded conversation.");
    let server = ReplayServer::start(Recording::from_json(recording)?).await?;
    let config = config
        .with_base_url(format!("{}/v1", server.url()))
        .with_api_key("offline-replay");
    Ok((config, Some(server)))
}

/// Prints the transcript the way the examples show it: one line per message, tool calls and
/// results included.
#[allow(clippy::print_stdout)] // the examples talk to their user
pub fn print_transcript(messages: &[Message]) {
    for message in messages {
        match message.role {
            Role::System => println!("  [instructions] {}", message.text()),
            Role::User => println!("  > {}", message.text()),
            Role::Assistant => {
                let text = message.text();
                if !text.is_empty() {
                    println!("  {text}");
                }
                for call in &message.tool_calls {
                    println!(
                        "  [call {}] {}({})",
                        call.id,
                        call.joined_name(),
                        call.arguments
                    );
                }
            }
            Role::Tool => {
                let marker = if message.is_error { "error" } else { "result" };
                println!(
                    "  [{marker} {}] {}",
                    message.tool_call_id.as_deref().unwrap_or("?"),
                    message.text()
                );
            }
            _ => {}
        }
    }
}

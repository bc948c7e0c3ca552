//! Driving the loop yourself: one `step` at a time with your own budget, saving the chat between
//! steps and restoring it (as another process or job would), and streaming a turn.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin driving_the_loop
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::io::Write as _;

use futures::StreamExt as _;
use llm_tools_core::chat::{Chat, ChatEvent, ChatState, Step};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Message, StreamEvent, tool};
use serde_json::json;

/// Rolls a six-sided die
#[tool]
async fn dice_roll() -> u8 {
    4
}

/// The model: three rolls, one answer; then a streamed turn.
fn model() -> ScriptedProvider {
    ScriptedProvider::new()
        .then_call("dice_roll", json!({}))
        .then_call("dice_roll", json!({}))
        .then_call("dice_roll", json!({}))
        .then_text("You rolled 4, 4 and 4.")
        .then(Message::assistant_with_calls(
            "Rolling once more… ",
            vec![llm_tools_core::ToolCall::new("", "dice_roll", "{}")],
        ))
        .then_text("Another 4!")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    let model = model();
    let mut chat = Chat::new(model.clone());
    chat.with_tools(DiceRoll)?;
    chat.add_message(Message::user("Roll the die three times."))?;

    // Each step sends one request and runs the calls of its answer. Between steps the chat's
    // state can be saved (it is plain serde data) and the next step run elsewhere.
    for n in 1..=10 {
        match chat.step().await? {
            Step::Continue => {
                println!("step {n}: the model called tools and they ran");
                let saved = serde_json::to_string(chat.state())?;
                // … a job queue, a database row, another process …
                let state: ChatState = serde_json::from_str(&saved)?;
                chat = Chat::from_state(model.clone(), state)?;
                chat.with_tools(DiceRoll)?;
            }
            Step::Done(answer) => {
                println!("step {n}: the model answered: {}", answer.text());
                break;
            }
            Step::Paused(pause) => {
                println!("step {n}: paused on {} call(s)", pause.calls().len());
                break;
            }
            _ => break,
        }
    }

    // Streaming: text and tool-call deltas as they arrive, tool results as they are added;
    // the tools still run between the model's answers.
    println!("\nstreamed:");
    let mut events = chat.ask_stream("Once more?");
    while let Some(event) = events.next().await {
        match event? {
            ChatEvent::Model(StreamEvent::TextDelta(text)) => print!("{text}"),
            ChatEvent::Model(StreamEvent::ToolCallStarted { name, .. }) => print!("[{name}("),
            ChatEvent::Model(StreamEvent::ToolCallDelta { fragment, .. }) => print!("{fragment}"),
            ChatEvent::Model(StreamEvent::ToolCallReady { .. }) => print!(")] "),
            ChatEvent::ToolResult { result, .. } => print!("→ {} ", result.text()),
            ChatEvent::Done(_) => println!("\n(done)"),
            ChatEvent::Paused(_) => println!("\n(paused)"),
            _ => {}
        }
        let _ = std::io::stdout().flush();
    }
    Ok(())
}

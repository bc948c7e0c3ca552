//! Error handling: a recoverable error goes to the model and the conversation goes on; bad
//! arguments (wrong types, invalid JSON) too. A fatal error (what `?` gives on an I/O or
//! database error) or a panic stops the turn and reaches the caller; the round's finished
//! results are kept and its other calls are closed, so the chat can go on and nothing runs
//! twice.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin error_handling
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use llm_tools_core::chat::Chat;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, ToolCall, ToolError, tool};
use llm_tools_examples::print_transcript;
use serde_json::json;

/// Gets the weather for a location name
///
/// # Arguments
/// * `location` - A city name
#[tool]
async fn weather(location: String) -> Result<String, ToolError> {
    if location.len() < 3 {
        // Recoverable: the model reads this and can try again.
        return Err(ToolError::recoverable("Location too short"));
    }
    Ok(format!("15°C in {location}"))
}

/// Reads a note from disk
///
/// # Arguments
/// * `name` - The note's file name
#[tool]
async fn read_note(name: String) -> Result<String, ToolError> {
    // Fatal: an I/O error stops the turn and reaches the caller.
    Ok(std::fs::read_to_string(format!(
        "/nonexistent/notes/{name}"
    ))?)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![
            ToolCall::new("c1", "weather", r#"{"location": "NY"}"#),
            ToolCall::new("c2", "weather", r#"{"location": 42}"#),
            ToolCall::new("c3", "weather", r#"{"location": "Berl"#),
        ])
        .then_call("weather", json!({"location": "Berlin"}))
        .then_text("It's 15°C in Berlin.")
        .then_calls([
            ("weather", json!({"location": "Paris"})),
            ("read_note", json!({"name": "todo.txt"})),
            ("weather", json!({"location": "Rome"})),
        ])
        .then_text("I couldn't read your note, but Paris is 15°C.");
    let mut chat = Chat::new(model);
    chat.with_tools((Weather, ReadNote))?;

    // Recoverable errors and bad arguments: the model sees them and tries again.
    let outcome = chat.ask("Weather in Berlin?").await?;
    println!("answer: {}", outcome.text().unwrap_or_default());

    // A fatal error stops the turn.
    match chat.ask("Weather in Paris, and read my todo note.").await {
        Err(Error::ToolFailed {
            tool,
            call_id,
            source,
        }) => println!("\n`{tool}` failed ({call_id}): {source}"),
        other => println!("\nunexpected: {other:?}"),
    }
    // The history stays valid: `complete` lets the model go on.
    let outcome = chat.complete().await?;
    println!(
        "after the failure: {}\n",
        outcome.text().unwrap_or_default()
    );

    print_transcript(chat.messages());
    Ok(())
}

//! Controlling tool execution: which tools the model may call, how many calls of one answer run,
//! how they run (in parallel with a worker cap, a `sequential` tool as a barrier), the round
//! budget, raw request parameters, and callbacks that watch, veto or rewrite calls.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin options
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::time::Duration;

use llm_tools_core::chat::{Chat, Concurrency, ToolCallAction, ToolOptions};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, ToolChoice, tool};
use llm_tools_examples::print_transcript;
use serde_json::json;

/// Fetches a web page
#[tool]
async fn fetch(url: String) -> String {
    // Real I/O would go here; the calls of one answer run at the same time.
    tokio::time::sleep(Duration::from_millis(20)).await;
    format!("<html>{url}</html>")
}

/// Writes a file: calls before it finish first, it runs alone, calls after it start after it
#[tool(sequential)]
async fn write_file(path: String) -> String {
    format!("wrote {path}")
}

/// Deletes a file
#[tool]
async fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    let model = ScriptedProvider::new()
        // Five calls in one answer; the cap below lets three run.
        .then_calls([
            ("fetch", json!({"url": "https://a.example"})),
            ("fetch", json!({"url": "https://b.example"})),
            ("write_file", json!({"path": "out.txt"})),
            ("fetch", json!({"url": "https://c.example"})),
            ("fetch", json!({"url": "https://d.example"})),
        ])
        .then_calls([
            ("delete_file", json!({"path": "/etc/passwd"})),
            ("fetch", json!({"url": "http://insecure.example"})),
        ])
        .then_text("Done, a few at a time.")
        // For the round budget: the model keeps asking for tools.
        .then_call("fetch", json!({"url": "https://e.example"}))
        .then_call("fetch", json!({"url": "https://f.example"}))
        .then_text("Finally done.");

    let mut chat = Chat::new(model.clone());
    chat.with_tools((Fetch, WriteFile, DeleteFile))?;
    chat.with_tool_options(
        ToolOptions::default()
            .with_choice(ToolChoice::Required) // reset after the round it forces
            .with_calls(Some(3)) // the first 3 calls of an answer run
            .with_concurrency(Concurrency::parallel(4)) // up to 4 at a time
            .with_rounds(5) // at most 5 answers in a row asking for tools
            .with_max_run_time(Duration::from_secs(30)),
    )?;
    // Raw JSON merged into every request body.
    chat.with_params(json!({"temperature": 0.2}))?;

    // Callbacks: additive, in registration order.
    chat.before_request(|request| {
        println!("  (request with {} messages)", request.messages.len());
    })
    .on_tool_call(|call| {
        if call.name == "delete_file" {
            ToolCallAction::Veto("Deleting files is not allowed in this chat.".into())
        } else if call.arguments.contains("http://") {
            ToolCallAction::Rewrite(call.arguments.replace("http://", "https://"))
        } else {
            ToolCallAction::Run
        }
    })
    .on_tool_result(|call, result| {
        println!("  (result of {}: {} bytes)", call.id, result.text().len());
    });

    let outcome = chat.ask("Fetch four pages and save one.").await?;
    println!("\nAnswer: {}\n", outcome.text().unwrap_or_default());
    print_transcript(chat.messages());

    // The round budget: hitting it is an error that leaves the chat resumable.
    chat.with_tool_options(chat.tool_options().clone().with_rounds(1))?;
    match chat.ask("Keep fetching.").await {
        Err(e @ Error::RoundsExceeded { .. }) => println!("\n{e}"),
        other => println!("\nunexpected: {other:?}"),
    }
    // `complete` goes on from where the chat stopped, with a fresh budget.
    chat.with_tool_options(chat.tool_options().clone().with_rounds(5))?;
    let outcome = chat.complete().await?;
    println!("After `complete`: {}", outcome.text().unwrap_or_default());
    Ok(())
}

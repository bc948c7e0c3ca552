//! Long-running tools: every call has a `max_run_time` (ten minutes unless the chat or the tool
//! says otherwise). A call running past it is cancelled and the model gets a timeout error; the
//! other calls of the round keep their results.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin long_running
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::time::Duration;

use llm_tools_core::chat::{Chat, DEFAULT_MAX_RUN_TIME, ToolOptions};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, Tool, tool};
use llm_tools_examples::print_transcript;
use serde_json::json;

/// Builds the quarterly report (legitimately slow: it has its own, longer limit)
#[tool(max_run_time = "2h")]
async fn generate_report(quarter: String) -> String {
    tokio::time::sleep(Duration::from_millis(50)).await;
    format!("report for {quarter}: revenue up 12%")
}

/// Looks a word up in a dictionary service that hangs today
#[tool]
async fn define(word: String) -> String {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    format!("{word}: …")
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    println!("default max_run_time: {DEFAULT_MAX_RUN_TIME:?}");
    println!(
        "generate_report's own limit: {:?}\n",
        GenerateReport.spec().max_run_time()
    );

    let model = ScriptedProvider::new()
        .then_calls([
            ("generate_report", json!({"quarter": "Q3"})),
            ("define", json!({"word": "ephemeral"})),
        ])
        .then_text("Here is the Q3 report; the dictionary timed out.");
    let mut chat = Chat::new(model);
    chat.with_tools((GenerateReport, Define))?;
    // This chat gives calls 200 ms (a tool's own limit still wins).
    chat.with_tool_options(ToolOptions::default().with_max_run_time(Duration::from_millis(200)))?;

    let outcome = chat
        .ask("Build the Q3 report and define 'ephemeral'.")
        .await?;
    print_transcript(chat.messages());
    println!("\nAnswer: {}", outcome.text().unwrap_or_default());
    Ok(())
}

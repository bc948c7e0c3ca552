//! Asking the user: a tool asks a question with form fields (JSON Schema properties) while it
//! runs. In a chat the call pauses; `answer` or `decline` settles it, and `complete` runs the
//! tool again from the start, where `ask` now returns the answer. So: ask first, then act.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin asking_the_user
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use llm_tools_core::chat::Chat;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, Question, ToolContext, ToolError, tool};
use llm_tools_examples::print_transcript;
use serde_json::json;

/// Ask the team something you can't answer from the docs
///
/// # Arguments
/// * `question` - Written for a colleague
#[tool]
async fn ask_team(question: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let form = Question::new(question)
        .required_field("answer", json!({"type": "string", "title": "Answer"}));
    let answer = ctx.ask(form).await?;
    Ok(match answer.get_str("answer") {
        Some(text) if answer.is_accepted() => format!("The team says: {text}"),
        _ => "Nobody answered".to_owned(),
    })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    let model = ScriptedProvider::new()
        .then_call(
            "ask_team",
            json!({"question": "Which region do we deploy to?"}),
        )
        .then_text("We deploy to eu-west-1.")
        .then_call("ask_team", json!({"question": "Is Friday a deploy day?"}))
        .then_text("Nobody knows; I'd avoid Friday.");
    let mut chat = Chat::new(model);
    chat.with_tools(AskTeam)?;

    let outcome = chat.ask("Where do we deploy?").await?;
    println!("paused: {}", outcome.is_paused());
    let (call_id, fields) = {
        let pending = &chat.pending_questions()[0];
        (pending.call.id.clone(), pending.question.requested_schema())
    };
    println!(
        "question: {}",
        chat.pending_questions()[0].question.message()
    );
    println!("form: {fields}");

    // A required field left out is refused; the question stays open.
    if let Err(e) = chat.answer(&call_id, json!({})) {
        println!("refused: {e}");
    }
    chat.answer(&call_id, json!({"answer": "eu-west-1"}))?;
    let outcome = chat.complete().await?;
    println!("answer: {}\n", outcome.text().unwrap_or_default());

    // Declining: the tool runs again and `ask` returns a declined answer.
    let _ = chat.ask("Can we deploy on Friday?").await?;
    let call_id = chat.pending_questions()[0].call.id.clone();
    chat.decline(&call_id)?;
    let outcome = chat.complete().await?;
    println!("answer: {}\n", outcome.text().unwrap_or_default());

    print_transcript(chat.messages());

    // Outside a chat nobody can answer: `ask` is an input-required error.
    let detached = ToolContext::detached("call-1");
    let result = ask_team("Anyone?".into(), &detached).await;
    println!(
        "\noutside a chat: {:?}",
        result.err().map(|e| e.to_string())
    );
    Ok(())
}

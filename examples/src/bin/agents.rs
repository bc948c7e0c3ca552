//! Agents: one definition, many chats; a sub-agent as a tool whose approval is given through
//! the parent; a stream that carries the sub-agent's events; handoffs between agents and back.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin agents
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use futures::StreamExt as _;
use llm_tools_core::agent::{Agent, AgentPauses};
use llm_tools_core::chat::ChatEvent;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, StreamEvent, tool};
use llm_tools_examples::print_transcript;
use serde_json::json;

/// Deletes a file
///
/// # Arguments
/// * `path` - The file to delete
#[tool(needs_approval)]
async fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

/// Looks up an invoice
///
/// # Arguments
/// * `number` - The invoice's number
#[tool]
async fn invoice(number: u32) -> String {
    format!("invoice {number}: paid on 3 May")
}

async fn sub_agent() -> Result<(), Error> {
    println!("== A sub-agent as a tool, its approval given through the parent ==");
    // The scripted models play what real ones would answer.
    let janitor = Agent::new(
        "janitor",
        ScriptedProvider::new()
            .then_call("delete_file", json!({"path": "/tmp/old.log"}))
            .then_text("Deleted /tmp/old.log."),
    )
    .with_instructions("You clean up folders. Delete only what you are asked to.")
    .with_tools(DeleteFile);
    let lead = Agent::new(
        "lead",
        ScriptedProvider::new()
            .then_call("janitor", json!({"input": "Delete the old log in /tmp"}))
            .then_text("The janitor deleted /tmp/old.log."),
    )
    .with_instructions("You delegate chores.")
    .with_tools(janitor.as_tool("janitor", "Cleans up folders"));

    let mut chat = lead.chat()?;
    // Streamed: the sub-agent's events come tagged with its path.
    {
        let mut events = chat.ask_stream("Clean up /tmp");
        while let Some(event) = events.next().await {
            match event? {
                ChatEvent::Agent { path, event } => {
                    if let Some(StreamEvent::ToolCallStarted { name, .. }) = event.model() {
                        println!("  [{}] calls {name}", path.join(" › "));
                    }
                }
                ChatEvent::Paused(_) => println!("  the chat pauses"),
                _ => {}
            }
        }
    }
    for pause in chat.paused_calls() {
        println!(
            "  waiting: {} {}",
            pause.path_string(),
            pause.call.arguments
        );
        chat.approve_at(&pause.id)?;
    }
    let answer = chat.complete().await?;
    println!("  answer: {}", answer.text().unwrap_or_default());
    print_transcript(chat.messages());
    Ok(())
}

async fn handoffs() -> Result<(), Error> {
    println!("\n== Handoffs: triage hands to billing, billing hands back ==");
    let model = ScriptedProvider::new()
        .then_call("transfer_to_billing", json!({}))
        .then_call("invoice", json!({"number": 7}))
        .then_text("Invoice 7 was paid on 3 May.")
        .then_call("transfer_to_triage", json!({}))
        .then_text("Triage again: what else can I do?");
    let billing = Agent::new("billing", model.clone())
        .with_description("Invoices and payments")
        .with_instructions("You answer questions about invoices.")
        .with_tools(Invoice);
    let triage = Agent::new("triage", model)
        .with_instructions("You route customers to the right team.")
        .with_handoffs([billing]);

    let mut chat = triage.chat()?;
    let answer = chat.ask("Was invoice 7 paid?").await?;
    println!(
        "  [{}] {}",
        Agent::active_agent(&chat).unwrap_or_default(),
        answer.text().unwrap_or_default()
    );
    let answer = chat.ask("Thanks, that's all for billing").await?;
    println!(
        "  [{}] {}",
        Agent::active_agent(&chat).unwrap_or_default(),
        answer.text().unwrap_or_default()
    );
    print_transcript(chat.messages());
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    sub_agent().await?;
    handoffs().await
}

//! Durable chats: a chat in a SQLite file outlives its process. The first run of this program
//! asks, and the chat pauses on an approval; the program ends. The second run (a new process)
//! loads the chat, approves the call, and finishes the turn. A third run starts over.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin durable    # asks; the call waits for an approval
//! cargo run -p llm-tools-examples --bin durable    # approves and finishes
//! ```
//!
//! The file is `llm-tools-durable-example.db` in the temporary folder, or the path given as the
//! first argument.
#![allow(clippy::print_stdout)] // an example program talks to its user

use llm_tools_core::chat::{Chat, Outcome};
use llm_tools_core::store::{SqliteStore, StoreError};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, ToolContext, tool};
use llm_tools_examples::print_transcript;
use serde_json::json;

/// Drops a database table
///
/// # Arguments
/// * `table` - The table to drop
#[tool(needs_approval)]
async fn drop_table(table: String, ctx: &ToolContext) -> String {
    // A durable chat runs a call again if its process dies mid-run: the call id and the
    // attempt make the idempotency key of the side effect.
    format!(
        "dropped {table} (call {}, attempt {})",
        ctx.call_id(),
        ctx.attempt()
    )
}

const CHAT_ID: &str = "support-42";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).map_or_else(
        || std::env::temp_dir().join("llm-tools-durable-example.db"),
        std::path::PathBuf::from,
    );
    let mut store = SqliteStore::open(&path).await?;
    println!("Chats are stored in {}", path.display());

    // The model's part of the second run: the answer after the approved call ran.
    let second_run = ScriptedProvider::new().then_text("Dropped the sessions table.");
    match Chat::load(store.clone(), CHAT_ID, second_run).await {
        Ok(mut chat) if chat.is_paused() => {
            chat.with_tools(DropTable)?;
            let call = chat.pending_approvals()[0].clone();
            println!(
                "Loaded `{CHAT_ID}`: {}({}) waits for an approval; approving.",
                call.name, call.arguments
            );
            chat.approve(&call.id)?;
            match chat.complete().await? {
                Outcome::Done(answer) => println!("Answered: {}", answer.text()),
                Outcome::Busy(busy) => {
                    println!("Another process holds the chat for {:?}.", busy.remaining())
                }
                other => println!("Still waiting: {other:?}"),
            }
            print_transcript(chat.messages());
            return Ok(());
        }
        Ok(_) => {
            println!("`{CHAT_ID}` is finished; starting over.");
            drop(store);
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
            }
            store = SqliteStore::open(&path).await?;
        }
        Err(Error::Store(e)) if matches!(*e, StoreError::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }

    // The first run: the model asks to drop a table, which needs an approval.
    let first_run = ScriptedProvider::new().then_call("drop_table", json!({"table": "sessions"}));
    let mut chat = Chat::create(store, CHAT_ID, first_run).await?;
    chat.with_instructions("You manage the team's databases.")
        .with_tools(DropTable)?;
    let outcome = chat.ask("Drop the sessions table").await?;
    assert!(outcome.is_paused());
    print_transcript(chat.messages());
    println!(
        "The call waits for an approval; the chat is stored. Run the program again to approve it."
    );
    Ok(())
}

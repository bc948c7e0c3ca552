//! Serving `#[tool]`s over MCP to clients you do not control: a tool that deletes things needs
//! approval (the application approves drafts itself and asks the client's user about the
//! rest), and the HTTP server lets in only clients holding its bearer token.
//!
//! 1. The server: `list` (read-only) and `delete` (destructive, behind an approval), at
//!    `http://127.0.0.1:PORT/mcp`, for the token in `TOOLS_TOKEN` (one is made up when it is
//!    not set).
//! 2. A client without the token is refused (`401`, with `WWW-Authenticate`).
//! 3. A client with the token drives a chat whose model deletes a draft (approved by the
//!    server's hook, nobody asked) and a published note (the server asks the client's user,
//!    the chat pauses on the question, the user says no: the note stays).
//!
//! The model's side is scripted, so it runs offline.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin serving_securely
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::sync::{Arc, Mutex};

use llm_tools_core::chat::Chat;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::toolset;
use llm_tools_examples::print_transcript;
use llm_tools_mcp::{Decision, HttpOptions, McpChat as _, McpServer, ToolServer};
use serde_json::json;

/// The notes the tools work on: (id, title, draft).
pub struct Notes {
    notes: Mutex<Vec<(u32, String, bool)>>,
}

#[toolset]
impl Notes {
    /// Lists the notes: id, title, and whether each is a draft
    #[tool(title = "List notes", annotations(read_only))]
    async fn list(&self) -> String {
        let notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        notes
            .iter()
            .map(|(id, title, draft)| {
                let kind = if *draft { "draft" } else { "published" };
                format!("{id}: {title} ({kind})")
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Deletes a note
    ///
    /// # Arguments
    /// * `id` - The note's id
    #[tool(
        title = "Delete a note",
        needs_approval,
        annotations(destructive, idempotent)
    )]
    async fn delete(&self, id: u32) -> String {
        let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
        notes.retain(|(note, _, _)| *note != id);
        format!("deleted note {id}")
    }
}

/// Whether note `id` is a draft.
fn is_draft(notes: &Notes, id: Option<u64>) -> bool {
    notes
        .notes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|(note, _, draft)| Some(u64::from(*note)) == id && *draft)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    llm_tools_core::debug_log::init_from_env();
    let token = std::env::var("TOOLS_TOKEN").unwrap_or_else(|_| "example-token-7f3a".to_owned());
    let notes = Arc::new(Notes {
        notes: Mutex::new(vec![
            (1, "Q3 plan".to_owned(), false),
            (2, "Scratch ideas".to_owned(), true),
        ]),
    });

    // 1. The server.
    let server = ToolServer::new("notes")
        .with_instructions("The team's notes")
        .with_tools(Arc::clone(&notes))?
        // The application's hook: drafts may go; anything else, the client's user decides.
        .approve_with({
            let notes = Arc::clone(&notes);
            move |call| {
                let id = serde_json::from_str::<serde_json::Value>(&call.arguments)
                    .ok()
                    .and_then(|args| args["id"].as_u64());
                let draft = is_draft(&notes, id);
                async move {
                    if draft {
                        Decision::Approve
                    } else {
                        Decision::AskTheClient
                    }
                }
            }
        });
    let options = HttpOptions::new()
        .with_bearer_token("example-client", token.clone())
        .with_resource_metadata("https://notes.example.com/.well-known/oauth-protected-resource");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(server.serve_http_with(listener, options));
    println!("serving `notes` at {url}, for holders of its token\n");

    // 2. No token, no tools.
    match McpServer::http(&url).connect("notes").await {
        Ok(_) => println!("a client without the token connected (it should not have)"),
        Err(error) => println!("a client without the token is refused: {error}\n"),
    }

    // 3. With the token. The server's approval question pauses the chat like any question,
    //    and its user answers it.
    let client = McpServer::http(&url)
        .bearer_token(token)
        .connect("notes")
        .await?;
    let model = ScriptedProvider::new()
        .then_call("notes_list", json!({}))
        .then_calls([
            ("notes_delete", json!({"id": 2})),
            ("notes_delete", json!({"id": 1})),
        ])
        .then_text("I deleted the draft; deleting the Q3 plan was not approved, so it stays.");
    let mut chat = Chat::new(model);
    chat.with_mcp(&client)?;
    let mut outcome = chat.ask("Clean up our notes.").await?;
    while outcome.is_paused() {
        let pending: Vec<(String, String)> = chat
            .pending_questions()
            .iter()
            .map(|q| (q.call.id.clone(), q.question.message().to_owned()))
            .collect();
        for (call_id, message) in pending {
            println!(
                "the server asks the user:\n  {}",
                message.replace('\n', "\n  ")
            );
            println!("→ the user says no\n");
            chat.answer(&call_id, json!({"approve": false}))?;
        }
        outcome = chat.complete().await?;
    }
    print_transcript(chat.messages());
    println!(
        "\nnotes left: {:?}",
        notes
            .notes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(id, title, _)| format!("{id}: {title}"))
            .collect::<Vec<_>>()
    );
    Ok(())
}

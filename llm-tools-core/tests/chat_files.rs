//! The chat's file store as tools see it: a tool saves and reads files through its context, in
//! memory or in a real folder; without a store the tool says so to the model; a missing file read
//! with `?` is a fatal error that keeps the history valid; a restored chat gets its store again.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use llm_tools_core::chat::{Chat, Outcome, Step};
use llm_tools_core::files::{FileStore, FolderFileStore, MemoryFileStore};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Error, Message, Role, ToolContext, ToolError, tool};
use serde_json::json;

/// Writes a report into the chat's files
///
/// # Arguments
/// * `title` - The report's title
#[tool]
async fn write_report(title: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let Some(files) = ctx.files() else {
        return Err(ToolError::recoverable("this chat keeps no files"));
    };
    let body = format!("# {title}\nwritten by call {}\n", ctx.call_id());
    let name = files
        .save(&format!("reports/{title}.md"), body.into_bytes())
        .await?;
    Ok(format!("saved as {name}"))
}

/// Reads a file of the chat
///
/// # Arguments
/// * `name` - The file's name
#[tool]
async fn read_file(name: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let files = ctx
        .files()
        .ok_or_else(|| ToolError::recoverable("this chat keeps no files"))?;
    let bytes = files.load(&name).await?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn results(chat: &Chat) -> Vec<String> {
    common::tool_result_texts(chat.messages())
}

fn model() -> ScriptedProvider {
    ScriptedProvider::new()
        .then_call("write_report", json!({"title": "q3"}))
        .then_call("read_file", json!({"name": "reports/q3.md"}))
        .then_text("Done.")
}

async fn save_then_read(chat: &mut Chat) -> Vec<String> {
    chat.with_tools((WriteReport, ReadFile)).unwrap();
    let outcome = chat
        .ask("Write the Q3 report, then read it.")
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Done(_)), "{outcome:?}");
    results(chat)
}

#[tokio::test]
async fn tools_save_and_read_files_in_a_memory_store() {
    let store = Arc::new(MemoryFileStore::new());
    let mut chat = Chat::new(model());
    chat.with_shared_file_store(store.clone());
    let results = save_then_read(&mut chat).await;
    assert_eq!(results[0], "saved as reports/q3.md");
    assert!(
        results[1].starts_with("# q3\nwritten by call "),
        "{results:?}"
    );
    assert_eq!(store.list().await.unwrap(), ["reports/q3.md"]);
    let saved = store.load("reports/q3.md").await.unwrap();
    assert_eq!(String::from_utf8(saved).unwrap(), results[1]);
}

#[tokio::test]
async fn tools_save_and_read_files_in_a_folder() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("llm-tools-chat-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut chat = Chat::new(model());
    chat.with_file_store(FolderFileStore::new(&dir));
    let results = save_then_read(&mut chat).await;
    assert_eq!(results[0], "saved as reports/q3.md");
    let on_disk = std::fs::read_to_string(dir.join("reports").join("q3.md")).unwrap();
    assert_eq!(on_disk, results[1]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn without_a_store_the_tool_tells_the_model() {
    let mut chat = Chat::new(model());
    assert!(chat.file_store().is_none());
    let results = save_then_read(&mut chat).await;
    assert_eq!(
        results,
        ["this chat keeps no files", "this chat keeps no files"]
    );
}

#[tokio::test]
async fn a_missing_file_read_with_question_mark_is_fatal_and_the_history_stays_valid() {
    let model = ScriptedProvider::new()
        .then_call("read_file", json!({"name": "nowhere.txt"}))
        .then_text("unused");
    let mut chat = Chat::new(model);
    chat.with_file_store(MemoryFileStore::new());
    chat.with_tools(ReadFile).unwrap();
    let err = chat.ask("Read nowhere.txt").await.unwrap_err();
    let Error::ToolFailed { tool, source, .. } = &err else {
        panic!("expected a fatal tool error, got {err:?}");
    };
    assert_eq!(tool, "read_file");
    assert!(source.to_string().contains("nowhere.txt"), "{source}");
    // The call is closed with an error result, so the next request is valid.
    let last = chat.messages().last().unwrap();
    assert_eq!(last.role, Role::Tool);
}

#[tokio::test]
async fn a_restored_chat_gets_its_store_again() {
    let store = Arc::new(MemoryFileStore::new());
    let model = model();
    let mut chat = Chat::new(model.clone());
    chat.with_shared_file_store(store.clone());
    chat.with_tools((WriteReport, ReadFile)).unwrap();
    chat.add_message(Message::user("Write the Q3 report, then read it."))
        .unwrap();
    // One request and its round: the report is written.
    assert!(matches!(chat.step().await.unwrap(), Step::Continue));
    assert_eq!(results(&chat), ["saved as reports/q3.md"]);
    let state = serde_json::to_string(chat.state()).unwrap();

    let mut restored = Chat::from_state(model, serde_json::from_str(&state).unwrap()).unwrap();
    assert!(restored.file_store().is_none());
    restored.with_shared_file_store(store.clone());
    restored.with_tools((WriteReport, ReadFile)).unwrap();
    let outcome = restored.complete().await.unwrap();
    assert!(matches!(outcome, Outcome::Done(_)), "{outcome:?}");
    assert!(results(&restored)[1].starts_with("# q3\n"));
}

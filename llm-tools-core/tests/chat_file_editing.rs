//! The chat's `write_file` and `edit_file` tools: the model changes only files it has read and
//! that did not change since; new files need no read; every refusal is a message the model can
//! act on, with the file untouched; the memory of reads survives a saved and restored state;
//! editing can be turned off; a folder store's links and hidden files stay out of reach.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

mod common;

use llm_tools_core::Chat;
use llm_tools_core::chat::{ChatState, EDIT_FILE_NAME, ToolOptions, WRITE_FILE_NAME};
use llm_tools_core::files::{FileStore, FolderFileStore, MemoryFileStore};
use llm_tools_core::testing::ScriptedProvider;
use serde_json::{Value, json};

fn results(chat: &Chat) -> Vec<String> {
    common::tool_result_texts(chat.messages())
}

/// A model that makes each call in turn, one per answer, then says "Done.".
fn model(calls: &[(&str, Value)]) -> ScriptedProvider {
    calls
        .iter()
        .fold(ScriptedProvider::new(), |m, (name, args)| {
            m.then_call(*name, args.clone())
        })
        .then_text("Done.")
}

async fn run(store: &MemoryFileStore, calls: &[(&str, Value)]) -> (Chat, Vec<String>) {
    let mut chat = Chat::new(model(calls));
    chat.with_file_store(store.clone());
    // Each case reads what one failed edit says: no retry budget cuts the script short.
    chat.with_tool_options(ToolOptions::default().with_max_retries(None))
        .unwrap();
    let outcome = chat.ask("Work on the files").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Done."));
    let texts = results(&chat);
    (chat, texts)
}

async fn text_of(store: &dyn FileStore, name: &str) -> String {
    String::from_utf8(store.load(name).await.unwrap()).unwrap()
}

fn read(name: &str) -> (&'static str, Value) {
    ("read_file", json!({"name": name}))
}

fn write(name: &str, content: &str) -> (&'static str, Value) {
    (WRITE_FILE_NAME, json!({"name": name, "content": content}))
}

fn edit(name: &str, old: &str, new: &str) -> (&'static str, Value) {
    (
        EDIT_FILE_NAME,
        json!({"name": name, "old_text": old, "new_text": new}),
    )
}

#[tokio::test]
async fn a_new_file_needs_no_read_and_can_then_be_edited() {
    let store = MemoryFileStore::new();
    let (_, texts) = run(
        &store,
        &[
            write("plan.md", "step one\nstep two\n"),
            edit("plan.md", "step two", "step 2"),
        ],
    )
    .await;
    assert_eq!(texts[0], "Created `plan.md` (18 characters).");
    assert_eq!(texts[1], "Edited `plan.md`: replaced 1 occurrence.");
    assert_eq!(text_of(&store, "plan.md").await, "step one\nstep 2\n");
}

#[tokio::test]
async fn an_existing_file_not_read_is_neither_replaced_nor_edited() {
    let store = MemoryFileStore::new();
    store.save("notes.md", b"keep me".to_vec()).await.unwrap();
    let (_, texts) = run(
        &store,
        &[
            write("notes.md", "overwritten"),
            edit("notes.md", "keep", "lose"),
        ],
    )
    .await;
    for text in &texts {
        assert!(
            text.contains("`notes.md` has not been read in this chat: read it with `read_file`"),
            "{text}"
        );
    }
    assert_eq!(text_of(&store, "notes.md").await, "keep me");
}

#[tokio::test]
async fn a_file_read_can_be_replaced() {
    let store = MemoryFileStore::new();
    store.save("notes.md", b"old".to_vec()).await.unwrap();
    let (_, texts) = run(&store, &[read("notes.md"), write("notes.md", "new")]).await;
    assert_eq!(texts[1], "Replaced `notes.md` (3 characters).");
    assert_eq!(text_of(&store, "notes.md").await, "new");
}

#[tokio::test]
async fn a_file_changed_since_it_was_read_must_be_read_again() {
    let store = MemoryFileStore::new();
    store.save("notes.md", b"draft one".to_vec()).await.unwrap();
    let mut chat = Chat::new(model(&[read("notes.md")]));
    chat.with_file_store(store.clone());
    let _ = chat.ask("Read the notes").await.unwrap();

    // Someone else changes the file between the model's read and its edit.
    store.save("notes.md", b"draft two".to_vec()).await.unwrap();
    let calls = [
        edit("notes.md", "draft", "final"),
        read("notes.md"),
        edit("notes.md", "draft", "final"),
    ];
    let mut chat = Chat::from_state(model(&calls), chat.into_state()).unwrap();
    chat.with_file_store(store.clone());
    let _ = chat.ask("Finish it").await.unwrap();
    let texts = results(&chat);
    assert!(
        texts[1].contains("`notes.md` changed since it was last read: read it again"),
        "{}",
        texts[1]
    );
    assert_eq!(texts[2], "draft two");
    assert_eq!(texts[3], "Edited `notes.md`: replaced 1 occurrence.");
    assert_eq!(text_of(&store, "notes.md").await, "final two");
}

#[tokio::test]
async fn the_memory_of_reads_survives_a_saved_state() {
    let store = MemoryFileStore::new();
    store.save("a.txt", b"alpha".to_vec()).await.unwrap();
    let (chat, _) = run(&store, &[read("a.txt")]).await;
    let json = serde_json::to_string(chat.state()).unwrap();
    assert!(json.contains("\"file_reads\""), "{json}");

    let state: ChatState = serde_json::from_str(&json).unwrap();
    let mut chat = Chat::from_state(model(&[edit("a.txt", "alpha", "beta")]), state).unwrap();
    chat.with_file_store(store.clone());
    let _ = chat.ask("Edit it").await.unwrap();
    assert_eq!(results(&chat)[1], "Edited `a.txt`: replaced 1 occurrence.");
    assert_eq!(text_of(&store, "a.txt").await, "beta");
}

#[tokio::test]
async fn edits_that_cannot_apply_say_why_and_change_nothing() {
    let store = MemoryFileStore::new();
    store
        .save("list.txt", b"apple\nbanana\napple\n".to_vec())
        .await
        .unwrap();
    store
        .save("blob.bin", vec![0xff, 0xfe, 0x00])
        .await
        .unwrap();
    let (_, texts) = run(
        &store,
        &[
            read("list.txt"),
            edit("list.txt", "cherry", "plum"),
            edit("list.txt", "apple", "pear"),
            edit("list.txt", "", "pear"),
            edit("list.txt", "banana", "banana"),
            edit("missing.txt", "a", "b"),
            read("blob.bin"),
            edit("blob.bin", "a", "b"),
            (
                EDIT_FILE_NAME,
                json!({"name": "list.txt", "old_text": "apple", "new_text": "pear", "replace_all": true}),
            ),
        ],
    )
    .await;
    assert!(
        texts[1].contains("`old_text` does not occur in `list.txt`"),
        "{}",
        texts[1]
    );
    assert!(texts[2].contains("occurs 2 times"), "{}", texts[2]);
    assert!(texts[2].contains("replace_all"), "{}", texts[2]);
    assert!(texts[3].contains("`old_text` is empty"), "{}", texts[3]);
    assert!(texts[4].contains("are the same"), "{}", texts[4]);
    assert!(
        texts[5].contains("no file named \"missing.txt\""),
        "{}",
        texts[5]
    );
    assert!(
        texts[5].contains("`write_file` creates one"),
        "{}",
        texts[5]
    );
    assert!(texts[7].contains("is not UTF-8 text"), "{}", texts[7]);
    assert_eq!(texts[8], "Edited `list.txt`: replaced 2 occurrences.");
    assert_eq!(text_of(&store, "list.txt").await, "pear\nbanana\npear\n");
    assert_eq!(store.load("blob.bin").await.unwrap(), [0xff, 0xfe, 0x00]);
}

#[tokio::test]
async fn two_edits_in_one_answer_apply_in_order() {
    let store = MemoryFileStore::new();
    store.save("a.txt", b"one two".to_vec()).await.unwrap();
    let model = ScriptedProvider::new()
        .then_call("read_file", json!({"name": "a.txt"}))
        .then_calls(vec![
            (
                EDIT_FILE_NAME.to_owned(),
                json!({"name": "a.txt", "old_text": "one", "new_text": "1"}),
            ),
            (
                EDIT_FILE_NAME.to_owned(),
                json!({"name": "a.txt", "old_text": "two", "new_text": "2"}),
            ),
        ])
        .then_text("Done.");
    let mut chat = Chat::new(model);
    chat.with_file_store(store.clone());
    let _ = chat.ask("Number them").await.unwrap();
    let texts = results(&chat);
    assert_eq!(texts[1], "Edited `a.txt`: replaced 1 occurrence.");
    assert_eq!(texts[2], "Edited `a.txt`: replaced 1 occurrence.");
    assert_eq!(text_of(&store, "a.txt").await, "1 2");
}

#[tokio::test]
async fn editing_can_be_turned_off() {
    let store = MemoryFileStore::new();
    store.save("a.txt", b"alpha".to_vec()).await.unwrap();
    let model = model(&[read("a.txt"), write("a.txt", "beta")]).then_text("Again.");
    let mut chat = Chat::new(model.clone());
    chat.with_file_store(store.clone()).with_file_editing(false);
    let _ = chat.ask("Change it").await.unwrap();
    let offered = &model.requests()[0].tools;
    assert_eq!(offered, &["list_files", "read_file", "search_file"]);
    let refused = &results(&chat)[1];
    assert!(
        refused.starts_with("There is no tool `write_file`. Tools with similar names:"),
        "{refused}"
    );
    assert!(refused.contains("`read_file`"), "{refused}");
    assert_eq!(text_of(&store, "a.txt").await, "alpha");

    chat.with_file_editing(true);
    let _ = chat.ask("And now?").await.unwrap();
    let requests = model.requests();
    let offered = &requests.last().unwrap().tools;
    assert_eq!(
        offered,
        &[
            "list_files",
            "read_file",
            "search_file",
            WRITE_FILE_NAME,
            EDIT_FILE_NAME
        ]
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_folder_stores_links_and_hidden_files_are_out_of_the_models_reach() {
    let dir = std::env::temp_dir().join(format!("llm-tools-file-editing-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let root = dir.join("files");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(dir.join("secret.txt"), b"secret").unwrap();
    std::os::unix::fs::symlink(dir.join("secret.txt"), root.join("link.txt")).unwrap();
    std::fs::write(root.join(".env"), b"KEY=1").unwrap();

    let calls = [
        read("link.txt"),
        write("link.txt", "overwritten"),
        read(".env"),
        ("list_files", json!({})),
        write("../escape.txt", "x"),
    ];
    let mut chat = Chat::new(model(&calls));
    chat.with_file_store(FolderFileStore::new(&root));
    let outcome = chat.ask("Look around").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Done."));
    let texts = results(&chat);
    assert!(texts[0].contains("symbolic link"), "{}", texts[0]);
    assert!(texts[1].contains("symbolic link"), "{}", texts[1]);
    assert!(texts[2].contains("invalid file name"), "{}", texts[2]);
    assert_eq!(texts[3], "This chat has no files.");
    assert!(texts[4].contains("invalid file name"), "{}", texts[4]);
    assert_eq!(std::fs::read(dir.join("secret.txt")).unwrap(), b"secret");
    assert!(!dir.join("escape.txt").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

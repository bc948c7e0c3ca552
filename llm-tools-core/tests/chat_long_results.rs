//! Long results and the file tools: in a chat with a file store, a result over its spill limit
//! is kept whole as a file and the model gets its start; the model reads and searches it with
//! the chat's file tools; per-tool limits, `spill_to_file = false`, attachments, a store that
//! fails, and a tool of the user's that shadows a file tool.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

mod common;

use std::io;
use std::sync::Arc;

use llm_tools_core::chat::{
    Chat, EDIT_FILE_NAME, LIST_FILES_NAME, MAX_MATCHES, Outcome, READ_FILE_NAME, SEARCH_FILE_NAME,
    SPILL_PREVIEW, ToolOptions, WRITE_FILE_NAME,
};
use llm_tools_core::files::{FileStore, MemoryFileStore};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Attachment, BoxFuture, Message, Role, ToolOutput, tool};
use serde_json::json;

/// `n` numbered lines: `line 1 of the log`, `line 2 of the log`, …
fn log_lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i} of the log\n")).collect()
}

/// Reads the server log
#[tool]
async fn server_log() -> String {
    log_lines(1_000)
}

/// Reads the server log, which it pages itself
#[tool(spill_to_file = false)]
async fn paged_log() -> String {
    log_lines(1_000)
}

/// Reads the first lines of the log
#[tool(spill_to_file = 100)]
async fn log_head() -> String {
    log_lines(10)
}

/// Takes a screenshot and describes it
#[tool]
async fn screenshot() -> ToolOutput {
    ToolOutput::text(log_lines(1_000))
        .with_attachment(Attachment::bytes("image/png", vec![137, 80, 78, 71]))
}

fn done(outcome: Outcome) {
    common::answered(outcome);
}

/// The tool results of the chat, in order.
fn tool_results(chat: &Chat) -> Vec<&Message> {
    chat.messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect()
}

fn texts(chat: &Chat) -> Vec<String> {
    common::tool_result_texts(chat.messages())
}

const LOG_FILE: &str = "tool-results/server_log-call_1.txt";

#[tokio::test]
async fn a_long_result_is_kept_as_a_file_and_the_model_reads_and_searches_it() {
    let model = ScriptedProvider::new()
        .then_call("server_log", json!({}))
        .then_call(
            READ_FILE_NAME,
            json!({"name": LOG_FILE, "offset": 2_000, "length": 40}),
        )
        .then_call(
            SEARCH_FILE_NAME,
            json!({"name": LOG_FILE, "text": "LINE 777 "}),
        )
        .then_call(LIST_FILES_NAME, json!({}))
        .then_text("Line 777 is there.");
    let store = Arc::new(MemoryFileStore::new());
    let mut chat = Chat::new(model.clone());
    chat.with_shared_file_store(store.clone());
    chat.with_tools(ServerLog).unwrap();
    done(chat.ask("What does the log say?").await.unwrap());

    let full = log_lines(1_000);
    let total = full.chars().count();
    assert!(total > 10_000);
    let results = texts(&chat);
    let preview: String = full.chars().take(SPILL_PREVIEW).collect();
    assert_eq!(
        results[0],
        format!(
            "{preview}\n[… this result has {total} characters; the first {SPILL_PREVIEW} are \
             above. It is kept whole as the file `{LOG_FILE}`: read it with `read_file` (from \
             offset {SPILL_PREVIEW}) or search it with `search_file`.]"
        )
    );
    assert_eq!(store.load(LOG_FILE).await.unwrap(), full.as_bytes());
    let slice: String = full.chars().skip(2_000).take(40).collect();
    assert_eq!(
        results[1],
        format!("{slice}\n[characters 2000–2040 of {total}; read on from offset 2040]")
    );
    assert_eq!(results[2], "line 777: line 777 of the log");
    assert_eq!(results[3], LOG_FILE);

    // The file tools come after the chat's own tools in every request.
    let offered = &model.requests()[0].tools;
    assert_eq!(
        offered,
        &[
            "server_log",
            LIST_FILES_NAME,
            READ_FILE_NAME,
            SEARCH_FILE_NAME,
            WRITE_FILE_NAME,
            EDIT_FILE_NAME
        ]
    );
}

#[tokio::test]
async fn limits_per_chat_and_per_tool() {
    let model = ScriptedProvider::new()
        .then_calls([("paged_log", json!({})), ("log_head", json!({}))])
        .then_text("Read.");
    let mut chat = Chat::new(model);
    chat.with_file_store(MemoryFileStore::new());
    chat.with_tools((PagedLog, LogHead)).unwrap();
    done(chat.ask("Read the logs").await.unwrap());
    let results = texts(&chat);
    assert_eq!(
        results[0],
        log_lines(1_000),
        "spill_to_file = false sends it whole"
    );
    let head = log_lines(10);
    let start: String = head.chars().take(100).collect();
    assert!(
        results[1].starts_with(&format!(
            "{start}\n[… this result has {} characters; the first 100",
            head.chars().count()
        )),
        "{}",
        results[1]
    );

    // The chat's limit applies to tools without their own.
    let model = ScriptedProvider::new()
        .then_call("server_log", json!({}))
        .then_text("Read.");
    let mut chat = Chat::new(model);
    chat.with_file_store(MemoryFileStore::new());
    chat.with_tools(ServerLog).unwrap();
    chat.with_tool_options(ToolOptions::default().with_spill_after(20_000))
        .unwrap();
    done(chat.ask("Read the log").await.unwrap());
    assert_eq!(texts(&chat)[0], log_lines(1_000), "under the chat's limit");
}

#[tokio::test]
async fn without_a_store_results_go_whole_and_no_file_tool_is_offered() {
    let model = ScriptedProvider::new()
        .then_call("server_log", json!({}))
        .then_text("Read.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(ServerLog).unwrap();
    done(chat.ask("Read the log").await.unwrap());
    assert_eq!(texts(&chat)[0], log_lines(1_000));
    assert_eq!(model.requests()[0].tools, ["server_log"]);
}

#[tokio::test]
async fn attachments_stay_in_a_kept_result() {
    let model = ScriptedProvider::new()
        .then_call("screenshot", json!({}))
        .then_text("Seen.");
    let mut chat = Chat::new(model);
    chat.with_file_store(MemoryFileStore::new());
    chat.with_tools(Screenshot).unwrap();
    done(chat.ask("Look").await.unwrap());
    let result = tool_results(&chat)[0];
    assert!(result.text().contains("tool-results/screenshot-call_1.txt"));
    assert_eq!(result.content.len(), 2, "the text and the image");
}

/// A store that cannot keep anything.
struct BrokenStore;

impl FileStore for BrokenStore {
    fn save<'a>(&'a self, _: &'a str, _: Vec<u8>) -> BoxFuture<'a, io::Result<String>> {
        Box::pin(async { Err(io::Error::other("disk full")) })
    }

    fn load<'a>(&'a self, _: &'a str) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        Box::pin(async { Err(io::Error::other("disk gone")) })
    }

    fn list(&self) -> BoxFuture<'_, io::Result<Vec<String>>> {
        Box::pin(async { Err(io::Error::other("disk gone")) })
    }
}

#[tokio::test]
async fn a_result_the_store_cannot_keep_goes_whole() {
    let model = ScriptedProvider::new()
        .then_call("server_log", json!({}))
        .then_text("Read.");
    let mut chat = Chat::new(model);
    chat.with_file_store(BrokenStore);
    chat.with_tools(ServerLog).unwrap();
    done(chat.ask("Read the log").await.unwrap());
    assert_eq!(texts(&chat)[0], log_lines(1_000));
}

#[tokio::test]
async fn the_models_mistakes_with_files_are_told_to_it() {
    let model = ScriptedProvider::new()
        .then_calls([
            (READ_FILE_NAME, json!({"name": "nowhere.txt"})),
            (READ_FILE_NAME, json!({"name": "../etc/passwd"})),
            (READ_FILE_NAME, json!({"name": "notes.txt", "offset": 500})),
            (
                SEARCH_FILE_NAME,
                json!({"name": "notes.txt", "text": "absent"}),
            ),
            (SEARCH_FILE_NAME, json!({"name": "notes.txt", "text": ""})),
            (READ_FILE_NAME, json!({"file": "notes.txt"})),
            (
                SEARCH_FILE_NAME,
                json!({"name": "notes.txt", "text": "n".repeat(1_001)}),
            ),
        ])
        .then_text("Sorry.");
    let store = Arc::new(MemoryFileStore::new());
    store
        .save("notes.txt", b"short notes".to_vec())
        .await
        .unwrap();
    let mut chat = Chat::new(model);
    chat.with_shared_file_store(store);
    done(chat.ask("Read things").await.unwrap());
    let results = tool_results(&chat);
    let errors: Vec<bool> = results.iter().map(|m| m.is_error).collect();
    assert_eq!(errors, [true, true, true, false, true, true, true]);
    let texts: Vec<String> = results.iter().map(|m| m.text()).collect();
    assert_eq!(
        texts[0],
        "no file named \"nowhere.txt\"; `list_files` lists the files"
    );
    assert!(texts[1].starts_with("invalid file name \"../etc/passwd\""));
    assert_eq!(
        texts[2],
        "`notes.txt` has 11 characters; offset 500 is past its end"
    );
    assert_eq!(texts[3], "No line of `notes.txt` contains \"absent\".");
    assert!(texts[4].contains("`text` is empty"));
    assert!(texts[5].contains("name"), "{}", texts[5]);
    assert_eq!(
        texts[6],
        "`text` is longer than 1000 characters: search for a shorter part of it"
    );
}

#[tokio::test]
async fn a_search_shows_at_most_max_matches_lines() {
    let model = ScriptedProvider::new()
        .then_call("server_log", json!({}))
        .then_call(
            SEARCH_FILE_NAME,
            json!({"name": LOG_FILE, "text": "of the log"}),
        )
        .then_call(
            SEARCH_FILE_NAME,
            json!({"name": LOG_FILE, "text": "absent"}),
        )
        .then_text("Many lines.");
    let mut chat = Chat::new(model);
    chat.with_file_store(MemoryFileStore::new());
    chat.with_tools(ServerLog).unwrap();
    done(chat.ask("Search the log").await.unwrap());
    let results = texts(&chat);
    let lines: Vec<&str> = results[1].lines().collect();
    assert_eq!(lines.len(), MAX_MATCHES + 1);
    assert_eq!(lines[0], "line 1: line 1 of the log");
    assert_eq!(
        lines[MAX_MATCHES],
        format!(
            "[{} more lines match; search for longer text to narrow it]",
            1_000 - MAX_MATCHES
        )
    );
    assert_eq!(
        results[2],
        format!("No line of `{LOG_FILE}` contains \"absent\".")
    );
}

/// The user's own reader, which takes the place of the chat's
#[tool]
async fn read_file(name: String) -> String {
    format!("the user's reader read {name}")
}

#[tokio::test]
async fn a_tool_of_the_users_takes_the_place_of_a_file_tool() {
    let model = ScriptedProvider::new()
        .then_call(READ_FILE_NAME, json!({"name": "notes.txt"}))
        .then_text("Done.");
    let mut chat = Chat::new(model.clone());
    chat.with_file_store(MemoryFileStore::new());
    chat.with_tools(ReadFile).unwrap();
    done(chat.ask("Read").await.unwrap());
    assert_eq!(texts(&chat), ["the user's reader read notes.txt"]);
    assert_eq!(
        model.requests()[0].tools,
        [
            READ_FILE_NAME,
            LIST_FILES_NAME,
            SEARCH_FILE_NAME,
            WRITE_FILE_NAME,
            EDIT_FILE_NAME
        ]
    );
}

/// A server that gives a call the same id in a later round: the later call gets an id of its
/// own, its long result is kept under a name of its own, and the earlier one stays as its note
/// says.
#[tokio::test]
async fn a_call_id_given_again_keeps_each_long_result_apart() {
    use llm_tools_core::ToolCall;
    let again = || vec![ToolCall::new("call_1", "server_log", "{}")];
    let model = ScriptedProvider::new()
        .then_tool_calls(again())
        .then_tool_calls(again())
        .then_text("Read twice.");
    let mut chat = Chat::new(model);
    let files = Arc::new(MemoryFileStore::new());
    chat.with_shared_file_store(Arc::clone(&files) as Arc<dyn FileStore>);
    chat.with_tools(ServerLog).unwrap();
    done(chat.ask("Read the log twice").await.unwrap());
    let results = texts(&chat);
    assert!(
        results[0].contains("`tool-results/server_log-call_1.txt`"),
        "{}",
        results[0]
    );
    assert!(
        results[1].contains("`tool-results/server_log-call_3_0.txt`"),
        "{}",
        results[1]
    );
    for name in [
        "tool-results/server_log-call_1.txt",
        "tool-results/server_log-call_3_0.txt",
    ] {
        assert_eq!(
            files.load(name).await.unwrap(),
            log_lines(1_000).into_bytes()
        );
    }
}

/// A memory store whose listings, once armed, wait until two have been asked for: the two
/// calls of a round both list the store before either saves, as calls that wait on a slow
/// store do. (A real store's timing cannot be arranged; this one holds a `MemoryFileStore`.)
struct ListsTogether {
    files: MemoryFileStore,
    armed: std::sync::atomic::AtomicBool,
    both_listed: tokio::sync::Barrier,
}

impl FileStore for ListsTogether {
    fn save<'a>(&'a self, name: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, io::Result<String>> {
        self.files.save(name, bytes)
    }

    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        self.files.load(name)
    }

    fn list(&self) -> BoxFuture<'_, io::Result<Vec<String>>> {
        Box::pin(async move {
            let names = self.files.list().await;
            if self.armed.load(std::sync::atomic::Ordering::SeqCst) {
                self.both_listed.wait().await;
            }
            names
        })
    }
}

/// Two calls of one round whose kept results would take one name: `call_1` given again (its
/// first result already kept) and `call_1-2`, which the old `-2` suffix also produced. Both
/// list the store before either saves; each result still gets its own file.
#[tokio::test]
async fn calls_of_one_round_never_share_a_kept_results_file() {
    use llm_tools_core::ToolCall;
    let part = |id: &str, n: u32| ToolCall::new(id, "log_part", format!(r#"{{"part":{n}}}"#));
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![part("call_1", 1)])
        .then_tool_calls(vec![part("call_1", 2), part("call_1-2", 3)])
        .then_text("Read.");
    let store = Arc::new(ListsTogether {
        files: MemoryFileStore::new(),
        armed: std::sync::atomic::AtomicBool::new(false),
        both_listed: tokio::sync::Barrier::new(2),
    });
    let mut chat = Chat::new(model);
    chat.with_shared_file_store(Arc::clone(&store) as Arc<dyn FileStore>);
    chat.with_tools(LogPart).unwrap();
    chat.add_message(Message::user("Read the log")).unwrap();
    let first = chat.step().await.unwrap();
    assert!(
        matches!(first, llm_tools_core::chat::Step::Continue),
        "{first:?}"
    );
    assert_eq!(texts(&chat).len(), 1);
    store.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    // Bounded: a call whose listing waited for a second one that never came would hang.
    let second = tokio::time::timeout(std::time::Duration::from_secs(60), chat.complete()).await;
    done(second.expect("both calls listed the store").unwrap());
    let results = texts(&chat);
    assert_eq!(results.len(), 3, "{results:?}");
    let name_in = |note: &str| -> String {
        let start = note.find("kept whole as the file `").unwrap() + 24;
        let end = start + note[start..].find('`').unwrap();
        note[start..end].to_owned()
    };
    let names: Vec<String> = results.iter().map(|r| name_in(r)).collect();
    assert_ne!(names[1], names[2], "{names:?}");
    for (i, name) in names.iter().enumerate() {
        let kept = String::from_utf8(store.load(name).await.unwrap()).unwrap();
        assert!(
            kept == part_lines(i as u32 + 1),
            "{name} holds another part"
        );
    }
}

/// 1,000 lines of part `part` of the log.
fn part_lines(part: u32) -> String {
    (1..=1_000)
        .map(|i| format!("line {i} of part {part}\n"))
        .collect()
}

/// Reads one part of the server log
///
/// # Arguments
/// * `part` - Which part
#[tool]
async fn log_part(part: u32) -> String {
    part_lines(part)
}

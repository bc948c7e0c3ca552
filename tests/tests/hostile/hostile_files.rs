//! Hostile calls of the file tools: a real chat, a scripted model making the calls, and the
//! crate's stores (in memory, a folder, a SQLite file). Each case ends in an error result the
//! model can act on, naming the limit or the rule and its value; the store stays within its caps
//! (checked by sizes and counts, read back from the store), the files already there are
//! untouched, the history is valid and the next `ask` works.
//!
//! | case | the model's calls | expected |
//! |---|---|---|
//! | `edit_file_past_the_file_size_cap_is_refused_before_it_is_built` | `replace_all` of one byte of a 1 MiB file by 200, then by 2,000 | `max_file_size` errors, nothing handed to the store |
//! | `write_file_past_the_file_size_cap_is_refused_before_it_is_saved` | 1 MiB + 1 byte of content | `max_file_size` error |
//! | `doubling_edits_stop_at_the_total_bytes_cap` | `write_file "a"`, then edits doubling it, file after file | `max_total_bytes` error; a smaller replacement frees room |
//! | `tiny_files_stop_at_the_files_cap` | one tiny file after another | `max_files` error; replacing a file at the cap works |
//! | `concurrent_writers_never_pass_the_total_bytes_cap` | eight chats writing at once | exactly as many files as fit |
//! | `windows_drive_device_and_stream_names_are_refused` | `C:x`, `CON`, `a.txt:stream`, `name.`, … | invalid-name errors on every platform |
//! | `a_long_name_past_the_size_cap_is_shown_cut` | `write_file` of 11 bytes under a 2 MB name, 10-byte cap | `max_file_size` error under 1,000 bytes |
//! | `a_long_listing_is_cut_and_goes_on_after_its_last_name` | `list_files` of 300 names of 100 bytes, then with `after` | at most `MAX_LISTED` bytes a listing, every name once |
//! | `a_result_past_the_file_size_cap_goes_whole_without_a_copy` | a tool result larger than the store keeps | the result goes whole, nothing handed to the store |
//! | `a_stored_file_past_the_size_cap_is_refused_before_it_is_loaded` (SQLite) | reading a 2 MiB row under a 1 MiB cap | `max_file_size` error |
//! | folder: `a_fifo_is_refused_without_waiting_on_it` | `read_file` of a FIFO | an error at once, no thread blocked |
//! | folder: `a_socket_is_refused` | `read_file` of a socket | an error, the turn goes on |
//! | folder: `a_hard_link_to_a_file_outside_is_neither_read_nor_written` | read and replace a hard link | errors, the outside file untouched |
//! | folder: `names_the_file_system_rejects_are_told_to_the_model` | a 300-byte part | an error, the turn goes on |
//! | `reading_and_searching_a_file_that_is_not_utf8_holds_no_copy_of_it` | `read_file` and `search_file` of 16 MiB that are not UTF-8 | the peak memory grows by the store's copy of the file, not three more (Linux) |
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use llm_tools_core::chat::{
    Chat, EDIT_FILE_NAME, LIST_FILES_NAME, MAX_LISTED, READ_FILE_NAME, SEARCH_FILE_NAME,
    ToolOptions, WRITE_FILE_NAME,
};
use llm_tools_core::files::{FileStore, FolderFileStore, MemoryFileStore, checked_name};
use llm_tools_core::store::SqliteStore;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{BoxFuture, Message, Role, tool};
use serde_json::{Value, json};

const MIB: u64 = 1024 * 1024;

/// The crate's stores.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Memory,
    Folder,
    Sqlite,
}

/// A store's caps, for [`open`].
#[derive(Clone, Copy)]
struct Caps {
    file: u64,
    total: u64,
    files: u64,
}

/// The SQLite file of a store of kind `Sqlite` under `dir`.
fn database(dir: &Path) -> std::path::PathBuf {
    dir.join("chats.db")
}

/// The chat id a SQLite store keeps the files under.
const CHAT: &str = "hostile";

/// A store of `kind` under `dir` with `caps`. Opened again on the same `dir`, it is another
/// handle on the same files (a new connection for SQLite, a new store for a folder).
async fn open(kind: Kind, dir: &Path, caps: Caps) -> Arc<dyn FileStore> {
    match kind {
        Kind::Memory => Arc::new(
            MemoryFileStore::new()
                .with_max_file_size(caps.file)
                .with_max_total_bytes(caps.total)
                .with_max_files(caps.files),
        ),
        Kind::Folder => Arc::new(
            FolderFileStore::new(dir.join("files"))
                .with_max_file_size(caps.file)
                .with_max_total_bytes(caps.total)
                .with_max_files(caps.files),
        ),
        Kind::Sqlite => Arc::new(
            SqliteStore::open(database(dir))
                .await
                .unwrap()
                .file_store(CHAT)
                .with_max_file_size(caps.file)
                .with_max_total_bytes(caps.total)
                .with_max_files(caps.files),
        ),
    }
}

/// The bytes of every file of `store` together, and how many files it has, read back through
/// the store.
async fn usage(store: &dyn FileStore) -> (u64, u64) {
    let names = store.list().await.unwrap();
    let mut bytes = 0;
    for name in &names {
        bytes += store.load(name).await.unwrap().len() as u64;
    }
    (bytes, names.len() as u64)
}

/// A store that hands everything to another and remembers the largest file it was asked to
/// save: what the file tools built.
struct Watched {
    inner: Arc<dyn FileStore>,
    largest_save: AtomicU64,
    /// Whether `list` gives the names in reverse order.
    reversed: bool,
}

impl Watched {
    fn new(inner: Arc<dyn FileStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            largest_save: AtomicU64::new(0),
            reversed: false,
        })
    }

    /// One that lists the names in reverse order: a store whose order is not byte order (a
    /// database's collation puts `B.txt` between `a.txt` and `c.txt`).
    fn reversed(inner: Arc<dyn FileStore>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            largest_save: AtomicU64::new(0),
            reversed: true,
        })
    }

    fn largest_save(&self) -> u64 {
        self.largest_save.load(Ordering::SeqCst)
    }
}

impl FileStore for Watched {
    fn save<'a>(&'a self, name: &'a str, bytes: Vec<u8>) -> BoxFuture<'a, std::io::Result<String>> {
        self.largest_save
            .fetch_max(bytes.len() as u64, Ordering::SeqCst);
        self.inner.save(name, bytes)
    }

    fn load<'a>(&'a self, name: &'a str) -> BoxFuture<'a, std::io::Result<Vec<u8>>> {
        self.inner.load(name)
    }

    fn list(&self) -> BoxFuture<'_, std::io::Result<Vec<String>>> {
        Box::pin(async move {
            let mut names = self.inner.list().await?;
            if self.reversed {
                names.reverse();
            }
            Ok(names)
        })
    }

    fn max_file_size(&self) -> u64 {
        self.inner.max_file_size()
    }
}

fn read(name: &str) -> (&'static str, Value) {
    (READ_FILE_NAME, json!({"name": name}))
}

fn write(name: &str, content: &str) -> (&'static str, Value) {
    (WRITE_FILE_NAME, json!({"name": name, "content": content}))
}

fn edit_all(name: &str, old: &str, new: &str) -> (&'static str, Value) {
    (
        EDIT_FILE_NAME,
        json!({"name": name, "old_text": old, "new_text": new, "replace_all": true}),
    )
}

/// A model that makes each call in turn, one per answer, says "Done.", and answers the next
/// question with "Still here.".
fn model(calls: &[(&str, Value)]) -> ScriptedProvider {
    calls
        .iter()
        .fold(ScriptedProvider::new(), |m, (name, args)| {
            m.then_call(*name, args.clone())
        })
        .then_text("Done.")
        .then_text("Still here.")
}

/// A chat on `store` whose model makes `calls`, after its turn; the turn must end with the
/// model's answer (no error stops it).
async fn turn(store: Arc<dyn FileStore>, calls: &[(&str, Value)]) -> Chat {
    let mut chat = Chat::new(model(calls));
    chat.with_shared_file_store(store);
    // Each case reads what every refused call says: no retry budget cuts the round short.
    chat.with_tool_options(ToolOptions::default().with_max_retries(None))
        .expect("options");
    let outcome = chat
        .ask("Work on the files")
        .await
        .expect("the turn ends with the model's answer");
    assert_eq!(outcome.text().as_deref(), Some("Done."));
    chat
}

/// The chat's tool results, in order.
fn results(chat: &Chat) -> Vec<Message> {
    chat.messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .cloned()
        .collect()
}

/// The text of result `index`, which must be an error.
fn error_text(results: &[Message], index: usize) -> String {
    let result = &results[index];
    assert!(
        result.is_error,
        "result {index} is an error: {}",
        result.text()
    );
    result.text()
}

/// The text of result `index`, which must not be an error.
fn ok_text(results: &[Message], index: usize) -> String {
    let result = &results[index];
    assert!(
        !result.is_error,
        "result {index} is no error: {}",
        result.text()
    );
    result.text()
}

/// The next ask on the same chat gets the model's answer, and the history is a valid
/// conversation: it starts with the user, and every call has exactly one result.
async fn goes_on(chat: &mut Chat) {
    let outcome = chat.ask("Are you there?").await.expect("the chat goes on");
    assert_eq!(outcome.text().as_deref(), Some("Still here."));
    let messages = chat.messages();
    assert_eq!(messages[0].role, Role::User);
    let calls: Vec<&str> = messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
        .collect();
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    assert_eq!(calls, results, "every call has one result, in order");
}

/// The process's peak resident memory so far, in KiB (`VmHWM`).
#[cfg(target_os = "linux")]
pub(super) fn peak_memory_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Reading and searching a file that is not UTF-8 holds no copy of it past the one the store
/// hands out: before, its text (each byte a three-byte U+FFFD) and a lowercase copy of it for
/// the search were four times its size besides. Measured by the peak resident memory of a
/// process of its own.
#[cfg(target_os = "linux")]
#[test]
fn reading_and_searching_a_file_that_is_not_utf8_holds_no_copy_of_it() {
    llm_tools_tests::run_alone(
        "hostile_files::memory_of_reading_a_file_that_is_not_utf8",
        1,
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
#[ignore = "run alone by reading_and_searching_a_file_that_is_not_utf8_holds_no_copy_of_it"]
async fn memory_of_reading_a_file_that_is_not_utf8() {
    const SIZE: usize = 16 << 20;
    let store = MemoryFileStore::new()
        .with_max_file_size(64 * MIB)
        .with_max_total_bytes(64 * MIB);
    let mut content = b"A Needle\n".to_vec();
    content.resize(SIZE, 0xFF);
    store.save("data.bin", content).await.unwrap();
    let before = peak_memory_kib();
    let search = |text: &str| (SEARCH_FILE_NAME, json!({"name": "data.bin", "text": text}));
    let chat = turn(
        Arc::new(store),
        &[read("data.bin"), search("needle"), search("absent")],
    )
    .await;
    let grown = peak_memory_kib() - before;
    let results = results(&chat);
    let read = ok_text(&results, 0);
    assert!(
        read.starts_with("A Needle\n\u{FFFD}\u{FFFD}"),
        "{}",
        &read[..40]
    );
    assert!(
        read.ends_with(&format!(
            "[characters 0–10000 of {SIZE}; read on from offset 10000]"
        )),
        "{}",
        &read[read.len() - 80..]
    );
    assert_eq!(ok_text(&results, 1), "line 1: A Needle");
    assert!(ok_text(&results, 2).starts_with("No line of `data.bin` contains"));
    let size_kib = (SIZE / 1024) as u64;
    assert!(
        grown < size_kib * 2,
        "the peak grew by {grown} KiB reading and searching {size_kib} KiB"
    );
}

async fn edit_file_past_the_file_size_cap_is_refused_before_it_is_built(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: MIB,
        total: 4 * MIB,
        files: 10,
    };
    let inner = open(kind, dir.path(), caps).await;
    let seed = vec![b'a'; MIB as usize];
    inner.save("big.txt", seed.clone()).await.unwrap();
    let store = Watched::new(inner.clone());
    // 200 MiB, then 2,000 MiB (which aborted the process on allocation).
    let (long, longer) = ("b".repeat(200), "c".repeat(2_000));
    let mut chat = turn(
        store.clone(),
        &[
            read("big.txt"),
            edit_all("big.txt", "a", &long),
            edit_all("big.txt", "a", &longer),
        ],
    )
    .await;
    let results = results(&chat);
    ok_text(&results, 0);
    for (index, would_be) in [(1, 200 * MIB), (2, 2_000 * MIB)] {
        let refused = error_text(&results, index);
        assert!(
            refused.contains(&format!("\"big.txt\": {would_be} bytes")),
            "{refused}"
        );
        assert!(
            refused.contains("max_file_size of 1048576 bytes"),
            "{refused}"
        );
    }
    assert_eq!(store.largest_save(), 0, "no edited text reached the store");
    assert_eq!(inner.load("big.txt").await.unwrap(), seed);
    assert_eq!(usage(&*inner).await, (MIB, 1));
    goes_on(&mut chat).await;
}

async fn write_file_past_the_file_size_cap_is_refused_before_it_is_saved(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: MIB,
        total: 4 * MIB,
        files: 10,
    };
    let inner = open(kind, dir.path(), caps).await;
    inner.save("kept.txt", b"kept".to_vec()).await.unwrap();
    let store = Watched::new(inner.clone());
    let content = "x".repeat(MIB as usize + 1);
    let mut chat = turn(store.clone(), &[write("huge.txt", &content)]).await;
    let refused = error_text(&results(&chat), 0);
    assert!(
        refused.contains("1048577 bytes, more than this store's max_file_size of 1048576 bytes"),
        "{refused}"
    );
    assert_eq!(
        store.largest_save(),
        0,
        "the content never reached the store"
    );
    assert_eq!(inner.list().await.unwrap(), ["kept.txt"]);
    assert_eq!(usage(&*inner).await, (4, 1));
    goes_on(&mut chat).await;
}

async fn doubling_edits_stop_at_the_total_bytes_cap(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: MIB,
        total: 2 * MIB,
        files: 100,
    };
    let store = open(kind, dir.path(), caps).await;
    let kilo = "a".repeat(1024);
    let mut calls = Vec::new();
    for name in ["f0.txt", "f1.txt", "f2.txt"] {
        calls.push(write(name, "a"));
        calls.push(edit_all(name, "a", &kilo)); // 1 KiB
        calls.push(edit_all(name, "a", &kilo)); // 1 MiB
    }
    // A smaller replacement frees room for the file refused before.
    calls.extend([
        read("f0.txt"),
        write("f0.txt", "small"),
        write("f2.txt", "a"),
    ]);
    let mut chat = turn(store.clone(), &calls).await;
    let results = results(&chat);
    for index in 0..6 {
        ok_text(&results, index);
    }
    let refused = error_text(&results, 6);
    assert!(
        refused.contains("bring this store's files to 2097153 bytes"),
        "{refused}"
    );
    assert!(
        refused.contains("max_total_bytes of 2097152 bytes"),
        "{refused}"
    );
    for index in [7, 8] {
        assert!(error_text(&results, index).contains("no file named \"f2.txt\""));
    }
    for index in 9..12 {
        ok_text(&results, index);
    }
    assert_eq!(usage(&*store).await, (MIB + 5 + 1, 3));
    assert_eq!(
        store.load("f1.txt").await.unwrap(),
        vec![b'a'; MIB as usize]
    );
    goes_on(&mut chat).await;
}

async fn tiny_files_stop_at_the_files_cap(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: MIB,
        total: 4 * MIB,
        files: 5,
    };
    let store = open(kind, dir.path(), caps).await;
    let mut calls: Vec<_> = (0..6).map(|n| write(&format!("f{n}.txt"), "x")).collect();
    calls.extend([read("f0.txt"), write("f0.txt", "yy")]);
    let mut chat = turn(store.clone(), &calls).await;
    let results = results(&chat);
    for index in 0..5 {
        ok_text(&results, index);
    }
    let refused = error_text(&results, 5);
    assert!(
        refused.contains("bring this store to 6 files, more than its max_files of 5"),
        "{refused}"
    );
    ok_text(&results, 6);
    assert_eq!(ok_text(&results, 7), "Replaced `f0.txt` (2 characters).");
    assert_eq!(usage(&*store).await, (6, 5));
    goes_on(&mut chat).await;
}

async fn concurrent_writers_never_pass_the_total_bytes_cap(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: MIB,
        total: MIB,
        files: 100,
    };
    let size = 200 * 1024;
    let content = "z".repeat(size);
    let shared = open(kind, dir.path(), caps).await;
    let mut chats = Vec::new();
    for n in 0..8 {
        // Memory: one store; folder: a store per chat on one folder; SQLite: a connection
        // per chat on one database file.
        let store = match kind {
            Kind::Memory => shared.clone(),
            _ => open(kind, dir.path(), caps).await,
        };
        let mut chat = Chat::new(model(&[write(&format!("c{n}.txt"), &content)]));
        chat.with_shared_file_store(store);
        chats.push(chat);
    }
    let outcomes = futures::future::join_all(chats.iter_mut().map(|c| c.ask("Write"))).await;
    let mut written = 0;
    for (chat, outcome) in chats.iter_mut().zip(outcomes) {
        assert_eq!(outcome.unwrap().text().as_deref(), Some("Done."));
        let result = &results(chat)[0];
        if result.is_error {
            assert!(
                result.text().contains("max_total_bytes of 1048576 bytes"),
                "{}",
                result.text()
            );
        } else {
            written += 1;
        }
        goes_on(chat).await;
    }
    assert_eq!(written, 5, "five files of 200 KiB fit in 1 MiB, six do not");
    assert_eq!(usage(&*shared).await, (5 * size as u64, 5));
}

/// Names Windows would read as a drive, a device or a stream, or would change.
const WINDOWS_NAMES: &[&str] = &[
    "C:x",
    "C:/Windows/win.ini",
    "c:",
    "CON",
    "con",
    "Con.txt",
    "NUL",
    "nul.tar.gz",
    "COM1",
    "com9.log",
    "LPT1",
    "lpt3.txt",
    "AUX",
    "aux.md",
    "PRN",
    "prn.csv",
    "reports/CON/q3.md",
    "reports/nul.txt",
    "a.txt:stream",
    "a.txt::$DATA",
    "name.",
    "name ",
    "folder./a.txt",
    "folder /a.txt",
];

async fn windows_drive_device_and_stream_names_are_refused(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: MIB,
        total: MIB,
        files: 100,
    };
    let store = open(kind, dir.path(), caps).await;
    store.save("kept.txt", b"kept".to_vec()).await.unwrap();
    let calls: Vec<_> = WINDOWS_NAMES.iter().map(|n| write(n, "x")).collect();
    let mut chat = turn(store.clone(), &calls).await;
    let results = results(&chat);
    for (index, name) in WINDOWS_NAMES.iter().enumerate() {
        let refused = error_text(&results, index);
        assert!(
            refused.starts_with(&format!("invalid file name {name:?}")),
            "{refused}"
        );
    }
    assert_eq!(store.list().await.unwrap(), ["kept.txt"]);
    if matches!(kind, Kind::Folder) {
        let on_disk: Vec<_> = std::fs::read_dir(dir.path().join("files"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(on_disk, ["kept.txt"]);
    }
    goes_on(&mut chat).await;
}

async fn a_long_name_past_the_size_cap_is_shown_cut(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: 10,
        total: MIB,
        files: 10,
    };
    let store = open(kind, dir.path(), caps).await;
    // A soft hyphen is 2 bytes, and 6 as `{:?}` shows it.
    let name = "\u{ad}".repeat(1_000_000);
    let mut chat = turn(store.clone(), &[write(&name, "eleven byte")]).await;
    let refused = error_text(&results(&chat), 0);
    assert!(
        refused.contains("11 bytes, more than this store's max_file_size of 10 bytes"),
        "{refused}"
    );
    assert!(
        refused.len() < 1_000,
        "the name is shown cut: {} bytes",
        refused.len()
    );
    assert_eq!(usage(&*store).await, (0, 0));
    goes_on(&mut chat).await;
}

async fn a_long_listing_is_cut_and_goes_on_after_its_last_name(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: MIB,
        total: MIB,
        files: 1_000,
    };
    // Listed in another order than byte order, as a database's collation may list them.
    let store: Arc<dyn FileStore> = Watched::reversed(open(kind, dir.path(), caps).await);
    // 300 names of 100 bytes: 30 KB of names, three listings' worth.
    let mut names: Vec<String> = (0..300)
        .map(|n| format!("{n:03}{}", "n".repeat(97)))
        .collect();
    names.sort();
    for name in &names {
        store.save(name, b"x".to_vec()).await.unwrap();
    }
    let list = |after: Option<&str>| match after {
        Some(after) => (LIST_FILES_NAME, json!({"after": after})),
        None => (LIST_FILES_NAME, json!({})),
    };
    let mut listed: Vec<String> = Vec::new();
    let mut after: Option<String> = None;
    let mut listings = 0;
    loop {
        let mut chat = turn(store.clone(), &[list(after.as_deref())]).await;
        let text = ok_text(&results(&chat), 0);
        listings += 1;
        let (page, note) = match text.split_once("\n… and ") {
            Some((page, note)) => (page, Some(note.to_owned())),
            None => (text.as_str(), None),
        };
        assert!(
            page.len() <= MAX_LISTED,
            "a listing holds at most {MAX_LISTED} bytes of names: {}",
            page.len()
        );
        listed.extend(page.lines().map(str::to_owned));
        goes_on(&mut chat).await;
        let Some(note) = note else { break };
        let last = listed.last().unwrap().clone();
        assert!(
            note.contains("300 files in all") && note.contains(&format!("\"{last}\"")),
            "the note says how to go on: {note}"
        );
        after = Some(last);
        assert!(listings < 10, "the listing ends");
    }
    assert!(
        listed == names,
        "every name once, in order: {} listed of {}",
        listed.len(),
        names.len()
    );
    assert!(listings >= 3, "{listings} listings");
    // After the last name, nothing more.
    let chat = turn(store.clone(), &[list(Some(&names[299]))]).await;
    assert_eq!(
        ok_text(&results(&chat), 0),
        "No files after that name; this chat has 300 in all."
    );
}

/// Prints `lines` numbered lines
#[tool]
async fn print_lines(lines: usize) -> String {
    (0..lines).map(|n| format!("line {n:07}\n")).collect()
}

async fn a_result_past_the_file_size_cap_goes_whole_without_a_copy(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: 64 * 1024,
        total: MIB,
        files: 100,
    };
    let inner = open(kind, dir.path(), caps).await;
    let store = Watched::new(inner.clone());
    // 13 bytes a line: 100,000 lines are 1.3 MB, past the 64 KiB cap.
    let mut chat = Chat::new(model(&[("print_lines", json!({"lines": 100_000}))]));
    chat.with_shared_file_store(store.clone())
        .with_tools(PrintLines)
        .unwrap()
        .with_tool_options(ToolOptions::default().with_spill_after(1_000))
        .unwrap();
    let outcome = chat.ask("Print").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Done."));
    let result = ok_text(&results(&chat), 0);
    assert_eq!(result.len(), 1_300_000, "the result went whole");
    assert_eq!(store.largest_save(), 0, "no copy of it reached the store");
    assert_eq!(usage(&*inner).await, (0, 0));
    goes_on(&mut chat).await;
}

/// The model cannot write or edit where the chat keeps its own files: a file of its own named
/// `tool-results` (which on a folder store stands where the folder must be) is refused, and a
/// long result after it is still kept as a file, not sent whole.
async fn the_chats_own_folders_are_not_the_models_to_write(kind: Kind) {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: MIB,
        total: 8 * MIB,
        files: 100,
    };
    let store = open(kind, dir.path(), caps).await;
    let mut chat = Chat::new(model(&[
        (
            "write_file",
            json!({"name": "tool-results", "content": "x"}),
        ),
        (
            "write_file",
            json!({"name": "Compacted/note.txt", "content": "x"}),
        ),
        ("print_lines", json!({"lines": 1_000})),
        (
            "edit_file",
            json!({"name": "tool-results/print_lines-call_3.txt", "old_text": "line", "new_text": "LINE"}),
        ),
    ]));
    chat.with_shared_file_store(store.clone())
        .with_tools(PrintLines)
        .unwrap()
        .with_tool_options(
            ToolOptions::default()
                .with_spill_after(1_000)
                .with_max_retries(None),
        )
        .unwrap();
    let outcome = chat.ask("Print").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Done."));
    let results = results(&chat);
    for index in [0, 1, 3] {
        let refused = error_text(&results, index);
        assert!(
            refused.contains("not written; choose another name"),
            "{refused}"
        );
    }
    let kept = ok_text(&results, 2);
    assert!(
        kept.len() < 4_000 && kept.contains("kept whole as the file `tool-results/"),
        "{}",
        &kept[kept.len().saturating_sub(300)..]
    );
    let names = store.list().await.unwrap();
    assert_eq!(
        names,
        ["tool-results/print_lines-call_3.txt"],
        "nothing of the model's"
    );
    goes_on(&mut chat).await;
}

/// One test per store for each case.
macro_rules! every_store {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case(super::Kind::Memory).await;
            })*
        }
        mod folder {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case(super::Kind::Folder).await;
            })*
        }
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::$case(super::Kind::Sqlite).await;
            })*
        }
    };
}

every_store!(
    edit_file_past_the_file_size_cap_is_refused_before_it_is_built,
    write_file_past_the_file_size_cap_is_refused_before_it_is_saved,
    doubling_edits_stop_at_the_total_bytes_cap,
    tiny_files_stop_at_the_files_cap,
    concurrent_writers_never_pass_the_total_bytes_cap,
    windows_drive_device_and_stream_names_are_refused,
    a_result_past_the_file_size_cap_goes_whole_without_a_copy,
    a_long_name_past_the_size_cap_is_shown_cut,
    a_long_listing_is_cut_and_goes_on_after_its_last_name,
    the_chats_own_folders_are_not_the_models_to_write,
);

#[test]
fn the_name_validator_refuses_windows_drive_device_and_stream_names() {
    for name in WINDOWS_NAMES {
        let e = checked_name(name).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{name:?}");
    }
    for name in [
        "CONFIG.txt",
        "console.md",
        "com10.txt",
        "lpt.txt",
        "nullable.rs",
        "auxiliary/notes.md",
        "a.b.c",
        "reports/q3.md",
    ] {
        assert_eq!(checked_name(name).unwrap(), name);
    }
}

#[tokio::test]
async fn a_stored_file_past_the_size_cap_is_refused_before_it_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let caps = Caps {
        file: MIB,
        total: 4 * MIB,
        files: 10,
    };
    let store = open(Kind::Sqlite, dir.path(), caps).await;
    store.save("kept.txt", b"kept".to_vec()).await.unwrap();
    // Another program put a 2 MiB file in the chat's table.
    let db = rusqlite::Connection::open(database(dir.path())).unwrap();
    db.execute(
        "INSERT INTO llm_tools_files (chat_id, name, content) VALUES (?1, 'huge.bin', zeroblob(2097152))",
        [CHAT],
    )
    .unwrap();
    let mut chat = turn(
        store.clone(),
        &[read("huge.bin"), write("huge.bin", "replaced")],
    )
    .await;
    let results = results(&chat);
    for index in [0, 1] {
        let refused = error_text(&results, index);
        assert!(
            refused
                .contains("2097152 bytes, more than this store's max_file_size of 1048576 bytes"),
            "{refused}"
        );
    }
    let stored: i64 = db
        .query_row(
            "SELECT length(content) FROM llm_tools_files WHERE name = 'huge.bin'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(stored, 2 * MIB as i64, "the file is untouched");
    assert_eq!(store.load("kept.txt").await.unwrap(), b"kept");
    goes_on(&mut chat).await;
}

/// The folder store's own edges: special files, hard links, names the file system refuses.
#[cfg(unix)]
mod folder_edges {
    use std::os::unix::fs::FileTypeExt as _;
    use std::time::Duration;

    use super::*;

    fn folder(dir: &Path) -> Arc<dyn FileStore> {
        std::fs::create_dir_all(dir.join("files")).unwrap();
        Arc::new(FolderFileStore::new(dir.join("files")))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fifo_is_refused_without_waiting_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = folder(dir.path());
        let fifo = dir.path().join("files/pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        store.save("kept.txt", b"kept".to_vec()).await.unwrap();
        let mut chat = Chat::new(model(&[read("pipe"), write("pipe", "x")]));
        chat.with_shared_file_store(store.clone());
        // A guard only: a read that waits for a writer would hold the turn (and a blocking
        // thread) forever; past it the test opens the writing end to let the read go, and fails.
        let ask = tokio::time::timeout(Duration::from_secs(30), chat.ask("Read the pipe")).await;
        let Ok(outcome) = ask else {
            drop(std::fs::OpenOptions::new().write(true).open(&fifo));
            panic!("read_file waited on a FIFO");
        };
        assert_eq!(outcome.unwrap().text().as_deref(), Some("Done."));
        let results = results(&chat);
        for index in [0, 1] {
            let refused = error_text(&results, index);
            assert!(refused.contains("\"pipe\" is a FIFO"), "{refused}");
            assert!(refused.contains("not a regular file"), "{refused}");
        }
        assert_eq!(store.list().await.unwrap(), ["kept.txt"]);
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        goes_on(&mut chat).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_socket_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = folder(dir.path());
        let _listener =
            std::os::unix::net::UnixListener::bind(dir.path().join("files/sock")).unwrap();
        let mut chat = turn(store.clone(), &[read("sock"), write("sock", "x")]).await;
        let results = results(&chat);
        for index in [0, 1] {
            let refused = error_text(&results, index);
            assert!(refused.contains("\"sock\" is a socket"), "{refused}");
        }
        assert!(store.list().await.unwrap().is_empty());
        goes_on(&mut chat).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_hard_link_to_a_file_outside_is_neither_read_nor_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = folder(dir.path());
        let outside = dir.path().join("secret.txt");
        std::fs::write(&outside, b"secret").unwrap();
        std::fs::hard_link(&outside, dir.path().join("files/linked.txt")).unwrap();
        let mut chat = turn(
            store.clone(),
            &[
                read("linked.txt"),
                write("linked.txt", "overwritten"),
                edit_all("linked.txt", "secret", "overwritten"),
            ],
        )
        .await;
        let results = results(&chat);
        for index in [0, 1, 2] {
            let refused = error_text(&results, index);
            assert!(
                refused.contains("\"linked.txt\" has 2 hard links"),
                "{refused}"
            );
            assert!(
                !refused.contains("secret"),
                "nothing of the file shown: {refused}"
            );
        }
        assert_eq!(std::fs::read(&outside).unwrap(), b"secret");
        assert!(store.list().await.unwrap().is_empty());
        goes_on(&mut chat).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn names_the_file_system_rejects_are_told_to_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let store = folder(dir.path());
        let too_long = format!("{}.txt", "a".repeat(300));
        let longest = format!("{}.txt", "b".repeat(251));
        let mut chat = turn(
            store.clone(),
            &[
                write(&too_long, "x"),
                read(&too_long),
                write(&format!("dir/{too_long}"), "x"),
                write(&longest, "x"),
            ],
        )
        .await;
        let results = results(&chat);
        for index in [0, 1, 2] {
            let refused = error_text(&results, index);
            assert!(
                refused.contains("304 bytes; a part of a name has at most 255"),
                "{refused}"
            );
        }
        ok_text(&results, 3);
        assert_eq!(store.list().await.unwrap(), [longest]);
        goes_on(&mut chat).await;
    }
}

//! The file tools a chat with a file store offers the model: [`LIST_FILES_NAME`],
//! [`READ_FILE_NAME`] and [`SEARCH_FILE_NAME`] over the files its tools saved and the long
//! results it kept (see [`crate::files`]), and [`WRITE_FILE_NAME`] and [`EDIT_FILE_NAME`] to
//! change them. A tool of the chat's own with one of these names takes its place.
//!
//! The model changes only what it has seen: the chat remembers a digest of each file as the
//! model last read it (with `read_file`) or wrote it, and refuses to replace or edit a file the
//! model has not read, or one that changed since, telling it to read the file again. A new file
//! needs no read. The memory is part of the chat's state, so a durable chat keeps it.
//!
//! The folders the chat keeps its own files in (long results in `tool-results/`, what
//! compaction cut in `compacted/`) are the model's to read, not to write: `write_file` and
//! `edit_file` refuse names in them or named like them, in any case.
//!
//! Their results are never kept as files ([`SpillToFile::Never`]; each pages on its own:
//! `read_file` by offset, `list_files` from a name, `search_file` up to [`MAX_MATCHES`] lines):
//! a read would otherwise copy what it read into the store, and a listing of a store too full
//! to keep it would go whole.
//!
//! The store's [limits](crate::files#limits) hold for the model: `write_file` and `edit_file`
//! measure the file they would save before they build it, and refuse one past the store's
//! [`max_file_size`](FileStore::max_file_size) (an `edit_file` with `replace_all` can multiply a
//! file's size), and every refusal of the store (a total, a name, a special file) goes back to
//! the model as an error result it can act on.

use std::sync::{Arc, OnceLock};

use serde_json::json;
use sha2::Digest as _;

use super::file_reads::FileReads;
use crate::files::{FileLimit, FileLimitExceeded, FileStore, len_u64};
use crate::{
    context::ToolContext,
    error::ToolError,
    future::BoxFuture,
    output::{ToolOutcome, ToolOutput},
    spec::{SpillToFile, ToolSpec},
    tool::{RawArgs, Tool},
};

/// The name of the tool that lists the chat's files.
pub const LIST_FILES_NAME: &str = "list_files";
/// The name of the tool that reads a slice of one file.
pub const READ_FILE_NAME: &str = "read_file";
/// The name of the tool that finds the lines of one file containing some text.
pub const SEARCH_FILE_NAME: &str = "search_file";
/// The name of the tool that creates a file or replaces one the model has read.
pub const WRITE_FILE_NAME: &str = "write_file";
/// The name of the tool that replaces an exact text in a file the model has read.
pub const EDIT_FILE_NAME: &str = "edit_file";

/// The most characters one `read_file` returns.
pub const MAX_READ: usize = 10_000;
/// The most bytes of names one `list_files` returns (at least one name, whatever its length);
/// the listing goes on from the last name shown with `after`. A store of many files with long
/// names would otherwise answer one short call with megabytes, every later request sending
/// them again.
pub const MAX_LISTED: usize = 10_000;
/// The most lines one `search_file` returns.
pub const MAX_MATCHES: usize = 50;
/// The most characters of one line `search_file` shows.
const MAX_LINE: usize = 300;
/// The longest text `search_file` looks for, in characters: a search is for a part of a line,
/// and the model's text may be megabytes.
const MAX_SEARCH_CHARS: usize = 1_000;

#[derive(Clone, Copy)]
enum Kind {
    List,
    Read,
    Search,
    Write,
    Edit,
}

struct FileTool {
    kind: Kind,
    spec: ToolSpec,
}

/// A file's digest: the first 128 bits of its SHA-256, in hex.
pub(super) fn digest(bytes: &[u8]) -> String {
    let hash = sha2::Sha256::digest(bytes);
    hash.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The file tools a chat offers: all five, or the three that only read.
pub(crate) fn file_tools(editing: bool) -> &'static [Arc<dyn Tool>] {
    let all = all_file_tools();
    if editing { all } else { &all[..3] }
}

/// The five file tools, built once per process (the three readers first).
fn all_file_tools() -> &'static [Arc<dyn Tool>] {
    static TOOLS: OnceLock<Vec<Arc<dyn Tool>>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let name = json!({"type": "string", "description": "The file's name, as listed or as given in a result"});
        vec![
            Arc::new(FileTool {
                kind: Kind::List,
                spec: ToolSpec::new(
                    LIST_FILES_NAME,
                    "Lists the files of this chat, by name: long tool results kept as files and files tools saved. A long listing ends with how to list the rest.",
                )
                .with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "after": {"type": "string", "description": "List only the names after this one (the last name of a listing, for the rest)"}
                    }
                }))
                .with_spill_to_file(SpillToFile::Never),
            }),
            Arc::new(FileTool {
                kind: Kind::Read,
                spec: ToolSpec::new(
                    READ_FILE_NAME,
                    "Reads part of a file of this chat, by character offset.",
                )
                .with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "name": name,
                        "offset": {"type": "integer", "minimum": 0, "description": "The first character to read (default 0)"},
                        "length": {"type": "integer", "minimum": 1, "description": "How many characters to read (default and most: 10000)"}
                    },
                    "required": ["name"]
                }))
                .with_spill_to_file(SpillToFile::Never),
            }),
            Arc::new(FileTool {
                kind: Kind::Search,
                spec: ToolSpec::new(
                    SEARCH_FILE_NAME,
                    "Finds the lines of a file of this chat that contain some text (ignoring case), with their line numbers.",
                )
                .with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "name": name,
                        "text": {"type": "string", "description": "The text to look for"}
                    },
                    "required": ["name", "text"]
                }))
                .with_spill_to_file(SpillToFile::Never),
            }),
            Arc::new(FileTool {
                kind: Kind::Write,
                spec: ToolSpec::new(
                    WRITE_FILE_NAME,
                    "Creates a file of this chat, or replaces the whole of one. Read a file with `read_file` before replacing it.",
                )
                .with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "The file's name: a relative path with `/` between its parts"},
                        "content": {"type": "string", "description": "The file's whole new text"}
                    },
                    "required": ["name", "content"]
                }))
                .with_sequential(true)
                .with_spill_to_file(SpillToFile::Never),
            }),
            Arc::new(FileTool {
                kind: Kind::Edit,
                spec: ToolSpec::new(
                    EDIT_FILE_NAME,
                    "Replaces an exact text in a file of this chat. The text must occur once (or set `replace_all`). Read the file with `read_file` first.",
                )
                .with_parameters(json!({
                    "type": "object",
                    "properties": {
                        "name": name,
                        "old_text": {"type": "string", "description": "The exact text to replace, with enough around it to occur once"},
                        "new_text": {"type": "string", "description": "The text to put in its place"},
                        "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)"}
                    },
                    "required": ["name", "old_text", "new_text"]
                }))
                .with_sequential(true)
                .with_spill_to_file(SpillToFile::Never),
            }),
        ]
    })
}

impl Tool for FileTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, args: RawArgs<'a>, ctx: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            let Some(files) = ctx.files() else {
                return ToolOutcome::error("this chat keeps no files");
            };
            let reads = ctx.file_reads();
            let result = match self.kind {
                Kind::List => list(files, args).await,
                Kind::Read => read(files, reads, args).await,
                Kind::Search => search(files, args).await,
                Kind::Write => write(files, reads, args).await,
                Kind::Edit => edit(files, reads, args).await,
            };
            match result {
                Ok(text) => ToolOutcome::Output(ToolOutput::text(text)),
                Err(e) => ToolOutcome::Error(e),
            }
        })
    }
}

/// A store error the model can act on: what its input caused (a missing file, a bad name or
/// one the file system refuses, a file or a store past a limit, a special or linked file, a
/// folder in the way, a file it may not touch) goes back to it; anything else is the store's
/// failure and stops the turn.
fn store_error(e: std::io::Error) -> ToolError {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound
        | ErrorKind::InvalidInput
        | ErrorKind::InvalidFilename
        | ErrorKind::FileTooLarge
        | ErrorKind::QuotaExceeded
        | ErrorKind::NotADirectory
        | ErrorKind::IsADirectory
        | ErrorKind::AlreadyExists
        | ErrorKind::PermissionDenied => {
            ToolError::recoverable(format!("{e}; `{LIST_FILES_NAME}` lists the files"))
        }
        _ => ToolError::fatal(e),
    }
}

/// Refuses a file of `size` bytes past the store's largest file, before it is saved.
fn check_size(files: &dyn FileStore, name: &str, size: u64) -> Result<(), ToolError> {
    let max = files.max_file_size();
    if size > max {
        let exceeded = FileLimitExceeded::new(FileLimit::FileSize, max, size, name);
        return Err(store_error(exceeded.into()));
    }
    Ok(())
}

/// The names of the files, sorted, from the first after `after` (when given), up to
/// [`MAX_LISTED`] bytes of them; a listing cut there ends with how many more there are and
/// how to list them.
async fn list(files: &dyn FileStore, args: RawArgs<'_>) -> Result<String, ToolError> {
    #[derive(serde::Deserialize)]
    struct Args {
        #[serde(default)]
        after: Option<String>,
    }
    let args: Args = args.decode(&["after"])?;
    let mut names = files.list().await.map_err(store_error)?;
    if names.is_empty() {
        return Ok("This chat has no files.".to_owned());
    }
    // Byte order, whatever order the store lists in (a database's collation): `after` pages
    // by it.
    names.sort_unstable();
    let start = args.after.as_deref().map_or(0, |after| {
        names.partition_point(|name| name.as_str() <= after)
    });
    let rest = names.get(start..).unwrap_or_default();
    if rest.is_empty() {
        return Ok(format!(
            "No files after that name; this chat has {} in all.",
            names.len()
        ));
    }
    let mut listed = String::new();
    let mut shown = 0;
    for name in rest {
        if shown > 0 && listed.len() + 1 + name.len() > MAX_LISTED {
            break;
        }
        if shown > 0 {
            listed.push('\n');
        }
        listed.push_str(name);
        shown += 1;
    }
    let more = rest.len() - shown;
    if more > 0 {
        let last = rest.get(shown - 1).map_or("", String::as_str);
        listed.push_str(&format!(
            "\n… and {more} more ({} files in all); `{LIST_FILES_NAME}` with `after` {} lists \
             the next ones.",
            names.len(),
            serde_json::Value::from(last)
        ));
    }
    Ok(listed)
}

/// A file's bytes read as text, each run of bytes that are not UTF-8 read as one U+FFFD (as
/// `String::from_utf8_lossy` reads them), without a copy of the file: the tools read files of
/// up to the store's `max_file_size`, and a copy of bytes that are not UTF-8 is three times
/// their size.
fn chars_of(bytes: &[u8]) -> impl Iterator<Item = char> + '_ {
    bytes.utf8_chunks().flat_map(|chunk| {
        chunk
            .valid()
            .chars()
            .chain((!chunk.invalid().is_empty()).then_some(char::REPLACEMENT_CHARACTER))
    })
}

/// Whether `line` (read as [`chars_of`] reads it) holds `needle` (lowercase, as its `chars`
/// with its failure table) with the case of letters ignored: the line's letters lowercased one
/// at a time, matched as they come (Knuth–Morris–Pratt), so a line of any length is searched
/// without a copy.
fn holds_ignoring_case(line: &[u8], needle: &[char], failure: &[usize]) -> bool {
    let mut matched = 0usize;
    for c in chars_of(line).flat_map(char::to_lowercase) {
        while matched > 0 && needle.get(matched) != Some(&c) {
            matched = failure.get(matched - 1).copied().unwrap_or(0);
        }
        if needle.get(matched) == Some(&c) {
            matched += 1;
            if matched == needle.len() {
                return true;
            }
        }
    }
    false
}

/// The Knuth–Morris–Pratt failure table of `needle`: for each prefix, the length of its
/// longest proper prefix that is also its suffix.
fn failure_table(needle: &[char]) -> Vec<usize> {
    let mut table = vec![0usize; needle.len()];
    let mut k = 0usize;
    for i in 1..needle.len() {
        while k > 0 && needle.get(i) != needle.get(k) {
            k = table.get(k - 1).copied().unwrap_or(0);
        }
        if needle.get(i) == needle.get(k) {
            k += 1;
        }
        if let Some(entry) = table.get_mut(i) {
            *entry = k;
        }
    }
    table
}

/// Saves `text` as the file `name` and remembers it as seen by the model (it wrote it);
/// returns the name the store gave.
async fn save_seen(
    files: &dyn FileStore,
    reads: Option<&FileReads>,
    name: &str,
    text: String,
) -> Result<String, ToolError> {
    let bytes = text.into_bytes();
    let seen = reads.map(|_| digest(&bytes));
    let name = files.save(name, bytes).await.map_err(store_error)?;
    if let (Some(reads), Some(seen)) = (reads, seen) {
        reads.set(&name, seen);
    }
    Ok(name)
}

async fn read(
    files: &dyn FileStore,
    reads: Option<&FileReads>,
    args: RawArgs<'_>,
) -> Result<String, ToolError> {
    #[derive(serde::Deserialize)]
    struct Args {
        name: String,
        #[serde(default)]
        offset: usize,
        length: Option<usize>,
    }
    let args: Args = args.decode(&["name", "offset", "length"])?;
    let bytes = files.load(&args.name).await.map_err(store_error)?;
    if let Some(reads) = reads {
        reads.set(&args.name, digest(&bytes));
    }
    let total = chars_of(&bytes).count();
    let length = args.length.unwrap_or(MAX_READ).clamp(1, MAX_READ);
    if args.offset >= total && total > 0 {
        return Err(ToolError::recoverable(format!(
            "`{}` has {total} characters; offset {} is past its end",
            args.name, args.offset
        )));
    }
    let slice: String = chars_of(&bytes).skip(args.offset).take(length).collect();
    let end = args.offset + slice.chars().count();
    if end < total {
        Ok(format!(
            "{slice}\n[characters {}–{end} of {total}; read on from offset {end}]",
            args.offset
        ))
    } else {
        Ok(slice)
    }
}

async fn search(files: &dyn FileStore, args: RawArgs<'_>) -> Result<String, ToolError> {
    #[derive(serde::Deserialize)]
    struct Args {
        name: String,
        text: String,
    }
    let args: Args = args.decode(&["name", "text"])?;
    if args.text.is_empty() {
        return Err(ToolError::recoverable(
            "`text` is empty: give the text to look for",
        ));
    }
    if args.text.chars().nth(MAX_SEARCH_CHARS).is_some() {
        return Err(ToolError::recoverable(format!(
            "`text` is longer than {MAX_SEARCH_CHARS} characters: search for a shorter part of it"
        )));
    }
    let content = files.load(&args.name).await.map_err(store_error)?;
    let needle: Vec<char> = args.text.chars().flat_map(char::to_lowercase).collect();
    let failure = failure_table(&needle);
    let mut found = Vec::new();
    let mut more = 0usize;
    // Lines as `str::lines` splits them: at `\n`, a `\r` before it dropped.
    let lines = content
        .strip_suffix(b"\n")
        .unwrap_or(&content)
        .split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    for (number, line) in lines.enumerate() {
        if !holds_ignoring_case(line, &needle, &failure) {
            continue;
        }
        if found.len() == MAX_MATCHES {
            more += 1;
            continue;
        }
        let mut chars = chars_of(line);
        let shown: String = chars.by_ref().take(MAX_LINE).collect();
        let cut = if chars.next().is_some() { "…" } else { "" };
        found.push(format!("line {}: {shown}{cut}", number + 1));
    }
    if found.is_empty() {
        return Ok(format!(
            "No line of `{}` contains \"{}\".",
            args.name, args.text
        ));
    }
    let mut out = found.join("\n");
    if more > 0 {
        out.push_str(&format!(
            "\n[{more} more lines match; search for longer text to narrow it]"
        ));
    }
    Ok(out)
}

/// Refuses to change an existing file the model has not read, or one that changed since it
/// last read (or wrote) it.
fn check_read(reads: Option<&FileReads>, name: &str, current: &[u8]) -> Result<(), ToolError> {
    let Some(reads) = reads else {
        return Ok(());
    };
    match reads.get(name) {
        None => Err(ToolError::recoverable(format!(
            "`{name}` has not been read in this chat: read it with `{READ_FILE_NAME}` before \
             changing it"
        ))),
        Some(seen) if seen != digest(current) => Err(ToolError::recoverable(format!(
            "`{name}` changed since it was last read: read it again with `{READ_FILE_NAME}` \
             before changing it"
        ))),
        Some(_) => Ok(()),
    }
}

/// The folder long results are kept in.
pub(crate) const KEPT_RESULTS_FOLDER: &str = "tool-results";

/// The folder compaction keeps the results it cuts in.
pub(crate) const COMPACTED_FOLDER: &str = "compacted";

/// Whether `name` is one of the folders the chat keeps its own files in, or lies under one
/// (compared without ASCII case, as a case-insensitive file system would): the model's
/// `write_file` and `edit_file` may not touch them. A file of the model's named `tool-results`
/// would stand where the folder must be, and every long result after it would go whole.
pub(crate) fn is_chats_own(name: &str) -> bool {
    [KEPT_RESULTS_FOLDER, COMPACTED_FOLDER]
        .iter()
        .any(|folder| {
            name.get(..folder.len())
                .is_some_and(|start| start.eq_ignore_ascii_case(folder))
                && name
                    .get(folder.len()..)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
}

/// Refuses a change to the folders the chat keeps its own files in (long results, what
/// compaction cut): they are read, searched and listed, never written by the model.
fn not_chats_own(name: &str) -> Result<(), ToolError> {
    if is_chats_own(name) {
        return Err(ToolError::recoverable(format!(
            "`{}` is in the folders where this chat keeps the results it saved (`{}/`, `{}/`): \
             they can be read and searched, not written; choose another name",
            crate::untrusted::shown(name, 100),
            KEPT_RESULTS_FOLDER,
            COMPACTED_FOLDER
        )));
    }
    Ok(())
}

/// The file's bytes, or `None` when there is no such file.
async fn existing(files: &dyn FileStore, name: &str) -> Result<Option<Vec<u8>>, ToolError> {
    match files.load(name).await {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(store_error(e)),
    }
}

async fn write(
    files: &dyn FileStore,
    reads: Option<&FileReads>,
    args: RawArgs<'_>,
) -> Result<String, ToolError> {
    #[derive(serde::Deserialize)]
    struct Args {
        name: String,
        content: String,
    }
    let args: Args = args.decode(&["name", "content"])?;
    not_chats_own(&args.name)?;
    check_size(files, &args.name, len_u64(args.content.len()))?;
    let before = existing(files, &args.name).await?;
    if let Some(before) = &before {
        check_read(reads, &args.name, before)?;
    }
    let characters = args.content.chars().count();
    let name = save_seen(files, reads, &args.name, args.content).await?;
    let verb = if before.is_some() {
        "Replaced"
    } else {
        "Created"
    };
    Ok(format!("{verb} `{name}` ({characters} characters)."))
}

async fn edit(
    files: &dyn FileStore,
    reads: Option<&FileReads>,
    args: RawArgs<'_>,
) -> Result<String, ToolError> {
    #[derive(serde::Deserialize)]
    struct Args {
        name: String,
        old_text: String,
        new_text: String,
        #[serde(default)]
        replace_all: bool,
    }
    let args: Args = args.decode(&["name", "old_text", "new_text", "replace_all"])?;
    not_chats_own(&args.name)?;
    if args.old_text.is_empty() {
        return Err(ToolError::recoverable(
            "`old_text` is empty: give the exact text to replace",
        ));
    }
    if args.old_text == args.new_text {
        return Err(ToolError::recoverable(
            "`old_text` and `new_text` are the same: nothing would change",
        ));
    }
    let Some(before) = existing(files, &args.name).await? else {
        return Err(ToolError::recoverable(format!(
            "no file named \"{}\"; `{WRITE_FILE_NAME}` creates one, `{LIST_FILES_NAME}` lists the files",
            args.name
        )));
    };
    check_read(reads, &args.name, &before)?;
    let Ok(text) = String::from_utf8(before) else {
        return Err(ToolError::recoverable(format!(
            "`{}` is not UTF-8 text and cannot be edited; replace it whole with `{WRITE_FILE_NAME}`",
            args.name
        )));
    };
    let count = text.matches(args.old_text.as_str()).count();
    if count == 0 {
        return Err(ToolError::recoverable(format!(
            "`old_text` does not occur in `{}`; read the file again and copy the text exactly",
            args.name
        )));
    }
    if count > 1 && !args.replace_all {
        return Err(ToolError::recoverable(format!(
            "`old_text` occurs {count} times in `{}`; give more of the text around it so it \
             occurs once, or set `replace_all`",
            args.name
        )));
    }
    let edited = replaced_within(
        files,
        &args.name,
        (&text, &args.old_text, &args.new_text),
        count,
    )?;
    let name = save_seen(files, reads, &args.name, edited).await?;
    let what = if count == 1 {
        "1 occurrence".to_owned()
    } else {
        format!("{count} occurrences")
    };
    Ok(format!("Edited `{name}`: replaced {what}."))
}

/// `text` with its first `count` occurrences of `old` replaced by `new`, for the file `name`:
/// measured first, and refused past the store's largest file before anything is allocated.
fn replaced_within(
    files: &dyn FileStore,
    name: &str,
    (text, old, new): (&str, &str, &str),
    count: usize,
) -> Result<String, ToolError> {
    let times = len_u64(count);
    let size = times
        .checked_mul(len_u64(old.len()))
        .and_then(|removed| len_u64(text.len()).checked_sub(removed))
        .and_then(|kept| {
            times
                .checked_mul(len_u64(new.len()))
                .and_then(|added| kept.checked_add(added))
        });
    let max = files.max_file_size();
    let Some(capacity) = size
        .filter(|size| *size <= max)
        .and_then(|size| usize::try_from(size).ok())
    else {
        let exceeded =
            FileLimitExceeded::new(FileLimit::FileSize, max, size.unwrap_or(u64::MAX), name);
        return Err(ToolError::recoverable(format!(
            "the edited file would be too large: {exceeded}; replace less text, or fewer \
             occurrences"
        )));
    };
    let mut edited = String::with_capacity(capacity);
    let mut rest = 0;
    for (start, found) in text.match_indices(old).take(count) {
        edited.push_str(text.get(rest..start).unwrap_or_default());
        edited.push_str(new);
        rest = start.saturating_add(found.len());
    }
    edited.push_str(text.get(rest..).unwrap_or_default());
    Ok(edited)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chats_own_folders_and_what_is_under_them_are_told_apart() {
        for own in [
            "tool-results",
            "Tool-Results/x.txt",
            "compacted",
            "COMPACTED/a/b",
        ] {
            assert!(is_chats_own(own), "{own}");
        }
        for other in [
            "tool-results2",
            "tool-resultsx/a",
            "notes/tool-results",
            "compact",
            "é",
        ] {
            assert!(!is_chats_own(other), "{other}");
        }
    }

    fn holds(line: &[u8], text: &str) -> bool {
        let needle: Vec<char> = text.chars().flat_map(char::to_lowercase).collect();
        holds_ignoring_case(line, &needle, &failure_table(&needle))
    }

    /// The matcher finds what `to_lowercase().contains` finds, with its repeated prefixes
    /// (where a naive matcher that does not step back would miss), case and bytes that are
    /// not UTF-8.
    #[test]
    fn a_line_holds_text_as_a_lowercase_search_finds_it() {
        let cases: [(&[u8], &str, bool); 10] = [
            (b"aaab", "aab", true),
            (b"abababca", "ababca", true),
            (b"abababc", "ababca", false),
            (b"The Needle", "needle", true),
            (b"THE NEEDLE", "Needle", true),
            ("Straße".as_bytes(), "STRASSE", false),
            ("ÉCOLE".as_bytes(), "école", true),
            (b"\xFFneedle\xFE", "needle", true),
            (b"\xFF\xFF", "\u{FFFD}\u{FFFD}", true),
            (b"", "x", false),
        ];
        for (line, text, expected) in cases {
            assert_eq!(holds(line, text), expected, "{line:?} {text:?}");
            let lossy = String::from_utf8_lossy(line).to_lowercase();
            assert_eq!(
                lossy.contains(&text.to_lowercase()),
                expected,
                "{line:?} {text:?}"
            );
        }
    }

    /// The characters read from bytes are those `String::from_utf8_lossy` gives.
    #[test]
    fn chars_of_bytes_are_the_lossy_texts() {
        for bytes in [
            &b"plain"[..],
            b"\xF0\x9F\x98",
            b"a\xE2\x82b\xFF\xFEc",
            "😀 é".as_bytes(),
            b"",
        ] {
            let read: String = chars_of(bytes).collect();
            assert_eq!(read, String::from_utf8_lossy(bytes), "{bytes:?}");
        }
    }
}

//! Long results: in a chat with a file store, a result longer than its spill limit is kept
//! whole as a file, and the model gets its start, its length and the file's name, to read or
//! search the rest with the file tools. Attachments stay in the result. When the store cannot
//! keep the file (a result larger than its [`max_file_size`](FileStore::max_file_size), which
//! is measured before any copy is made, or one that would pass its totals), the result goes
//! whole, as it would without a store: nothing is lost.

use crate::files::{FileStore, len_u64};
use crate::{
    message::ToolCall,
    output::ToolOutput,
    spec::{SpillToFile, ToolSpec},
};

use super::file_tools::{READ_FILE_NAME, SEARCH_FILE_NAME};

/// The most characters of a kept result the model gets in the result itself.
pub const SPILL_PREVIEW: usize = 2_000;

/// The spill limit of a tool's results in a chat whose limit is `chat_limit`.
pub(crate) fn limit(spec: &ToolSpec, chat_limit: usize) -> Option<usize> {
    match spec.spill_to_file() {
        SpillToFile::Never => None,
        SpillToFile::After(n) => Some(n),
        _ => Some(chat_limit),
    }
}

/// The longest `{tool}-{call id}` a kept result's name holds whole: past it (a provider's call
/// ids of any length), the name keeps its start and a digest of the whole, so it stays within
/// [`MAX_NAME_PART_BYTES`](crate::files::MAX_NAME_PART_BYTES) and apart from other calls'.
const MAX_STEM: usize = 200;

/// The name a call's kept result is saved under: `tool-results/{tool}-{call id}.txt`, with any
/// character a file name should not carry replaced by `_`, cut as [`MAX_STEM`] says. A name
/// where a character was replaced ends in `.` and a digest of the tool and id as they were, so calls whose ids
/// differ only in such characters (`a.1`, `a_1`) keep their results apart; so does the name
/// of a tool whose own name has a `-`, where `{tool}-{call id}` could be read two ways
/// (`get` with id `user-1`, `get-user` with id `1`), and a name with a capital letter, which a
/// case-insensitive file system would take for the same name in other case (`ABC`, `abc`).
fn file_name(call: &ToolCall) -> String {
    file_name_in(super::file_tools::KEPT_RESULTS_FOLDER, call)
}

/// [`file_name`] in `folder`.
pub(crate) fn file_name_in(folder: &str, call: &ToolCall) -> String {
    let safe = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let joined = call.joined_name();
    let stem = format!("{}-{}", safe(&joined), safe(&call.id));
    let as_it_was = format!("{joined}-{}", call.id);
    // A capital letter too: on a case-insensitive file system `ABC` and `abc` are one name,
    // and the digest (lowercase hex) keeps them apart.
    if stem.len() <= MAX_STEM
        && stem == as_it_was
        && !joined.contains('-')
        && !stem.bytes().any(|b| b.is_ascii_uppercase())
    {
        return format!("{folder}/{stem}.txt");
    }
    // `safe` leaves ASCII only: any byte is a character's end.
    let start = stem
        .get(..stem.len().min(MAX_STEM - 40))
        .unwrap_or_default();
    // The digest is of the tool's name and the id told apart (by the name's length), and
    // follows a `.`, which no name without a digest has: it never equals another's name.
    let whole = format!("{}:{joined}{}", joined.len(), call.id);
    format!(
        "{folder}/{start}.{}.txt",
        super::file_tools::digest(whole.as_bytes())
    )
}

/// `name`, or when a file has it already (a call id the server gave again in a later round),
/// the first of `{name}.2.txt`, `{name}.3.txt`, … that is free: a kept result is never
/// replaced by another, so each note keeps naming its own result. A store that cannot list its
/// files gets `name`.
///
/// The number goes after a `.`: a call's own name from [`file_name_in`] has none, or one before
/// its 32-character digest, so a numbered name is never another call's own name. The calls of one round run together, each
/// listing the store before the others save; their ids differ, so their own names (read one
/// way only, see [`file_name_in`]) and their numbered names all differ, and two of them never
/// take one name.
pub(crate) async fn free_name(files: &dyn FileStore, name: String) -> String {
    let Ok(names) = files.list().await else {
        return name;
    };
    // Compared without case: on a folder of a case-insensitive file system (macOS, Windows),
    // names differing only in case (call ids `ABC` and `abc`) are one file.
    let taken: std::collections::HashSet<String> =
        names.into_iter().map(|n| n.to_lowercase()).collect();
    if !taken.contains(&name.to_lowercase()) {
        return name;
    }
    let stem = name.strip_suffix(".txt").unwrap_or(&name);
    (2u64..)
        .map(|n| format!("{stem}.{n}.txt"))
        .find(|candidate| !taken.contains(&candidate.to_lowercase()))
        .unwrap_or(name)
}

/// Keeps `output`'s text as a file when it is longer than `limit` characters, and returns the
/// output the model gets.
pub(crate) async fn spill(
    output: ToolOutput,
    limit: usize,
    files: &dyn FileStore,
    call: &ToolCall,
) -> ToolOutput {
    let text = output.as_text();
    // A text of at most `limit` bytes has at most `limit` characters.
    if text.len() <= limit {
        return output;
    }
    let total = text.chars().count();
    if total <= limit {
        return output;
    }
    let name = free_name(files, file_name(call)).await;
    let max = files.max_file_size();
    if len_u64(text.len()) > max {
        tracing::warn!(
            target: "llm_tools::tool",
            bytes = text.len(),
            max_file_size = max,
            file = name.as_str(),
            "a long result is larger than the file store's max_file_size; it goes whole"
        );
        return output;
    }
    if let Err(e) = files.save(&name, text.as_bytes().to_vec()).await {
        tracing::warn!(
            target: "llm_tools::tool",
            error = %e,
            file = name.as_str(),
            "a long result could not be kept as a file; it goes whole"
        );
        return output;
    }
    let shown = limit.min(SPILL_PREVIEW);
    let start: String = text.chars().take(shown).collect();
    let note = format!(
        "{start}\n[… this result has {total} characters; the first {shown} are above. It is kept \
         whole as the file `{name}`: read it with `{READ_FILE_NAME}` (from offset {shown}) or \
         search it with `{SEARCH_FILE_NAME}`.]"
    );
    let mut output = output;
    output.set_text(note);
    output
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_results_name_fits_a_file_system_whatever_the_call_id() {
        let call = |id: &str| ToolCall::new(id, "search", "{}");
        assert_eq!(file_name(&call("call_1")), "tool-results/search-call_1.txt");
        let (long, other) = ("x".repeat(1_000), format!("{}y", "x".repeat(999)));
        let name = file_name(&call(&long));
        assert!(crate::files::checked_name(&name).is_ok(), "{name}");
        assert!(name.len() < 230, "{name}");
        assert_ne!(name, file_name(&call(&other)));
    }

    #[test]
    fn a_calls_own_name_has_no_dot_but_the_one_before_its_digest() {
        let long = "é.".repeat(300);
        for id in [
            "call_1",
            "call_1-2",
            "a.2",
            "a.1.txt",
            "..",
            "x/y",
            long.as_str(),
        ] {
            for (tool, folder) in [("search", "tool-results"), ("get-user", "compacted")] {
                let name = file_name_in(folder, &ToolCall::new(id, tool, "{}"));
                let stem = name.strip_suffix(".txt").unwrap_or_default();
                match stem.split_once('.') {
                    None => assert!(!stem.is_empty(), "{name}"),
                    Some((start, digest)) => {
                        assert!(!start.is_empty(), "{name}");
                        assert!(
                            digest.len() == 32 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
                            "{name}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_tool_name_with_a_dash_never_shares_a_name_with_another_split() {
        let (plain, dashed) = (
            file_name(&ToolCall::new("user-1", "get", "{}")),
            file_name(&ToolCall::new("1", "get-user", "{}")),
        );
        assert_eq!(plain, "tool-results/get-user-1.txt");
        assert_ne!(plain, dashed);
        assert!(dashed.starts_with("tool-results/get-user-1."), "{dashed}");
        let (one_way, other_way) = (
            file_name(&ToolCall::new("c-d", "a-b", "{}")),
            file_name(&ToolCall::new("d", "a-b-c", "{}")),
        );
        assert_ne!(
            one_way, other_way,
            "both dashed: the digests tell them apart"
        );
        assert!(crate::files::checked_name(&dashed).is_ok(), "{dashed}");
    }

    #[test]
    fn ids_that_differ_only_in_case_keep_their_results_apart_without_case() {
        let call = |id: &str| ToolCall::new(id, "search", "{}");
        let upper = file_name(&call("ABC"));
        let lower = file_name(&call("abc"));
        assert_eq!(lower, "tool-results/search-abc.txt");
        assert!(upper.starts_with("tool-results/search-ABC."), "{upper}");
        assert_ne!(upper.to_lowercase(), lower.to_lowercase());
        assert!(crate::files::checked_name(&upper).is_ok(), "{upper}");
    }

    #[test]
    fn ids_that_differ_only_in_replaced_characters_keep_their_results_apart() {
        let call = |id: &str| ToolCall::new(id, "search", "{}");
        let (dot, underscore) = (file_name(&call("a.1")), file_name(&call("a_1")));
        assert_ne!(dot, underscore);
        assert_eq!(underscore, "tool-results/search-a_1.txt");
        assert!(dot.starts_with("tool-results/search-a_1."), "{dot}");
        assert!(crate::files::checked_name(&dot).is_ok(), "{dot}");
    }
}

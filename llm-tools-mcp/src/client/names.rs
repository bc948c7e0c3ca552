//! Local names for a server's tools: MCP allows names (dots, slashes, any length) that model
//! providers refuse, so each remote name gets a name every provider accepts, kept unique.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash as _, Hasher as _};

use llm_tools_core::MAX_TOOL_NAME_LEN;

/// The name a remote tool gets in the chat: characters outside `[A-Za-z0-9_-]` become `_`, a
/// leading digit or dash gets a `_` before it, and a name that would make the joined
/// `namespace_name` longer than [`MAX_TOOL_NAME_LEN`] is cut and ends with a hash of the remote
/// name, so two long names stay apart. `None` when the name is taken already (two remote names
/// that differ only in characters replaced here).
pub(crate) fn local_name(
    namespace: &str,
    remote: &str,
    taken: &mut HashSet<String>,
) -> Option<String> {
    let name = candidate(namespace, remote);
    taken.insert(name.clone()).then_some(name)
}

/// The local name `remote` maps to, taken or not (see [`local_name`]).
pub(crate) fn candidate(namespace: &str, remote: &str) -> String {
    let mut name: String = remote
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, '_');
    }
    let room = MAX_TOOL_NAME_LEN.saturating_sub(namespace.len() + 1);
    if name.len() > room {
        let mut hasher = DefaultHasher::new();
        remote.hash(&mut hasher);
        let suffix = format!("_{:08x}", hasher.finish() & 0xffff_ffff);
        name.truncate(room.saturating_sub(suffix.len()));
        name.push_str(&suffix);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(namespace: &str, remote: &str) -> String {
        local_name(namespace, remote, &mut HashSet::new()).unwrap_or_default()
    }

    #[test]
    fn valid_names_stay_as_they_are() {
        assert_eq!(one("everything", "get-sum"), "get-sum");
        assert_eq!(one("fs", "read_file"), "read_file");
    }

    #[test]
    fn other_characters_become_underscores() {
        assert_eq!(one("gh", "repos.list/all"), "repos_list_all");
        assert_eq!(one("gh", "3d"), "_3d");
        assert_eq!(one("gh", "-x"), "_-x");
        assert_eq!(one("gh", "wetter-für-heute"), "wetter-f_r-heute");
    }

    #[test]
    fn long_names_fit_and_stay_apart() {
        let a = one("server", &"a".repeat(80));
        let b = one("server", &format!("{}b", "a".repeat(79)));
        assert_eq!(a.len() + "server_".len(), MAX_TOOL_NAME_LEN);
        assert_ne!(a, b);
        assert!(llm_tools_core::is_valid_tool_name(&format!("server_{a}")));
    }

    #[test]
    fn a_name_taken_already_is_none() {
        let mut taken = HashSet::new();
        assert_eq!(local_name("s", "a.b", &mut taken).as_deref(), Some("a_b"));
        assert_eq!(local_name("s", "a/b", &mut taken), None);
    }
}

//! Local names for a server's tools: MCP allows names (dots, slashes, any length) that model
//! providers refuse, so each remote name gets a name every provider accepts, kept unique.

use std::collections::HashSet;
use std::hash::Hasher as _;

use llm_tools_core::MAX_TOOL_NAME_LEN;

/// The name a remote tool gets in the chat: characters outside `[A-Za-z0-9_-]` become `_`, a
/// leading digit or dash gets a `_` before it, and a name that would make the joined
/// `namespace_name` longer than [`MAX_TOOL_NAME_LEN`] is cut and ends with a hash of the remote
/// name, so two long names stay apart. `None` when the name is taken already (two remote names
/// that differ only in characters replaced here).
///
/// A name is the same in every build: chats store local names, so the hash is a fixed function
/// of the remote name (see [`name_hash`]).
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
        let suffix = format!("_{:08x}", name_hash(remote));
        name.truncate(room.saturating_sub(suffix.len()));
        name.push_str(&suffix);
    }
    name
}

/// The low 32 bits of SipHash-1-3 with zero keys over the name's bytes and a closing `0xff`:
/// what `std`'s `DefaultHasher` gave for `remote.hash(..)` when local names were first made,
/// fixed here so that no Rust release renames a stored tool.
fn name_hash(remote: &str) -> u64 {
    let mut hasher = siphasher::sip::SipHasher13::new_with_keys(0, 0);
    hasher.write(remote.as_bytes());
    hasher.write_u8(0xff);
    hasher.finish() & 0xffff_ffff
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

    /// What `DefaultHasher` gave for these names (Rust 1.95).
    const PINNED_A80: u64 = 0x8ebe_a259;
    const PINNED_WEATHER: u64 = 0xaf92_b788;

    #[test]
    fn long_names_end_in_the_same_hash_in_every_build() {
        // Pinned: these names are stored in chats.
        assert_eq!(name_hash(&"a".repeat(80)), PINNED_A80);
        assert_eq!(name_hash("get_weather_forecast_for_city"), PINNED_WEATHER);
        let long = one("server", &"a".repeat(80));
        assert!(long.ends_with(&format!("_{PINNED_A80:08x}")), "{long}");
        // Every length of the last 8-byte block, and characters beyond ASCII.
        let x64 = "x".repeat(64);
        for (name, pinned) in [
            ("", 0x23c5_3def),
            ("a", 0xa4f0_e9f3),
            ("abcdefg", 0xbd07_8ae9),
            ("abcdefgh", 0xa7f9_6c16),
            ("abcdefghi", 0xcb27_092d),
            ("wetter-für-heute.🌦", 0x730f_37e4),
            (x64.as_str(), 0xcff1_46dd),
        ] {
            assert_eq!(name_hash(name), pinned, "{name:?}");
        }
    }

    #[test]
    fn a_name_taken_already_is_none() {
        let mut taken = HashSet::new();
        assert_eq!(local_name("s", "a.b", &mut taken).as_deref(), Some("a_b"));
        assert_eq!(local_name("s", "a/b", &mut taken), None);
    }
}

//! The providers of `#[tool(provider_options(…))]`: each key, the protocol id the options are
//! kept under (`ToolSpec::with_provider_options`), and the fields the protocol's definition
//! already has. These are the tables of `llm-tools-providers` (each protocol's `TOOL_OPTIONS`),
//! repeated so that a mistake is a compile error; the providers check again when a request is
//! built, for specs written by hand.

/// A protocol whose tool definitions take fields a tool adds.
pub(crate) struct WithOptions {
    /// The key in `provider_options(…)`.
    pub(crate) key: &'static str,
    /// The protocol's id, the key the spec keeps the options under.
    pub(crate) id: &'static str,
    /// The fields the library writes in the definition, which options may not set.
    pub(crate) own: &'static [&'static str],
}

/// The protocols with per-tool options.
pub(crate) const WITH_OPTIONS: &[WithOptions] = &[
    WithOptions {
        key: "anthropic",
        id: "anthropic",
        own: &[
            "name",
            "description",
            "input_schema",
            "strict",
            "defer_loading",
            "type",
        ],
    },
    WithOptions {
        key: "openai_responses",
        id: "openai-responses",
        own: &[
            "type",
            "name",
            "description",
            "parameters",
            "strict",
            "defer_loading",
        ],
    },
    WithOptions {
        key: "gemini",
        id: "gemini",
        own: &["name", "description", "parameters", "parametersJsonSchema"],
    },
    WithOptions {
        key: "bedrock",
        id: "bedrock.converse",
        own: &["name", "description", "inputSchema"],
    },
];

/// The protocols whose tool definitions have no field a tool could add, and why.
pub(crate) const WITHOUT_OPTIONS: &[(&str, &str)] = &[
    (
        "openai_chat",
        "a Chat Completions function has no fields besides the name, description, parameters and `strict` that llm-tools writes",
    ),
    (
        "cohere",
        "Cohere's tool definitions have no fields besides the name, description and parameters that llm-tools writes",
    ),
    (
        "ollama",
        "Ollama's tool definitions have no fields besides the name, description and parameters that llm-tools writes",
    ),
];

/// The keys of [`WITH_OPTIONS`], as a message lists them.
pub(crate) fn listed() -> String {
    WITH_OPTIONS
        .iter()
        .map(|p| format!("`{}`", p.key))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The protocol `key` names, if it takes options.
pub(crate) fn find(key: &str) -> Option<&'static WithOptions> {
    WITH_OPTIONS.iter().find(|p| p.key == key)
}

/// The closest key with options, for "did you mean": by edit distance, or the one `key` is the
/// start of (`openai` → `openai_responses`).
pub(crate) fn closest(key: &str) -> Option<&'static str> {
    let keys: Vec<String> = WITH_OPTIONS.iter().map(|p| p.key.to_owned()).collect();
    if let Some(close) = crate::naming::closest(key, &keys) {
        return WITH_OPTIONS.iter().map(|p| p.key).find(|k| *k == close);
    }
    WITH_OPTIONS.iter().map(|p| p.key).find(|k| {
        k.strip_prefix(key)
            .is_some_and(|rest| rest.starts_with('_'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_keys() {
        assert_eq!(closest("antropic"), Some("anthropic"));
        assert_eq!(closest("openai"), Some("openai_responses"));
        assert_eq!(closest("bedrok"), Some("bedrock"));
        assert_eq!(closest("mistral"), None);
    }
}

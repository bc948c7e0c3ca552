//! The chat's own tool search, for providers without a native one: deferred tools
//! (`#[tool(defer)]`) stay out of the requests, and the model gets a `tool_search` tool that
//! finds them by words and loads the ones it finds for the rest of the chat.
//!
//! The search scores each deferred tool by the query's words found in its joined name (which
//! count most), its description, its namespace's description and its parameters' names; a word
//! of four letters or more also matches the words it begins or that begin with it
//! (`forecast` finds `forecasts`). The best [`MAX_FOUND`] matches are loaded. The tools found
//! are part of the chat's saved state.

use std::sync::{Arc, OnceLock};

use serde_json::json;

use super::registry::Registry;
use crate::{
    context::ToolContext,
    error::ToolError,
    future::BoxFuture,
    message::ToolCall,
    output::ToolOutcome,
    spec::ToolSpec,
    tool::{RawArgs, Tool},
};

/// The name of the chat's search tool.
pub const TOOL_SEARCH_NAME: &str = "tool_search";

/// The most tools one search loads.
pub const MAX_FOUND: usize = 5;

/// The search tool the model sees. Its calls never reach [`Tool::call`]: the chat answers them
/// itself, since a search changes which tools the chat offers.
struct ToolSearch {
    spec: ToolSpec,
}

impl Tool for ToolSearch {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call<'a>(&'a self, _: RawArgs<'a>, _: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async {
            ToolOutcome::Error(ToolError::recoverable(
                "tool_search is answered by the chat that offers it",
            ))
        })
    }
}

/// The search tool, built once per process, so its definition is serialized once per dialect.
pub(crate) fn search_tool() -> &'static Arc<dyn Tool> {
    static TOOL: OnceLock<Arc<dyn Tool>> = OnceLock::new();
    TOOL.get_or_init(|| {
        let spec = ToolSpec::new(
            TOOL_SEARCH_NAME,
            "Finds tools that are not loaded yet and loads them: describe what you need in a \
             few words, and the tools that match can be called from your next answer on.",
        )
        .with_parameters(json!({
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words describing what the tool should do, e.g. \"weather forecast\""
                }
            },
            "required": ["query"]
        }));
        Arc::new(ToolSearch { spec })
    })
}

/// Whether the chat searches its deferred tools itself: the provider has no native search, the
/// chat has deferred tools, and no tool of its own is called `tool_search` (then the deferred
/// tools are all sent loaded instead).
pub(crate) fn is_local(registry: &Registry, native: bool) -> bool {
    !native && registry.has_deferred() && !registry.contains(TOOL_SEARCH_NAME)
}

/// Whether a call is to the search tool.
pub(crate) fn is_search(call: &ToolCall) -> bool {
    call.namespace.is_none() && call.name == TOOL_SEARCH_NAME
}

/// Answers a search call: loads the best matches into `found` and tells the model which; the
/// second value says whether the text is an error.
pub(crate) fn answer(
    registry: &Registry,
    found: &mut Vec<String>,
    call: &ToolCall,
) -> (String, bool) {
    #[derive(serde::Deserialize)]
    struct Args {
        query: String,
    }
    let query = match RawArgs::new(&call.arguments).decode::<Args>(&["query"]) {
        Ok(args) if !args.query.trim().is_empty() => args.query,
        Ok(_) => {
            return (
                "`query` is empty: describe the tool you need in a few words.".into(),
                true,
            );
        }
        Err(e) => return (e.to_string(), true),
    };
    // A query is a few words: a longer one is read as its first `MAX_QUERY_CHARS` characters
    // (the model's text may be megabytes, each word matched against every deferred tool's).
    let query = match query.char_indices().nth(MAX_QUERY_CHARS) {
        Some((at, _)) => format!("{}…", query.get(..at).unwrap_or_default()),
        None => query,
    };
    let terms = words(&query);
    let mut scored: Vec<(u32, &Arc<dyn Tool>)> = registry
        .tools()
        .iter()
        .filter(|t| {
            let spec = t.spec();
            spec.defer() && !found.iter().any(|f| f == spec.joined_name())
        })
        .map(|t| (score(&terms, t.spec()), t))
        .filter(|(score, _)| *score > 0)
        .collect();
    if scored.is_empty() {
        let left = registry
            .tools()
            .iter()
            .filter(|t| t.spec().defer() && !found.iter().any(|f| f == t.spec().joined_name()))
            .count();
        return (
            format!(
                "No tool matches \"{query}\" ({left} not loaded yet). Search again with other words."
            ),
            false,
        );
    }
    // Best first; equal scores in registration order (the sort is stable).
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    let mut text = String::from("These tools are loaded; call them in your next answer:");
    for (_, tool) in scored.into_iter().take(MAX_FOUND) {
        let spec = tool.spec();
        found.push(spec.joined_name().to_owned());
        text.push_str(&format!(
            "\n- {}: {}",
            spec.joined_name(),
            spec.description()
        ));
    }
    (text, false)
}

/// The most characters of a tool search's query read (and shown back).
const MAX_QUERY_CHARS: usize = 1_000;

/// The lower-case words of a text; names split at `_` and `-`.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether a query word matches a word of the tool: equal, or one begins with the other when
/// both have four letters or more.
fn matches(term: &str, word: &str) -> bool {
    term == word
        || (term.len() >= 4
            && word.len() >= 4
            && (word.starts_with(term) || term.starts_with(word)))
}

/// How well a tool matches: for each query word, 3 when a word of the joined name matches, else
/// 1 when a word of the descriptions or parameter names does.
fn score(terms: &[String], spec: &ToolSpec) -> u32 {
    let name = words(spec.joined_name());
    let mut other = words(spec.description());
    if let Some(ns) = spec.namespace() {
        other.extend(words(ns.get_description().unwrap_or_default()));
    }
    if let Some(properties) = spec.parameters()["properties"].as_object() {
        for key in properties.keys() {
            other.extend(words(key));
        }
    }
    terms
        .iter()
        .map(|t| {
            if name.iter().any(|w| matches(t, w)) {
                3
            } else if other.iter().any(|w| matches(t, w)) {
                1
            } else {
                0
            }
        })
        .sum()
}

//! Reading Messages answers: whole bodies, and streams of named events reassembled by block
//! index (text deltas, `input_json_delta` fragments, thinking and its signature).

use std::borrow::Cow;
use std::collections::HashMap;

use llm_tools_core::{
    Citation, Message, Part, ProviderData, ProviderError, Response, ServerToolUse, ToolCall, Usage,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::request::PROTOCOL;
use crate::protocol::NameMap;
use crate::wire::{self, decode_error};

/// Token counts as Anthropic reports them (input without the cached part).
/// Every count read leniently (one that is not a whole non-negative number is none): usage
/// never costs the answer, read in one pass.
#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct UsageIn {
    #[serde(default, deserialize_with = "wire::count_opt")]
    pub(super) input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "wire::count_opt")]
    pub(super) output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "wire::count_opt")]
    pub(super) cache_read_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "wire::count_opt")]
    pub(super) cache_creation_input_tokens: Option<u64>,
    /// `server_tool_use`: `{"web_search_requests": 1, "web_fetch_requests": 0, …}`, summed.
    #[serde(default, deserialize_with = "sum_of_counts")]
    pub(super) server_tool_use: Option<u64>,
}

/// The sum of an object's numeric fields (a missing or odd value counts as none).
pub(super) fn sum_of_counts<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<u64>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.and_then(|v| {
        v.as_object().map(|counts| {
            counts
                .values()
                .filter_map(Value::as_u64)
                .fold(0u64, u64::saturating_add)
        })
    }))
}

impl UsageIn {
    /// Later counts replace earlier ones (stream counts are cumulative).
    pub(super) fn merge(&mut self, later: UsageIn) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.server_tool_use = later.server_tool_use.or(self.server_tool_use);
    }

    pub(super) fn usage(self) -> Usage {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        let input = self
            .input_tokens
            .unwrap_or(0)
            .saturating_add(cached)
            .saturating_add(self.cache_creation_input_tokens.unwrap_or(0));
        Usage::new(input, self.output_tokens.unwrap_or(0))
            .with_cached_input_tokens(cached)
            .with_server_tool_requests(self.server_tool_use.unwrap_or(0))
    }
}

/// One answer being put together: its text blocks, tool calls and the other blocks (thinking,
/// server tools) in the order they came, so they go back in that order.
#[derive(Default)]
pub(crate) struct Blocks {
    pub(super) texts: Vec<String>,
    pub(super) calls: wire::CallsInStartOrder,
    pub(super) skeleton: Vec<Value>,
    pub(super) keep_skeleton: bool,
    pub(super) server_tool_uses: Vec<ServerToolUse>,
    /// The place among `server_tool_uses` of the latest use given each id.
    server_tool_use_of_id: HashMap<String, usize>,
    pub(super) citations: Vec<Citation>,
}

impl Blocks {
    /// A text block, with the citations it came with as the provider sent them: they go back
    /// with the text (Anthropic requires a web search citation's `encrypted_index` back in
    /// later turns), so a cited block keeps its place in the skeleton.
    pub(super) fn text(&mut self, text: String, citations: Vec<Value>) {
        if text.is_empty() && citations.is_empty() {
            return;
        }
        if !self.calls.is_empty() {
            self.keep_skeleton = true;
        }
        if citations.is_empty() {
            self.skeleton.push(json!({"type": "text"}));
        } else {
            self.citations
                .extend(citations.iter().filter_map(CitationIn::of));
            self.keep_skeleton = true;
            self.skeleton
                .push(json!({"type": "text", "citations": citations}));
        }
        self.texts.push(text);
    }

    /// A call, with its `caller` when the model did not make it directly (a code execution
    /// run calling a tool that allows it): the caller goes back with the call.
    pub(super) fn call(&mut self, start: usize, call: ToolCall, caller: Option<Value>) {
        let mut entry = json!({"type": "tool_use", "id": call.id.as_str()});
        if let Some(caller) =
            caller.filter(|c| c.get("type").and_then(Value::as_str) != Some("direct"))
        {
            entry["caller"] = caller;
            self.keep_skeleton = true;
        }
        self.skeleton.push(entry);
        self.calls.push(start, call);
    }

    pub(super) fn raw(&mut self, block: Value) {
        let field = |k: &str| block.get(k).and_then(Value::as_str).map(str::to_owned);
        let input = || block.get("input").cloned().unwrap_or(Value::Null);
        match block.get("type").and_then(Value::as_str) {
            Some("server_tool_use") => self.server_tool_use(ServerToolUse::new(
                field("id"),
                field("name").unwrap_or_default(),
                input(),
            )),
            // A remote MCP server's tool, called by the MCP connector.
            Some("mcp_tool_use") => self.server_tool_use(ServerToolUse::new(
                field("id"),
                "mcp",
                json!({"server": field("server_name"), "tool": field("name"), "arguments": input()}),
            )),
            // A code run's result (`code_execution_tool_result`,
            // `bash_code_execution_tool_result`, …): its content is the use's output.
            Some(kind) if kind.ends_with("code_execution_tool_result") => {
                if let Some(used) = field("tool_use_id")
                    .and_then(|id| self.server_tool_use_of_id.get(&id).copied())
                    .and_then(|at| self.server_tool_uses.get_mut(at))
                {
                    used.output = block.get("content").cloned().unwrap_or(Value::Null);
                }
            }
            _ => {}
        }
        self.keep_skeleton = true;
        self.skeleton.push(block);
    }

    /// Adds a use of a server tool, the latest with its id.
    fn server_tool_use(&mut self, used: ServerToolUse) {
        if let Some(id) = &used.id {
            self.server_tool_use_of_id
                .insert(id.clone(), self.server_tool_uses.len());
        }
        self.server_tool_uses.push(used);
    }

    pub(super) fn message(
        mut self,
        usage: Option<Usage>,
        stop_reason: Option<&str>,
        answer_tool: Option<&str>,
    ) -> Message {
        // A structured answer asked for through a forced tool: the call's input is the
        // answer's text (the JSON object), and there is nothing to run.
        let mut calls = self.calls.into_calls();
        if let Some(tool) = answer_tool
            && let Some(at) = calls
                .iter()
                .position(|c| c.name == tool && c.namespace.is_none())
        {
            let call = calls.remove(at);
            self.texts.push(call.arguments);
        }
        let mut message = Message::assistant_with_calls("", calls);
        message.content = self.texts.into_iter().map(Part::text).collect();
        message.usage = usage;
        message.server_tool_uses = self.server_tool_uses;
        message.citations = self.citations;
        if stop_reason == Some("refusal") {
            let text = message.text();
            message.refusal = Some(if text.is_empty() {
                "the model declined to answer".to_owned()
            } else {
                text
            });
        }
        if self.keep_skeleton {
            message.provider_data = Some(ProviderData::new(
                PROTOCOL,
                json!({"content": self.skeleton}),
            ));
        }
        message
    }
}

/// A `tool_use` block as a call: the joined name mapped back to the tool, the input as the JSON
/// text it came as.
pub(super) fn call_of(
    names: &NameMap,
    id: &str,
    name: &str,
    toolset: Option<&str>,
    input: String,
) -> ToolCall {
    let name = match toolset {
        Some(toolset) => (name.to_owned(), Some(toolset.to_owned())),
        None => names.resolve(name),
    };
    wire::call_read(id, name, input)
}

#[derive(Deserialize)]
pub(super) struct BlockIn<'a> {
    #[serde(rename = "type", borrow)]
    pub(super) kind: Cow<'a, str>,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default, borrow)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(super) toolset_name: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(super) citations: Option<Vec<Value>>,
    /// Who made a `tool_use`: the model (`direct`) or a code execution run.
    #[serde(default)]
    pub(super) caller: Option<Value>,
}

/// One citation of a text block: a web search result's location, or a search result's
/// (a tool result returned as `search_result` blocks).
#[derive(Deserialize)]
pub(super) struct CitationIn {
    #[serde(default)]
    pub(super) url: Option<String>,
    #[serde(default)]
    pub(super) source: Option<String>,
    /// The page's title, or a fetched document's (`char_location`, `page_location`).
    #[serde(default, alias = "document_title")]
    pub(super) title: Option<String>,
    #[serde(default)]
    pub(super) cited_text: Option<String>,
    #[serde(default)]
    pub(super) encrypted_index: Option<String>,
}

impl CitationIn {
    /// The typed citation of one the provider sent (`None` for one that is not an object).
    pub(super) fn of(value: &Value) -> Option<Citation> {
        let c = CitationIn::deserialize(value).ok()?;
        let mut citation = Citation::default()
            .with_title(c.title)
            .with_cited_text(c.cited_text)
            .with_encrypted_index(c.encrypted_index);
        citation.url = c.url.or(c.source);
        Some(citation)
    }
}

#[derive(Deserialize)]
pub(super) struct AnswerIn<'a> {
    #[serde(default, rename = "type", borrow)]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) content: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    pub(super) stop_reason: Option<String>,
    #[serde(default, deserialize_with = "wire::lenient_object")]
    pub(super) usage: Option<UsageIn>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

/// An error object (`{"type": "overloaded_error", "message": …}`) as a provider error; the
/// overloaded, rate-limit and API errors are worth trying again, and a context-window refusal
/// is [`ContextLengthExceeded`](llm_tools_core::ProviderErrorKind::ContextLengthExceeded).
pub(crate) fn error_of(name: &str, error: &Value) -> ProviderError {
    let retryable = [
        "overloaded_error",
        "rate_limit_error",
        "api_error",
        "timeout_error",
    ];
    crate::http::classified(
        wire::reported_error_of_types(name, error, &retryable),
        super::errors::is_context_length,
    )
}

/// Reads a whole (non-streamed) answer.
pub(crate) fn parse(
    name: &str,
    body: &[u8],
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    let answer: AnswerIn<'_> = wire::parse_body(name, body)?;
    if answer.kind.as_deref() == Some("error") || answer.error.is_some() {
        return Err(error_of(
            name,
            answer.error.as_ref().unwrap_or(&Value::Null),
        ));
    }
    let Some(content) = answer.content else {
        return Err(decode_error(name, "the response has no `content`"));
    };
    let mut blocks = Blocks::default();
    let mut kept = wire::KeptValues::whole_answer();
    for raw in content {
        let block: BlockIn<'_> = serde_json::from_str(raw.get()).map_err(|e| {
            decode_error(
                name,
                format!(
                    "a content block cannot be read ({e}): {}",
                    llm_tools_core::untrusted::shown(raw.get(), wire::SHOWN_BLOCK_BYTES)
                ),
            )
        })?;
        match block.kind.as_ref() {
            "text" => blocks.text(
                block.text.unwrap_or_default(),
                block.citations.unwrap_or_default(),
            ),
            "tool_use" => {
                kept.keep_call(name)?;
                blocks.call(
                    blocks.calls.len(),
                    call_of(
                        names,
                        block.id.as_deref().unwrap_or_default(),
                        block.name.as_deref().unwrap_or_default(),
                        block.toolset_name.as_deref(),
                        block.input.map(|i| i.get().to_owned()).unwrap_or_default(),
                    ),
                    block.caller,
                );
            }
            _ => {
                let value: Value = serde_json::from_str(raw.get()).map_err(|e| {
                    decode_error(name, format!("a content block cannot be read: {e}"))
                })?;
                blocks.raw(value);
            }
        }
    }
    let usage = answer.usage.map(UsageIn::usage);
    let message = blocks.message(usage, answer.stop_reason.as_deref(), names.answer_tool());
    Ok(Response::new(message)
        .with_finish_reason(answer.stop_reason)
        .with_request_id(request_id)
        .with_model(answer.model.map(Cow::into_owned)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each code run's result is the output of the latest use given its id, among many; a
    /// result naming no use, or none known, is the output of none.
    #[test]
    fn code_run_results_go_to_the_latest_use_with_their_id() {
        let count = 2000;
        let mut blocks = Blocks::default();
        for i in 0..count {
            blocks.raw(json!({"type": "server_tool_use", "id": format!("u{i}"), "name": "code_execution", "input": {"code": i}}));
        }
        blocks.raw(json!({"type": "mcp_tool_use", "id": "m", "server_name": "s", "name": "t", "input": {}}));
        blocks.raw(json!({"type": "server_tool_use", "id": "u5", "name": "bash_code_execution", "input": {}}));
        blocks.raw(json!({"type": "server_tool_use", "name": "no_id", "input": {}}));
        for i in (0..count).rev() {
            blocks.raw(json!({"type": "code_execution_tool_result", "tool_use_id": format!("u{i}"), "content": {"run": i}}));
        }
        blocks.raw(json!({"type": "bash_code_execution_tool_result", "tool_use_id": "m", "content": "mcp"}));
        blocks.raw(json!({"type": "code_execution_tool_result", "tool_use_id": "unknown", "content": "lost"}));
        blocks.raw(json!({"type": "code_execution_tool_result", "content": "lost too"}));
        let uses = blocks.message(None, None, None).server_tool_uses;
        assert_eq!(uses.len(), count + 3);
        for (i, used) in uses.iter().take(count).enumerate() {
            assert_eq!(used.id.as_deref(), Some(format!("u{i}").as_str()));
            let want = if i == 5 {
                Value::Null
            } else {
                json!({"run": i})
            };
            assert_eq!(used.output, want);
        }
        assert_eq!(uses[count].name, "mcp");
        assert_eq!(uses[count].output, json!("mcp"));
        assert_eq!(uses[count + 1].id.as_deref(), Some("u5"));
        assert_eq!(uses[count + 1].output, json!({"run": 5}));
        assert_eq!(uses[count + 2].output, Value::Null);
    }
}

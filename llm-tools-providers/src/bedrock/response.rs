//! Reading Converse answers: a whole body (`output.message.content`, `stopReason`, `usage`), and
//! a ConverseStream's events reassembled by content-block index (`messageStart`,
//! `contentBlockStart` with a tool use, `contentBlockDelta` with text, tool input fragments or
//! reasoning, `contentBlockStop`, `messageStop`, then `metadata` with the usage).

use llm_tools_core::{
    Citation, Message, Part, ProviderData, ProviderError, Response, ServerToolUse, ToolCall, Usage,
};
use serde_json::{Value, json};

use crate::protocol::NameMap;
use crate::protocol::ids::BEDROCK_CONVERSE as PROTOCOL;
use crate::wire;

/// A token count as reported; absent, or not a count, is zero.
pub(super) fn count(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Converse's usage: input tokens exclude the cached ones, which are reported apart.
pub(super) fn usage_of(v: &Value) -> Usage {
    let cached = count(v, "cacheReadInputTokens");
    let input = count(v, "inputTokens")
        .saturating_add(cached)
        .saturating_add(count(v, "cacheWriteInputTokens"));
    Usage::new(input, count(v, "outputTokens")).with_cached_input_tokens(cached)
}

/// One answer being put together: its texts, tool calls, and the other blocks (reasoning) in
/// the order they came, so they go back in that order.
#[derive(Default)]
pub(super) struct Blocks {
    pub(super) texts: Vec<String>,
    pub(super) calls: wire::CallsInStartOrder,
    pub(super) skeleton: Vec<Value>,
    pub(super) keep_skeleton: bool,
    pub(super) server_tool_uses: Vec<ServerToolUse>,
    pub(super) citations: Vec<Citation>,
}

/// The text of a `citationsContent` block (`content: [{"text": …}]`), when it has any.
pub(super) fn cited_text(block: &Value) -> Option<String> {
    has_cited_text(block).then(|| texts_of(block.pointer("/citationsContent/content")))
}

/// Whether a `citationsContent` block carries text (which the message's text holds too).
pub(super) fn has_cited_text(block: &Value) -> bool {
    block
        .pointer("/citationsContent/content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .any(|t| !t.is_empty())
}

/// The `text`s of an array of `{"text": …}` blocks, joined.
fn texts_of(blocks: Option<&Value>) -> String {
    blocks
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

/// Whether a `toolUse` is one the provider ran itself (Nova's `nova_grounding`), which is
/// kept as it came rather than run.
pub(super) fn is_server_tool(tool_use: &Value) -> bool {
    tool_use.get("type").and_then(Value::as_str) == Some("server_tool_use")
}

impl Blocks {
    /// A provider tool's use, kept whole and reported.
    pub(super) fn server_tool(&mut self, tool_use: &Value) {
        let id = tool_use
            .get("toolUseId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.server_tool_uses.push(ServerToolUse::new(
            id,
            str_at(tool_use, "name"),
            tool_use.get("input").cloned().unwrap_or(Value::Null),
        ));
        self.raw(json!({ "toolUse": tool_use }));
    }

    /// A `citationsContent` block: its web locations and search-result locations as
    /// citations, its cited text (Claude's answers over search results carry their text
    /// there) as the message's text; the block is kept whole and goes back as it came.
    pub(super) fn citations_of(&mut self, block: &Value) {
        for c in block
            .pointer("/citationsContent/citations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let title = c.get("title").and_then(Value::as_str).map(str::to_owned);
            let url = c
                .pointer("/location/web/url")
                .or_else(|| c.get("source"))
                .and_then(Value::as_str);
            if let Some(url) = url {
                let passage = texts_of(c.get("sourceContent"));
                let passage = (!passage.is_empty()).then_some(passage);
                self.citations.push(
                    Citation::url(url)
                        .with_title(title)
                        .with_cited_text(passage),
                );
            }
        }
        if let Some(text) = cited_text(block) {
            self.texts.push(text);
        }
    }

    pub(super) fn text(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        if !self.calls.is_empty() {
            self.keep_skeleton = true;
        }
        self.skeleton.push(json!({"text": null}));
        self.texts.push(text);
    }

    pub(super) fn call(&mut self, start: usize, call: ToolCall) {
        self.skeleton
            .push(json!({"toolUse": {"toolUseId": call.id.as_str()}}));
        self.calls.push(start, call);
    }

    pub(super) fn raw(&mut self, block: Value) {
        self.keep_skeleton = true;
        self.skeleton.push(block);
    }

    pub(super) fn message(self, usage: Option<Usage>) -> Message {
        let mut message = Message::assistant_with_calls("", self.calls.into_calls());
        message.content = self.texts.into_iter().map(Part::text).collect();
        message.usage = usage;
        if let Some(usage) = message.usage.as_mut()
            && usage.server_tool_requests == 0
        {
            usage.server_tool_requests =
                u64::try_from(self.server_tool_uses.len()).unwrap_or(u64::MAX);
        }
        message.server_tool_uses = self.server_tool_uses;
        message.citations = self.citations;
        if self.keep_skeleton {
            message.provider_data = Some(ProviderData::new(
                PROTOCOL,
                json!({"content": self.skeleton}),
            ));
        }
        message
    }
}

/// A `toolUse` as a call: the joined name mapped back to the tool, the input as JSON text.
pub(super) fn call_of(names: &NameMap, id: &str, name: &str, input: String) -> ToolCall {
    wire::call_read(id, names.resolve(name), input)
}

pub(super) fn str_at<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Reads a whole Converse answer.
pub(crate) fn parse(
    name: &str,
    body: &[u8],
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    let answer: Value = wire::parse_body(name, body)?;
    let Some(content) = answer
        .get("output")
        .and_then(|o| o.get("message"))
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
    else {
        return Err(wire::decode_error(
            name,
            "the answer has no `output.message.content`",
        ));
    };
    let mut blocks = Blocks::default();
    let mut kept = wire::KeptValues::whole_answer();
    for block in content {
        if let Some(text) = block.get("text").and_then(Value::as_str) {
            blocks.text(text.to_owned());
        } else if let Some(tool_use) = block.get("toolUse").filter(|u| is_server_tool(u)) {
            blocks.server_tool(tool_use);
        } else if let Some(tool_use) = block.get("toolUse") {
            kept.keep_call(name)?;
            let input = match tool_use.get("input") {
                Some(Value::Object(o)) => Value::Object(o.clone()).to_string(),
                _ => "{}".to_owned(),
            };
            let call = call_of(
                names,
                str_at(tool_use, "toolUseId"),
                str_at(tool_use, "name"),
                input,
            );
            blocks.call(blocks.calls.len(), call);
        } else {
            if block.get("citationsContent").is_some() {
                blocks.citations_of(block);
            }
            blocks.raw(block.clone());
        }
    }
    let usage = answer.get("usage").map(usage_of);
    let stop = answer
        .get("stopReason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Response::new(blocks.message(usage))
        .with_finish_reason(stop)
        .with_request_id(request_id))
}

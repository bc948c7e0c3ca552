//! Reading Messages answers: whole bodies, and streams of named events reassembled by block
//! index (text deltas, `input_json_delta` fragments, thinking and its signature).

use std::borrow::Cow;
use std::collections::VecDeque;

use llm_tools_core::{
    Citation, Message, Part, ProviderData, ProviderError, Response, ServerToolUse, StreamEvent,
    ToolCall, Usage,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::request::PROTOCOL;
use crate::framing::Frame;
use crate::wire::{self, Assembler, NameMap, decode_error};

/// Token counts as Anthropic reports them (input without the cached part).
#[derive(Deserialize, Default, Clone, Copy)]
struct UsageIn {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    /// `server_tool_use`: `{"web_search_requests": 1, "web_fetch_requests": 0, …}`, summed.
    #[serde(default, deserialize_with = "sum_of_counts")]
    server_tool_use: Option<u64>,
}

/// The sum of an object's numeric fields (a missing or odd value counts as none).
fn sum_of_counts<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
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
    fn merge(&mut self, later: UsageIn) {
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

    fn usage(self) -> Usage {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self
                .input_tokens
                .unwrap_or(0)
                .saturating_add(cached)
                .saturating_add(self.cache_creation_input_tokens.unwrap_or(0)),
            output_tokens: self.output_tokens.unwrap_or(0),
            cached_input_tokens: cached,
            server_tool_requests: self.server_tool_use.unwrap_or(0),
            ..Usage::default()
        }
    }
}

/// One answer being put together: its text blocks, tool calls and the other blocks (thinking,
/// server tools) in the order they came, so they go back in that order.
#[derive(Default)]
pub(crate) struct Blocks {
    texts: Vec<String>,
    calls: Vec<ToolCall>,
    skeleton: Vec<Value>,
    keep_skeleton: bool,
    server_tool_uses: Vec<ServerToolUse>,
    citations: Vec<Citation>,
}

impl Blocks {
    fn text(&mut self, text: String) {
        if text.is_empty() {
            return;
        }
        if !self.calls.is_empty() {
            self.keep_skeleton = true;
        }
        self.skeleton.push(json!({"type": "text"}));
        self.texts.push(text);
    }

    fn call(&mut self, call: ToolCall) {
        self.skeleton
            .push(json!({"type": "tool_use", "id": call.id.as_str()}));
        self.calls.push(call);
    }

    fn cite(&mut self, citations: Vec<CitationIn>) {
        self.citations
            .extend(citations.into_iter().map(CitationIn::citation));
    }

    fn raw(&mut self, block: Value) {
        if block.get("type").and_then(Value::as_str) == Some("server_tool_use") {
            let field = |k: &str| block.get(k).and_then(Value::as_str).map(str::to_owned);
            self.server_tool_uses.push(ServerToolUse::new(
                field("id"),
                field("name").unwrap_or_default(),
                block.get("input").cloned().unwrap_or(Value::Null),
            ));
        }
        self.keep_skeleton = true;
        self.skeleton.push(block);
    }

    fn message(self, usage: Option<Usage>, stop_reason: Option<&str>) -> Message {
        let mut message = Message::assistant_with_calls("", self.calls);
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
fn call_of(
    names: &NameMap,
    id: &str,
    name: &str,
    toolset: Option<&str>,
    input: String,
) -> ToolCall {
    let (name, namespace) = match toolset {
        Some(toolset) => (name.to_owned(), Some(toolset.to_owned())),
        None => names.resolve(name),
    };
    let id = if id.is_empty() {
        wire::fresh_call_id()
    } else {
        id.to_owned()
    };
    let arguments = if input.trim().is_empty() {
        "{}".to_owned()
    } else {
        input
    };
    ToolCall::new(id, name, arguments).with_namespace(namespace)
}

#[derive(Deserialize)]
struct BlockIn<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    toolset_name: Option<Cow<'a, str>>,
    #[serde(default)]
    citations: Option<Vec<CitationIn>>,
}

/// One citation of a text block: a web search result's location, or a search result's
/// (a tool result returned as `search_result` blocks).
#[derive(Deserialize)]
struct CitationIn {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    cited_text: Option<String>,
}

impl CitationIn {
    fn citation(self) -> Citation {
        let mut citation = Citation::default()
            .with_title(self.title)
            .with_cited_text(self.cited_text);
        citation.url = self.url.or(self.source);
        citation
    }
}

#[derive(Deserialize)]
struct AnswerIn<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    error: Option<Value>,
}

/// An error object (`{"type": "overloaded_error", "message": …}`) as a provider error; the
/// overloaded, rate-limit and API errors are worth trying again.
pub(crate) fn error_of(name: &str, error: &Value) -> ProviderError {
    let e = wire::reported_error(name, error, wire::REPORTED);
    let retryable = matches!(
        e.error_type(),
        Some("overloaded_error" | "rate_limit_error" | "api_error" | "timeout_error")
    );
    e.with_retryable(retryable)
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
    for raw in content {
        let block: BlockIn<'_> = serde_json::from_str(raw.get()).map_err(|e| {
            decode_error(
                name,
                format!("a content block cannot be read ({e}): {}", raw.get()),
            )
        })?;
        match block.kind.as_ref() {
            "text" => {
                blocks.cite(block.citations.unwrap_or_default());
                blocks.text(block.text.unwrap_or_default());
            }
            "tool_use" => blocks.call(call_of(
                names,
                block.id.as_deref().unwrap_or_default(),
                block.name.as_deref().unwrap_or_default(),
                block.toolset_name.as_deref(),
                block.input.map(|i| i.get().to_owned()).unwrap_or_default(),
            )),
            _ => {
                let value: Value = serde_json::from_str(raw.get()).map_err(|e| {
                    decode_error(name, format!("a content block cannot be read: {e}"))
                })?;
                blocks.raw(value);
            }
        }
    }
    let usage = answer.usage.map(UsageIn::usage);
    let message = blocks.message(usage, answer.stop_reason.as_deref());
    Ok(Response::new(message)
        .with_finish_reason(answer.stop_reason)
        .with_request_id(request_id)
        .with_model(answer.model.map(Cow::into_owned)))
}

// ---- streaming --------------------------------------------------------------------------

/// One stream event; the parts only some events have stay unparsed until they are needed, so
/// the many small delta events are read cheaply.
#[derive(Deserialize)]
struct EventIn<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
    #[serde(default, borrow)]
    content_block: Option<&'a RawValue>,
    #[serde(default, borrow)]
    delta: Option<DeltaIn<'a>>,
    #[serde(default, borrow)]
    usage: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct MessageStartIn<'a> {
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<UsageIn>,
}

#[derive(Deserialize)]
struct DeltaIn<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    /// The delta's content: `text` (`text_delta`), `partial_json` (`input_json_delta`),
    /// `thinking` (`thinking_delta`) or `signature` (`signature_delta`); one field, so the many
    /// small delta events are read into a small value.
    #[serde(
        default,
        borrow,
        alias = "text",
        alias = "partial_json",
        alias = "thinking",
        alias = "signature"
    )]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
    /// A `citations_delta`'s citation.
    #[serde(default)]
    citation: Option<CitationIn>,
}

/// A block being streamed.
enum Open {
    Text(String),
    Call {
        call: usize,
        id: String,
        name: String,
        toolset: Option<String>,
        input: String,
    },
    /// A block whose `input` arrives as JSON fragments (`server_tool_use`, `mcp_tool_use`).
    Server {
        block: Value,
        input: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    Whole(Value),
}

/// Reassembles a Messages stream: blocks by index, tool inputs from their `input_json_delta`
/// fragments (no fragment at all means `{}`), the whole answer at `message_stop`.
pub struct AnthropicAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    model: Option<String>,
    open: Vec<(u64, Open)>,
    blocks: Blocks,
    calls: usize,
    usage: UsageIn,
    stop_reason: Option<String>,
    done: bool,
}

impl AnthropicAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            model: None,
            open: Vec::new(),
            blocks: Blocks::default(),
            calls: 0,
            usage: UsageIn::default(),
            stop_reason: None,
            done: false,
        }
    }

    fn open_mut(&mut self, index: Option<u64>) -> Option<&mut Open> {
        let index = index?;
        self.open
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn start(&mut self, index: u64, block: Value, out: &mut VecDeque<StreamEvent>) {
        let s = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or_default();
        let open = match s("type") {
            "text" => {
                let text = s("text").to_owned();
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta(text.clone()));
                }
                Open::Text(text)
            }
            "tool_use" => {
                let call = self.calls;
                self.calls += 1;
                let id = s("id").to_owned();
                let toolset = block
                    .get("toolset_name")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let (name, namespace) = match &toolset {
                    Some(t) => (s("name").to_owned(), Some(t.clone())),
                    None => self.names.resolve(s("name")),
                };
                out.push_back(StreamEvent::ToolCallStarted {
                    index: call,
                    id: id.clone(),
                    name,
                    namespace,
                });
                Open::Call {
                    call,
                    id,
                    name: s("name").to_owned(),
                    toolset,
                    input: String::new(),
                }
            }
            "thinking" => {
                let thinking = s("thinking").to_owned();
                if !thinking.is_empty() {
                    out.push_back(StreamEvent::ReasoningDelta(thinking.clone()));
                }
                Open::Thinking {
                    thinking,
                    signature: s("signature").to_owned(),
                }
            }
            "server_tool_use" | "mcp_tool_use" => Open::Server {
                block,
                input: String::new(),
            },
            _ => Open::Whole(block),
        };
        self.open.push((index, open));
    }

    fn delta(&mut self, index: Option<u64>, delta: DeltaIn<'_>, out: &mut VecDeque<StreamEvent>) {
        if let Some(citation) = delta.citation {
            self.blocks.cite(vec![citation]);
            return;
        }
        let Some(open) = self.open_mut(index) else {
            return;
        };
        let content = delta.content.filter(|c| !c.is_empty());
        match (open, delta.kind.as_deref(), content) {
            (Open::Text(text), Some("text_delta"), Some(t)) => {
                text.push_str(&t);
                out.push_back(StreamEvent::TextDelta(t.into_owned()));
            }
            (Open::Call { call, input, .. }, Some("input_json_delta"), Some(fragment)) => {
                input.push_str(&fragment);
                out.push_back(StreamEvent::ToolCallDelta {
                    index: *call,
                    fragment: fragment.into_owned(),
                });
            }
            (Open::Server { input, .. }, Some("input_json_delta"), Some(fragment)) => {
                input.push_str(&fragment);
            }
            (Open::Thinking { thinking, .. }, Some("thinking_delta"), Some(t)) => {
                thinking.push_str(&t);
                out.push_back(StreamEvent::ReasoningDelta(t.into_owned()));
            }
            (Open::Thinking { signature, .. }, Some("signature_delta"), Some(sig)) => {
                signature.push_str(&sig);
            }
            _ => {}
        }
    }

    fn stop(&mut self, index: Option<u64>, out: &mut VecDeque<StreamEvent>) {
        let Some(position) = index.and_then(|i| self.open.iter().position(|(j, _)| *j == i)) else {
            return;
        };
        let (_, open) = self.open.remove(position);
        self.close(open, out);
    }

    fn close(&mut self, open: Open, out: &mut VecDeque<StreamEvent>) {
        match open {
            Open::Text(text) => self.blocks.text(text),
            Open::Call {
                call,
                id,
                name,
                toolset,
                input,
            } => {
                out.push_back(StreamEvent::ToolCallReady { index: call });
                let call = call_of(&self.names, &id, &name, toolset.as_deref(), input);
                self.blocks.call(call);
            }
            Open::Server { mut block, input } => {
                if let Value::Object(o) = &mut block {
                    let parsed = if input.trim().is_empty() {
                        Some(json!({}))
                    } else {
                        serde_json::from_str(&input).ok()
                    };
                    if let Some(v) = parsed {
                        o.insert("input".into(), v);
                    }
                }
                self.blocks.raw(block);
            }
            Open::Thinking {
                thinking,
                signature,
            } => self.blocks.raw(json!({
                "type": "thinking",
                "thinking": thinking,
                "signature": signature,
            })),
            Open::Whole(block) => self.blocks.raw(block),
        }
    }

    fn complete(&mut self, out: &mut VecDeque<StreamEvent>) {
        // Blocks never stopped (a server that skips `content_block_stop`) close in order.
        let open = std::mem::take(&mut self.open);
        for (_, block) in open {
            self.close(block, out);
        }
        let usage = self.usage.usage();
        out.push_back(StreamEvent::Usage(usage));
        let blocks = std::mem::take(&mut self.blocks);
        let message = blocks.message(Some(usage), self.stop_reason.as_deref());
        out.push_back(StreamEvent::Completed(Box::new(
            Response::new(message)
                .with_finish_reason(self.stop_reason.take())
                .with_request_id(self.request_id.take())
                .with_model(self.model.take()),
        )));
        self.done = true;
    }
}

impl Assembler for AnthropicAssembler {
    fn feed(
        &mut self,
        event: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let Some(e) = wire::read_event::<EventIn<'_>>(&self.name, data) else {
            return Ok(());
        };
        match e.kind.as_ref() {
            "message_start" => {
                if let Some(m) = e
                    .message
                    .and_then(|m| serde_json::from_str::<MessageStartIn<'_>>(m.get()).ok())
                {
                    self.model = m.model.map(Cow::into_owned);
                    if let Some(u) = m.usage {
                        self.usage.merge(u);
                    }
                }
            }
            "content_block_start" => {
                if let Some(index) = e.index
                    && let Some(block) = wire::value_of(e.content_block).filter(Value::is_object)
                {
                    self.start(index, block, out);
                }
            }
            "content_block_delta" => {
                if let Some(delta) = e.delta {
                    self.delta(e.index, delta, out);
                }
            }
            "content_block_stop" => self.stop(e.index, out),
            "message_delta" => {
                if let Some(reason) = e.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason.into_owned());
                }
                if let Some(u) = e
                    .usage
                    .and_then(|u| serde_json::from_str::<UsageIn>(u.get()).ok())
                {
                    self.usage.merge(u);
                }
            }
            "message_stop" => self.complete(out),
            "error" => {
                let error = wire::value_of(e.error).unwrap_or(Value::Null);
                return Err(error_of(&self.name, &error));
            }
            _ => {}
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, _out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        Err(wire::cut_short(&self.name, "no message_stop event"))
    }
}

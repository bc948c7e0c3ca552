//! Reading `generateContent` answers: whole bodies, and SSE streams whose chunks carry whole
//! parts (text pieces, complete `functionCall`s with their thought signatures).

use std::borrow::Cow;
use std::collections::VecDeque;

use llm_tools_core::{
    Citation, Message, Part, ProviderData, ProviderError, Response, ServerToolUse, StreamEvent,
    ToolCall, Usage,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::request::PROTOCOL;
use crate::framing::Frame;
use crate::wire::{self, Assembler, NameMap, decode_error};

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct UsageIn {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
    #[serde(default)]
    cached_content_token_count: u64,
    #[serde(default)]
    tool_use_prompt_token_count: u64,
}

impl UsageIn {
    fn usage(self) -> Usage {
        Usage {
            input_tokens: self
                .prompt_token_count
                .saturating_add(self.tool_use_prompt_token_count),
            output_tokens: self
                .candidates_token_count
                .saturating_add(self.thoughts_token_count),
            cached_input_tokens: self.cached_content_token_count,
            reasoning_tokens: self.thoughts_token_count,
            ..Usage::default()
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChunkIn<'a> {
    #[serde(default, borrow)]
    candidates: Vec<CandidateIn<'a>>,
    #[serde(default)]
    usage_metadata: Option<UsageIn>,
    #[serde(default, borrow)]
    model_version: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    prompt_feedback: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CandidateIn<'a> {
    #[serde(default, borrow)]
    content: Option<ContentIn<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    grounding_metadata: Option<GroundingIn>,
}

/// What Google Search grounding did: the queries it ran and the pages it drew on.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct GroundingIn {
    #[serde(default)]
    web_search_queries: Vec<String>,
    #[serde(default)]
    grounding_chunks: Vec<ChunkSourceIn>,
}

#[derive(Deserialize)]
struct ChunkSourceIn {
    #[serde(default)]
    web: Option<WebSourceIn>,
}

#[derive(Deserialize)]
struct WebSourceIn {
    #[serde(default)]
    uri: Option<String>,
    #[serde(default)]
    title: Option<String>,
}

impl GroundingIn {
    /// The searches as one use of `google_search`, and the pages as citations.
    fn apply(self, message: &mut Message) {
        if !self.web_search_queries.is_empty() {
            message.server_tool_uses.push(ServerToolUse::new(
                None,
                "google_search",
                serde_json::json!({"queries": self.web_search_queries}),
            ));
        }
        for chunk in self.grounding_chunks {
            if let Some(WebSourceIn {
                uri: Some(uri),
                title,
            }) = chunk.web
            {
                message.citations.push(Citation::url(uri).with_title(title));
            }
        }
    }
}

#[derive(Deserialize)]
struct ContentIn<'a> {
    #[serde(default, borrow)]
    parts: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartIn<'a> {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default, borrow)]
    function_call: Option<CallIn<'a>>,
}

#[derive(Deserialize)]
struct CallIn<'a> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default, borrow)]
    args: Option<&'a RawValue>,
}

/// Finish reasons that mean the answer was withheld.
const BLOCKED: &[&str] = &[
    "SAFETY",
    "RECITATION",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "IMAGE_SAFETY",
];

/// One answer being put together: text runs (with their thought signatures), calls, and the
/// parts kept as they came (thoughts, code execution), in order.
#[derive(Default)]
struct Parts {
    texts: Vec<String>,
    calls: Vec<ToolCall>,
    skeleton: Vec<Value>,
    keep_skeleton: bool,
    /// Whether the last part was text (a streamed text run continues it).
    in_text: bool,
}

impl Parts {
    fn text(&mut self, text: &str, signature: Option<String>) {
        if !self.in_text {
            if !self.calls.is_empty() {
                self.keep_skeleton = true;
            }
            self.texts.push(String::new());
            self.skeleton.push(json!({"kind": "text"}));
            self.in_text = true;
        }
        if let Some(t) = self.texts.last_mut() {
            t.push_str(text);
        }
        if let Some(sig) = signature
            && let Some(Value::Object(entry)) = self.skeleton.last_mut()
        {
            entry.insert("thoughtSignature".into(), Value::String(sig));
            self.keep_skeleton = true;
        }
    }

    fn call(&mut self, call: ToolCall) {
        self.in_text = false;
        self.skeleton
            .push(json!({"kind": "call", "id": call.id.as_str()}));
        self.calls.push(call);
    }

    fn raw(&mut self, part: Value) {
        self.in_text = false;
        self.keep_skeleton = true;
        self.skeleton.push(json!({"kind": "raw", "part": part}));
    }

    fn message(self, usage: Option<Usage>, refusal: Option<String>) -> Message {
        let mut message = Message::assistant_with_calls("", self.calls);
        // With a skeleton, text runs are matched to it by position, so empty ones (a signature
        // on an empty part) stay.
        let keep_empty = self.keep_skeleton;
        message.content = self
            .texts
            .into_iter()
            .filter(|t| keep_empty || !t.is_empty())
            .map(Part::text)
            .collect();
        message.usage = usage;
        message.refusal = refusal;
        if self.keep_skeleton {
            message.provider_data =
                Some(ProviderData::new(PROTOCOL, json!({"parts": self.skeleton})));
        }
        message
    }
}

/// What one chunk's parts add to the answer, with the stream events they make.
fn take_parts(
    name: &str,
    names: &NameMap,
    raw_parts: &[&RawValue],
    parts: &mut Parts,
    out: &mut VecDeque<StreamEvent>,
) -> Result<(), ProviderError> {
    for raw in raw_parts {
        let part: PartIn<'_> = serde_json::from_str(raw.get()).map_err(|e| {
            decode_error(name, format!("a part cannot be read ({e}): {}", raw.get()))
        })?;
        if let Some(call) = part.function_call {
            let wire_name = call.name.unwrap_or_default();
            let (tool, namespace) = names.resolve(&wire_name);
            let server_id = call.id.filter(|id| !id.is_empty());
            let id = server_id.clone().unwrap_or_else(wire::fresh_call_id);
            let arguments = match call.args {
                Some(args) if !args.get().trim().is_empty() && args.get() != "null" => {
                    args.get().to_owned()
                }
                _ => "{}".to_owned(),
            };
            let mut data = Map::new();
            if let Some(sig) = part.thought_signature {
                data.insert("thoughtSignature".into(), Value::String(sig));
            }
            if let Some(server_id) = server_id {
                data.insert("functionCallId".into(), Value::String(server_id));
            }
            let index = parts.calls.len();
            out.push_back(StreamEvent::ToolCallStarted {
                index,
                id: id.clone(),
                name: tool.clone(),
                namespace: namespace.clone(),
            });
            out.push_back(StreamEvent::ToolCallDelta {
                index,
                fragment: arguments.clone(),
            });
            out.push_back(StreamEvent::ToolCallReady { index });
            let mut tool_call = ToolCall::new(id, tool, arguments).with_namespace(namespace);
            tool_call.provider_data = (!data.is_empty()).then_some(Value::Object(data));
            parts.call(tool_call);
            continue;
        }
        match (part.text, part.thought) {
            (Some(text), Some(true)) => {
                if !text.is_empty() {
                    out.push_back(StreamEvent::ReasoningDelta(text));
                }
                let value: Value = serde_json::from_str(raw.get())
                    .map_err(|e| decode_error(name, format!("a part cannot be read: {e}")))?;
                parts.raw(value);
            }
            (Some(text), _) => {
                parts.text(&text, part.thought_signature);
                if !text.is_empty() {
                    out.push_back(StreamEvent::TextDelta(text));
                }
            }
            (None, _) => {
                let value: Value = serde_json::from_str(raw.get())
                    .map_err(|e| decode_error(name, format!("a part cannot be read: {e}")))?;
                parts.raw(value);
            }
        }
    }
    Ok(())
}

/// A Google RPC error object as a provider error (`RESOURCE_EXHAUSTED`, `UNAVAILABLE` and
/// `INTERNAL` are worth trying again).
fn error_of(name: &str, error: &Value) -> ProviderError {
    let e = wire::reported_error(name, error, wire::REPORTED);
    let retryable = matches!(
        e.error_type(),
        Some("RESOURCE_EXHAUSTED" | "UNAVAILABLE" | "INTERNAL" | "DEADLINE_EXCEEDED")
    );
    e.with_retryable(retryable)
}

fn block_reason(feedback: Option<&RawValue>) -> Option<String> {
    wire::value_of(feedback)?
        .get("blockReason")
        .and_then(Value::as_str)
        .map(|r| format!("the prompt was blocked ({r})"))
}

/// Reads a whole (non-streamed) answer.
pub(crate) fn parse(
    name: &str,
    body: &[u8],
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    let answer: ChunkIn<'_> = wire::parse_body(name, body)?;
    if let Some(error) = wire::value_of(answer.error) {
        return Err(error_of(name, &error));
    }
    let mut parts = Parts::default();
    let mut events = VecDeque::new();
    let mut finish_reason = None;
    let mut refusal = block_reason(answer.prompt_feedback);
    let mut grounding = None;
    match answer.candidates.into_iter().next() {
        Some(candidate) => {
            if let Some(content) = candidate.content {
                take_parts(name, names, &content.parts, &mut parts, &mut events)?;
            }
            finish_reason = candidate.finish_reason;
            grounding = candidate.grounding_metadata;
        }
        None if refusal.is_none() => {
            return Err(decode_error(name, "the response has no candidates"));
        }
        None => {}
    }
    if let Some(reason) = finish_reason
        .as_deref()
        .filter(|r| BLOCKED.contains(r) && parts.texts.is_empty() && parts.calls.is_empty())
    {
        refusal = Some(format!("the answer was withheld ({reason})"));
    }
    let usage = answer.usage_metadata.map(UsageIn::usage);
    let mut message = parts.message(usage, refusal);
    if let Some(grounding) = grounding {
        grounding.apply(&mut message);
    }
    Ok(Response::new(message)
        .with_finish_reason(finish_reason)
        .with_request_id(request_id)
        .with_model(answer.model_version.map(Cow::into_owned)))
}

/// Reassembles a Gemini stream: each chunk's parts as they come, the answer complete when the
/// stream ends after a finish reason.
pub struct GeminiAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    model: Option<String>,
    parts: Parts,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    refusal: Option<String>,
    grounding: Option<GroundingIn>,
    done: bool,
}

impl GeminiAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            model: None,
            parts: Parts::default(),
            usage: None,
            finish_reason: None,
            refusal: None,
            grounding: None,
            done: false,
        }
    }
}

impl Assembler for GeminiAssembler {
    fn feed(
        &mut self,
        event: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let Some(chunk) = wire::read_event::<ChunkIn<'_>>(&self.name, data) else {
            return Ok(());
        };
        if let Some(error) = wire::value_of(chunk.error) {
            return Err(error_of(&self.name, &error));
        }
        if self.model.is_none() {
            self.model = chunk.model_version.map(Cow::into_owned);
        }
        if let Some(reason) = block_reason(chunk.prompt_feedback) {
            self.refusal = Some(reason);
            self.finish_reason
                .get_or_insert_with(|| "BLOCKED".to_owned());
        }
        if let Some(u) = chunk.usage_metadata {
            self.usage = Some(u.usage());
        }
        if let Some(candidate) = chunk.candidates.into_iter().next() {
            if let Some(content) = candidate.content {
                take_parts(
                    &self.name,
                    &self.names,
                    &content.parts,
                    &mut self.parts,
                    out,
                )?;
            }
            if let Some(reason) = candidate.finish_reason {
                self.finish_reason = Some(reason);
            }
            if let Some(grounding) = candidate.grounding_metadata {
                self.grounding = Some(grounding);
            }
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if self.done {
            return Ok(());
        }
        let Some(reason) = self.finish_reason.take() else {
            return Err(wire::cut_short(&self.name, "no finish reason"));
        };
        let parts = std::mem::take(&mut self.parts);
        if BLOCKED.contains(&reason.as_str()) && parts.texts.is_empty() && parts.calls.is_empty() {
            self.refusal = Some(format!("the answer was withheld ({reason})"));
        }
        if let Some(u) = self.usage {
            out.push_back(StreamEvent::Usage(u));
        }
        let mut message = parts.message(self.usage, self.refusal.take());
        if let Some(grounding) = self.grounding.take() {
            grounding.apply(&mut message);
        }
        out.push_back(StreamEvent::Completed(Box::new(
            Response::new(message)
                .with_finish_reason(Some(reason))
                .with_request_id(self.request_id.take())
                .with_model(self.model.take()),
        )));
        self.done = true;
        Ok(())
    }
}

//! Reading `generateContent` answers: whole bodies, and SSE streams whose chunks carry whole
//! parts (text pieces, complete `functionCall`s with their thought signatures).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet, VecDeque};

use llm_tools_core::{
    Citation, Message, Part, ProviderData, ProviderError, Response, ServerToolUse, StreamEvent,
    ToolCall, Usage,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::request::PROTOCOL;
use crate::protocol::NameMap;
use crate::wire::{self, decode_error};

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub(super) struct UsageIn {
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) prompt_token_count: u64,
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) candidates_token_count: u64,
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) thoughts_token_count: u64,
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) cached_content_token_count: u64,
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) tool_use_prompt_token_count: u64,
}

// An answer's metadata (usage, grounding, finish reason) is read leniently: a field of another
// type than expected loses that field, never the answer's parts and calls beside it.

/// The first candidate of an answer (the only one a request asks for); any others are read
/// through and dropped. `null` or `[]` is none.
fn first_candidate<'de, D>(d: D) -> Result<Option<CandidateIn<'de>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct FirstVisitor;

    impl<'de> serde::de::Visitor<'de> for FirstVisitor {
        type Value = Option<CandidateIn<'de>>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of candidates")
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(self)
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let first = seq.next_element::<CandidateIn<'de>>()?;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }

    d.deserialize_option(FirstVisitor)
}

/// Metadata of an answer or chunk, read leniently: absent (or `null`), read, or unreadable
/// (why), which the reader skips and logs through its [`wire::UnreadableEvents`] (a stream logs
/// the first few of its chunks' only).
#[derive(Default)]
pub(super) enum Metadata<T> {
    #[default]
    Absent,
    Read(T),
    Unreadable(String),
}

impl<T> Metadata<T> {
    /// What was read; unreadable metadata is skipped, counted in `unreadable`.
    pub(super) fn take(self, name: &str, unreadable: &mut wire::UnreadableEvents) -> Option<T> {
        match self {
            Self::Read(read) => Some(read),
            Self::Unreadable(error) => {
                unreadable.skip_metadata(name, &error);
                None
            }
            Self::Absent => None,
        }
    }
}

/// A part of the metadata read as `T`, or unreadable when it is not one.
fn lenient<'de, D, T>(d: D) -> Result<Metadata<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    Ok(metadata_of(<&'de RawValue>::deserialize(d)?.get()))
}

/// A part of the metadata, given as its JSON text, read as `T`, or unreadable when it is not
/// one (`null` is absent).
pub(super) fn metadata_of<T: serde::de::DeserializeOwned>(raw: &str) -> Metadata<T> {
    match serde_json::from_str(raw) {
        Ok(read) => Metadata::Read(read),
        Err(_) if raw == "null" => Metadata::Absent,
        Err(error) => Metadata::Unreadable(crate::http::shown_json_error(&error)),
    }
}

/// The usage of a chunk (every chunk of a stream has one), read leniently as [`lenient`] reads
/// metadata, in one pass: a count that is not a whole non-negative number is 0 (as [`count`]
/// reads it), a key given twice keeps its last value, unknown keys are skipped, and a value that
/// is not an object is unreadable (`null` is absent).
fn lenient_usage<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Metadata<UsageIn>, D::Error> {
    #[derive(Deserialize)]
    #[serde(field_identifier, rename_all = "camelCase")]
    enum Field {
        PromptTokenCount,
        CandidatesTokenCount,
        ThoughtsTokenCount,
        CachedContentTokenCount,
        ToolUsePromptTokenCount,
        #[serde(other)]
        Other,
    }

    struct UsageVisitor;

    impl<'de> serde::de::Visitor<'de> for UsageVisitor {
        type Value = Metadata<UsageIn>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("usage metadata")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut usage = UsageIn::default();
            while let Some(field) = map.next_key::<Field>()? {
                let slot = match field {
                    Field::PromptTokenCount => &mut usage.prompt_token_count,
                    Field::CandidatesTokenCount => &mut usage.candidates_token_count,
                    Field::ThoughtsTokenCount => &mut usage.thoughts_token_count,
                    Field::CachedContentTokenCount => &mut usage.cached_content_token_count,
                    Field::ToolUsePromptTokenCount => &mut usage.tool_use_prompt_token_count,
                    Field::Other => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                        continue;
                    }
                };
                *slot = map.next_value::<wire::Count>()?.0.unwrap_or(0);
            }
            Ok(Metadata::Read(usage))
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Metadata::Absent)
        }

        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(Metadata::Absent)
        }

        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(skipped())
        }

        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(skipped())
        }

        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(skipped())
        }

        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(skipped())
        }

        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(skipped())
        }

        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(skipped())
        }
    }

    fn skipped() -> Metadata<UsageIn> {
        Metadata::Unreadable("the usage is not an object".to_owned())
    }

    d.deserialize_any(UsageVisitor)
}

/// A finish reason: a string as it is, any other value but `null` as its JSON text.
fn reason<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(reason_of(<&'de RawValue>::deserialize(d)?.get()))
}

/// A finish reason given as its JSON text, read as [`reason`] reads it.
pub(super) fn reason_of(raw: &str) -> Option<String> {
    match serde_json::from_str::<Option<String>>(raw) {
        Ok(read) => read,
        Err(_) => Some(raw.to_owned()),
    }
}

impl UsageIn {
    pub(super) fn usage(self) -> Usage {
        let input = self
            .prompt_token_count
            .saturating_add(self.tool_use_prompt_token_count);
        let output = self
            .candidates_token_count
            .saturating_add(self.thoughts_token_count);
        Usage::new(input, output)
            .with_cached_input_tokens(self.cached_content_token_count)
            .with_reasoning_tokens(self.thoughts_token_count)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ChunkIn<'a> {
    /// The first candidate.
    #[serde(
        default,
        borrow,
        rename = "candidates",
        deserialize_with = "first_candidate"
    )]
    pub(super) candidate: Option<CandidateIn<'a>>,
    #[serde(default, deserialize_with = "lenient_usage")]
    pub(super) usage_metadata: Metadata<UsageIn>,
    #[serde(default, borrow, deserialize_with = "wire::borrowed_text")]
    pub(super) model_version: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) prompt_feedback: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(super) error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CandidateIn<'a> {
    #[serde(default, borrow)]
    pub(super) content: Option<ContentIn<'a>>,
    #[serde(default, deserialize_with = "reason")]
    pub(super) finish_reason: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) grounding_metadata: Metadata<GroundingIn>,
}

/// What Google Search grounding did: the queries it ran and the pages it drew on.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct GroundingIn {
    #[serde(default)]
    pub(super) web_search_queries: Vec<String>,
    #[serde(default)]
    pub(super) grounding_chunks: Vec<ChunkSourceIn>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ChunkSourceIn {
    #[serde(default)]
    pub(super) web: Option<WebSourceIn>,
    /// A passage File Search retrieved.
    #[serde(default)]
    pub(super) retrieved_context: Option<RetrievedIn>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RetrievedIn {
    #[serde(default)]
    pub(super) uri: Option<String>,
    #[serde(default)]
    pub(super) title: Option<String>,
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) file_search_store: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WebSourceIn {
    #[serde(default)]
    pub(super) uri: Option<String>,
    #[serde(default)]
    pub(super) title: Option<String>,
}

impl GroundingIn {
    /// The searches as one use of `google_search`, the pages as citations; passages File
    /// Search retrieved as one use of `file_search` (the stores searched) and citations of
    /// their documents.
    pub(super) fn apply(self, message: &mut Message) {
        if !self.web_search_queries.is_empty() {
            message.server_tool_uses.push(ServerToolUse::new(
                None,
                "google_search",
                serde_json::json!({"queries": self.web_search_queries}),
            ));
        }
        let mut stores: Vec<String> = Vec::new();
        let mut stores_seen: HashSet<String> = HashSet::new();
        let mut retrieved = false;
        for chunk in self.grounding_chunks {
            if let Some(WebSourceIn {
                uri: Some(uri),
                title,
            }) = chunk.web
            {
                message.citations.push(Citation::url(uri).with_title(title));
            }
            if let Some(passage) = chunk.retrieved_context {
                retrieved = true;
                if let Some(store) = passage.file_search_store
                    && stores_seen.insert(store.clone())
                {
                    stores.push(store);
                }
                let mut citation = Citation::default()
                    .with_title(passage.title)
                    .with_cited_text(passage.text);
                citation.url = passage.uri;
                message.citations.push(citation);
            }
        }
        if retrieved {
            message.server_tool_uses.push(ServerToolUse::new(
                None,
                "file_search",
                serde_json::json!({"stores": stores}),
            ));
        }
    }
}

#[derive(Deserialize)]
pub(super) struct ContentIn<'a> {
    #[serde(default, borrow)]
    pub(super) parts: Vec<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PartIn<'a> {
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) thought: Option<bool>,
    #[serde(default)]
    pub(super) thought_signature: Option<String>,
    #[serde(default, borrow)]
    pub(super) function_call: Option<CallIn<'a>>,
}

#[derive(Deserialize)]
pub(super) struct CallIn<'a> {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default, borrow)]
    pub(super) args: Option<&'a RawValue>,
}

/// Finish reasons that mean the answer was withheld.
pub(super) const BLOCKED: &[&str] = &[
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
pub(super) struct Parts {
    pub(super) texts: Vec<String>,
    pub(super) calls: Vec<ToolCall>,
    pub(super) skeleton: Vec<Value>,
    pub(super) keep_skeleton: bool,
    /// Whether the last part was text (a streamed text run continues it).
    pub(super) in_text: bool,
    /// The code runs (`executableCode` parts, with the `codeExecutionResult` that follows).
    pub(super) code_runs: Vec<ServerToolUse>,
    /// The place among `code_runs` of the latest run given each id.
    code_run_of_id: HashMap<String, usize>,
    /// The places among `code_runs` of the runs that had no output when they came, in the
    /// order they came; some may have had one since.
    code_runs_waiting: Vec<usize>,
}

impl Parts {
    pub(super) fn text(&mut self, text: &str, signature: Option<String>) {
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

    pub(super) fn call(&mut self, call: ToolCall) {
        self.in_text = false;
        self.skeleton
            .push(json!({"kind": "call", "id": call.id.as_str()}));
        self.calls.push(call);
    }

    /// A thought part (`thought: true`). A stream sends one thought in several parts: one that
    /// follows a thought part not yet signed joins it (its text appended, its signature taken),
    /// so the message keeps one part per thought, as a whole answer has it (whose consecutive
    /// parts join the same way, as its text parts do).
    pub(super) fn thought(&mut self, part: Value, text: &str) {
        if let Some(Value::Object(entry)) = self.skeleton.last_mut()
            && entry.get("kind").and_then(Value::as_str) == Some("raw")
            && let Some(Value::Object(last)) = entry.get_mut("part")
            && last.get("thought") == Some(&Value::Bool(true))
            && !last.contains_key("thoughtSignature")
            && let Some(Value::String(kept)) = last.get_mut("text")
        {
            kept.push_str(text);
            if let Some(signature) = part.get("thoughtSignature") {
                last.insert("thoughtSignature".into(), signature.clone());
            }
            return;
        }
        self.raw(part);
    }

    pub(super) fn raw(&mut self, part: Value) {
        self.in_text = false;
        self.keep_skeleton = true;
        self.code_run(&part);
        self.skeleton.push(json!({"kind": "raw", "part": part}));
    }

    /// A code run the part reports: `executableCode` (language and code) is a use of
    /// `code_execution`; `codeExecutionResult` (outcome and output) is the output of the run
    /// it names by `id`, or else of the latest run without one.
    fn code_run(&mut self, part: &Value) {
        let text = |v: &Value, k: &str| v.get(k).cloned().unwrap_or(Value::Null);
        let id = |v: &Value| v.get("id").and_then(Value::as_str).map(str::to_owned);
        if let Some(code) = part.get("executableCode") {
            self.code_runs_waiting.push(self.code_runs.len());
            self.push_code_run(ServerToolUse::new(
                id(code),
                "code_execution",
                json!({"language": text(code, "language"), "code": text(code, "code")}),
            ));
        } else if let Some(result) = part.get("codeExecutionResult") {
            let output =
                json!({"outcome": text(result, "outcome"), "output": text(result, "output")});
            let named = id(result);
            let run = match &named {
                Some(named) => self.code_run_of_id.get(named).copied(),
                None => self.latest_code_run_waiting(),
            };
            match run.and_then(|run| self.code_runs.get_mut(run)) {
                Some(run) => run.output = output,
                // A result without its code: still a run the provider made.
                None => self.push_code_run(
                    ServerToolUse::new(named, "code_execution", Value::Null).with_output(output),
                ),
            }
        }
    }

    /// Adds a code run, the latest with its id.
    fn push_code_run(&mut self, run: ServerToolUse) {
        if let Some(id) = &run.id {
            self.code_run_of_id.insert(id.clone(), self.code_runs.len());
        }
        self.code_runs.push(run);
    }

    /// The place of the latest code run still without output, taken off those waiting for one.
    fn latest_code_run_waiting(&mut self) -> Option<usize> {
        while let Some(run) = self.code_runs_waiting.pop() {
            if self.code_runs.get(run).is_some_and(|r| r.output.is_null()) {
                return Some(run);
            }
        }
        None
    }

    pub(super) fn message(self, usage: Option<Usage>, refusal: Option<String>) -> Message {
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
        message.server_tool_uses = self.code_runs;
        if self.keep_skeleton {
            message.provider_data =
                Some(ProviderData::new(PROTOCOL, json!({"parts": self.skeleton})));
        }
        message
    }
}

/// One part of an answer or chunk, as its reader found it: its JSON text (kept as it came for
/// the parts of other kinds than text and calls) and the keys read.
pub(super) struct PartView<'a> {
    pub(super) raw: &'a str,
    pub(super) text: Option<Cow<'a, str>>,
    pub(super) thought: Option<bool>,
    pub(super) thought_signature: Option<Cow<'a, str>>,
    pub(super) function_call: Option<CallView<'a>>,
}

/// A part's `functionCall`, as its reader found it.
pub(super) struct CallView<'a> {
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) name: Option<Cow<'a, str>>,
    /// The arguments' JSON text.
    pub(super) args: Option<&'a str>,
}

impl<'a> PartView<'a> {
    /// A part of a whole answer, read strictly: a part that is not one is the answer's error.
    fn strict(name: &str, raw: &'a RawValue) -> Result<Self, ProviderError> {
        let part: PartIn<'_> = serde_json::from_str(raw.get()).map_err(|e| {
            decode_error(
                name,
                format!(
                    "a part cannot be read ({e}): {}",
                    llm_tools_core::untrusted::shown(raw.get(), wire::SHOWN_BLOCK_BYTES)
                ),
            )
        })?;
        Ok(Self {
            raw: raw.get(),
            text: part.text.map(Cow::Owned),
            thought: part.thought,
            thought_signature: part.thought_signature.map(Cow::Owned),
            function_call: part.function_call.map(|call| CallView {
                id: call.id.map(Cow::Owned),
                name: call.name.map(Cow::Owned),
                args: call.args.map(RawValue::get),
            }),
        })
    }
}

/// What one part adds to the answer, with the stream events it makes.
pub(super) fn take_part(
    name: &str,
    names: &NameMap,
    part: PartView<'_>,
    parts: &mut Parts,
    kept: &mut wire::KeptValues,
    out: &mut VecDeque<StreamEvent>,
) -> Result<(), ProviderError> {
    let raw = part.raw;
    if let Some(call) = part.function_call {
        kept.keep_call(name)?;
        let wire_name = call.name.as_deref().unwrap_or_default();
        let (tool, namespace) = names.resolve(wire_name);
        let server_id = call.id.filter(|id| !id.is_empty()).map(Cow::into_owned);
        let id = server_id.clone().unwrap_or_else(wire::fresh_call_id);
        let arguments = match call.args {
            Some(args) if !args.trim().is_empty() && args != "null" => args.to_owned(),
            _ => "{}".to_owned(),
        };
        let mut data = Map::new();
        if let Some(sig) = part.thought_signature {
            data.insert("thoughtSignature".into(), Value::String(sig.into_owned()));
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
        return Ok(());
    }
    match (part.text, part.thought) {
        (Some(text), Some(true)) => {
            kept.keep(name, raw)?;
            let value: Value = serde_json::from_str(raw)
                .map_err(|e| decode_error(name, format!("a part cannot be read: {e}")))?;
            parts.thought(value, &text);
            if !text.is_empty() {
                out.push_back(StreamEvent::ReasoningDelta(text.into_owned()));
            }
        }
        (Some(text), _) => {
            parts.text(&text, part.thought_signature.map(Cow::into_owned));
            if !text.is_empty() {
                out.push_back(StreamEvent::TextDelta(text.into_owned()));
            }
        }
        (None, _) => {
            kept.keep(name, raw)?;
            let value: Value = serde_json::from_str(raw)
                .map_err(|e| decode_error(name, format!("a part cannot be read: {e}")))?;
            parts.raw(value);
        }
    }
    Ok(())
}

/// A Google RPC error object as a provider error (`RESOURCE_EXHAUSTED`, `UNAVAILABLE` and
/// `INTERNAL` are worth trying again; a context-window refusal is
/// [`ContextLengthExceeded`](llm_tools_core::ProviderErrorKind::ContextLengthExceeded)).
pub(super) fn error_of(name: &str, error: &Value) -> ProviderError {
    let retryable = [
        "RESOURCE_EXHAUSTED",
        "UNAVAILABLE",
        "INTERNAL",
        "DEADLINE_EXCEEDED",
    ];
    crate::http::classified(
        wire::reported_error_of_types(name, error, &retryable),
        super::errors::is_context_length,
    )
}

pub(super) fn block_reason(feedback: Option<Value>) -> Option<String> {
    feedback?
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
    let mut refusal = block_reason(wire::value_of(answer.prompt_feedback));
    // A blocked prompt has no candidate to give a finish reason: `BLOCKED`, as a stream says.
    let mut finish_reason = refusal.as_ref().map(|_| "BLOCKED".to_owned());
    let mut grounding = None;
    let mut unreadable = wire::UnreadableEvents::default();
    match answer.candidate {
        Some(candidate) => {
            if let Some(content) = candidate.content {
                // One answer, within the value limit already: counted all the same, its calls
                // charged as a stream's are.
                let mut kept = wire::KeptValues::whole_answer();
                for raw in content.parts {
                    let part = PartView::strict(name, raw)?;
                    take_part(name, names, part, &mut parts, &mut kept, &mut events)?;
                }
            }
            if candidate.finish_reason.is_some() {
                finish_reason = candidate.finish_reason;
            }
            grounding = candidate.grounding_metadata.take(name, &mut unreadable);
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
    let usage = answer
        .usage_metadata
        .take(name, &mut unreadable)
        .map(UsageIn::usage);
    let mut message = parts.message(usage, refusal);
    if let Some(grounding) = grounding {
        grounding.apply(&mut message);
    }
    Ok(Response::new(message)
        .with_finish_reason(finish_reason)
        .with_request_id(request_id)
        .with_model(answer.model_version.map(Cow::into_owned)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_value(answer: &Value) -> Response {
        parse(
            "t",
            answer.to_string().as_bytes(),
            &NameMap::default(),
            None,
        )
        .unwrap()
    }

    fn code(id: Option<&str>, code: &str) -> Value {
        let mut code = json!({"language": "PYTHON", "code": code});
        if let Some(id) = id {
            code["id"] = json!(id);
        }
        json!({"executableCode": code})
    }

    fn result(id: Option<&str>, output: &str) -> Value {
        let mut result = json!({"outcome": "OUTCOME_OK", "output": output});
        if let Some(id) = id {
            result["id"] = json!(id);
        }
        json!({"codeExecutionResult": result})
    }

    fn runs(response: &Response) -> Vec<(Option<String>, Value, Value)> {
        response
            .message
            .server_tool_uses
            .iter()
            .map(|r| {
                (
                    r.id.clone(),
                    r.input.get("code").cloned().unwrap_or(Value::Null),
                    r.output.get("output").cloned().unwrap_or(Value::Null),
                )
            })
            .collect()
    }

    /// A usage is read leniently in its one pass: a count that is no whole non-negative number
    /// is 0, a key given twice keeps its last value, unknown keys are skipped, and a usage that
    /// is no object is left out, never the answer beside it.
    #[test]
    fn a_usage_of_odd_values_loses_those_values_only() {
        let answer = |usage: Value| {
            json!({
                "candidates": [{"content": {"parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
                "usageMetadata": usage,
            })
        };
        // Raw text: a `json!` object would keep one of the two `thoughtsTokenCount`.
        let text = r#"{"candidates": [{"content": {"parts": [{"text": "hi"}]}}],
            "usageMetadata": {"promptTokenCount": "12", "candidatesTokenCount": -1,
            "thoughtsTokenCount": 2, "thoughtsTokenCount": 3,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 12}],
            "toolUsePromptTokenCount": 4, "cachedContentTokenCount": null}}"#;
        let read = parse("t", text.as_bytes(), &NameMap::default(), None).unwrap();
        assert_eq!(read.message.text(), "hi");
        let usage = read.message.usage.unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (4, 3));
        assert_eq!(usage.reasoning_tokens, 3);
        for odd in [
            json!("12"),
            json!([1, 2]),
            json!(7),
            json!(true),
            Value::Null,
        ] {
            let read = parse_value(&answer(odd.clone()));
            assert_eq!(read.message.text(), "hi", "{odd}");
            assert!(read.message.usage.is_none(), "{odd}");
        }
    }

    /// The model's name is read borrowed when it can be, and copied when it has escapes.
    #[test]
    fn the_model_name_is_read_with_or_without_escapes() {
        for (text, model) in [
            (r#""gemini-2.5-flash""#, Some("gemini-2.5-flash")),
            (r#""gemini\u002d2.5""#, Some("gemini-2.5")),
            ("null", None),
        ] {
            let answer = format!(
                r#"{{"candidates": [{{"content": {{"parts": [{{"text": "hi"}}]}}}}], "modelVersion": {text}}}"#
            );
            let read = parse("t", answer.as_bytes(), &NameMap::default(), None).unwrap();
            assert_eq!(read.model.as_deref(), model, "{text}");
        }
    }

    /// A result names its run by id (the latest given it), else goes to the latest run still
    /// without output; one that finds no run is a run of its own.
    #[test]
    fn code_results_go_to_the_run_they_name_or_the_latest_waiting() {
        let parts = [
            code(Some("x"), "a"),
            code(None, "b"),
            code(None, "c"),
            result(None, "to c"),
            result(Some("x"), "to a"),
            result(None, "to b"),
            result(None, "alone"),
            result(Some("y"), "y once"),
            result(Some("y"), "y again"),
            code(Some("x"), "d"),
            result(Some("x"), "to d"),
        ];
        let answer = json!({"candidates": [{"content": {"parts": parts}}]});
        let got = runs(&parse_value(&answer));
        let run = |id: Option<&str>, code: Value, output: &str| {
            (id.map(str::to_owned), code, json!(output))
        };
        assert_eq!(
            got,
            [
                run(Some("x"), json!("a"), "to a"),
                run(None, json!("b"), "to b"),
                run(None, json!("c"), "to c"),
                run(None, Value::Null, "alone"),
                run(Some("y"), Value::Null, "y again"),
                run(Some("x"), json!("d"), "to d"),
            ]
        );
    }

    /// Many runs, then as many results without ids: each result goes to the latest run still
    /// waiting, so the last run gets the first result.
    #[test]
    fn many_code_results_without_ids_go_to_the_latest_runs_waiting() {
        let count = 2000;
        let mut parts: Vec<Value> = (0..count).map(|i| code(None, &format!("c{i}"))).collect();
        parts.push(result(Some("c0"), "named"));
        parts.extend((0..count).map(|i| result(None, &format!("r{i}"))));
        let answer = json!({"candidates": [{"content": {"parts": parts}}]});
        let got = runs(&parse_value(&answer));
        assert_eq!(got.len(), count + 1);
        for (i, (_, code, output)) in got.iter().take(count).enumerate() {
            assert_eq!(code, &json!(format!("c{i}")));
            assert_eq!(output, &json!(format!("r{}", count - 1 - i)));
        }
        assert_eq!(
            got[count],
            (Some("c0".to_owned()), Value::Null, json!("named"))
        );
    }

    /// The stores File Search searched are each named once, in the order first seen, however
    /// many passages it retrieved; every passage is a citation.
    #[test]
    fn file_search_stores_are_named_once_in_the_order_first_seen() {
        let count = 3000;
        let chunks: Vec<Value> = (0..count)
            .map(|i| {
                json!({"retrievedContext": {
                    "title": format!("doc {i}"),
                    "fileSearchStore": format!("store{}", (i * 7 + 3) % 11),
                }})
            })
            .chain([json!({"retrievedContext": {"title": "no store"}})])
            .collect();
        let answer = json!({"candidates": [{
            "content": {"parts": [{"text": "hi"}]},
            "groundingMetadata": {"groundingChunks": chunks},
        }]});
        let response = parse_value(&answer);
        let uses = &response.message.server_tool_uses;
        assert_eq!(uses.len(), 1);
        assert_eq!(uses[0].name, "file_search");
        let mut want = Vec::new();
        for i in 0..count {
            let store = format!("store{}", (i * 7 + 3) % 11);
            if !want.contains(&store) {
                want.push(store);
            }
        }
        assert_eq!(uses[0].input, json!({"stores": want}));
        assert_eq!(response.message.citations.len(), count + 1);
        assert_eq!(
            response.message.citations[count - 1].title.as_deref(),
            Some(format!("doc {}", count - 1).as_str())
        );
    }
}

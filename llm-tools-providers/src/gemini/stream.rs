//! Reassembling a streamed answer from its frames.
//!
//! Each chunk is read leniently ([`lenient`]), as the other protocols' stream events are: a
//! key missing or of another type than expected is nothing there, and the last of a repeated
//! key counts. The first candidate's parts are read by the keys they are used by (text,
//! thought, thought signature, `functionCall`), the rarer and bigger values (grounding, prompt
//! feedback, an error, a part of another kind) read whole only when they come. So a chunk serde
//! would have refused for a value of another type (a `modelVersion` that is a number,
//! `candidates` that are not a list, a part whose `text` is not a string) is read with that
//! value absent, never read as something else: the rest of the chunk counts, and what is
//! skipped as unreadable is what is not JSON. (A whole, non-streamed answer is read strictly.)

use crate::framing::Frame;
use crate::framing::lenient::{
    self, Bool, Fill, First, List, Object, Quick, Raw, Reader, Str, U64, WithText, lenient_struct,
    read_event_into,
};
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use llm_tools_core::{ProviderError, Response, StreamEvent, Usage};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::VecDeque;

use super::response::*;

lenient_struct! {
    /// One stream chunk.
    struct ChunkIn<'a> {
        /// The first candidate (the only one a request asks for).
        candidate: First<CandidateIn<'a>> = "candidates",
        usage_metadata: UsageField<'a> = "usageMetadata",
        model_version: Str<'a> = "modelVersion",
        prompt_feedback: Raw<'a> = "promptFeedback",
        error: Raw<'a> = "error",
    }
}

lenient_struct! {
    struct CandidateIn<'a> {
        content: ContentIn<'a> = "content",
        /// Read as a whole answer's is (a string, or another value's JSON text).
        finish_reason: Raw<'a> = "finishReason",
        grounding_metadata: Raw<'a> = "groundingMetadata",
    }
}

lenient_struct! {
    struct ContentIn<'a> {
        parts: List<WithText<'a, PartIn<'a>>> = "parts",
    }
}

lenient_struct! {
    struct PartIn<'a> {
        text: Str<'a> = "text",
        thought: Bool = "thought",
        thought_signature: Str<'a> = "thoughtSignature",
        function_call: Object<CallIn<'a>> = "functionCall",
    }
}

lenient_struct! {
    struct CallIn<'a> {
        id: Str<'a> = "id",
        name: Str<'a> = "name",
        args: Raw<'a> = "args",
    }
}

lenient_struct! {
    /// The token counts: a count that is not a whole non-negative number is 0.
    struct UsageCounts<'a> {
        prompt_token_count: U64 = "promptTokenCount",
        candidates_token_count: U64 = "candidatesTokenCount",
        thoughts_token_count: U64 = "thoughtsTokenCount",
        cached_content_token_count: U64 = "cachedContentTokenCount",
        tool_use_prompt_token_count: U64 = "toolUsePromptTokenCount",
    }
}

/// A chunk's usage (every chunk has one), as a whole answer's is read: an object read as its
/// counts, `null` absent, anything else unreadable metadata.
#[derive(Default)]
enum UsageField<'a> {
    #[default]
    Absent,
    Read(UsageCounts<'a>),
    NotObject,
}

impl<'de: 'a, 'a> Fill<'de> for UsageField<'a> {
    fn fill<D: serde::Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        let raw = <&RawValue>::deserialize(d)?.get();
        *into = match raw.as_bytes().first() {
            Some(b'{') => {
                let mut counts = UsageCounts::default();
                // (JSON `serde_json` has read already, read again: an error here is a nesting
                // limit.)
                lenient::parse_into(raw, &mut counts).map_err(serde::de::Error::custom)?;
                Self::Read(counts)
            }
            Some(b'n') => Self::Absent,
            _ => Self::NotObject,
        };
        Ok(())
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        match r.peek()? {
            b'{' => {
                let mut counts = UsageCounts::default();
                UsageCounts::fill_quick(r, &mut counts)?;
                *into = Self::Read(counts);
                Ok(())
            }
            b'n' => {
                *into = Self::Absent;
                r.skip()
            }
            _ => {
                *into = Self::NotObject;
                r.skip()
            }
        }
    }
}

impl UsageField<'_> {
    /// The usage read; unreadable usage is skipped, counted in `unreadable`.
    fn take(self, name: &str, unreadable: &mut wire::UnreadableEvents) -> Option<Usage> {
        match self {
            Self::Read(c) => Some(
                UsageIn {
                    prompt_token_count: c.prompt_token_count.0.unwrap_or(0),
                    candidates_token_count: c.candidates_token_count.0.unwrap_or(0),
                    thoughts_token_count: c.thoughts_token_count.0.unwrap_or(0),
                    cached_content_token_count: c.cached_content_token_count.0.unwrap_or(0),
                    tool_use_prompt_token_count: c.tool_use_prompt_token_count.0.unwrap_or(0),
                }
                .usage(),
            ),
            Self::NotObject => {
                unreadable.skip_metadata(name, "the usage is not an object");
                None
            }
            Self::Absent => None,
        }
    }
}

/// A part as [`take_part`] reads it.
fn view<'a>(part: WithText<'a, PartIn<'a>>) -> PartView<'a> {
    let WithText { text, value: part } = part;
    PartView {
        raw: text.map_or("null", |t| t.get()),
        text: part.text.0,
        thought: part.thought.0,
        thought_signature: part.thought_signature.0,
        function_call: part.function_call.0.map(|call| CallView {
            id: call.id.0,
            name: call.name.0,
            args: call.args.0.map(|a| a.get()),
        }),
    }
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
    /// The values the parts keep (thoughts, parts of other kinds).
    kept: wire::KeptValues,
    /// The events (and parts) skipped unread.
    unreadable: wire::UnreadableEvents,
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
            kept: wire::KeptValues::default(),
            unreadable: wire::UnreadableEvents::default(),
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
        let mut chunk = ChunkIn::default();
        if !read_event_into(&mut self.unreadable, &self.name, data, &mut chunk)? {
            return Ok(());
        }
        // (`null` is no error, as a key missing.)
        if let Some(error) = chunk.error.value().filter(|e| !e.is_null()) {
            return Err(error_of(&self.name, &error));
        }
        if self.model.is_none() {
            self.model = chunk.model_version.0.map(Cow::into_owned);
        }
        if let Some(reason) = block_reason(chunk.prompt_feedback.value()) {
            self.refusal = Some(reason);
            self.finish_reason
                .get_or_insert_with(|| "BLOCKED".to_owned());
        }
        if let Some(u) = chunk.usage_metadata.take(&self.name, &mut self.unreadable) {
            self.usage = Some(u);
        }
        if let Some(candidate) = chunk.candidate.0 {
            for part in candidate.content.parts.0 {
                take_part(
                    &self.name,
                    &self.names,
                    view(part),
                    &mut self.parts,
                    &mut self.kept,
                    out,
                )?;
            }
            if let Some(reason) = candidate.finish_reason.0.and_then(|r| reason_of(r.get())) {
                self.finish_reason = Some(reason);
            }
            if let Some(grounding) = candidate
                .grounding_metadata
                .0
                .map_or(Metadata::Absent, |g| metadata_of::<GroundingIn>(g.get()))
                .take(&self.name, &mut self.unreadable)
            {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assembler() -> GeminiAssembler {
        GeminiAssembler::new("t", NameMap::default(), None)
    }

    /// The events and the completed answer of a stream of `chunks`.
    fn stream(chunks: &[&str]) -> Vec<StreamEvent> {
        let mut a = assembler();
        let mut out = VecDeque::new();
        for &chunk in chunks {
            a.feed(&Frame::data(chunk), &mut out).unwrap();
        }
        a.end(&mut out).unwrap();
        out.into()
    }

    fn completed(events: &[StreamEvent]) -> &Response {
        match events.last() {
            Some(StreamEvent::Completed(response)) => response,
            other => panic!("{other:?}"),
        }
    }

    /// A chunk with parts of each kind reads as the same answer whole, which is read strictly.
    #[test]
    fn a_chunk_with_parts_of_each_kind_reads_as_the_whole_answer() {
        let chunk = json!({
            "candidates": [{"content": {"role": "model", "parts": [
                {"text": "thinking \u{e9}\n", "thought": true},
                {"text": "more", "thought": true, "thoughtSignature": "c2ln"},
                {"text": "Hello \"w\u{f6}rld\"\n"},
                {"text": "!", "thoughtSignature": "dGV4dA=="},
                {"functionCall": {"id": "c1", "name": "tool_1", "args": {"q": "x", "n": [1, 2.5]}},
                    "thoughtSignature": "Y2FsbA=="},
                {"functionCall": {"id": "c2", "name": "tool_2", "args": null}},
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
                {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}
            ]}, "finishReason": "STOP", "index": 0,
            "groundingMetadata": {"webSearchQueries": ["q"],
                "groundingChunks": [{"web": {"uri": "https://a.example", "title": "A"}}]}},
            {"content": {"parts": [{"text": "second candidate"}]}}],
            "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5,
                "thoughtsTokenCount": 3, "cachedContentTokenCount": 2, "toolUsePromptTokenCount": 1},
            "modelVersion": "gemini-2.5-flash",
            "promptFeedback": {"safetyRatings": []}
        })
        .to_string();
        let events = stream(&[&chunk]);
        let whole = parse("t", chunk.as_bytes(), &NameMap::default(), None).unwrap();
        assert_eq!(completed(&events), &whole);
        assert_eq!(
            events[0],
            StreamEvent::ReasoningDelta("thinking é\n".into())
        );
        assert_eq!(events[1], StreamEvent::ReasoningDelta("more".into()));
        assert_eq!(
            events[2],
            StreamEvent::TextDelta("Hello \"wörld\"\n".into())
        );
        assert_eq!(events[3], StreamEvent::TextDelta("!".into()));
        assert_eq!(
            events[5],
            StreamEvent::ToolCallDelta {
                index: 0,
                fragment: r#"{"q":"x","n":[1,2.5]}"#.into()
            }
        );
        assert_eq!(
            events[8],
            StreamEvent::ToolCallDelta {
                index: 1,
                fragment: "{}".into()
            }
        );
        assert_eq!(
            events[10],
            StreamEvent::Usage(
                Usage::new(13, 8)
                    .with_cached_input_tokens(2)
                    .with_reasoning_tokens(3)
            )
        );
    }

    /// A value of another type than expected reads as absent, and the rest of the chunk as
    /// before; what is not JSON is still skipped.
    #[test]
    fn values_of_another_type_read_as_absent() {
        let events = stream(&[
            r#"{"candidates":[{"content":{"parts":[{"text":"a"}]}}],"modelVersion":5,"error":null}"#,
            r#"{"candidates":{"content":{"parts":[{"text":"not a list"}]}}}"#,
            r#"{"candidates":[{"content":{"parts":{"text":"not a list"}}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"b","functionCall":null,"thought":"yes"}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":7,"functionCall":[1]}]}}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":"c"}]}}],"usageMetadata":"x"}"#,
            "not json",
            r#"{"candidates":[{"finishReason":7}],"usageMetadata":{"promptTokenCount":-1,"candidatesTokenCount":"2","thoughtsTokenCount":1.5}}"#,
            r#"{"modelVersion":"m","modelVersion":"n","usageMetadata":null}"#,
        ]);
        assert_eq!(
            events[..3],
            [
                StreamEvent::TextDelta("a".into()),
                StreamEvent::TextDelta("b".into()),
                StreamEvent::TextDelta("c".into()),
            ]
        );
        assert_eq!(events[3], StreamEvent::Usage(Usage::new(0, 0)));
        let response = completed(&events);
        assert_eq!(response.finish_reason.as_deref(), Some("7"));
        assert_eq!(response.model.as_deref(), Some("n"));
        assert_eq!(response.message.text(), "abc");
        // (The part whose text is not a string is kept as it came, between the text runs.)
        assert_eq!(
            response
                .message
                .provider_data
                .as_ref()
                .map(|d| d.data["parts"][1]["part"].clone()),
            Some(json!({"text": 7, "functionCall": [1]}))
        );
        assert_eq!(events.len(), 5);
    }

    /// An error in a chunk is the stream's error; `null` is none.
    #[test]
    fn an_error_in_a_chunk_ends_the_stream() {
        let mut a = assembler();
        let mut out = VecDeque::new();
        let chunk = r#"{"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}"#;
        let error = a.feed(&Frame::data(chunk), &mut out).unwrap_err();
        assert!(error.to_string().contains("busy"), "{error}");
        assert!(error.is_retryable(), "{error:?}");
    }
}

//! Reassembling a streamed answer from its frames.

use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use llm_tools_core::{ProviderError, StreamEvent, Usage};
use serde_json::Value;
use std::collections::VecDeque;

use super::response::*;
use crate::framing::lenient::{Bool, Raw, Str, U64, lenient_struct, parse_into};

lenient_struct! {
    /// What the many lines of text are read for, without building a `Value` of each; a line
    /// with an error or tool calls is read again as a `Value` (`feed_value`).
    struct LineIn<'a> {
        error: Raw<'a> = "error",
        message: MessageIn<'a> = "message",
        done: Bool = "done",
        done_reason: Str<'a> = "done_reason",
        model: Str<'a> = "model",
        prompt_eval_count: U64 = "prompt_eval_count",
        eval_count: U64 = "eval_count",
    }
}

lenient_struct! {
    struct MessageIn<'a> {
        thinking: Str<'a> = "thinking",
        content: Str<'a> = "content",
        tool_calls: Raw<'a> = "tool_calls",
    }
}

/// Reassembles an NDJSON stream: text and thinking as they come, each tool call whole when its
/// line arrives, the answer complete at the `done: true` line.
pub struct OllamaAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    answer: Answer,
    done: bool,
    /// Each call the stream opens, charged against the stream's budget.
    kept: wire::KeptValues,
}

impl OllamaAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            answer: Answer::default(),
            done: false,
            kept: wire::KeptValues::default(),
        }
    }

    /// The error of a line that is not JSON.
    fn not_json(&self, data: &str, e: &serde_json::Error) -> ProviderError {
        let start: String = data.chars().take(120).collect();
        wire::decode_error(
            &self.name,
            format!("a stream line is not JSON ({e}): {start}"),
        )
    }

    /// A line with an error or tool calls, read as a `Value`.
    fn feed_value(
        &mut self,
        v: &Value,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        if let Some(e) = server_error(&self.name, v) {
            return Err(e);
        }
        if let Some(message) = v.get("message") {
            if let Some(t) = message
                .get("thinking")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                self.answer.thinking.push_str(t);
                out.push_back(StreamEvent::ReasoningDelta(t.to_owned()));
            }
            if let Some(t) = message
                .get("content")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            {
                self.answer.text.push_str(t);
                out.push_back(StreamEvent::TextDelta(t.to_owned()));
            }
            for call in calls_of(&self.name, &self.names, message, &mut self.kept)? {
                let index = self.answer.calls.len();
                out.push_back(StreamEvent::ToolCallStarted {
                    index,
                    id: call.id.clone(),
                    name: call.name.clone(),
                    namespace: call.namespace.clone(),
                });
                out.push_back(StreamEvent::ToolCallDelta {
                    index,
                    fragment: call.arguments.clone(),
                });
                out.push_back(StreamEvent::ToolCallReady { index });
                self.answer.calls.push(call);
            }
        }
        if v.get("done").and_then(Value::as_bool) == Some(true) {
            self.done = true;
            self.answer.usage = usage_of(v);
            self.answer.done_reason = v
                .get("done_reason")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.answer.model = v.get("model").and_then(Value::as_str).map(str::to_owned);
            if let Some(usage) = self.answer.usage {
                out.push_back(StreamEvent::Usage(usage));
            }
        }
        Ok(())
    }
}

impl Assembler for OllamaAssembler {
    fn feed(
        &mut self,
        frame: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let mut line = LineIn::default();
        parse_into(&frame.data, &mut line).map_err(|e| self.not_json(&frame.data, &e))?;
        if line.error.0.is_some() || line.message.tool_calls.0.is_some() {
            // An error, or whole calls: read as a `Value`, as the whole answer is.
            let v: Value =
                serde_json::from_str(&frame.data).map_err(|e| self.not_json(&frame.data, &e))?;
            return self.feed_value(&v, out);
        }
        let message = &mut line.message;
        if let Some(t) = message.thinking.take_filled() {
            self.answer.thinking.push_str(&t);
            out.push_back(StreamEvent::ReasoningDelta(t.into_owned()));
        }
        if let Some(t) = message.content.take_filled() {
            self.answer.text.push_str(&t);
            out.push_back(StreamEvent::TextDelta(t.into_owned()));
        }
        if line.done.0 == Some(true) {
            self.done = true;
            self.answer.usage = match (line.prompt_eval_count.0, line.eval_count.0) {
                (None, None) => None,
                (input, output) => Some(Usage::new(input.unwrap_or(0), output.unwrap_or(0))),
            };
            self.answer.done_reason = line.done_reason.get().map(str::to_owned);
            self.answer.model = line.model.get().map(str::to_owned);
            if let Some(usage) = self.answer.usage {
                out.push_back(StreamEvent::Usage(usage));
            }
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.done
    }

    fn end(&mut self, out: &mut VecDeque<StreamEvent>) -> Result<(), ProviderError> {
        if !self.done {
            return Err(wire::cut_short(&self.name, "no `done: true` line"));
        }
        let answer = std::mem::take(&mut self.answer);
        out.push_back(StreamEvent::Completed(Box::new(
            answer.response(self.request_id.take()),
        )));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llm_tools_core::ProviderErrorKind;

    fn assembler() -> OllamaAssembler {
        OllamaAssembler::new("t", NameMap::default(), None)
    }

    /// The lines read without a `Value` read as before: escapes, values of another type, keys
    /// given twice; a line with calls or an error is read whole.
    #[test]
    fn odd_lines_read_as_a_value_reads_them() {
        let mut a = assembler();
        let mut out = VecDeque::new();
        for line in [
            r#"{"message":{"role":"assistant","content":"a\u00e9\n"},"done":false}"#,
            r#"{"message":{"content":5,"thinking":"t"},"done":"true"}"#,
            r#"{"message":"content","done":null}"#,
            r#"{"message":{"content":"x"},"message":{"content":"y"}}"#,
            r#"{"message":{"tool_calls":[{"function":{"name":"f","arguments":{"b":1,"a":2}}}]}}"#,
            r#"{"done":true,"done":true,"done_reason":"stop","model":"m","eval_count":4,"prompt_eval_count":-1}"#,
        ] {
            a.feed(&Frame::data(line), &mut out).unwrap();
        }
        a.end(&mut out).unwrap();
        let got: Vec<StreamEvent> = out.into();
        assert_eq!(got[0], StreamEvent::TextDelta("aé\n".into()));
        assert_eq!(got[1], StreamEvent::ReasoningDelta("t".into()));
        assert_eq!(got[2], StreamEvent::TextDelta("y".into()));
        assert!(
            matches!(&got[3], StreamEvent::ToolCallStarted { index: 0, name, .. } if name == "f")
        );
        assert_eq!(
            got[4],
            StreamEvent::ToolCallDelta {
                index: 0,
                fragment: r#"{"b":1,"a":2}"#.into()
            }
        );
        assert_eq!(got[5], StreamEvent::ToolCallReady { index: 0 });
        assert_eq!(got[6], StreamEvent::Usage(Usage::new(0, 4)));
        let StreamEvent::Completed(response) = &got[7] else {
            panic!("{got:?}");
        };
        assert_eq!(response.message.text(), "aé\ny");
        assert_eq!(response.finish_reason.as_deref(), Some("stop"));
        assert_eq!(response.model.as_deref(), Some("m"));
    }

    #[test]
    fn a_line_that_is_not_json_or_an_error_line_ends_the_stream_with_an_error() {
        let mut out = VecDeque::new();
        let e = assembler()
            .feed(&Frame::data(r#"{"message":{"content":"cut"#), &mut out)
            .unwrap_err();
        assert_eq!(e.kind(), ProviderErrorKind::Decode);
        assert!(e.message().contains("not JSON"), "{e}");
        let e = assembler()
            .feed(&Frame::data(r#"{"error":"model not found"}"#), &mut out)
            .unwrap_err();
        assert_eq!(e.kind(), ProviderErrorKind::Stream);
        assert!(e.message().contains("model not found"), "{e}");
        assert!(out.is_empty());
    }
}

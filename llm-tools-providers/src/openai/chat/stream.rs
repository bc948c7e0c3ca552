//! Reassembling a streamed answer of Chat Completions from its server-sent events.

use crate::framing::Frame;
use crate::protocol::{Assembler, NameMap};
use crate::wire;
use llm_tools_core::{ProviderError, Response, StreamEvent, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;
use std::collections::VecDeque;

use super::response::*;

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    /// The first choice (one answer is asked for; others are skipped unread).
    #[serde(default, borrow, rename = "choices", deserialize_with = "first_choice")]
    choice: Option<ChunkChoice<'a>>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    error: Option<Box<Value>>,
}

fn first_choice<'de: 'a, 'a, D>(d: D) -> Result<Option<ChunkChoice<'a>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct First<'a>(std::marker::PhantomData<&'a ()>);
    impl<'de: 'a, 'a> serde::de::Visitor<'de> for First<'a> {
        type Value = Option<ChunkChoice<'a>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of choices")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let first = seq.next_element::<ChunkChoice<'a>>()?;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(first)
        }
    }
    d.deserialize_any(First(std::marker::PhantomData))
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<StrOrValue<'a>>,
    #[serde(default, borrow)]
    refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(Deserialize)]
struct CallDelta<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    extra_content: Option<Value>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<StrOrValue<'a>>,
}

/// A string borrowed from the chunk where it has no escapes, or any other JSON value (content
/// as a list of parts, arguments as an object).
enum StrOrValue<'a> {
    Str(Cow<'a, str>),
    Other(Box<Value>),
}

impl<'de: 'a, 'a> Deserialize<'de> for StrOrValue<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = StrOrValue<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or a JSON value")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Owned(v)))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::Null)))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::Bool(v))))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::from(v))))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::from(v))))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Other(Box::new(Value::from(v))))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(|v| StrOrValue::Other(Box::new(v)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|v| StrOrValue::Other(Box::new(v)))
            }
        }
        d.deserialize_any(V)
    }
}

impl StrOrValue<'_> {
    fn content(&self, text: &mut String, reasoning: &mut String) {
        match self {
            StrOrValue::Str(s) => text.push_str(s),
            StrOrValue::Other(v) => content_text(Some(v), text, reasoning),
        }
    }
}

struct CallState {
    wire_index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
    extra_content: Option<Value>,
    ready: bool,
}

/// Reassembles a Chat Completions stream: text, reasoning, and tool calls whose argument
/// fragments arrive by `index` (the id only in the first fragment; `tool_calls` and
/// `finish_reason` possibly in the same chunk).
pub struct ChatAssembler {
    name: String,
    names: NameMap,
    request_id: Option<String>,
    model: Option<String>,
    text: String,
    refusal: String,
    reasoning: String,
    reasoning_field: &'static str,
    calls: Vec<CallState>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    done: bool,
}

impl ChatAssembler {
    pub(crate) fn new(name: &str, names: NameMap, request_id: Option<String>) -> Self {
        Self {
            name: name.to_owned(),
            names,
            request_id,
            model: None,
            text: String::new(),
            refusal: String::new(),
            reasoning: String::new(),
            reasoning_field: "reasoning_content",
            calls: Vec::new(),
            usage: None,
            finish_reason: None,
            done: false,
        }
    }

    fn ready_all(&mut self, out: &mut VecDeque<StreamEvent>) {
        for (index, call) in self.calls.iter_mut().enumerate() {
            if !call.ready {
                call.ready = true;
                out.push_back(StreamEvent::ToolCallReady { index });
            }
        }
    }

    fn call_delta(
        &mut self,
        position: usize,
        delta: CallDelta<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) {
        let index = match delta.index {
            Some(i) => self.calls.iter().position(|c| c.wire_index == Some(i)),
            None => match &delta.id {
                Some(id) if !id.is_empty() => self.calls.iter().position(|c| c.id == **id),
                // No index and no id: a continuation of the last call, or a new one.
                _ => self.calls.len().checked_sub(1).filter(|_| position == 0),
            },
        };
        let extra = delta.extra_content.filter(|e| !e.is_null());
        let function = delta.function;
        let fragment = match function.as_ref().and_then(|f| f.arguments.as_ref()) {
            Some(StrOrValue::Str(s)) => s.clone().into_owned(),
            Some(StrOrValue::Other(v)) if v.is_null() => String::new(),
            None => String::new(),
            Some(StrOrValue::Other(other)) => other.to_string(),
        };
        let name_part = function.and_then(|f| f.name).map(Cow::into_owned);
        let index = match index {
            Some(i) => {
                let call = &mut self.calls[i];
                if let Some(n) = name_part {
                    call.name.push_str(&n);
                }
                if extra.is_some() {
                    call.extra_content = extra;
                }
                i
            }
            None => {
                // A new call: the previous ones are complete.
                self.ready_all(out);
                let id = delta
                    .id
                    .map(Cow::into_owned)
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(wire::fresh_call_id);
                self.calls.push(CallState {
                    wire_index: delta.index,
                    id: id.clone(),
                    name: name_part.unwrap_or_default(),
                    arguments: String::new(),
                    extra_content: extra,
                    ready: false,
                });
                let i = self.calls.len() - 1;
                let (name, namespace) = self.names.resolve(&self.calls[i].name);
                out.push_back(StreamEvent::ToolCallStarted {
                    index: i,
                    id,
                    name,
                    namespace,
                });
                i
            }
        };
        if !fragment.is_empty() {
            self.calls[index].arguments.push_str(&fragment);
            out.push_back(StreamEvent::ToolCallDelta { index, fragment });
        }
    }

    fn complete(&mut self, out: &mut VecDeque<StreamEvent>) {
        self.ready_all(out);
        let calls = self
            .calls
            .drain(..)
            .map(|c| {
                let (name, namespace) = self.names.resolve(&c.name);
                let arguments = if c.arguments.trim().is_empty() {
                    "{}".to_owned()
                } else {
                    c.arguments
                };
                with_extra(
                    ToolCall::new(c.id, name, arguments).with_namespace(namespace),
                    c.extra_content,
                )
            })
            .collect();
        if let Some(u) = self.usage {
            out.push_back(StreamEvent::Usage(u));
        }
        let message = assistant_message(
            std::mem::take(&mut self.text),
            Some(std::mem::take(&mut self.refusal)),
            calls,
            Some((self.reasoning_field, std::mem::take(&mut self.reasoning))),
            self.usage,
        );
        out.push_back(StreamEvent::Completed(Box::new(
            Response::new(message)
                .with_finish_reason(self.finish_reason.take())
                .with_request_id(self.request_id.take())
                .with_model(self.model.take()),
        )));
        self.done = true;
    }
}

impl Assembler for ChatAssembler {
    fn feed(
        &mut self,
        event: &Frame<'_>,
        out: &mut VecDeque<StreamEvent>,
    ) -> Result<(), ProviderError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.complete(out);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk<'_> = match serde_json::from_str(data) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(provider = %self.name, error = %e, "skipping an unreadable stream event");
                return Ok(());
            }
        };
        if let Some(error) = &chunk.error {
            return Err(crate::openai::errors::reported(
                &self.name,
                error,
                wire::REPORTED,
            ));
        }
        if self.model.is_none() {
            self.model = chunk.model.map(Cow::into_owned);
        }
        if let Some(u) = chunk.usage {
            self.usage = Some(u.usage());
        }
        if let Some(choice) = chunk.choice {
            if let Some(delta) = choice.delta {
                let mut text = String::new();
                let mut reasoning = String::new();
                if let Some(c) = &delta.content {
                    c.content(&mut text, &mut reasoning);
                }
                if let Some(r) = delta.reasoning_content.filter(|r| !r.is_empty()) {
                    self.reasoning_field = "reasoning_content";
                    reasoning.push_str(&r);
                } else if let Some(r) = delta.reasoning.filter(|r| !r.is_empty()) {
                    self.reasoning_field = "reasoning";
                    reasoning.push_str(&r);
                }
                if !reasoning.is_empty() {
                    self.reasoning.push_str(&reasoning);
                    out.push_back(StreamEvent::ReasoningDelta(reasoning));
                }
                if !text.is_empty() {
                    self.text.push_str(&text);
                    out.push_back(StreamEvent::TextDelta(text));
                }
                if let Some(r) = delta.refusal {
                    self.refusal.push_str(&r);
                }
                for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
                    self.call_delta(position, call, out);
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason.into_owned());
                self.ready_all(out);
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
        if self.finish_reason.is_some() {
            // Some servers end without `[DONE]`; the finish reason says the answer is whole.
            self.complete(out);
            return Ok(());
        }
        Err(wire::cut_short(&self.name, "no finish reason, no [DONE]"))
    }
}

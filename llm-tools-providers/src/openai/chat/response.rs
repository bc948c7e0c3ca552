//! Reading a whole answer of Chat Completions.

use crate::protocol::NameMap;
use crate::wire::{self, decode_error};
use llm_tools_core::{Message, ProviderData, ProviderError, Response, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

use super::request::*;

#[derive(Deserialize)]
pub(super) struct Completion<'a> {
    #[serde(default, borrow)]
    pub(super) model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) choices: Vec<Choice<'a>>,
    #[serde(default, deserialize_with = "wire::lenient_object")]
    pub(super) usage: Option<UsageIn>,
    #[serde(default)]
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default, borrow)]
    pub(super) message: Option<MessageIn<'a>>,
    #[serde(default, borrow)]
    pub(super) finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
pub(super) struct MessageIn<'a> {
    #[serde(default, borrow)]
    pub(super) content: Option<Loose<'a>>,
    #[serde(default, borrow)]
    pub(super) refusal: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) tool_calls: Option<Vec<CallIn<'a>>>,
    #[serde(default, borrow)]
    pub(super) reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) reasoning: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(super) struct CallIn<'a> {
    #[serde(default, borrow)]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) function: Option<FunctionIn<'a>>,
    #[serde(default)]
    pub(super) extra_content: Option<Value>,
}

/// A value read as a `Value` would be, with a string borrowed from the answer when it has no
/// escapes (the common case: a call's arguments, the text) instead of built into a `Value`.
pub(super) enum Loose<'a> {
    Str(Cow<'a, str>),
    Other(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for Loose<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LooseVisitor<'a>(std::marker::PhantomData<Loose<'a>>);

        impl<'de: 'a, 'a> serde::de::Visitor<'de> for LooseVisitor<'a> {
            type Value = Loose<'a>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v)))
            }

            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Loose::Other(Value::Bool(v)))
            }

            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Loose::Other(Value::from(v)))
            }

            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Loose::Other(Value::from(v)))
            }

            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Loose::Other(Value::from(v)))
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Loose::Other(Value::Null))
            }

            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(Loose::Other(Value::Null))
            }

            fn visit_some<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                Loose::deserialize(d)
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(Loose::Other)
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(Loose::Other)
            }
        }

        d.deserialize_any(LooseVisitor(std::marker::PhantomData))
    }
}

/// A call with the `extra_content` it came with kept for the way back.
pub(super) fn with_extra(mut call: ToolCall, extra: Option<Value>) -> ToolCall {
    if let Some(extra) = extra.filter(|e| !e.is_null()) {
        call.provider_data = Some(serde_json::json!({ "extra_content": extra }));
    }
    call
}

#[derive(Deserialize)]
pub(super) struct FunctionIn<'a> {
    #[serde(default, borrow)]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) arguments: Option<Loose<'a>>,
}

/// Token counts as Chat Completions reports them, every part read leniently (a count that is
/// not a whole non-negative number is 0, a part of another shape is none): usage never costs
/// the answer, read in one pass.
#[derive(Deserialize, Default, Clone, Copy)]
pub(crate) struct UsageIn {
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) prompt_tokens: u64,
    #[serde(default, deserialize_with = "wire::count")]
    pub(super) completion_tokens: u64,
    #[serde(default, deserialize_with = "wire::lenient_object")]
    pub(super) prompt_tokens_details: Option<PromptDetails>,
    #[serde(default, deserialize_with = "wire::lenient_object")]
    pub(super) completion_tokens_details: Option<CompletionDetails>,
    #[serde(default, deserialize_with = "wire::count_opt")]
    pub(super) prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct PromptDetails {
    #[serde(default, deserialize_with = "wire::count_opt")]
    pub(super) cached_tokens: Option<u64>,
}

#[derive(Deserialize, Default, Clone, Copy)]
pub(super) struct CompletionDetails {
    #[serde(default, deserialize_with = "wire::count_opt")]
    pub(super) reasoning_tokens: Option<u64>,
}

impl UsageIn {
    pub(super) fn usage(self) -> Usage {
        let mut u = Usage::new(self.prompt_tokens, self.completion_tokens);
        u.cached_input_tokens = self
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens)
            .unwrap_or(0);
        u.reasoning_tokens = self
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0);
        u
    }
}

/// Text and reasoning from `content`, which is a string, or (Mistral's reasoning models) a list
/// of `text` and `thinking` chunks.
pub(super) fn content_text(content: Option<&Value>, text: &mut String, reasoning: &mut String) {
    match content {
        Some(Value::String(s)) => text.push_str(s),
        Some(Value::Array(parts)) => {
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if let Some(t) = p.get("text").and_then(Value::as_str) {
                            text.push_str(t);
                        }
                    }
                    Some("thinking") => {
                        if let Some(Value::Array(chunks)) = p.get("thinking") {
                            for c in chunks {
                                if let Some(t) = c.get("text").and_then(Value::as_str) {
                                    reasoning.push_str(t);
                                }
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn arguments_text(arguments: Option<Loose<'_>>) -> String {
    match arguments {
        Some(Loose::Str(s)) if !s.trim().is_empty() => s.into_owned(),
        Some(Loose::Str(_)) | Some(Loose::Other(Value::Null)) | None => "{}".into(),
        Some(Loose::Other(other)) => other.to_string(),
    }
}

/// The assistant message of an answer. `reasoning` is the answer's reasoning text with the
/// field it came in, if it came in one: the message keeps the text, and the field it goes back
/// under (`echo`) when there is one.
pub(super) fn assistant_message(
    text: String,
    refusal: Option<String>,
    calls: Vec<ToolCall>,
    reasoning: (Option<&'static str>, String),
    usage: Option<Usage>,
) -> Message {
    let mut message = Message::assistant_with_calls(text, calls);
    message.refusal = refusal.filter(|r| !r.is_empty());
    message.usage = usage;
    let (field, reasoning) = reasoning;
    if !reasoning.is_empty() {
        let mut kept = Map::new();
        kept.insert("reasoning".into(), Value::String(reasoning.clone()));
        if let Some(field) = field {
            let mut echo = Map::new();
            echo.insert(field.into(), Value::String(reasoning));
            kept.insert("echo".into(), Value::Object(echo));
        }
        message.provider_data = Some(ProviderData::new(PROTOCOL, Value::Object(kept)));
    }
    message
}

/// Reads a whole (non-streamed) answer.
pub(crate) fn parse(
    name: &str,
    body: &[u8],
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    let completion: Completion<'_> = wire::parse_body(name, body)?;
    if let Some(error) = &completion.error {
        return Err(crate::openai::errors::reported(name, error, wire::REPORTED));
    }
    let usage = completion.usage.map(UsageIn::usage);
    let model = completion.model.map(Cow::into_owned);
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(decode_error(name, "the response has no choices"));
    };
    let m = choice.message.unwrap_or_default();
    let (mut text, mut reasoning) = (String::new(), String::new());
    match m.content {
        Some(Loose::Str(s)) => text = s.into_owned(),
        Some(Loose::Other(other)) => content_text(Some(&other), &mut text, &mut reasoning),
        None => {}
    }
    // Reasoning goes back under the field that brought it; reasoning read from `thinking`
    // chunks of the content (Mistral's) has no field to go back in.
    let reasoning_field = if let Some(r) = m.reasoning_content {
        reasoning.push_str(&r);
        Some("reasoning_content")
    } else if let Some(r) = m.reasoning {
        reasoning.push_str(&r);
        Some("reasoning")
    } else {
        None
    };
    let calls_in = m.tool_calls.unwrap_or_default();
    // Each call charged as a stream's is, before any is built.
    wire::KeptValues::whole_answer().keep_calls(name, calls_in.len())?;
    let calls = calls_in
        .into_iter()
        .map(|c| {
            let f = c.function.unwrap_or(FunctionIn {
                name: None,
                arguments: None,
            });
            let (tool, namespace) = names.resolve(f.name.unwrap_or_default());
            let call = ToolCall::new(
                c.id.filter(|i| !i.is_empty())
                    .map_or_else(wire::fresh_call_id, Cow::into_owned),
                tool,
                arguments_text(f.arguments),
            )
            .with_namespace(namespace);
            with_extra(call, c.extra_content)
        })
        .collect();
    let message = assistant_message(
        text,
        m.refusal.map(Cow::into_owned),
        calls,
        (reasoning_field, reasoning),
        usage,
    );
    Ok(Response::new(message)
        .with_finish_reason(choice.finish_reason.map(Cow::into_owned))
        .with_request_id(request_id)
        .with_model(model))
}

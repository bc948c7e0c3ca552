//! Reading answers and reporting what went wrong: whole bodies, stream events, errors the
//! provider reported inside an answer, streams cut short, and the error kinds protocols raise.

use llm_tools_core::{ProviderError, ProviderErrorKind};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::http::ErrorDetails;

/// A request this protocol cannot write (a refused schema, a tool choice it lacks).
pub(crate) fn request_error(name: &str, message: impl Into<String>) -> ProviderError {
    ProviderError::new(name, ProviderErrorKind::Request, message)
}

/// An answer that cannot be read.
pub(crate) fn decode_error(name: &str, message: impl Into<String>) -> ProviderError {
    ProviderError::new(name, ProviderErrorKind::Decode, message)
}

/// A stream that went wrong.
pub(crate) fn stream_error(name: &str, message: impl Into<String>) -> ProviderError {
    ProviderError::new(name, ProviderErrorKind::Stream, message)
}

/// Reads a whole answer's body, failing with a decode error that quotes its start. (The
/// provider counted the body's JSON values before: [`HttpProvider`](crate::protocol::HttpProvider).)
pub(crate) fn parse_body<'de, T: serde::Deserialize<'de>>(
    name: &str,
    body: &'de [u8],
) -> Result<T, ProviderError> {
    serde_json::from_slice(body).map_err(|e| {
        let text = String::from_utf8_lossy(body);
        let start: String = text.trim().chars().take(200).collect();
        decode_error(
            name,
            format!("the response is not the expected JSON ({e}): {start}"),
        )
    })
}

/// A token count: a count that is not a whole non-negative number (`null`, `-1`, `"12"`) is 0.
#[cfg(any(feature = "anthropic", feature = "gemini", feature = "openai"))]
pub(crate) fn count<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(<Count as serde::Deserialize>::deserialize(d)?
        .0
        .unwrap_or(0))
}

/// A token count read in place: a whole non-negative number as it is, any other value (read
/// through and dropped, never built) none.
#[cfg(any(feature = "anthropic", feature = "gemini", feature = "openai"))]
pub(crate) struct Count(pub(crate) Option<u64>);

#[cfg(any(feature = "anthropic", feature = "gemini", feature = "openai"))]
impl<'de> serde::Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct CountVisitor;

        impl<'de> serde::de::Visitor<'de> for CountVisitor {
            type Value = Count;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a token count")
            }

            fn visit_u64<E>(self, n: u64) -> Result<Count, E> {
                Ok(Count(Some(n)))
            }

            fn visit_i64<E>(self, n: i64) -> Result<Count, E> {
                Ok(Count(u64::try_from(n).ok()))
            }

            fn visit_f64<E>(self, _: f64) -> Result<Count, E> {
                Ok(Count(None))
            }

            fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
                Ok(Count(None))
            }

            fn visit_str<E>(self, _: &str) -> Result<Count, E> {
                Ok(Count(None))
            }

            fn visit_unit<E>(self) -> Result<Count, E> {
                Ok(Count(None))
            }

            fn visit_none<E>(self) -> Result<Count, E> {
                Ok(Count(None))
            }

            fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Count, D::Error> {
                d.deserialize_any(self)
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Count, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(Count(None))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Count, A::Error> {
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Count(None))
            }
        }

        d.deserialize_any(CountVisitor)
    }
}

/// A count that may be absent, read leniently: a value that is not a whole non-negative
/// number is none, as an absent one (read through, never built).
#[cfg(any(feature = "anthropic", feature = "openai"))]
pub(crate) fn count_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(<Count as serde::Deserialize>::deserialize(d)?.0)
}

/// An object read as `T`, for objects whose own fields are read leniently (an answer's usage,
/// its details): a value of another JSON type (a number, a string, an array, `null`) is read
/// through and is `None`, never an error that would cost the answer.
#[cfg(any(feature = "anthropic", feature = "openai"))]
pub(crate) fn lenient_object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    struct Visitor<T>(std::marker::PhantomData<T>);

    impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Visitor<T> {
        type Value = Option<T>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Option<T>, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Some)
        }

        fn visit_u64<E>(self, _: u64) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_i64<E>(self, _: i64) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_f64<E>(self, _: f64) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_bool<E>(self, _: bool) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_str<E>(self, _: &str) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_unit<E>(self) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_none<E>(self) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
            d.deserialize_any(self)
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Option<T>, A::Error> {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }

    d.deserialize_any(Visitor(std::marker::PhantomData))
}

/// An optional string borrowed from the answer when it has no escapes, for
/// `#[serde(default, borrow, deserialize_with = "wire::borrowed_text")]`: serde reads an
/// `Option<Cow<str>>` as an owned string every time (its `borrow` reaches only a `Cow` of its
/// own), which copies a field a chunk of a stream repeats (a model name) once per chunk.
#[cfg(feature = "gemini")]
pub(crate) fn borrowed_text<'de, D>(d: D) -> Result<Option<std::borrow::Cow<'de, str>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Text;

    impl<'de> serde::de::Visitor<'de> for Text {
        type Value = Option<std::borrow::Cow<'de, str>>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string or null")
        }

        fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
            Ok(Some(std::borrow::Cow::Borrowed(v)))
        }

        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(std::borrow::Cow::Owned(v.to_owned())))
        }

        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(std::borrow::Cow::Owned(v)))
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    d.deserialize_any(Text)
}

/// The unreadable events of one stream (data that is not the JSON its protocol sends: garbage,
/// a keep-alive in a form the protocol does not use), and the unreadable parts of readable ones
/// (metadata of a type the protocol does not send). Each is skipped; the first
/// [`LOGGED_UNREADABLE`] are logged as warnings, then one line says the rest are skipped without
/// one, so a stream of `data:x` events writes a handful of lines, not one per event. Past
/// [`MAX_UNREADABLE_EVENTS`](crate::http::MAX_UNREADABLE_EVENTS) unreadable events the stream
/// ends with [`HttpLimit::UnreadableEvents`](crate::http::HttpLimit::UnreadableEvents); an
/// unreadable part of a readable event never ends it.
#[derive(Debug, Default)]
pub(crate) struct UnreadableEvents {
    /// Unreadable events so far.
    events: usize,
    /// Unreadable events and parts so far.
    skipped: usize,
}

/// The unreadable events and parts of one stream logged one by one, before the line saying
/// the rest are skipped without a warning.
const LOGGED_UNREADABLE: usize = 3;

impl UnreadableEvents {
    /// One stream event's data read as `T`, or `None` for an unreadable one, skipped (past
    /// the bound, the stream's error).
    #[cfg_attr(
        not(any(
            feature = "openai",
            feature = "gemini",
            feature = "bedrock",
            feature = "cohere"
        )),
        allow(dead_code)
    )]
    pub(crate) fn read<'de, T: serde::Deserialize<'de>>(
        &mut self,
        name: &str,
        data: &'de str,
    ) -> Result<Option<T>, ProviderError> {
        match serde_json::from_str(data) {
            Ok(event) => Ok(Some(event)),
            Err(error) => self.skip(name, &error).map(|()| None),
        }
    }

    /// Skips an event that could not be read (`error`): logged while few were; past
    /// [`MAX_UNREADABLE_EVENTS`](crate::http::MAX_UNREADABLE_EVENTS), the stream's error.
    pub(crate) fn skip(
        &mut self,
        name: &str,
        error: &serde_json::Error,
    ) -> Result<(), ProviderError> {
        self.events = self.events.saturating_add(1);
        if self.events > crate::http::MAX_UNREADABLE_EVENTS {
            return Err(crate::http::limits::too_many_unreadable_events(name));
        }
        if self.log(name) {
            tracing::warn!(provider = %name, error = crate::http::shown_json_error(error), "skipping an unreadable stream event");
        }
        Ok(())
    }

    /// Skips metadata of a readable event that could not be read (`error`): logged while few
    /// were.
    #[cfg_attr(not(feature = "gemini"), allow(dead_code))]
    pub(crate) fn skip_metadata(&mut self, name: &str, error: &str) {
        if self.log(name) {
            tracing::warn!(provider = %name, error, "skipping unreadable answer metadata");
        }
    }

    /// Counts one more unreadable event or part: whether to log it (one of the first few).
    /// The one after them logs that the rest are skipped without a warning.
    fn log(&mut self, name: &str) -> bool {
        self.skipped = self.skipped.saturating_add(1);
        if self.skipped == LOGGED_UNREADABLE + 1 {
            tracing::warn!(
                provider = %name,
                max_events = crate::http::MAX_UNREADABLE_EVENTS,
                "skipping more unreadable stream events and metadata without a warning; past \
                 max_events unreadable events the stream ends"
            );
        }
        self.skipped <= LOGGED_UNREADABLE
    }
}

/// The JSON values a stream keeps across its events as parsed values (citations, server tool
/// blocks, output items, parts of kinds kept whole), counted against
/// [`MAX_JSON_VALUES`](llm_tools_core::json_values::MAX_JSON_VALUES) for the whole stream:
/// each event is within the limit by itself, and this keeps many small events from adding up
/// to many times the stream's bytes in memory. An event that keeps values is charged what its
/// text holds (an upper bound); events of text deltas are never counted. Each tool call a
/// stream opens is charged [`VALUES_PER_CALL`] besides, however little its event says
/// (`{"tool_calls":[{},{},…]}` opens a call with every three bytes), so a stream opens at most
/// some 130,000 calls.
///
/// A whole (non-streamed) answer is counted by one of its own
/// ([`whole_answer`](Self::whole_answer)): its values were counted before it was parsed, and
/// each call it opens is charged the same [`VALUES_PER_CALL`] before the call is built, so a
/// whole answer opens no more calls than a stream (`[{},{},…]` of 500,000 calls fits in the
/// value limit, and would be 500,000 calls and as many tool results in the history).
#[derive(Debug, Default)]
pub(crate) struct KeptValues {
    values: usize,
    /// Counting a whole answer, not a stream (which the error names).
    whole_answer: bool,
}

/// What one tool call a stream opens is charged in [`KeptValues`]: what a call keeps (its id,
/// name, arguments, state and event) is some 200 bytes, as much as a few parsed values.
pub(crate) const VALUES_PER_CALL: usize = 8;

impl KeptValues {
    /// The count of one whole (non-streamed) answer.
    pub(crate) fn whole_answer() -> Self {
        Self {
            values: 0,
            whole_answer: true,
        }
    }

    /// Charges the values `text` holds, and at least [`VALUES_PER_CALL`]: keeping a part whole
    /// costs its own wrapper in the answer (a map of a few entries, its place in the message's
    /// skeleton), some hundreds of bytes however small the part (`{}` holds one value), as
    /// much as a call. Past the limit, the error
    /// ([`HttpLimit::JsonValues`](crate::http::HttpLimit::JsonValues)).
    pub(crate) fn keep(&mut self, name: &str, text: &str) -> Result<(), ProviderError> {
        self.charge(
            name,
            llm_tools_core::json_values::count_values(text.as_bytes()).max(VALUES_PER_CALL),
        )
    }

    /// Charges a tool call the answer opens ([`VALUES_PER_CALL`]).
    pub(crate) fn keep_call(&mut self, name: &str) -> Result<(), ProviderError> {
        self.charge(name, VALUES_PER_CALL)
    }

    /// Charges `calls` tool calls at once, before any of them is built.
    #[cfg_attr(
        not(any(feature = "openai", feature = "ollama", feature = "cohere")),
        allow(dead_code)
    )]
    pub(crate) fn keep_calls(&mut self, name: &str, calls: usize) -> Result<(), ProviderError> {
        self.charge(name, calls.saturating_mul(VALUES_PER_CALL))
    }

    fn charge(&mut self, name: &str, values: usize) -> Result<(), ProviderError> {
        self.values = self.values.saturating_add(values);
        if self.values > llm_tools_core::json_values::MAX_JSON_VALUES {
            return Err(if self.whole_answer {
                crate::http::limits::answer_keeps_too_many_values(
                    name,
                    self.values,
                    VALUES_PER_CALL,
                )
            } else {
                crate::http::limits::stream_keeps_too_many_values(name, self.values)
            });
        }
        Ok(())
    }
}

/// A part of an answer or event kept unparsed (`RawValue`) and read when it is needed;
/// unreadable means "nothing there".
pub(crate) fn value_of(raw: Option<&RawValue>) -> Option<Value> {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
}

/// An error object the provider reported inside an answer or a stream
/// (`{"type" or "status": …, "code": …, "message": …}`) as a `Stream` error with its type and
/// code; `fallback` is the message when it has none.
pub(crate) fn reported_error(name: &str, error: &Value, fallback: &str) -> ProviderError {
    let details = ErrorDetails::from_value(&serde_json::json!({ "error": error }));
    let mut e = stream_error(name, details.message.unwrap_or_else(|| fallback.to_owned()));
    if let Some(t) = details.error_type {
        e = e.with_error_type(t);
    }
    if let Some(c) = details.code {
        e = e.with_code(c);
    }
    e
}

/// [`reported_error`] (with [`REPORTED`] when it has no message), worth trying again when its
/// type is one of `retryable`.
pub(crate) fn reported_error_of_types(
    name: &str,
    error: &Value,
    retryable: &[&str],
) -> ProviderError {
    let e = reported_error(name, error, REPORTED);
    let retryable = e.error_type().is_some_and(|t| retryable.contains(&t));
    e.with_retryable(retryable)
}

/// The message of an error the provider reported without one.
pub(crate) const REPORTED: &str = "the provider reported an error";

/// The stream ended before its terminal event (`missing` says which): worth trying again.
pub(crate) fn cut_short(name: &str, missing: &str) -> ProviderError {
    stream_error(
        name,
        format!("the stream ended before the answer was complete ({missing})"),
    )
    .with_retryable(true)
}

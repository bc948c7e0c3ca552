//! Structured output: the JSON shape the model's final answer must take ([`OutputSchema`]), and
//! reading the answer back as a typed value ([`Message::parsed`]).
//!
//! A chat with an output schema ([`Chat::with_output`](crate::Chat::with_output)) sends it with
//! every request in the provider's own form (OpenAI's `text.format` / `response_format` in
//! strict mode, Anthropic's `output_config.format`, Gemini's `responseJsonSchema`, Bedrock's
//! `outputConfig.textFormat`, Cohere's and Ollama's JSON formats). Tools keep working: the model
//! calls them as usual, and the turn ends when it answers with the object.
//!
//! ```
//! use llm_tools_core::chat::Chat;
//! use llm_tools_core::testing::ScriptedProvider;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
//! struct Person {
//!     name: String,
//!     age: u32,
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let model = ScriptedProvider::new().then_text(r#"{"name": "John", "age": 30}"#);
//! let mut chat = Chat::new(model.clone());
//! chat.with_output::<Person>()?;
//! let person: Person = chat.ask("Generate a person named John who is 30").await?.parsed()?;
//! assert_eq!(person, Person { name: "John".into(), age: 30 });
//! assert_eq!(model.requests()[0].output.as_ref().map(|o| o.name().to_owned()).as_deref(), Some("Person"));
//! # Ok::<_, llm_tools_core::Error>(())
//! # }).unwrap();
//! ```

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::json_values::{MAX_JSON_VALUES, too_many_values};
use crate::spec::DefinitionCache;
use crate::{error::Error, message::Message};

/// Decodes an answer as a Rust type: why it does not fit, or nothing.
type AnswerCheck = fn(&str) -> Result<(), String>;

/// The name sent with a literal schema that has none.
pub const DEFAULT_OUTPUT_NAME: &str = "response";

/// The JSON shape the model's final answer must take: a name (OpenAI and Bedrock send it), a
/// JSON Schema whose root is an object, whether the provider should enforce it strictly, and
/// how many times the chat asks again when an answer does not fit.
///
/// ```
/// use llm_tools_core::OutputSchema;
/// use serde_json::json;
///
/// let literal = OutputSchema::new("person", json!({
///     "type": "object",
///     "properties": {"name": {"type": "string"}},
///     "required": ["name"]
/// }))?;
/// assert_eq!(literal.name(), "person");
/// assert!(literal.is_strict());
///
/// // A root that is not an object is refused before any request.
/// assert!(OutputSchema::new("names", json!({"type": "array"})).is_err());
/// # Ok::<_, llm_tools_core::Error>(())
/// ```
#[derive(Serialize, Deserialize)]
pub struct OutputSchema {
    name: String,
    schema: Value,
    #[serde(default = "yes")]
    strict: bool,
    #[serde(default, skip_serializing_if = "is_zero")]
    retries: u8,
    /// Decodes an answer as the Rust type the schema came from; a schema restored from saved
    /// state, or a literal one, checks that the answer is one JSON object.
    #[serde(skip)]
    check: Option<AnswerCheck>,
    #[serde(skip)]
    formats: DefinitionCache,
}

impl Clone for OutputSchema {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            schema: self.schema.clone(),
            strict: self.strict,
            retries: self.retries,
            check: self.check,
            formats: DefinitionCache::default(),
        }
    }
}

fn yes() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if signature
fn is_zero(n: &u8) -> bool {
    *n == 0
}

impl PartialEq for OutputSchema {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.schema == other.schema
            && self.strict == other.strict
            && self.retries == other.retries
    }
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSchema")
            .field("name", &self.name)
            .field("schema", &self.schema)
            .field("strict", &self.strict)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// The schema of `T`, named after it (`Person`); answers are checked by decoding them as
    /// `T`. `T`'s schema must be an object (a struct, or a map).
    pub fn of<T: JsonSchema + DeserializeOwned>() -> Result<Self, Error> {
        let mut schema = Self::new(
            wire_name(&T::schema_name()),
            crate::schema::schema_for::<T>(),
        )?;
        schema.check = Some(decodes_as::<T>);
        Ok(schema)
    }

    /// A literal JSON Schema. The name may hold letters, digits, `_` and `-` (at most 64; an
    /// empty name becomes [`DEFAULT_OUTPUT_NAME`]); the root must be `{"type": "object", …}`.
    pub fn new(name: impl Into<String>, schema: Value) -> Result<Self, Error> {
        let mut name = name.into();
        if name.is_empty() {
            DEFAULT_OUTPUT_NAME.clone_into(&mut name);
        }
        if name.len() > 64
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            let reason = format!(
                "the output schema's name `{name}` may hold only letters, digits, `_` and `-`, at most 64"
            );
            return Err(crate::error::ConfigError::InvalidOutputSchema { name, reason }.into());
        }
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            let reason = format!(
                "the output schema `{name}` must have an object root (`{{\"type\": \"object\", …}}`): providers accept no other; wrap a list or a value in a struct"
            );
            return Err(crate::error::ConfigError::InvalidOutputSchema { name, reason }.into());
        }
        Ok(Self {
            name,
            schema: crate::schema::normalize(schema),
            strict: true,
            retries: 0,
            check: None,
            formats: DefinitionCache::default(),
        })
    }

    /// Whether the provider is asked to enforce the schema (on by default). Providers that
    /// enforce only a subset of JSON Schema strictly (OpenAI) send a schema outside it without
    /// `strict`.
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self.formats = DefinitionCache::default();
        self
    }

    /// How many times, within one `ask`/`complete`, the chat tells the model what was wrong
    /// with an answer that does not fit and asks again (default 0: the answer is returned as
    /// it came and [`Message::parsed`] reports the problem). Each retry is one more request,
    /// with a user message saying what was wrong; the transcript keeps both. Only `ask`,
    /// `complete` and their streaming forms retry (`step` returns each answer as it comes).
    #[must_use]
    pub fn with_retries(mut self, retries: u8) -> Self {
        self.retries = retries;
        self
    }

    /// This schema's request field in one provider dialect, built by `build` the first time a
    /// dialect asks and reused by every later request (like
    /// [`ToolSpec::cached_definition`](crate::ToolSpec::cached_definition)).
    pub fn cached_format<E>(
        &self,
        dialect: &'static str,
        build: impl FnOnce(&OutputSchema) -> Result<Box<RawValue>, E>,
    ) -> Result<Arc<RawValue>, E> {
        if let Some(found) = self.formats.get(dialect) {
            return Ok(found);
        }
        let built: Arc<RawValue> = Arc::from(build(self)?);
        Ok(self.formats.insert(dialect, built))
    }

    /// The name sent with the schema.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The neutral JSON Schema (see [`schema_for`](crate::schema_for)); each provider turns it
    /// into its dialect.
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Whether the provider is asked to enforce the schema.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// How many times the chat asks again for an answer that does not fit.
    pub fn retries(&self) -> u8 {
        self.retries
    }

    /// Why `message` does not fit, or `None` when it does: a refusal, text that is not one JSON
    /// object, or (for a schema made by [`of`](Self::of)) an object that does not decode as
    /// its type.
    pub fn mismatch(&self, message: &Message) -> Option<String> {
        if let Some(refusal) = &message.refusal {
            return Some(format!("the model refused: {refusal}"));
        }
        let text = message.text();
        let json = json_text(&text);
        if let Some(count) = too_many_values(json) {
            return Some(too_many(count));
        }
        match self.check {
            Some(check) => check(json).err(),
            None => match serde_json::from_str::<Value>(json) {
                Ok(Value::Object(_)) => None,
                Ok(_) => Some("the answer is JSON but not an object".to_owned()),
                Err(e) => Some(format!("the answer is not JSON: {e}")),
            },
        }
    }
}

/// Why an answer past the value limit is not read.
fn too_many(count: usize) -> String {
    format!(
        "the answer holds about {count} JSON values, more than the {MAX_JSON_VALUES} one answer may"
    )
}

fn decodes_as<T: DeserializeOwned>(json: &str) -> Result<(), String> {
    serde_json::from_str::<T>(json)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// `T::schema_name()` as a wire name: generic arguments and other characters become `_`.
fn wire_name(schema_name: &str) -> String {
    let mut name: String = schema_name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    while name.ends_with('_') {
        name.pop();
    }
    name
}

/// The JSON inside an answer: the text itself, or the inside of one Markdown code fence around
/// it (models asked for JSON without a provider-enforced format sometimes add one).
fn json_text(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(inner) = rest.strip_suffix("```") else {
        return trimmed;
    };
    // Drop the fence's language tag (`json`), which runs to the first newline.
    let inner = match inner.find('\n') {
        Some(newline) if inner[..newline].chars().all(|c| c.is_ascii_alphanumeric()) => {
            &inner[newline + 1..]
        }
        _ => inner,
    };
    inner.trim()
}

impl Message {
    /// The answer decoded as `T`: the text as JSON (inside a Markdown code fence, if the model
    /// wrapped it in one). A refusal is [`Error::OutputRefused`]; text that does not decode is
    /// [`Error::OutputInvalid`], which carries the raw text.
    ///
    /// ```
    /// use llm_tools_core::{Error, Message};
    ///
    /// #[derive(serde::Deserialize, Debug)]
    /// struct Point { x: i32, y: i32 }
    ///
    /// let point: Point = Message::assistant("```json\n{\"x\": 1, \"y\": 2}\n```").parsed()?;
    /// assert_eq!((point.x, point.y), (1, 2));
    ///
    /// match Message::assistant("Sure! Here it is.").parsed::<Point>() {
    ///     Err(Error::OutputInvalid { raw, .. }) => assert_eq!(raw, "Sure! Here it is."),
    ///     other => panic!("{other:?}"),
    /// }
    /// # Ok::<_, Error>(())
    /// ```
    pub fn parsed<T: DeserializeOwned>(&self) -> Result<T, Error> {
        if let Some(refusal) = &self.refusal {
            return Err(Error::OutputRefused(refusal.clone()));
        }
        let raw = self.text();
        if let Some(count) = too_many_values(json_text(&raw)) {
            return Err(Error::OutputInvalid {
                reason: too_many(count),
                raw,
            });
        }
        serde_json::from_str(json_text(&raw)).map_err(|e| Error::OutputInvalid {
            reason: e.to_string(),
            raw,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_stripped_with_their_language_tag_only() {
        assert_eq!(json_text("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(json_text("```\n{\"a\":1}```"), "{\"a\":1}");
        assert_eq!(json_text("  {\"a\":1} "), "{\"a\":1}");
        assert_eq!(json_text("```{\"a\":1}"), "```{\"a\":1}");
    }

    #[test]
    fn generic_type_names_become_wire_names() {
        assert_eq!(wire_name("Page_for_Person"), "Page_for_Person");
        assert_eq!(wire_name("Vec<Person>"), "Vec_Person");
        assert_eq!(wire_name(&"x".repeat(80)).len(), 64);
    }

    #[test]
    fn a_literal_schema_checks_for_one_object() {
        let schema = OutputSchema::new("", serde_json::json!({"type": "object"})).unwrap();
        assert_eq!(schema.name(), DEFAULT_OUTPUT_NAME);
        assert_eq!(schema.mismatch(&Message::assistant("{}")), None);
        assert!(
            schema
                .mismatch(&Message::assistant("[1]"))
                .unwrap()
                .contains("not an object")
        );
        assert!(
            schema
                .mismatch(&Message::assistant("no"))
                .unwrap()
                .contains("not JSON")
        );
    }

    /// An answer past the value limit is not parsed: it does not fit, and reading it as a
    /// type fails, each saying why.
    #[test]
    fn an_answer_past_the_value_limit_is_refused_unparsed() {
        let dense = format!(r#"{{"x":[{}0]}}"#, "0,".repeat(MAX_JSON_VALUES));
        let answer = Message::assistant(dense);
        let schema = OutputSchema::new("", serde_json::json!({"type": "object"})).unwrap();
        let why = schema.mismatch(&answer).unwrap();
        assert!(why.contains("JSON values"), "{why}");
        match answer.parsed::<Value>() {
            Err(Error::OutputInvalid { reason, .. }) => assert!(reason.contains("JSON values")),
            other => panic!("{:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn names_outside_the_wire_alphabet_are_refused() {
        let object = serde_json::json!({"type": "object"});
        assert!(OutputSchema::new("a person", object.clone()).is_err());
        assert!(OutputSchema::new("x".repeat(65), object).is_err());
    }
}

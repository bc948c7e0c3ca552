//! Structured output ([`OutputSchema`]) in each dialect's request field, built once per schema
//! and dialect ([`OutputSchema::cached_format`]) and reused by every request.

use std::sync::Arc;

use llm_tools_core::{OutputSchema, ProviderError};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::answers::request_error;
use crate::schema;

/// The request field for `output` in `dialect`, built by `build` the first time.
pub(crate) fn format(
    name: &str,
    output: &OutputSchema,
    dialect: &'static str,
    build: fn(&OutputSchema) -> Value,
) -> Result<Arc<RawValue>, ProviderError> {
    output.cached_format(dialect, |o| {
        serde_json::value::to_raw_value(&build(o)).map_err(|e| {
            request_error(
                name,
                format!("the output schema `{}` cannot be written: {e}", o.name()),
            )
        })
    })
}

/// OpenAI's strict form when asked for and the schema fits it, else the neutral schema sent
/// without `strict` (what strict mode cannot express is then a hint).
fn openai_schema(output: &OutputSchema) -> (Value, bool) {
    if output.is_strict() {
        match schema::openai::strict(output.schema()) {
            Ok(strict) => return (strict.schema, true),
            Err(notes) => tracing::debug!(
                target: "llm_tools::request",
                schema = output.name(),
                reasons = ?notes,
                "the output schema cannot be strict; sending it without `strict`"
            ),
        }
    }
    (output.schema().clone(), false)
}

/// Every object closed, as Anthropic's (and Bedrock's Claude models') structured output needs;
/// the neutral schema where that cannot be done.
pub(crate) fn closed_schema(output: &OutputSchema) -> Value {
    schema::anthropic::strict(output.schema())
        .map_or_else(|_| output.schema().clone(), |s| s.schema)
}

/// Responses' `text` field: `{"format": {"type": "json_schema", …}}`.
pub(crate) fn responses_text(output: &OutputSchema) -> Value {
    let (schema, strict) = openai_schema(output);
    json!({"format": {"type": "json_schema", "name": output.name(), "schema": schema, "strict": strict}})
}

/// Chat Completions' `response_format`.
pub(crate) fn chat_response_format(output: &OutputSchema) -> Value {
    let (schema, strict) = openai_schema(output);
    json!({"type": "json_schema", "json_schema": {"name": output.name(), "schema": schema, "strict": strict}})
}

/// Anthropic's `output_config`.
pub(crate) fn anthropic_output_config(output: &OutputSchema) -> Value {
    json!({"format": {"type": "json_schema", "schema": closed_schema(output)}})
}

/// Gemini's `responseJsonSchema` (with `responseMimeType`), inside `generationConfig`.
pub(crate) fn gemini_generation_config(output: &OutputSchema) -> Value {
    let schema = schema::gemini::json_schema(output.schema())
        .map_or_else(|_| output.schema().clone(), |s| s.schema);
    json!({"responseMimeType": "application/json", "responseJsonSchema": schema})
}

/// Gemini's older `responseSchema` (the OpenAPI subset of `parameters`), for a configuration
/// that sends schemas that way ([`SchemaField::Parameters`](crate::gemini::SchemaField)); a
/// schema the subset cannot express goes as `responseJsonSchema` instead.
pub(crate) fn gemini_legacy_generation_config(output: &OutputSchema) -> Value {
    match schema::gemini::parameters(output.schema()) {
        Ok(legacy) => {
            json!({"responseMimeType": "application/json", "responseSchema": legacy.schema})
        }
        Err(notes) => {
            tracing::debug!(
                target: "llm_tools::request",
                schema = output.name(),
                reasons = ?notes,
                "the output schema does not fit `responseSchema`; sending `responseJsonSchema`"
            );
            gemini_generation_config(output)
        }
    }
}

/// Bedrock Converse's `outputConfig`: the schema travels as a JSON string.
pub(crate) fn bedrock_output_config(output: &OutputSchema) -> Value {
    let schema = closed_schema(output).to_string();
    json!({"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"schema": schema, "name": output.name()}}}})
}

/// Cohere v2's `response_format`.
pub(crate) fn cohere_response_format(output: &OutputSchema) -> Value {
    json!({"type": "json_object", "json_schema": output.schema()})
}

/// Ollama's `format`: the schema itself, in the form its decoder keeps.
pub(crate) fn ollama_format(output: &OutputSchema) -> Value {
    schema::ollama::parameters(output.schema()).schema
}

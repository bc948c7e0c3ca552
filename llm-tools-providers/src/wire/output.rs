//! Structured output ([`OutputSchema`]) in each dialect's request field, built once per schema
//! and dialect ([`OutputSchema::cached_format`]) and reused by every request.

use std::sync::Arc;

use llm_tools_core::{OutputSchema, ProviderError};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::answers::request_error;
use crate::schema::{self, ConversionError, SchemaBudget, SchemaTooLarge};

/// A request field built from an output schema, or the budget the schema passes.
pub(crate) type Built = Result<Value, SchemaTooLarge>;

/// The request field for `output` in `dialect`, built by `build`: once, and reused, under the
/// default budget (the same for every provider with it); for each request under another (so
/// a form one provider's larger budget let through never reaches a provider whose budget
/// refuses it). A schema past `budget` is a request error naming it and the limit (the
/// application asked for that shape, so the request cannot go without it).
pub(crate) fn format(
    name: &str,
    output: &OutputSchema,
    dialect: &'static str,
    budget: &SchemaBudget,
    build: fn(&OutputSchema, &SchemaBudget) -> Built,
) -> Result<Arc<RawValue>, ProviderError> {
    let write = |o: &OutputSchema| {
        let field = build(o, budget)
            .map_err(|e| request_error(name, format!("the output schema `{}`: {e}", o.name())))?;
        serde_json::value::to_raw_value(&field).map_err(|e| {
            request_error(
                name,
                format!("the output schema `{}` cannot be written: {e}", o.name()),
            )
        })
    };
    if *budget == SchemaBudget::default() {
        output.cached_format(dialect, write)
    } else {
        write(output).map(Arc::from)
    }
}

/// The neutral schema as it is, if it is within the budget.
fn plain(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    budget.check(output.schema())?;
    Ok(output.schema().clone())
}

/// OpenAI's strict form when asked for and the schema fits it, else the neutral schema sent
/// without `strict` (what strict mode cannot express is then a hint).
fn openai_schema(
    output: &OutputSchema,
    budget: &SchemaBudget,
) -> Result<(Value, bool), SchemaTooLarge> {
    if output.is_strict() {
        match schema::openai::strict(output.schema(), budget) {
            Ok(strict) => return Ok((strict.schema, true)),
            Err(reasons) => tracing::debug!(
                target: "llm_tools::request",
                schema = output.name(),
                reasons = %reasons,
                "the output schema cannot be strict; sending it without `strict`"
            ),
        }
    }
    Ok((plain(output, budget)?, false))
}

/// Every object closed, as Anthropic's (and Bedrock's Claude models') structured output needs;
/// the neutral schema where that cannot be done.
pub(crate) fn closed_schema(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    match schema::anthropic::strict(output.schema(), budget) {
        Ok(s) => Ok(s.schema),
        Err(_) => plain(output, budget),
    }
}

/// Responses' `text` field: `{"format": {"type": "json_schema", …}}`.
pub(crate) fn responses_text(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    let (schema, strict) = openai_schema(output, budget)?;
    Ok(
        json!({"format": {"type": "json_schema", "name": output.name(), "schema": schema, "strict": strict}}),
    )
}

/// Chat Completions' `response_format`.
pub(crate) fn chat_response_format(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    let (schema, strict) = openai_schema(output, budget)?;
    Ok(
        json!({"type": "json_schema", "json_schema": {"name": output.name(), "schema": schema, "strict": strict}}),
    )
}

/// Anthropic's `output_config`.
pub(crate) fn anthropic_output_config(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    Ok(json!({"format": {"type": "json_schema", "schema": closed_schema(output, budget)?}}))
}

/// Gemini's `responseJsonSchema` (with `responseMimeType`), inside `generationConfig`.
pub(crate) fn gemini_generation_config(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    let schema = match schema::gemini::json_schema(output.schema(), budget) {
        Ok(s) => s.schema,
        Err(ConversionError::TooLarge(e)) => return Err(e),
        Err(ConversionError::Unsupported(_)) => plain(output, budget)?,
    };
    Ok(json!({"responseMimeType": "application/json", "responseJsonSchema": schema}))
}

/// Gemini's older `responseSchema` (the OpenAPI subset of `parameters`), for a configuration
/// that sends schemas that way ([`SchemaField::Parameters`](crate::gemini::SchemaField)); a
/// schema the subset cannot express (or that passes the budget once its `$ref`s are inlined)
/// goes as `responseJsonSchema` instead.
pub(crate) fn gemini_legacy_generation_config(
    output: &OutputSchema,
    budget: &SchemaBudget,
) -> Built {
    match schema::gemini::parameters(output.schema(), budget) {
        Ok(legacy) => {
            Ok(json!({"responseMimeType": "application/json", "responseSchema": legacy.schema}))
        }
        Err(reasons) => {
            tracing::debug!(
                target: "llm_tools::request",
                schema = output.name(),
                reasons = %reasons,
                "the output schema does not fit `responseSchema`; sending `responseJsonSchema`"
            );
            gemini_generation_config(output, budget)
        }
    }
}

/// Bedrock Converse's `outputConfig`: the schema travels as a JSON string.
pub(crate) fn bedrock_output_config(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    let schema = closed_schema(output, budget)?.to_string();
    Ok(
        json!({"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {"schema": schema, "name": output.name()}}}}),
    )
}

/// Cohere v2's `response_format`.
pub(crate) fn cohere_response_format(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    Ok(json!({"type": "json_object", "json_schema": plain(output, budget)?}))
}

/// Ollama's `format`: the schema itself, in the form its decoder keeps.
pub(crate) fn ollama_format(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    Ok(schema::ollama::parameters(output.schema(), budget)?.schema)
}

//! Structured output as both OpenAI protocols send it: the strict form when asked for and the
//! schema fits it, else the neutral schema without `strict`. Each protocol puts the result in
//! its own field (Responses' `text.format`, Chat Completions' `response_format`).

use llm_tools_core::OutputSchema;
use serde_json::Value;

use crate::schema::{self, SchemaBudget, SchemaTooLarge};
use crate::wire::output::plain;

/// OpenAI's strict form when asked for and the schema fits it, else the neutral schema sent
/// without `strict` (what strict mode cannot express is then a hint).
pub(crate) fn strict_if_possible(
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

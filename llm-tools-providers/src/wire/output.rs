//! Structured output ([`OutputSchema`]) in each dialect's request field, built once per schema
//! and dialect ([`OutputSchema::cached_format`]) and reused by every request.

use std::sync::Arc;

use llm_tools_core::{OutputSchema, ProviderError};
use serde_json::Value;
use serde_json::value::RawValue;

use super::answers::request_error;
use crate::schema::{self, SchemaBudget, SchemaTooLarge};

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
pub(crate) fn plain(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    budget.check(output.schema())?;
    Ok(output.schema().clone())
}

/// Every object closed, as Anthropic's (and Bedrock's Claude models') structured output needs;
/// the neutral schema where that cannot be done.
pub(crate) fn closed_schema(output: &OutputSchema, budget: &SchemaBudget) -> Built {
    match schema::anthropic::strict(output.schema(), budget) {
        Ok(s) => Ok(s.schema),
        Err(_) => plain(output, budget),
    }
}

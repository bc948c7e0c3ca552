//! Tool parameter schemas in each provider's dialect, and the portability check.
//!
//! Every tool has one neutral JSON Schema ([`ToolSpec::parameters`]); each dialect turns it
//! into what its provider accepts. [`openai::strict`] and [`anthropic::strict`] give the
//! strict-mode schemas (or say why a schema cannot be strict), [`gemini::json_schema`] and
//! [`gemini::parameters`] Gemini's two schema fields, [`ollama::parameters`] the form Ollama
//! keeps, and [`check_portability`] reports, for a set of tools, which schemas a dialect would
//! reject or weaken, so a plain `#[test]` can keep tools portable; [`check_output_portability`]
//! does the same for a chat's structured output.
//!
//! Every conversion counts against one [`SchemaBudget`] (schema objects, nesting depth, bytes,
//! `$ref`s followed) and stops as soon as it is passed, with [`SchemaTooLarge`]: a schema from
//! an MCP server is input like any other, and a few hundred bytes of `$ref`s can stand for
//! billions of objects. A tool past the budget is left out of the request, the chat's other
//! tools still go out.
//!
//! [`ToolSpec::parameters`]: llm_tools_core::ToolSpec::parameters

pub mod anthropic;
pub mod bedrock;
mod budget;
pub mod gemini;
pub mod ollama;
pub mod openai;
mod portability;
pub(crate) mod shared;

pub use budget::{ConversionError, SchemaBudget, SchemaLimit, SchemaTooLarge};
pub use portability::{
    Dialect, Finding, FindingKind, PortabilityReport, check_output_portability, check_portability,
    check_portability_within, check_spec_portability,
};

pub use shared::{SchemaNote, StrictSchema};

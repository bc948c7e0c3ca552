//! Tool parameter schemas in each provider's dialect, and the portability check.
//!
//! Every tool has one neutral JSON Schema ([`ToolSpec::parameters`]); each dialect turns it
//! into what its provider accepts. [`openai::strict`] and [`anthropic::strict`] give the
//! strict-mode schemas (or say why a schema cannot be strict), [`gemini::json_schema`] and
//! [`gemini::parameters`] Gemini's two schema fields, and [`check_portability`] reports, for a
//! set of tools, which schemas a dialect would reject or weaken, so a plain `#[test]` can keep
//! tools portable.
//!
//! [`ToolSpec::parameters`]: llm_tools_core::ToolSpec::parameters

pub mod anthropic;
pub mod gemini;
pub mod openai;
mod portability;

pub use portability::{Dialect, Finding, FindingKind, PortabilityReport, check_portability};

/// A schema in a provider's strict dialect, and what the transformation weakened.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct StrictSchema {
    /// The schema to send with `strict: true`.
    pub schema: serde_json::Value,
    /// What the strict schema no longer enforces (dropped keywords, keywords moved into the
    /// description, `oneOf` sent as `anyOf`).
    pub weakened: Vec<SchemaNote>,
}

/// A remark about one place in a schema: why it cannot be strict, or what a dialect loses.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaNote {
    /// Where, as a JSON pointer into the neutral schema (`/properties/units`); empty for the root.
    pub path: String,
    /// What.
    pub message: String,
}

impl SchemaNote {
    pub(crate) fn new(path: &str, message: impl Into<String>) -> Self {
        Self {
            path: path.to_owned(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for SchemaNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "at `{}`: {}", self.path, self.message)
        }
    }
}

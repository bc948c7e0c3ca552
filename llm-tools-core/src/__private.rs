//! Used by the code `llm-tools-macros` generates. Not public API: no semver guarantees.

pub use ::core;
pub use ::schemars;
pub use ::serde;
pub use ::serde_json;
pub use ::std;

pub use crate::args::decode as decode_args;
pub use crate::schema::{normalize as normalize_schema, schema_for};
pub use crate::spec::is_valid_tool_name;

use std::marker::PhantomData;

use serde::{Deserialize, Deserializer, Serialize};

use crate::{IntoToolOutcome, ToolError, ToolOutcome};

/// `#[serde(deserialize_with)]` for parameters with a default: `null` (what OpenAI strict mode
/// sends for an optional parameter) means "use the default".
pub fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

// Turning a tool's return value into a `ToolOutcome`, chosen by the concrete return type at the
// call site (autoref specialization):
//
//   1. `R: IntoToolOutcome` (text, `()`, `ToolOutput`, `Task`, `Result` of those) as it says;
//   2. `Result<T: Serialize, E: Into<ToolError>>`: `Ok` as JSON, `Err` as the error;
//   3. `R: Serialize`: as JSON.
//
// Generated code calls `(&&&Probe::of(&value)).__llm_tools_kind().into_outcome(value)` with the
// three `Via*` traits in scope.

/// Carries the return type for method resolution.
pub struct Probe<R>(PhantomData<fn() -> R>);

impl<R> Probe<R> {
    /// A probe for the type of `value`.
    pub fn of(_value: &R) -> Self {
        Probe(PhantomData)
    }
}

/// Rule 1.
pub struct OutcomeKind;
/// Rule 2.
pub struct ResultSerializeKind;
/// Rule 3.
pub struct SerializeKind;

impl OutcomeKind {
    /// Converts with `IntoToolOutcome`.
    pub fn into_outcome<R: IntoToolOutcome>(self, value: R) -> ToolOutcome {
        value.into_tool_outcome()
    }
}

impl ResultSerializeKind {
    /// `Ok` as JSON, `Err` as the error.
    pub fn into_outcome<T: Serialize, E: Into<ToolError>>(
        self,
        value: Result<T, E>,
    ) -> ToolOutcome {
        match value {
            Ok(v) => crate::output::serialize_outcome(&v),
            Err(e) => ToolOutcome::Error(e.into()),
        }
    }
}

impl SerializeKind {
    /// As JSON.
    pub fn into_outcome<R: Serialize>(self, value: R) -> ToolOutcome {
        crate::output::serialize_outcome(&value)
    }
}

/// Rule 1 (highest priority: matched on `&&&Probe`).
pub trait ViaOutcome {
    /// Picks rule 1.
    fn __llm_tools_kind(&self) -> OutcomeKind {
        OutcomeKind
    }
}

impl<R: IntoToolOutcome> ViaOutcome for &&Probe<R> {}

/// Rule 2 (matched after one deref).
pub trait ViaResultSerialize {
    /// Picks rule 2.
    fn __llm_tools_kind(&self) -> ResultSerializeKind {
        ResultSerializeKind
    }
}

impl<T: Serialize, E: Into<ToolError>> ViaResultSerialize for &Probe<Result<T, E>> {}

/// Rule 3 (matched after two derefs).
pub trait ViaSerialize {
    /// Picks rule 3.
    fn __llm_tools_kind(&self) -> SerializeKind {
        SerializeKind
    }
}

impl<R: Serialize> ViaSerialize for Probe<R> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Task, ToolOutput};

    macro_rules! outcome {
        ($value:expr) => {{
            #[allow(unused_imports)]
            use super::{ViaOutcome as _, ViaResultSerialize as _, ViaSerialize as _};
            let value = $value;
            (&&&Probe::of(&value))
                .__llm_tools_kind()
                .into_outcome(value)
        }};
    }

    fn text(o: ToolOutcome) -> String {
        match o {
            ToolOutcome::Output(o) => o.into_text(),
            other => panic!("expected output, got {other:?}"),
        }
    }

    #[derive(Serialize)]
    struct Forecast {
        temperature: f64,
    }

    #[test]
    fn return_types_pick_the_right_conversion() {
        assert_eq!(text(outcome!(String::from("plain"))), "plain");
        assert_eq!(text(outcome!("static")), "static");
        assert_eq!(text(outcome!(())), "");
        assert_eq!(text(outcome!(ToolOutput::text("x"))), "x");
        assert_eq!(
            text(outcome!(Forecast { temperature: 15.5 })),
            r#"{"temperature":15.5}"#
        );
        assert_eq!(text(outcome!(42_u8)), "42");
        assert_eq!(text(outcome!(Some(vec![1, 2]))), "[1,2]");
        assert_eq!(
            text(outcome!(serde_json::json!({"roll": 3}))),
            r#"{"roll":3}"#
        );
        assert_eq!(
            text(outcome!(Ok::<_, ToolError>(Forecast { temperature: 1.0 }))),
            r#"{"temperature":1.0}"#
        );
        assert_eq!(text(outcome!(Ok::<_, ToolError>(String::from("s")))), "s");
        assert!(matches!(outcome!(Task::working("w")), ToolOutcome::Task(_)));
        let e = outcome!(Err::<Forecast, _>(std::io::Error::other("db down")));
        assert!(matches!(e, ToolOutcome::Error(e) if e.is_fatal()));
        let e = outcome!(Err::<Option<Forecast>, _>(ToolError::recoverable("no")));
        assert!(matches!(e, ToolOutcome::Error(e) if e.is_recoverable()));
    }
}

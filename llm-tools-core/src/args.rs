//! Decoding the model's raw JSON arguments into typed parameters.
//!
//! The fast path is one `serde_json::from_str` straight into the tool's argument struct. Only
//! when that fails does a second pass run, to repair what models commonly send (integral numbers
//! as `3.0`, `null` or an empty string for "no arguments") and to name the failing argument.

use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

use crate::ToolError;

/// Decodes raw JSON arguments into `T`; see [`RawArgs::decode`](crate::RawArgs::decode).
pub fn decode<T: DeserializeOwned>(raw: &str, accepted: &[&str]) -> Result<T, ToolError> {
    match serde_json::from_str::<T>(raw) {
        Ok(v) => Ok(v),
        Err(_) => decode_slowly(raw, accepted),
    }
}

#[cold]
fn decode_slowly<T: DeserializeOwned>(raw: &str, accepted: &[&str]) -> Result<T, ToolError> {
    let trimmed = raw.trim();
    let mut value: Value = if trimmed.is_empty() {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_str(trimmed).map_err(|e| {
            ToolError::recoverable(format!(
                "the arguments are not valid JSON ({e}); send one JSON object{}",
                accepted_list(accepted, " with ")
            ))
        })?
    };
    if value.is_null() {
        value = Value::Object(serde_json::Map::new());
    }
    if !value.is_object() {
        return Err(ToolError::recoverable(format!(
            "the arguments must be a JSON object, not {}{}",
            kind_of(&value),
            accepted_list(accepted, "; accepted arguments: ")
        )));
    }
    integral_floats_to_integers(&mut value);
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let location = if path.is_empty() || path == "." {
            String::new()
        } else {
            format!("argument `{path}`: ")
        };
        ToolError::recoverable(format!(
            "invalid arguments: {location}{inner}{}",
            accepted_list(accepted, "; accepted arguments: ")
        ))
    })
}

fn accepted_list(accepted: &[&str], lead: &str) -> String {
    if accepted.is_empty() {
        if lead.starts_with(';') {
            "; this tool takes no arguments".to_owned()
        } else {
            String::new()
        }
    } else {
        let names: Vec<String> = accepted.iter().map(|a| format!("`{a}`")).collect();
        format!("{lead}{}", names.join(", "))
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Gemini sends every number as a float; integral ones decode into integer parameters.
fn integral_floats_to_integers(v: &mut Value) {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: larger floats are not exact integers
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() <= EXACT
            {
                // The cast is exact: `f` is integral and within ±2^53.
                #[allow(clippy::cast_possible_truncation)]
                let i = f as i64;
                *n = Number::from(i);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_floats_to_integers),
        Value::Object(map) => map.values_mut().for_each(integral_floats_to_integers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Args {
        city: String,
        days: u32,
        #[serde(default)]
        units: Option<String>,
        #[serde(default)]
        scores: Vec<i64>,
    }

    const ACCEPTED: &[&str] = &["city", "days", "units", "scores"];

    fn err(raw: &str) -> String {
        decode::<Args>(raw, ACCEPTED).unwrap_err().to_string()
    }

    #[test]
    fn decodes_in_one_pass() {
        let a: Args = decode(r#"{"city":"Berlin","days":3}"#, ACCEPTED).unwrap();
        assert_eq!(a.city, "Berlin");
        assert_eq!(a.days, 3);
        assert_eq!(a.units, None);
    }

    #[test]
    fn integral_floats_decode_into_integers_even_nested() {
        let a: Args = decode(r#"{"city":"B","days":3.0,"scores":[1.0,2]}"#, ACCEPTED).unwrap();
        assert_eq!(a.days, 3);
        assert_eq!(a.scores, vec![1, 2]);
        assert!(err(r#"{"city":"B","days":3.5}"#).contains("argument `days`"));
    }

    #[test]
    fn errors_name_the_argument_and_list_the_accepted_ones() {
        let wrong_type = err(r#"{"city":"B","days":"three"}"#);
        assert!(
            wrong_type.contains("argument `days`: invalid type: string \"three\""),
            "{wrong_type}"
        );
        assert!(
            wrong_type.contains("accepted arguments: `city`, `days`, `units`, `scores`"),
            "{wrong_type}"
        );

        let missing = err(r#"{"days":1}"#);
        assert!(missing.contains("missing field `city`"), "{missing}");

        let unknown = err(r#"{"city":"B","days":1,"color":"red"}"#);
        assert!(unknown.contains("unknown field `color`"), "{unknown}");

        let invalid = err(r#"{"city": "B", "days": 1"#);
        assert!(
            invalid.starts_with("the arguments are not valid JSON"),
            "{invalid}"
        );

        let not_object = err("[1]");
        assert!(
            not_object.contains("must be a JSON object, not an array"),
            "{not_object}"
        );
    }

    #[test]
    fn empty_or_null_arguments_mean_no_arguments() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct NoArgs {}
        assert!(decode::<NoArgs>("", &[]).is_ok());
        assert!(decode::<NoArgs>("null", &[]).is_ok());
        assert!(decode::<NoArgs>(" {} ", &[]).is_ok());
        let e = decode::<NoArgs>(r#"{"x":1}"#, &[]).unwrap_err().to_string();
        assert!(e.contains("this tool takes no arguments"), "{e}");
    }
}

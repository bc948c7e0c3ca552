//! Decoding the model's raw JSON arguments into typed parameters.
//!
//! The fast path is one `serde_json::from_str` straight into the tool's argument struct. Only
//! when that fails does a second pass run, to repair what models commonly send (integral numbers
//! as `3.0`, `null` or an empty string for "no arguments") and to name the failing argument.

use serde::de::DeserializeOwned;
use serde_json::{Number, Value};

use crate::error::ToolError;
use crate::json_values::{MAX_JSON_VALUES, too_many_values};

/// Decodes raw JSON arguments into `T`; see [`RawArgs::decode`](crate::RawArgs::decode).
/// Arguments holding more JSON values than [`MAX_JSON_VALUES`] are refused unparsed, so no
/// argument type (a `serde_json::Value` parameter, the repairing pass) can turn them into
/// many times their size in memory.
pub fn decode<T: DeserializeOwned>(raw: &str, accepted: &[&str]) -> Result<T, ToolError> {
    decode_listing(raw, &|| accepted.to_vec())
}

/// [`decode`] with the accepted argument names listed by `accepted`, which runs only when the
/// arguments do not decode (to name them in the error).
///
/// Only the `serde_json::from_str::<T>` calls are generic: the limit, the repair, the error
/// messages and finding the failing argument (from the error's position in the repaired
/// text) are shared by every argument type, so each tool adds as little code as it can.
pub(crate) fn decode_listing<'a, T: DeserializeOwned>(
    raw: &str,
    accepted: &dyn Fn() -> Vec<&'a str>,
) -> Result<T, ToolError> {
    if let Some(count) = too_many_values(raw) {
        return Err(ToolError::recoverable(too_many_arguments(count)));
    }
    match serde_json::from_str::<T>(raw) {
        Ok(v) => Ok(v),
        Err(_) => decode_slowly(raw, &accepted()),
    }
}

/// What the model is told of arguments holding about `count` JSON values, past the limit.
pub(crate) fn too_many_arguments(count: usize) -> String {
    format!(
        "the arguments hold about {count} JSON values, more than the {MAX_JSON_VALUES} a call \
         may send; send fewer"
    )
}

#[cold]
fn decode_slowly<T: DeserializeOwned>(raw: &str, accepted: &[&str]) -> Result<T, ToolError> {
    let repaired = repaired(raw, accepted)?;
    serde_json::from_str::<T>(&repaired).map_err(|e| invalid(&repaired, &e, accepted))
}

/// The arguments as compact JSON text of an object, with integral floats made integers; or the
/// error for invalid JSON or a non-object.
fn repaired(raw: &str, accepted: &[&str]) -> Result<String, ToolError> {
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
    Ok(value.to_string())
}

/// The error for arguments that do not fit the parameters, naming the argument.
fn invalid(json: &str, e: &serde_json::Error, accepted: &[&str]) -> ToolError {
    let message = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = shortened(message.strip_suffix(&suffix).unwrap_or(&message), 300);
    let path = if e.line() == 1 {
        shortened(&path_at(json, e.column()), 200)
    } else {
        String::new()
    };
    let location = if path.is_empty() {
        String::new()
    } else {
        format!("argument `{path}`: ")
    };
    ToolError::recoverable(format!(
        "invalid arguments: {location}{message}{}",
        accepted_list(accepted, "; accepted arguments: ")
    ))
}

/// The path of the value being read at byte `end` of compact JSON text: `days`,
/// `person.home.zip_code`, `tags[1]`. serde_json reports an error at the position where it
/// stopped, just after the offending key or value.
fn path_at(json: &str, end: usize) -> String {
    enum Frame {
        Object { key: Option<String> },
        Array { index: usize, started: bool },
    }
    let bytes = json.as_bytes();
    let end = end.min(bytes.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut expecting_key = false;
    let mut i = 0;
    while i < end {
        let b = bytes[i];
        if !matches!(b, b']' | b',' | b':' | b' ' | b'}')
            && let Some(Frame::Array { started, .. }) = stack.last_mut()
        {
            *started = true;
        }
        match b {
            b'{' => {
                stack.push(Frame::Object { key: None });
                expecting_key = true;
            }
            b'[' => {
                stack.push(Frame::Array {
                    index: 0,
                    started: false,
                });
                expecting_key = false;
            }
            b'}' | b']' => {
                stack.pop();
                expecting_key = false;
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { key }) => {
                    *key = None;
                    expecting_key = true;
                }
                Some(Frame::Array { index, started }) => {
                    *index += 1;
                    *started = false;
                }
                None => {}
            },
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if expecting_key {
                    if let Some(Frame::Object { key }) = stack.last_mut() {
                        let text = json.get(start..=i).unwrap_or_default();
                        *key = serde_json::from_str::<String>(text).ok();
                    }
                    expecting_key = false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object { key: Some(key) } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Array {
                index,
                started: true,
            } => {
                path.push('[');
                path.push_str(&index.to_string());
                path.push(']');
            }
            _ => {}
        }
    }
    path
}

/// How many characters of a model's own text (a tool name, a value) an error or a result
/// quotes: one that quoted a model's 5 MB argument or tool name whole would send it back with
/// every later request.
pub(crate) const QUOTED_CHARS: usize = 200;

/// `text` cut to at most `max` characters, with `…` where it was cut: serde quotes a value of
/// the wrong type whole ("invalid type: string \"…\""), and a 5 MB argument must not come back
/// to the model as a 5 MB error.
pub(crate) fn shortened(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
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
    fn huge_and_deeply_nested_arguments_give_short_errors() {
        let huge = "a".repeat(5 * 1024 * 1024);
        let e = err(&format!(r#"{{"city":"B","days":"{huge}"}}"#));
        assert!(
            e.starts_with("invalid arguments: argument `days`: invalid type: string"),
            "{}",
            &e[..200]
        );
        assert!(e.len() < 1_000, "an error of {} bytes", e.len());
        let e = err(&format!(r#"{{"{huge}":1,"city":"B","days":1}}"#));
        assert!(e.len() < 1_000, "an error of {} bytes", e.len());
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let e = err(&format!(r#"{{"city":"B","days":1,"scores":{deep}}}"#));
        assert!(e.contains("recursion limit"), "{e}");
        let e = err(&"{\"a\":".repeat(10_000));
        assert!(e.contains("not valid JSON"), "{e}");
    }

    /// Arguments that would cost many times their size as parsed values are refused before
    /// any parse; as many values as real arguments hold still decode.
    #[test]
    fn arguments_past_the_value_limit_are_refused_unparsed() {
        let dense = format!(
            r#"{{"city":"B","days":"x","scores":[{}0]}}"#,
            "0,".repeat(MAX_JSON_VALUES)
        );
        let e = err(&dense);
        assert!(e.contains("JSON values") && e.contains("send fewer"), "{e}");
        let many = format!(
            r#"{{"city":"B","days":1,"scores":[{}0]}}"#,
            "1,".repeat(100_000)
        );
        let a: Args = decode(&many, ACCEPTED).unwrap();
        assert_eq!(a.scores.len(), 100_001);
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
    fn the_failing_argument_is_found_from_the_error_position() {
        let at =
            |json: &str, needle: &str| path_at(json, json.find(needle).unwrap() + needle.len());
        let json = r#"{"person":{"home":{"zip_code":5}},"tags":["a",2,[3]]}"#;
        assert_eq!(at(json, r#""zip_code":5"#), "person.home.zip_code");
        assert_eq!(at(json, r#""zip_code""#), "person.home.zip_code");
        assert_eq!(at(json, "}}"), "person");
        assert_eq!(at(json, r#""a",2"#), "tags[1]");
        assert_eq!(at(json, "[3"), "tags[2][0]");
        assert_eq!(at(json, r#","tags":["#), "tags");
        assert_eq!(at(r#"{"a\"b":1}"#, "1"), "a\"b");
        assert_eq!(path_at("{}", 2), "");
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

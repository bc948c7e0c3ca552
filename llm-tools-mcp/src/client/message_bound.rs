//! The bound on what one message from a server may hold, in JSON values as well as in bytes.
//!
//! rmcp bounds a message's bytes (16 MiB per stdio line, per JSON response and per SSE event),
//! but 16 MiB of `[{},{},…]` parse into some 400 MiB of values. So each message a server sends
//! on stdio or in an SSE event is counted before rmcp parses it
//! ([`llm_tools_core::json_values`]): one holding more than [`MAX_JSON_VALUES`] values never
//! reaches rmcp. In its place the request it answers gets an error response (a JSON-RPC error
//! naming the bound), so the call fails at once with a clear error rather than waiting for its
//! timeout; a request or a notification from the server is dropped, and so is a response whose
//! id is no string or number of at most 256 characters (no client sends another; its call then
//! ends with its own timeout). Either way a warning is logged (`llm_tools::mcp`), and the
//! session goes on.
//!
//! A response the server sends as one plain `application/json` body is counted the same way
//! between its read and its parse ([`http_post`](super::http_post)).

use llm_tools_core::json_values::{MAX_JSON_VALUES, too_many_values};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;

/// The longest request id an error response in place of a refused message echoes; a longer
/// one (no real client sends one) gets the message dropped instead.
const MAX_ECHOED_ID: usize = 256;

/// The JSON-RPC error code of the response that replaces a refused one (internal error).
const REFUSED_CODE: i32 = -32603;

/// What a refused message is seen for: its id, and whether it is a request or notification.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<IgnoredAny>,
}

/// What rmcp reads in place of a message holding too many values.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The error response to the request the message answered (one line, without its end).
    Answered(String),
    /// Nothing: the message is dropped.
    Dropped,
}

/// What rmcp reads in place of `message` (one JSON-RPC message, without its line end): `None`
/// when it may pass as it is.
pub(crate) fn refused(server: &str, message: &[u8]) -> Option<Refused> {
    let values = too_many_values(message)?;
    // As rmcp reads a line: without a byte order mark or a carriage return around it.
    let message = message.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(message);
    let message = message.strip_suffix(b"\r").unwrap_or(message);
    // Reading the id and method allocates nothing: every other field is skipped.
    let head = serde_json::from_slice::<Head<'_>>(message).ok();
    let id = head
        .as_ref()
        .filter(|head| head.method.is_none())
        .and_then(|head| head.id)
        .map(RawValue::get)
        .filter(|id| {
            id.len() <= MAX_ECHOED_ID
                && (id.starts_with('"') || id.starts_with(|c: char| c == '-' || c.is_ascii_digit()))
        });
    let Some(id) = id else {
        tracing::warn!(target: "llm_tools::mcp", server, values, max = MAX_JSON_VALUES, "dropped a message from the server: it holds more JSON values than a message may");
        return Some(Refused::Dropped);
    };
    tracing::warn!(target: "llm_tools::mcp", server, values, max = MAX_JSON_VALUES, "refused a response from the server: it holds more JSON values than a message may");
    Some(Refused::Answered(error_answer(
        id,
        &format!(
            "the server's response held more than {MAX_JSON_VALUES} JSON values, more than a message may; it was dropped"
        ),
    )))
}

/// The error response (one line) that stands for a refused answer to the request `id` (its
/// JSON text), saying why in `message`.
pub(crate) fn error_answer(id: &str, message: &str) -> String {
    let message = serde_json::Value::from(message);
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{REFUSED_CODE},"message":{message}}}}}"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(head: &str) -> String {
        format!(
            r#"{{{head}"result":{{"content":[{}{{}}]}}}}"#,
            "{},".repeat(MAX_JSON_VALUES)
        )
    }

    #[test]
    fn a_message_within_the_bound_passes() {
        let small = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
        assert_eq!(refused("s", small.as_bytes()), None);
        let long_but_sparse = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"text":"{}"}}}}"#,
            "x".repeat(2 * MAX_JSON_VALUES)
        );
        assert_eq!(refused("s", long_but_sparse.as_bytes()), None);
    }

    #[test]
    fn a_dense_response_becomes_an_error_response_to_the_same_id() {
        for id in ["7", r#""call-7""#, "-1"] {
            let message = dense(&format!(r#""jsonrpc":"2.0","id":{id},"#));
            let Some(Refused::Answered(replaced)) = refused("s", message.as_bytes()) else {
                panic!("not answered: {id}");
            };
            let parsed: serde_json::Value = serde_json::from_str(&replaced).unwrap();
            assert_eq!(parsed["id"].to_string(), id);
            assert_eq!(parsed["error"]["code"], REFUSED_CODE);
            assert!(
                parsed["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("JSON values")
            );
        }
    }

    #[test]
    fn a_dense_response_after_a_byte_order_mark_is_answered_too() {
        let message = format!("\u{feff}{}\r", dense(r#""jsonrpc":"2.0","id":9,"#));
        let Some(Refused::Answered(replaced)) = refused("s", message.as_bytes()) else {
            panic!("not answered");
        };
        assert!(
            replaced.starts_with(r#"{"jsonrpc":"2.0","id":9,"error""#),
            "{replaced}"
        );
    }

    #[test]
    fn a_dense_request_notification_or_odd_id_is_dropped() {
        for head in [
            r#""jsonrpc":"2.0","id":3,"method":"sampling/createMessage","#,
            r#""jsonrpc":"2.0","method":"notifications/message","#,
            r#""jsonrpc":"2.0","id":[1,2],"#,
            r#""jsonrpc":"2.0","id":null,"#,
        ] {
            assert_eq!(refused("s", dense(head).as_bytes()), Some(Refused::Dropped));
        }
        let long_id = format!(r#""jsonrpc":"2.0","id":"{}","#, "i".repeat(MAX_ECHOED_ID));
        assert_eq!(
            refused("s", dense(&long_id).as_bytes()),
            Some(Refused::Dropped)
        );
        assert_eq!(
            refused(
                "s",
                format!("[{}0]", "0,".repeat(MAX_JSON_VALUES)).as_bytes()
            ),
            Some(Refused::Dropped)
        );
    }
}

//! The shape of answers: every field path of a JSON body or stream event, to hold the
//! hand-written canonical answers to the fields real traffic of the protocol has.

use std::collections::BTreeSet;

use aws_smithy_eventstream::frame::read_message_from;
use llm_tools_providers::record::RecordedResponse;
use serde_json::Value;

/// Fields whose contents are the tool's or the model's, not the protocol's.
const OPAQUE: &[&str] = &[
    "args",
    "input",
    "arguments",
    "response",
    "parameters",
    "schema",
];

/// Every path of `value` (`a.b[].c`), under `prefix`.
fn paths_into(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                out.insert(path.clone());
                if !OPAQUE.contains(&k.as_str()) {
                    paths_into(v, &path, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                paths_into(item, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The paths of one stream event, under its type (`type` field, or the event-stream event's
/// name) so the same field of two events is told apart.
fn event_paths(kind: Option<&str>, payload: &Value, out: &mut BTreeSet<String>) {
    let kind = kind
        .or_else(|| payload["type"].as_str())
        .unwrap_or_default();
    paths_into(payload, &format!("<{kind}>"), out);
}

/// The paths of a response: of its JSON body (whole), or of each of its stream's events.
pub(crate) fn paths(response: &RecordedResponse, out: &mut BTreeSet<String>) {
    let content_type = response
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .and_then(|(_, v)| v.as_str())
        .unwrap_or_default();
    let bytes = response.body_bytes();
    if content_type.contains("amazon.eventstream") {
        let mut buf: &[u8] = &bytes;
        while !buf.is_empty() {
            let Ok(message) = read_message_from(&mut buf) else {
                break;
            };
            let kind = message
                .headers()
                .iter()
                .find(|h| h.name().as_str() == ":event-type")
                .and_then(|h| h.value().as_string().ok())
                .map(|s| s.as_str().to_owned());
            if let Ok(payload) = serde_json::from_slice::<Value>(message.payload()) {
                event_paths(kind.as_deref(), &payload, out);
            }
        }
    } else if content_type.contains("event-stream") || content_type.contains("ndjson") {
        for line in String::from_utf8_lossy(&bytes).lines() {
            let data = line.strip_prefix("data:").unwrap_or(line).trim();
            if let Ok(payload) = serde_json::from_str::<Value>(data) {
                event_paths(None, &payload, out);
            }
        }
    } else if let Ok(body) = serde_json::from_slice::<Value>(&bytes) {
        paths_into(&body, "", out);
    }
}

/// The paths of every successful answer recorded in `tests/fixtures/recorded/<folder>/`.
pub(crate) fn recorded_paths(folders: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for folder in folders {
        for path in crate::fixtures::recordings(folder) {
            let recording =
                llm_tools_providers::record::Recording::load(&path).expect("the recording loads");
            for i in &recording.interactions {
                if i.response.status == 200 && !i.request.url.contains("oauth2") {
                    paths(&i.response, &mut out);
                }
            }
        }
    }
    out
}

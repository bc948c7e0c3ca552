//! Framing shared by the protocols' fixtures: server-sent events, NDJSON lines, AWS
//! event-stream frames, arguments put in as raw JSON, and recorded answers.

use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message as EventMessage};
use base64::Engine as _;
use llm_tools_providers::record::{RecordedResponse, Recording};
use serde_json::Value;

/// A response of `status` whose body is `bytes`.
pub(crate) fn bytes_response(status: u16, content_type: &str, bytes: &[u8]) -> RecordedResponse {
    let mut r = RecordedResponse::new(status, content_type, "");
    r.body_base64 = Some(base64::engine::general_purpose::STANDARD.encode(bytes));
    r
}

/// One unnamed server-sent event (`data: …`).
pub(crate) fn sse_data(data: &Value) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

/// One named server-sent event (`event: name` and `data: …`).
pub(crate) fn sse_named(name: &str, data: &Value) -> Vec<u8> {
    format!("event: {name}\ndata: {data}\n\n").into_bytes()
}

/// One NDJSON line.
pub(crate) fn ndjson(line: &str) -> Vec<u8> {
    format!("{line}\n").into_bytes()
}

/// One AWS event-stream frame of the event `name` carrying `payload` (written with the AWS
/// SDKs' encoder).
pub(crate) fn event_frame(name: &str, payload: &str) -> Vec<u8> {
    let m = EventMessage::new(payload.as_bytes().to_vec())
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".to_owned().into()),
        ))
        .add_header(Header::new(
            ":event-type",
            HeaderValue::String(name.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".to_owned().into()),
        ));
    let mut out = Vec::new();
    write_message_to(&m, &mut out).expect("an event-stream frame");
    out
}

/// One AWS event-stream exception frame of the kind `kind` (`:exception-type`) carrying
/// `payload`.
pub(crate) fn exception_frame(kind: &str, payload: &str) -> Vec<u8> {
    let m = EventMessage::new(payload.as_bytes().to_vec())
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("exception".to_owned().into()),
        ))
        .add_header(Header::new(
            ":exception-type",
            HeaderValue::String(kind.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".to_owned().into()),
        ));
    let mut out = Vec::new();
    write_message_to(&m, &mut out).expect("an event-stream frame");
    out
}

/// `template`'s JSON text with each string `"__ARGS_{i}__"` replaced by `arguments[i]` as raw
/// JSON (for protocols that carry arguments as a JSON object inside the body: arguments that
/// are not JSON make the body not JSON, as a server sending them would).
pub(crate) fn with_raw_arguments(template: &Value, arguments: &[&str]) -> String {
    let mut text = template.to_string();
    for (i, a) in arguments.iter().enumerate() {
        text = text.replacen(&format!("\"__ARGS_{i}__\""), a, 1);
    }
    text
}

/// The placeholder [`with_raw_arguments`] replaces with the `i`th call's arguments.
pub(crate) fn placeholder(i: usize) -> Value {
    Value::String(format!("__ARGS_{i}__"))
}

/// The answer to the last model request of a recording in `tests/fixtures/<folder>/` whose file
/// name contains `contains`.
pub(crate) fn recorded_answer(folder: &str, contains: &str) -> RecordedResponse {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(folder);
    let path = std::fs::read_dir(&dir)
        .expect("the fixtures folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(contains))
        .unwrap_or_else(|| panic!("no fixture with `{contains}` in {}", dir.display()));
    let recording = Recording::load(&path).expect("the recording loads");
    recording
        .interactions
        .iter()
        .rev()
        .find(|i| !i.request.url.contains("oauth2"))
        .map(|i| i.response.clone())
        .expect("a model answer")
}

/// The `message` of a JSON error body at `pointer`.
pub(crate) fn message_at(response: &RecordedResponse, pointer: &str) -> String {
    let body: Value = serde_json::from_str(&response.body).expect("a JSON error body");
    body.pointer(pointer)
        .and_then(Value::as_str)
        .expect("the error's message")
        .to_owned()
}

/// The text of a tool result's content: a string, or the texts of its blocks.
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| {
                b.get("text")
                    .or_else(|| b.pointer("/document/data"))
                    .map(text_of)
                    .unwrap_or_default()
            })
            .collect(),
        Value::Object(map) => map
            .get("text")
            .map(text_of)
            .unwrap_or_else(|| content.to_string()),
        other => other.to_string(),
    }
}

/// Arguments on the wire as the cases compare them: a string of JSON read as JSON, a string
/// that is not JSON kept as the string, an object as it is.
pub(crate) fn arguments_of(arguments: &Value) -> Value {
    match arguments {
        Value::String(s) => serde_json::from_str(s).unwrap_or_else(|_| arguments.clone()),
        other => other.clone(),
    }
}

/// The blocks of `key` of the messages of `role` in `body[list]`, each as `block[inner]` where
/// `inner` is given (for block lists whose blocks wrap the call, like `{"toolUse": {…}}`).
pub(crate) fn blocks<'a>(
    body: &'a Value,
    list: &str,
    role: &str,
    key: &str,
) -> impl Iterator<Item = &'a Value> {
    body[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |m| m["role"] == role)
        .flat_map(move |m| m[key].as_array().into_iter().flatten())
}

/// A call sent back: `(id, name, arguments)` from the fields `id`, `name` and `arguments`.
pub(crate) fn call_sent(
    call: &Value,
    id: &str,
    name: &str,
    arguments: &str,
) -> (String, String, Value) {
    (
        call[id].as_str().unwrap_or_default().to_owned(),
        call.pointer(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        arguments_of(call.pointer(arguments).unwrap_or(&Value::Null)),
    )
}

//! What served calls look like on the wire: a tool's outcome as a `tools/call` result (text,
//! structured content, images, audio, embedded resources; a fatal error's text kept in the
//! server's log), the `input_required` result of a 2026-07-28 round, task states and the
//! timestamps tasks are written with. (Questions asked of the client are in the crate's
//! `elicitation` module.)

use std::time::Duration;

use base64::Engine as _;
use llm_tools_core::{Attachment, Source, Task, ToolOutcome, ToolOutput};
use rmcp::model::{CallToolResult, InputRequests, InputRequiredResult, TaskPayload};
use serde_json::{Value, json};

/// An `input_required` result asking `requests`, with the call's sealed state.
pub(super) fn input_required(requests: InputRequests, state: String) -> InputRequiredResult {
    InputRequiredResult::new(Some(requests), Some(state))
}

/// An `isError` result with `message` as its text.
pub(super) fn error_result(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text(message.into())])
}

/// What a client is told when a tool fails with a fatal error: the error itself (paths, hosts,
/// internal messages) goes to the server's log with the call's id, never to the client.
pub(super) const FATAL_ERROR_TEXT: &str =
    "the tool failed with an internal error; the server's log has the details";

/// What a tool's outcome is on the wire. A fatal error's text is logged with the tool and the
/// call's id, and the client gets [`FATAL_ERROR_TEXT`].
pub(super) fn result_of(outcome: ToolOutcome, tool: &str, call_id: &str) -> CallToolResult {
    match outcome {
        ToolOutcome::Output(output) => output_result(output),
        ToolOutcome::Error(error) if error.is_recoverable() => error_result(error.to_string()),
        ToolOutcome::Error(error) => {
            tracing::error!(target: "llm_tools::mcp", tool, call_id, error = %error, "a served tool failed");
            error_result(FATAL_ERROR_TEXT)
        }
        ToolOutcome::Task(task) => error_result(format!(
            "the tool paused ({}) and cannot finish here",
            task.status_message().unwrap_or("waiting")
        )),
        _ => error_result("the tool gave no result"),
    }
}

fn output_result(output: ToolOutput) -> CallToolResult {
    let text = output.as_text().to_owned();
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    // MCP has no search-result content: each result is a text block.
    for result in output.found() {
        content.push(json!({"type": "text", "text": result.to_text()}));
    }
    for (index, attachment) in output.attachments().iter().enumerate() {
        content.push(attachment_block(attachment, index));
    }
    // `resultType` is required on 2026-07-28; rmcp drops it for older peers.
    let mut result = json!({"resultType": "complete", "content": content});
    // A JSON object result is also the call's structured content.
    if let Ok(Value::Object(object)) = serde_json::from_str::<Value>(&text) {
        result["structuredContent"] = Value::Object(object);
    }
    serde_json::from_value(result)
        .unwrap_or_else(|e| error_result(format!("the result cannot be sent: {e}")))
}

fn attachment_block(attachment: &Attachment, index: usize) -> Value {
    let media_type = attachment.media_type();
    let name = attachment
        .filename()
        .map_or_else(|| format!("attachment-{index}"), str::to_owned);
    match attachment.source() {
        Source::Url(url) => {
            json!({"type": "resource_link", "uri": url, "name": name, "mimeType": media_type})
        }
        _ => {
            let data = attachment.base64().unwrap_or_default();
            if media_type.starts_with("image/") {
                json!({"type": "image", "data": data, "mimeType": media_type})
            } else if media_type.starts_with("audio/") {
                json!({"type": "audio", "data": data, "mimeType": media_type})
            } else if attachment.is_text() {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(&data)
                    .unwrap_or_default();
                json!({"type": "resource", "resource": {"uri": format!("attachment://{name}"), "mimeType": media_type, "text": String::from_utf8_lossy(&bytes)}})
            } else {
                json!({"type": "resource", "resource": {"uri": format!("attachment://{name}"), "mimeType": media_type, "blob": data}})
            }
        }
    }
}

/// A finished task's payload: the call's result.
pub(super) fn completed(result: CallToolResult) -> TaskPayload {
    match serde_json::to_value(result) {
        Ok(Value::Object(result)) => TaskPayload::Completed { result },
        _ => TaskPayload::Failed {
            error: serde_json::Map::from_iter([(
                "message".to_owned(),
                Value::String("the result cannot be sent".to_owned()),
            )]),
        },
    }
}

/// The wire state of a working task.
pub(super) fn wire_task(
    id: &str,
    created_at: &str,
    updated_at: &str,
    task: &Task,
) -> rmcp::model::Task {
    let mut wire = rmcp::model::Task::new(
        id,
        rmcp::model::TaskStatus::Working,
        created_at.to_owned(),
        updated_at.to_owned(),
    );
    if let Some(message) = task.status_message() {
        wire = wire.with_status_message(message);
    }
    wire.poll_interval_ms = Some(millis(
        task.poll_interval().unwrap_or(Duration::from_secs(1)),
    ));
    wire
}

/// A duration in whole milliseconds, saturating.
pub(super) fn millis(duration: Duration) -> u64 {
    duration.as_millis().try_into().unwrap_or(u64::MAX)
}

/// Now as RFC 3339 in UTC (`2026-12-04T18:05:00Z`), as task timestamps are written.
pub(super) fn rfc3339_now() -> String {
    rfc3339(unix_now())
}

/// Seconds since 1970 now.
pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Seconds since 1970 as RFC 3339 in UTC.
fn rfc3339(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn task_timestamps_are_rfc3339_in_utc() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_796_407_509), "2026-12-04T18:05:09Z");
        assert_eq!(super::rfc3339(951_868_799), "2000-02-29T23:59:59Z");
    }
}

//! A `tools/call` result as the model reads it: text joined, images and audio as attachments,
//! embedded resources inline (text) or attached (blobs), resource links as lines of text, and
//! `structuredContent` as JSON text unless the text says the same (see [`same_data`]), so the
//! model reads each result once.

use base64::Engine as _;
use llm_tools_core::{Attachment, ToolError, ToolOutcome, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// Converts a result; `isError: true` becomes a recoverable error with the result's text.
pub(crate) fn outcome(result: CallToolResult) -> ToolOutcome {
    let CallToolResult {
        content,
        structured_content,
        is_error,
        ..
    } = result;
    let mut texts: Vec<String> = Vec::new();
    let mut attachments = Vec::new();
    for block in content {
        match block {
            ContentBlock::Text(text) => texts.push(text.text),
            ContentBlock::Image(image) => {
                push_bytes(
                    &mut texts,
                    &mut attachments,
                    &image.mime_type,
                    &image.data,
                    None,
                    "image",
                );
            }
            ContentBlock::Audio(audio) => {
                push_bytes(
                    &mut texts,
                    &mut attachments,
                    &audio.mime_type,
                    &audio.data,
                    None,
                    "audio",
                );
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    texts.push(format!("Resource {uri}:\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let media_type = mime_type.unwrap_or_else(|| "application/octet-stream".into());
                    let filename = uri
                        .rsplit('/')
                        .next()
                        .filter(|f| !f.is_empty())
                        .map(str::to_owned);
                    push_bytes(
                        &mut texts,
                        &mut attachments,
                        &media_type,
                        &blob,
                        filename,
                        &uri,
                    );
                }
                other => texts.push(serde_json::to_string(&other).unwrap_or_default()),
            },
            ContentBlock::ResourceLink(link) => {
                let mut line = format!("Resource link: {} ({})", link.name, link.uri);
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(", {mime}"));
                }
                if let Some(description) = &link.description {
                    line.push_str(&format!(": {description}"));
                }
                texts.push(line);
            }
            // A block kind newer than this client: keep what it says as JSON.
            other => texts.push(serde_json::to_string(&other).unwrap_or_default()),
        }
    }
    if let Some(structured) = structured_content {
        // Servers usually repeat the structured result as a text block (MCP asks them to, for
        // clients that read only text): say it once.
        let joined = texts.join("\n");
        if !texts
            .iter()
            .chain(std::iter::once(&joined))
            .any(|text| same_data(text, &structured))
        {
            texts.push(structured.to_string());
        }
    }
    let text = texts.join("\n");
    if is_error == Some(true) {
        // An error is not spilled to a file as a long result is: it is cut.
        let message = if text.is_empty() {
            "the tool failed".to_owned()
        } else {
            crate::error::cut(&text, crate::error::MAX_SERVER_TEXT).into_owned()
        };
        return ToolOutcome::Error(ToolError::recoverable(message));
    }
    let mut output = ToolOutput::text(text);
    for attachment in attachments {
        output = output.with_attachment(attachment);
    }
    ToolOutcome::Output(output)
}

/// Whether a text block holds the same data as the structured content, in the shapes servers
/// send: the structured content serialized (`{"sum":3}`, however it is spaced or ordered), or
/// an object with one field holding the text (the filesystem server's `{"content": text}`) or
/// its value (the Python SDK's `{"result": 3}` beside the text `3`).
fn same_data(text: &str, structured: &serde_json::Value) -> bool {
    // Text past the value limit is not parsed: it is kept as text.
    if llm_tools_core::json_values::too_many_values(text).is_some() {
        return false;
    }
    let parsed = serde_json::from_str::<serde_json::Value>(text).ok();
    let equals = |value: &serde_json::Value| match value {
        serde_json::Value::String(s) => s.trim() == text.trim(),
        other => parsed.as_ref() == Some(other),
    };
    if parsed.as_ref() == Some(structured) {
        return true;
    }
    match structured.as_object() {
        Some(object) if object.len() == 1 => object.values().all(equals),
        _ => false,
    }
}

/// Decodes base64 data into an attachment; data that is not base64 is reported in the text
/// instead, so the model knows something was there.
fn push_bytes(
    texts: &mut Vec<String>,
    attachments: &mut Vec<Attachment>,
    media_type: &str,
    data: &str,
    filename: Option<String>,
    what: &str,
) {
    match base64::engine::general_purpose::STANDARD.decode(data.trim()) {
        Ok(bytes) => {
            let attachment = Attachment::bytes(media_type, bytes);
            attachments.push(match filename {
                Some(name) => attachment.with_filename(name),
                None => attachment,
            });
        }
        Err(error) => texts.push(format!(
            "[{what} ({media_type}) could not be decoded: {error}]"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap_or_default()
    }

    fn output(outcome: ToolOutcome) -> ToolOutput {
        match outcome {
            ToolOutcome::Output(output) => output,
            other => panic!("expected an output, got {other:?}"),
        }
    }

    #[test]
    fn text_blocks_are_joined() {
        let out = output(outcome(result(json!({"content": [
            {"type": "text", "text": "one"}, {"type": "text", "text": "two"}
        ]}))));
        assert_eq!(out.as_text(), "one\ntwo");
    }

    #[test]
    fn images_audio_and_blobs_become_attachments() {
        let out = output(outcome(result(json!({"content": [
            {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///tmp/report.pdf", "mimeType": "application/pdf", "blob": "JVBERi0="}},
        ]}))));
        let kinds: Vec<(&str, Option<&str>)> = out
            .attachments()
            .iter()
            .map(|a| (a.media_type(), a.filename()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("image/png", None),
                ("audio/wav", None),
                ("application/pdf", Some("report.pdf"))
            ]
        );
        assert_eq!(out.attachments()[2].base64().as_deref(), Some("JVBERi0="));
    }

    #[test]
    fn embedded_text_and_links_become_text() {
        let out = output(outcome(result(json!({"content": [
            {"type": "resource", "resource": {"uri": "test://static/1", "text": "Resource 1 body"}},
            {"type": "resource_link", "uri": "test://static/2", "name": "Resource 2", "mimeType": "text/plain"},
        ]}))));
        assert_eq!(
            out.as_text(),
            "Resource test://static/1:\nResource 1 body\nResource link: Resource 2 (test://static/2), text/plain"
        );
    }

    #[test]
    fn structured_content_is_kept_once() {
        let only = output(outcome(result(
            json!({"content": [], "structuredContent": {"sum": 3}}),
        )));
        assert_eq!(only.as_text(), r#"{"sum":3}"#);
        let repeated = output(outcome(result(json!({
            "content": [{"type": "text", "text": "{\"sum\": 3}"}],
            "structuredContent": {"sum": 3}
        }))));
        assert_eq!(repeated.as_text(), "{\"sum\": 3}");
        let beside = output(outcome(result(json!({
            "content": [{"type": "text", "text": "The sum is 3."}],
            "structuredContent": {"sum": 3}
        }))));
        assert_eq!(beside.as_text(), "The sum is 3.\n{\"sum\":3}");
    }

    /// The text the model reads for a result of `text` blocks and `structured` content.
    fn read(texts: &[&str], structured: serde_json::Value) -> String {
        let blocks: Vec<serde_json::Value> = texts
            .iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        output(outcome(result(
            json!({"content": blocks, "structuredContent": structured}),
        )))
        .as_text()
        .to_string()
    }

    #[test]
    fn the_shapes_real_servers_send_reach_the_model_once() {
        // server-filesystem: every result as text and as {"content": text}.
        let file = "line one\nline two\n";
        assert_eq!(read(&[file], json!({"content": file})), file);
        // Python SDK: a scalar result as its text and {"result": value}.
        assert_eq!(read(&["3"], json!({"result": 3})), "3");
        assert_eq!(read(&["hello"], json!({"result": "hello"})), "hello");
        assert_eq!(read(&["[1, 2]"], json!({"result": [1, 2]})), "[1, 2]");
        // server-everything and TypeScript SDK servers: the object serialized, spaced or not.
        let pretty = "{\n  \"temperature\": 22.5,\n  \"conditions\": \"Sunny\"\n}";
        assert_eq!(
            read(
                &[pretty],
                json!({"conditions": "Sunny", "temperature": 22.5})
            ),
            pretty
        );
        // The serialized JSON split over blocks.
        assert_eq!(read(&["{\"a\":", "1}"], json!({"a": 1})), "{\"a\":\n1}");
        // No text: the structured part alone.
        assert_eq!(read(&[], json!({"content": "x"})), r#"{"content":"x"}"#);
    }

    #[test]
    fn structured_content_with_other_data_than_the_text_is_kept() {
        // One field among several equal to the text: the others are data the text lacks.
        assert_eq!(
            read(&["ok"], json!({"status": "ok", "id": 7})),
            "ok\n{\"status\":\"ok\",\"id\":7}"
        );
        // One field, another value.
        assert_eq!(
            read(&["Saved."], json!({"path": "/tmp/a"})),
            "Saved.\n{\"path\":\"/tmp/a\"}"
        );
        assert_eq!(read(&["3"], json!({"result": 4})), "3\n{\"result\":4}");
    }

    #[test]
    fn is_error_is_a_recoverable_error_with_the_text() {
        let outcome = outcome(result(
            json!({"content": [{"type": "text", "text": "no such city"}], "isError": true}),
        ));
        let ToolOutcome::Error(error) = outcome else {
            panic!("expected an error")
        };
        assert!(error.is_recoverable());
        assert_eq!(error.to_string(), "no such city");
    }

    #[test]
    fn bad_base64_is_reported_in_the_text() {
        let out = output(outcome(result(json!({"content": [
            {"type": "image", "data": "not base64!", "mimeType": "image/png"}
        ]}))));
        assert!(out.attachments().is_empty());
        assert!(
            out.as_text()
                .starts_with("[image (image/png) could not be decoded"),
            "{}",
            out.as_text()
        );
    }
}

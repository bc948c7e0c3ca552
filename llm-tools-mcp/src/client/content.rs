//! A `tools/call` result as the model reads it: text joined, images and audio as attachments,
//! embedded resources inline (text) or attached (blobs), resource links as lines of text, and
//! `structuredContent` as JSON text unless the text says the same (see [`same_data`]), so the
//! model reads each result once.
//!
//! Attachments are bounded per result ([`AttachmentLimits`]): each stays in the chat's history
//! and is sent to the model with every later request, and a result may hold some 12 MiB of
//! them (a message is bounded, the number of blocks in it is not). One past the limits is
//! measured from its base64 text, never decoded, and the model reads what was left out. The
//! messages of a prompt (`McpClient::get_prompt`) are bounded the same way, over the whole
//! prompt ([`Budget`]).

use base64::Engine as _;
use llm_tools_core::{Attachment, ToolError, ToolOutcome, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

use crate::error;

/// The most attachments (images, audio, blobs of embedded resources) one tool result keeps by
/// default: 8. Every attachment stays in the chat's history and is sent to the model with each
/// later request (a chat makes up to 64 calls per answer), so a server that returns hundreds
/// of images would have each following request carry them all. Tools that return images return
/// one, or a few (a screenshot, a chart, the pages of a short document): 8 keeps them, and
/// [`McpServer::max_attachments`](crate::McpServer::max_attachments) raises it. One past it is
/// left out, and the model reads a line saying so.
pub const DEFAULT_MAX_ATTACHMENTS: usize = 8;

/// The most bytes (decoded) of attachments one tool result keeps by default: 5 MiB, over all
/// its attachments. It is the largest image Anthropic's API takes (OpenAI's and Gemini's
/// inline data are no larger than 20 MiB), and far above a screenshot or a chart as image tools
/// send them (tens to hundreds of KiB), while a single message may carry some 12 MiB. The size
/// is read from the base64 text before decoding, so an attachment past it is never decoded:
/// it is left out, and the model reads a line saying what it was and its size.
/// [`McpServer::max_attachment_bytes`](crate::McpServer::max_attachment_bytes) changes it.
pub const DEFAULT_MAX_ATTACHMENT_BYTES: usize = 5 * 1024 * 1024;

/// The longest media type or resource URI of a server's attachment shown in a line of the
/// result's text.
pub(crate) const MAX_SHOWN: usize = 256;

/// The longest media type an attachment keeps: `type/subtype` with parameters, as RFC 6838
/// bounds each name at 127 characters. An attachment with a longer one is left out (the
/// history would carry it to every later request, past every limit on attachment bytes).
pub(crate) const MAX_MEDIA_TYPE: usize = 255;

/// The longest file name an attachment keeps (most file systems' limit), in bytes; a longer
/// one, taken from the end of a resource URI, is cut.
pub(crate) const MAX_FILENAME: usize = 255;

/// How many left-out attachments of one result each get a line of the result's text; the
/// rest are counted in one more line, and the log has one warning for them all.
const MAX_LEFT_OUT_LINES: usize = 8;

/// What one tool result may keep of attachments (from the server's [`McpServer`] settings).
///
/// [`McpServer`]: crate::McpServer
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AttachmentLimits {
    /// The most attachments.
    pub(crate) count: usize,
    /// The most decoded bytes, over all the attachments.
    pub(crate) bytes: usize,
}

impl Default for AttachmentLimits {
    fn default() -> Self {
        Self {
            count: DEFAULT_MAX_ATTACHMENTS,
            bytes: DEFAULT_MAX_ATTACHMENT_BYTES,
        }
    }
}

/// What one tool result or one prompt has kept of its attachments so far, within the limits.
pub(crate) struct Budget<'a> {
    /// The server's name, for the log.
    server: &'a str,
    limits: AttachmentLimits,
    /// What the limits are for, in the model's line and the log: `tool result`, `prompt`.
    per: &'static str,
    /// The attachments kept.
    kept: usize,
    /// Their decoded bytes.
    kept_bytes: usize,
    /// The attachments left out past the limits.
    left_out: usize,
}

/// The parts of a result being read: its text lines and the attachments kept so far.
struct Parts<'a> {
    budget: Budget<'a>,
    texts: Vec<String>,
    attachments: Vec<Attachment>,
    /// The left-out attachments no line of the text names (past [`MAX_LEFT_OUT_LINES`]).
    unnamed: usize,
}

/// Converts a result of the server `server`; `isError: true` becomes a recoverable error with
/// the result's text. Attachments past `limits` are left out, and the text says so.
pub(crate) fn outcome(
    result: CallToolResult,
    server: &str,
    limits: AttachmentLimits,
) -> ToolOutcome {
    let CallToolResult {
        content,
        structured_content,
        is_error,
        ..
    } = result;
    let mut parts = Parts {
        budget: Budget::new(server, limits, "tool result"),
        texts: Vec::new(),
        attachments: Vec::new(),
        unnamed: 0,
    };
    for block in content {
        match block {
            ContentBlock::Text(text) => parts.texts.push(text.text),
            ContentBlock::Image(image) => {
                parts.push_bytes("image", &image.mime_type, &image.data, None);
            }
            ContentBlock::Audio(audio) => {
                parts.push_bytes("audio", &audio.mime_type, &audio.data, None);
            }
            ContentBlock::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    parts.texts.push(format!("Resource {uri}:\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => {
                    let media_type = mime_type.unwrap_or_else(|| "application/octet-stream".into());
                    let filename = uri.rsplit('/').next().filter(|f| !f.is_empty()).map(|f| {
                        let end = f.floor_char_boundary(MAX_FILENAME);
                        f.get(..end).unwrap_or_default().to_owned()
                    });
                    let what = format!("resource {}", error::cut(&uri, MAX_SHOWN));
                    parts.push_bytes(&what, &media_type, &blob, filename);
                }
                other => parts
                    .texts
                    .push(serde_json::to_string(&other).unwrap_or_default()),
            },
            ContentBlock::ResourceLink(link) => {
                let mut line = format!("Resource link: {} ({})", link.name, link.uri);
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(", {mime}"));
                }
                if let Some(description) = &link.description {
                    line.push_str(&format!(": {description}"));
                }
                parts.texts.push(line);
            }
            // A block kind newer than this client: keep what it says as JSON.
            other => parts
                .texts
                .push(serde_json::to_string(&other).unwrap_or_default()),
        }
    }
    let Parts {
        mut texts,
        attachments,
        unnamed,
        budget,
    } = parts;
    if unnamed > 0 {
        texts.push(format!(
            "[{unnamed} more attachments left out: past this client's limits, or not \
             decodable]"
        ));
    }
    if budget.left_out > 1 {
        tracing::warn!(
            target: "llm_tools::mcp",
            server = budget.server,
            left_out = budget.left_out,
            "attachments of a tool result past the client's limits were left out"
        );
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
            error::cut(&text, error::MAX_SERVER_TEXT).into_owned()
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

/// The size of what the base64 text `data` decodes to (exact for valid base64, which the
/// decoding checks), read without decoding it.
fn decoded_len(data: &str) -> usize {
    let padding = data
        .bytes()
        .rev()
        .take(2)
        .take_while(|&b| b == b'=')
        .count();
    // Four characters are three bytes; a last group of two or three characters (unpadded)
    // one or two.
    (data.len() / 4 * 3 + data.len() % 4 * 3 / 4).saturating_sub(padding)
}

/// A size for the model to read: bytes, KiB or MiB.
fn shown_size(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if bytes < KIB {
        format!("{bytes} bytes")
    } else if bytes < MIB {
        format!("{:.1} KiB", bytes as f64 / KIB as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    }
}

impl Parts<'_> {
    /// An attachment of base64 `data`, within the limits (see [`Budget::take`]); else the text
    /// says what became of it.
    fn push_bytes(&mut self, what: &str, media_type: &str, data: &str, filename: Option<String>) {
        match self.budget.take(what, media_type, data, filename) {
            Ok(attachment) => self.attachments.push(attachment),
            Err(_) if self.budget.left_out > MAX_LEFT_OUT_LINES => self.unnamed += 1,
            Err(line) => self.texts.push(line),
        }
    }
}

impl<'a> Budget<'a> {
    /// Nothing kept yet of what one `per` (`tool result`, `prompt`) of `server` may keep.
    pub(crate) fn new(server: &'a str, limits: AttachmentLimits, per: &'static str) -> Self {
        Self {
            server,
            limits,
            per,
            kept: 0,
            kept_bytes: 0,
            left_out: 0,
        }
    }

    /// How many attachments were left out past the limits (or not decodable).
    pub(crate) fn left_out(&self) -> usize {
        self.left_out
    }

    /// Decodes base64 data into an attachment, within the limits; data past them is measured,
    /// never decoded, and left out, and data that is not base64 is reported instead: either
    /// way the `Err` is a line for the text, so the model knows something was there. `what`
    /// is the kind of block (`image`, `audio`, `resource <uri>`).
    pub(crate) fn take(
        &mut self,
        what: &str,
        media_type: &str,
        data: &str,
        filename: Option<String>,
    ) -> Result<Attachment, String> {
        let data = data.trim();
        let shown_type = error::cut(media_type, MAX_SHOWN);
        if media_type.len() > MAX_MEDIA_TYPE {
            self.left_out = self.left_out.saturating_add(1);
            return Err(format!(
                "[{what} left out: its media type ({shown_type}) is longer than the \
                 {MAX_MEDIA_TYPE} bytes one can be]"
            ));
        }
        let size = decoded_len(data);
        let limits = self.limits;
        let past = if self.kept >= limits.count {
            Some((
                match limits.count {
                    1 => "1 attachment".to_owned(),
                    count => format!("{count} attachments"),
                },
                "McpServer::max_attachments",
            ))
        } else if size > limits.bytes.saturating_sub(self.kept_bytes) {
            Some((
                format!("{} of attachments", shown_size(limits.bytes)),
                "McpServer::max_attachment_bytes",
            ))
        } else {
            None
        };
        if let Some((limit, option)) = past {
            self.left_out = self.left_out.saturating_add(1);
            // The first is logged as a warning; the rest of a result's are counted in one.
            if self.left_out == 1 {
                tracing::warn!(
                    target: "llm_tools::mcp",
                    server = self.server,
                    kind = what,
                    media_type = &*shown_type,
                    bytes = size,
                    limit = limit.as_str(),
                    option,
                    "an attachment of a {} is past the client's limit and left out",
                    self.per
                );
            }
            return Err(format!(
                "[{what} ({shown_type}, {}) left out: past this client's limit of {limit} per \
                 {} (the application can raise it with `{option}`)]",
                shown_size(size),
                self.per
            ));
        }
        match base64::engine::general_purpose::STANDARD.decode(data) {
            Ok(bytes) => {
                self.kept = self.kept.saturating_add(1);
                self.kept_bytes = self.kept_bytes.saturating_add(bytes.len());
                let attachment = Attachment::bytes(media_type, bytes);
                Ok(match filename {
                    Some(name) => attachment.with_filename(name),
                    None => attachment,
                })
            }
            Err(error) => {
                self.left_out = self.left_out.saturating_add(1);
                Err(format!(
                    "[{what} ({shown_type}) could not be decoded: {error}]"
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: serde_json::Value) -> CallToolResult {
        serde_json::from_value(value).unwrap_or_default()
    }

    /// A result as the model reads it, within the default limits.
    fn outcome(result: CallToolResult) -> ToolOutcome {
        super::outcome(result, "s", AttachmentLimits::default())
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

    /// An image block of `bytes` bytes (decoded).
    fn image(bytes: usize) -> serde_json::Value {
        let data = base64::engine::general_purpose::STANDARD.encode(vec![7u8; bytes]);
        json!({"type": "image", "data": data, "mimeType": "image/png"})
    }

    /// The lines of the result's text that say what was left out.
    fn left_out(out: &ToolOutput) -> Vec<String> {
        out.as_text()
            .lines()
            .filter(|line| line.contains("left out"))
            .map(str::to_owned)
            .collect()
    }

    /// Many attachments past the limits (or not decodable) in one result: the first few get a
    /// line each, the rest one line with their count, never a line (or a warning) each.
    #[test]
    fn a_flood_of_left_out_attachments_is_counted_in_one_line() {
        let mut blocks: Vec<serde_json::Value> = (0..10_000).map(|_| image(1)).collect();
        blocks.push(json!({"type": "image", "data": "not base64!", "mimeType": "image/png"}));
        let limits = AttachmentLimits {
            count: 2,
            bytes: 1024,
        };
        let out = output(super::outcome(
            result(json!({ "content": blocks })),
            "s",
            limits,
        ));
        assert_eq!(out.attachments().len(), 2);
        let lines = left_out(&out);
        assert_eq!(lines.len(), MAX_LEFT_OUT_LINES + 1, "{lines:?}");
        let last = lines.last().unwrap();
        assert!(
            last.starts_with(&format!(
                "[{} more attachments left out",
                10_001 - 2 - MAX_LEFT_OUT_LINES
            )),
            "{last}"
        );
        assert!(out.as_text().len() < 2_000, "{}", out.as_text().len());
    }

    /// A file name taken from a resource URI is cut to 255 bytes; a media type longer than
    /// one can be leaves its attachment out, and the text says so. Neither counts as bytes of
    /// attachments, so neither may grow the history past the limits.
    #[test]
    fn a_long_file_name_is_cut_and_a_long_media_type_leaves_its_attachment_out() {
        let blob = base64::engine::general_purpose::STANDARD.encode(b"hi");
        let uri = format!("res://x/{}", "é".repeat(100_000));
        let out = output(outcome(result(json!({"content": [
            {"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain", "blob": blob}},
            {"type": "image", "data": blob, "mimeType": format!("image/{}", "x".repeat(1_000_000))},
        ]}))));
        assert_eq!(out.attachments().len(), 1);
        let filename = out.attachments()[0].filename().unwrap();
        assert!(filename.len() <= MAX_FILENAME, "{}", filename.len());
        assert!(filename.starts_with("éé"));
        let lines = left_out(&out);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].contains("longer than the 255 bytes"),
            "{}",
            lines[0]
        );
        assert!(out.as_text().len() < 2_000, "{}", out.as_text().len());
    }

    #[test]
    fn the_size_is_read_from_the_base64_text() {
        for n in 0..40 {
            let data = base64::engine::general_purpose::STANDARD.encode(vec![1u8; n]);
            assert_eq!(decoded_len(&data), n, "{data}");
            let unpadded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(vec![1u8; n]);
            assert_eq!(decoded_len(&unpadded), n, "{unpadded}");
        }
    }

    #[test]
    fn attachments_past_the_count_are_left_out_and_the_model_reads_so() {
        let mut blocks = vec![json!({"type": "text", "text": "twelve charts"})];
        blocks.extend((0..12).map(|_| image(100)));
        blocks.push(json!({"type": "text", "text": "the end"}));
        let out = output(outcome(result(json!({ "content": blocks }))));
        assert_eq!(out.attachments().len(), DEFAULT_MAX_ATTACHMENTS);
        let lines = left_out(&out);
        assert_eq!(
            lines.len(),
            12 - DEFAULT_MAX_ATTACHMENTS,
            "{}",
            out.as_text()
        );
        assert_eq!(
            lines[0],
            "[image (image/png, 100 bytes) left out: past this client's limit of 8 attachments \
             per tool result (the application can raise it with `McpServer::max_attachments`)]"
        );
        // The rest of the result goes on as it is.
        assert!(out.as_text().starts_with("twelve charts\n"));
        assert!(out.as_text().ends_with("\nthe end"));
    }

    #[test]
    fn an_attachment_past_the_bytes_is_left_out_and_smaller_ones_are_kept() {
        let out = output(outcome(result(json!({"content": [
            image(3 * 1024 * 1024),
            image(3 * 1024 * 1024),
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        ]}))));
        let kept: Vec<(&str, Option<usize>)> = out
            .attachments()
            .iter()
            .map(|a| {
                let len = match a.source() {
                    llm_tools_core::Source::Bytes(bytes) => Some(bytes.len()),
                    _ => None,
                };
                (a.media_type(), len)
            })
            .collect();
        assert_eq!(
            kept,
            [("image/png", Some(3 * 1024 * 1024)), ("audio/wav", Some(4))]
        );
        assert_eq!(
            left_out(&out),
            [
                "[image (image/png, 3.0 MiB) left out: past this client's limit of 5.0 MiB of \
              attachments per tool result (the application can raise it with \
              `McpServer::max_attachment_bytes`)]"
            ]
        );
    }

    #[test]
    fn data_past_the_bytes_is_never_decoded() {
        // 8 MiB of text that is not base64: decoded, it would be reported as such; measured,
        // it is past the limit and left out without a decoding.
        let junk = "!".repeat(8 * 1024 * 1024);
        let out = output(outcome(result(json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///tmp/dump.bin", "blob": junk}},
        ]}))));
        assert!(out.attachments().is_empty());
        assert_eq!(
            out.as_text(),
            "[resource file:///tmp/dump.bin (application/octet-stream, 6.0 MiB) left out: past \
             this client's limit of 5.0 MiB of attachments per tool result (the application \
             can raise it with `McpServer::max_attachment_bytes`)]"
        );
    }

    #[test]
    fn the_limits_are_the_servers_settings() {
        let limits = AttachmentLimits {
            count: 1,
            bytes: 16,
        };
        let read = |blocks: Vec<serde_json::Value>| {
            output(super::outcome(
                result(json!({ "content": blocks })),
                "s",
                limits,
            ))
        };
        let out = read(vec![image(16), image(1)]);
        assert_eq!(out.attachments().len(), 1);
        assert!(
            left_out(&out)[0].contains("limit of 1 attachment per"),
            "{}",
            out.as_text()
        );
        let out = read(vec![image(17)]);
        assert!(out.attachments().is_empty());
        assert!(left_out(&out)[0].contains("17 bytes"), "{}", out.as_text());
        // Raised, the same result is kept whole.
        let raised = AttachmentLimits {
            count: 2,
            bytes: 17,
        };
        let out = output(super::outcome(
            result(json!({"content": [image(16), image(1)]})),
            "s",
            raised,
        ));
        assert_eq!(out.attachments().len(), 2);
        assert!(left_out(&out).is_empty());
    }

    #[test]
    fn a_long_media_type_or_uri_is_cut_in_the_text() {
        let long = "x".repeat(100_000);
        let out = output(super::outcome(
            result(json!({"content": [
                {"type": "resource", "resource": {"uri": format!("file:///{long}"), "mimeType": long, "blob": "AAAA"}},
            ]})),
            "s",
            AttachmentLimits { count: 0, bytes: 0 },
        ));
        assert!(out.attachments().is_empty());
        assert!(out.as_text().len() < 1024, "{}", out.as_text().len());
    }
}

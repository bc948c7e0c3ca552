//! Attachments in tool results, as the protocols send them, and the text they are inlined in.

use llm_tools_core::{Attachment, ProviderError, Source};

use super::answers::request_error;

/// Inline text of a text attachment, as the model reads it in a tool result.
pub(crate) fn attachment_as_text(a: &Attachment) -> Option<String> {
    if !a.is_text() {
        return None;
    }
    let Source::Bytes(bytes) = a.source() else {
        return None;
    };
    let name = a.filename().unwrap_or("attachment");
    Some(format!(
        "<file name='{name}' mime_type='{}'>{}</file>",
        a.media_type(),
        String::from_utf8_lossy(bytes)
    ))
}

/// The request error for an attachment the protocol cannot send: what it `takes` ("Ollama
/// takes images and text as attachments"), then the attachment's name and media type.
pub(crate) fn attachment_refused(name: &str, takes: &str, a: &Attachment) -> ProviderError {
    request_error(
        name,
        format!(
            "{takes}; `{}` is `{}`",
            a.filename().unwrap_or("an attachment"),
            a.media_type()
        ),
    )
}

/// Appends `line` to the text of a tool result written as one string, on a line of its own.
pub(crate) fn push_line(text: &mut String, line: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(line);
}

/// A URL the provider can fetch: the attachment's URL, or its bytes as a data URL.
pub(crate) fn attachment_url(a: &Attachment) -> String {
    match a.source() {
        Source::Url(u) => u.clone(),
        _ => format!(
            "data:{};base64,{}",
            a.media_type(),
            a.base64().unwrap_or_default()
        ),
    }
}

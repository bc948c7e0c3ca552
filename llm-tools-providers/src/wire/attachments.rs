//! Attachments in tool results, as the protocols send them.

use llm_tools_core::{Attachment, Source};

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

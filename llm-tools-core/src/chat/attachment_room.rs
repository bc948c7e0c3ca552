//! The room a chat's tool results have for attachments
//! ([`ToolOptions::with_max_chat_attachment_bytes`](super::ToolOptions::with_max_chat_attachment_bytes)).
//!
//! Every request sends the whole history, so each inline attachment a tool (an MCP server
//! among them) returns is sent again with every later request of the chat. The tool results
//! of a chat hold at most so many bytes of inline attachments: a result's attachment that
//! would take them past it is left out, and the result's text says so, so the model knows what
//! it did not get. An attachment given by URL holds no bytes and always fits.

use crate::content::{Attachment, Part, Source};
use crate::message::{Message, Role};
use crate::output::ToolOutput;

use super::ledger::{CallState, Ledger};

/// The most characters of an attachment's media type a note about it shows.
const MAX_SHOWN_MEDIA_TYPE: usize = 100;

/// The bytes of an attachment held inline (0 for one given by URL).
fn inline_bytes(attachment: &Attachment) -> usize {
    match attachment.source() {
        Source::Bytes(bytes) => bytes.len(),
        Source::Url(_) => 0,
    }
}

/// The inline attachment bytes of a tool result.
fn held_by(result: &Message) -> usize {
    result
        .content
        .iter()
        .map(|part| match part {
            Part::Attachment(attachment) => inline_bytes(attachment),
            Part::Text { .. } | Part::SearchResult(_) => 0,
        })
        .fold(0, usize::saturating_add)
}

/// The inline attachment bytes the tool results of `messages` hold, and those of the round's
/// results not appended yet.
pub(crate) fn held(messages: &[Message], round: Option<&Ledger>) -> usize {
    let appended = messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(held_by)
        .fold(0, usize::saturating_add);
    let waiting = round
        .into_iter()
        .flat_map(|round| &round.calls)
        .filter_map(|entry| match &entry.state {
            CallState::Finished { result } => Some(held_by(result)),
            _ => None,
        })
        .fold(0, usize::saturating_add);
    appended.saturating_add(waiting)
}

/// Keeps the attachments of `output` that fit, in order, in `room` bytes (of the chat's
/// `limit`); each one left out is named in the result's text, and logged.
pub(crate) fn fit(output: &mut ToolOutput, mut room: usize, limit: usize) {
    for attachment in output.take_attachments() {
        let bytes = inline_bytes(&attachment);
        if bytes <= room {
            room -= bytes;
            output.push_attachment(attachment);
            continue;
        }
        // The media type is the tool's (an MCP server's) text: the note and the log show its
        // start only.
        let media_type = crate::args::shortened(attachment.media_type(), MAX_SHOWN_MEDIA_TYPE);
        let media_type = media_type.as_str();
        tracing::warn!(
            target: "llm_tools::tool",
            media_type,
            bytes,
            limit,
            "an attachment of a tool result was left out: the chat's tool results hold as many \
             attachment bytes as they may (ToolOptions::with_max_chat_attachment_bytes)"
        );
        output.push_line(&format!(
            "[An attachment of this result ({media_type}, {bytes} bytes) was left out: this \
             chat keeps at most {limit} bytes of attachments in its tool results, and it \
             does not fit in what is left.]"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(bytes: usize) -> Attachment {
        Attachment::bytes("image/png", vec![0; bytes])
    }

    #[test]
    fn the_attachments_that_fit_are_kept_in_order_and_the_others_named() {
        let mut output = ToolOutput::text("plot")
            .with_attachment(image(6))
            .with_attachment(image(5))
            .with_attachment(Attachment::url("image/png", "https://example.com/a.png"))
            .with_attachment(image(4));
        fit(&mut output, 10, 100);
        let kept: Vec<usize> = output.attachments().iter().map(inline_bytes).collect();
        assert_eq!(kept, [6, 0, 4]);
        assert_eq!(output.attachments().len(), 3);
        assert_eq!(
            output.as_text(),
            "plot\n[An attachment of this result (image/png, 5 bytes) was left out: this chat \
             keeps at most 100 bytes of attachments in its tool results, and it does not \
             fit in what is left.]"
        );
    }

    #[test]
    fn a_note_shows_the_start_of_a_long_media_type_only() {
        let long = format!("image/{}", "x".repeat(10_000));
        let mut output = ToolOutput::text("").with_attachment(Attachment::bytes(long, vec![0; 2]));
        fit(&mut output, 1, 100);
        assert!(output.attachments().is_empty());
        assert!(output.as_text().len() < 400, "{}", output.as_text().len());
        assert!(
            output
                .as_text()
                .contains(&format!("(image/{}…, 2 bytes)", "x".repeat(94)))
        );
    }

    #[test]
    fn what_results_hold_counts_inline_bytes_of_tool_results_only() {
        let result = Message::tool_result_parts(
            "c1",
            ToolOutput::text("x").with_attachment(image(7)).into_parts(),
            false,
        );
        let user = Message::user("look");
        assert_eq!(held(&[user, result], None), 7);
    }
}

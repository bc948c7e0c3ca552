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
pub(crate) fn held_by(result: &Message) -> usize {
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
        if take_room(&attachment, &mut room) {
            output.push_attachment(attachment);
        } else {
            output.push_line(&left_out(&attachment, limit));
        }
    }
}

/// Keeps the attachments of a finished tool result that fit, in order, in `room` bytes (of
/// the chat's `limit`), as [`fit`] does for a tool's output: for a result an
/// `on_tool_result_async` hook rewrote, which holds what the hook put in it. Each attachment
/// left out is named at the end of the result's first text part (one is added when it has
/// none).
pub(crate) fn fit_result(result: &mut Message, mut room: usize, limit: usize) {
    let mut notes = Vec::new();
    result.content.retain(|part| {
        let Part::Attachment(attachment) = part else {
            return true;
        };
        let fits = take_room(attachment, &mut room);
        if !fits {
            notes.push(left_out(attachment, limit));
        }
        fits
    });
    if notes.is_empty() {
        return;
    }
    let notes = notes.join("\n");
    let text = result.content.iter_mut().find_map(|part| match part {
        Part::Text { text } => Some(text),
        _ => None,
    });
    match text {
        Some(text) => {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&notes);
        }
        None => result.content.insert(0, Part::text(notes)),
    }
}

/// Whether `attachment` fits in `room`; when it does, its bytes are taken from it.
fn take_room(attachment: &Attachment, room: &mut usize) -> bool {
    let bytes = inline_bytes(attachment);
    let fits = bytes <= *room;
    if fits {
        *room -= bytes;
    }
    fits
}

/// The note that tells the model an attachment was left out (and the log line that says so).
fn left_out(attachment: &Attachment, limit: usize) -> String {
    let bytes = inline_bytes(attachment);
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
    format!(
        "[An attachment of this result ({media_type}, {bytes} bytes) was left out: this \
         chat keeps at most {limit} bytes of attachments in its tool results, and it \
         does not fit in what is left.]"
    )
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
    fn a_result_without_text_gets_the_note_as_its_first_part() {
        let mut result = Message::tool_result_parts(
            "c1",
            vec![Part::Attachment(image(8)), Part::Attachment(image(3))],
            false,
        );
        fit_result(&mut result, 5, 50);
        assert!(
            matches!(&result.content[..], [Part::Text { .. }, Part::Attachment(a)] if inline_bytes(a) == 3)
        );
        assert_eq!(
            result.text(),
            "[An attachment of this result (image/png, 8 bytes) was left out: this chat keeps \
             at most 50 bytes of attachments in its tool results, and it does not fit in what \
             is left.]"
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

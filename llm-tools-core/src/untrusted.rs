//! Text another party sent (a provider's error message, an MCP server's or client's words), as
//! an error or a log line may show it.
//!
//! Such text can be of any length, and a terminal reading it acts on its control characters:
//! colours, a cursor moved to write over the line above, a hyperlink to a `file:` or
//! `javascript:` URL behind harmless words (`ESC ] 8`). [`shown`] escapes them and cuts the
//! text to a bound.
//!
//! ```
//! use llm_tools_core::untrusted::shown;
//!
//! assert_eq!(shown("plain", 100), "plain");
//! assert_eq!(shown("a\u{1b}[2Jb", 100), "a\\u{1b}[2Jb");
//! assert_eq!(shown("ééééé", 5), "éé… [6 bytes cut]");
//! ```

use std::borrow::Cow;

/// Whether `c` is shown escaped: a control character (C0, DEL, C1) other than a line break or
/// a tab.
fn escaped(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `text` as it may be shown: its control characters but line breaks and tabs escaped
/// (`\u{1b}`; a carriage return ending a line, `\r\n`, is a line break), cut at a character
/// boundary to at most `max` bytes (escapes included), saying how much was cut. Borrowed as it
/// is when nothing needs either.
pub fn shown(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max && !text.contains(escaped) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len().min(max));
    let mut taken = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let room = max - shown.len();
        if escaped(c) && !(c == '\r' && chars.peek() == Some(&'\n')) {
            let escape = c.escape_unicode();
            if escape.len() > room {
                break;
            }
            shown.extend(escape);
        } else {
            if c.len_utf8() > room {
                break;
            }
            shown.push(c);
        }
        taken += c.len_utf8();
    }
    if taken < text.len() {
        shown.push_str(&format!("… [{} bytes cut]", text.len() - taken));
    }
    Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_at_a_character_boundary() {
        assert_eq!(shown("short", 8), "short");
        assert_eq!(shown("ééééé", 5), "éé… [6 bytes cut]");
    }

    /// A terminal hyperlink (`ESC ] 8 ; ; URL ESC \\`), a C1 control and a carriage return show
    /// escaped, never as the bytes a terminal acts on; line breaks and tabs stay; the escapes
    /// count toward the length.
    #[test]
    fn control_characters_show_escaped() {
        let link = "\u{1b}]8;;file:///etc/passwd\u{1b}\\Continue\u{1b}]8;;\u{1b}\\";
        let text = shown(link, 8 * 1024);
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.starts_with("\\u{1b}]8;;file:///etc/passwd"), "{text}");
        assert_eq!(shown("a\u{9b}b\rc", 100), "a\\u{9b}b\\u{d}c");
        assert_eq!(shown("one\n\ttwo", 100), "one\n\ttwo");
        assert_eq!(shown("one\r\ntwo\rthree", 100), "one\r\ntwo\\u{d}three");
        let escapes = "\u{1b}".repeat(100);
        assert_eq!(shown(&escapes, 20), "\\u{1b}\\u{1b}\\u{1b}… [97 bytes cut]");
    }
}

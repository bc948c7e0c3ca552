//! The bound on a progress token, on both sides: a token goes back with every report of its
//! call, and the tokens this crate's client makes are short.

use rmcp::model::{NumberOrString, ProgressToken};

/// The longest progress token (as text) a report may name, or a call may give for its
/// progress to be reported: 256 bytes.
pub(crate) const MAX_PROGRESS_TOKEN: usize = 256;

/// A progress token's length as text (a number's counts as none).
pub(crate) fn progress_token_len(token: &ProgressToken) -> usize {
    match &token.0 {
        NumberOrString::String(text) => text.len(),
        NumberOrString::Number(_) => 0,
    }
}

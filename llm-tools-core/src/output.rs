//! What a tool call produces: [`ToolOutput`], [`ToolOutcome`] and the conversions into them.

use std::borrow::Cow;

use serde::Serialize;

use crate::{
    content::{Attachment, Part, SearchResult},
    error::ToolError,
    task::Task,
};

/// A tool's result: text (JSON for structured values) plus any images or files.
///
/// ```
/// use llm_tools_core::{Attachment, ToolOutput};
///
/// let out = ToolOutput::text("Fetched the file.")
///     .with_attachment(Attachment::bytes("text/plain", b"Ruby is the best.".to_vec()).with_filename("ruby.txt"));
/// assert_eq!(out.as_text(), "Fetched the file.");
/// assert_eq!(out.attachments().len(), 1);
///
/// let json = ToolOutput::json(&serde_json::json!({"roll": 4})).unwrap();
/// assert_eq!(json.as_text(), r#"{"roll":4}"#);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    text: String,
    attachments: Vec<Attachment>,
    search_results: Vec<SearchResult>,
}

impl ToolOutput {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            attachments: Vec::new(),
            search_results: Vec::new(),
        }
    }

    /// A value serialized as JSON. A value that cannot be serialized (a map with non-string
    /// keys, say) is a fatal error: it is a bug in the tool, not something the model can fix.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Self, ToolError> {
        serde_json::to_string(value).map(Self::text).map_err(|e| {
            ToolError::fatal(format!(
                "the tool's result cannot be serialized as JSON: {e}"
            ))
        })
    }

    /// Adds an image or a file.
    #[must_use]
    pub fn with_attachment(mut self, attachment: Attachment) -> Self {
        self.attachments.push(attachment);
        self
    }

    /// Adds a search result for the model to cite.
    #[must_use]
    pub fn with_search_result(mut self, result: SearchResult) -> Self {
        self.search_results.push(result);
        self
    }

    /// Search results, as a result with no text.
    pub fn search_results(results: impl IntoIterator<Item = SearchResult>) -> Self {
        let mut output = Self::text("");
        output.search_results.extend(results);
        output
    }

    /// The search results.
    pub fn found(&self) -> &[SearchResult] {
        &self.search_results
    }

    /// The text (or JSON) part.
    pub fn as_text(&self) -> &str {
        &self.text
    }

    /// The attachments.
    pub fn attachments(&self) -> &[Attachment] {
        &self.attachments
    }

    /// The text and the attachments as content parts (no empty text part).
    pub fn into_parts(self) -> Vec<Part> {
        let mut parts = Vec::with_capacity(1 + self.search_results.len() + self.attachments.len());
        if !self.text.is_empty() {
            parts.push(Part::Text { text: self.text });
        }
        parts.extend(self.search_results.into_iter().map(Part::SearchResult));
        parts.extend(self.attachments.into_iter().map(Part::Attachment));
        parts
    }

    /// Replaces the text part, keeping the attachments.
    pub(crate) fn set_text(&mut self, text: String) {
        self.text = text;
    }

    /// Takes the attachments out.
    pub(crate) fn take_attachments(&mut self) -> Vec<Attachment> {
        std::mem::take(&mut self.attachments)
    }

    /// Adds an attachment after the others.
    pub(crate) fn push_attachment(&mut self, attachment: Attachment) {
        self.attachments.push(attachment);
    }

    /// Adds a line to the text part.
    pub(crate) fn push_line(&mut self, line: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(line);
    }

    /// The text part by value.
    pub fn into_text(self) -> String {
        self.text
    }
}

/// What one run of a tool produced.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// The call finished with a result.
    Output(ToolOutput),
    /// The call paused; the chat calls the tool's `resume` later.
    Task(Task),
    /// The call failed: recoverable (the model sees it), fatal (the turn stops) or input
    /// required (the call pauses on a question).
    Error(ToolError),
}

impl ToolOutcome {
    /// A recoverable error result.
    pub fn error(message: impl std::fmt::Display) -> Self {
        ToolOutcome::Error(ToolError::recoverable(message))
    }
}

/// Converts what a tool returns into a [`ToolOutcome`].
///
/// Implemented for text (`String`, `&str`, `Cow<str>`), `()` (an empty result), [`ToolOutput`],
/// [`Attachment`], `(text, Vec<Attachment>)`, [`SearchResult`] and `Vec<SearchResult>`,
/// [`Task`], [`ToolOutcome`], and `Result<T, E>` where
/// `T` is one of these and `E: Into<ToolError>`. `#[tool]` also accepts any `serde::Serialize`
/// value (and `Result` of one), which it sends as JSON.
pub trait IntoToolOutcome {
    /// The conversion.
    fn into_tool_outcome(self) -> ToolOutcome;
}

impl IntoToolOutcome for ToolOutcome {
    fn into_tool_outcome(self) -> ToolOutcome {
        self
    }
}

impl IntoToolOutcome for ToolOutput {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Output(self)
    }
}

impl IntoToolOutcome for String {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::text(self))
    }
}

impl IntoToolOutcome for &str {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::text(self))
    }
}

impl IntoToolOutcome for Cow<'_, str> {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::text(self.into_owned()))
    }
}

impl IntoToolOutcome for () {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::default())
    }
}

impl IntoToolOutcome for Attachment {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::default().with_attachment(self))
    }
}

impl IntoToolOutcome for SearchResult {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::search_results([self]))
    }
}

impl IntoToolOutcome for Vec<SearchResult> {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput::search_results(self))
    }
}

impl<S: Into<String>> IntoToolOutcome for (S, Vec<Attachment>) {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Output(ToolOutput {
            text: self.0.into(),
            attachments: self.1,
            search_results: Vec::new(),
        })
    }
}

impl IntoToolOutcome for Task {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Task(self)
    }
}

impl IntoToolOutcome for ToolError {
    fn into_tool_outcome(self) -> ToolOutcome {
        ToolOutcome::Error(self)
    }
}

impl<T, E> IntoToolOutcome for Result<T, E>
where
    T: IntoToolOutcome,
    E: Into<ToolError>,
{
    fn into_tool_outcome(self) -> ToolOutcome {
        match self {
            Ok(v) => v.into_tool_outcome(),
            Err(e) => ToolOutcome::Error(e.into()),
        }
    }
}

/// Serializes a value as a JSON result.
pub(crate) fn serialize_outcome<T: Serialize>(value: &T) -> ToolOutcome {
    match ToolOutput::json(value) {
        Ok(out) => ToolOutcome::Output(out),
        Err(e) => ToolOutcome::Error(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(outcome: ToolOutcome) -> String {
        match outcome {
            ToolOutcome::Output(o) => o.into_text(),
            other => panic!("expected output, got {other:?}"),
        }
    }

    #[test]
    fn text_like_values_become_text() {
        assert_eq!(text("hi".into_tool_outcome()), "hi");
        assert_eq!(text(String::from("hi").into_tool_outcome()), "hi");
        assert_eq!(text(().into_tool_outcome()), "");
        assert_eq!(text(Ok::<_, ToolError>("ok").into_tool_outcome()), "ok");
    }

    #[test]
    fn errors_keep_their_kind() {
        let ToolOutcome::Error(e) =
            Err::<String, _>(ToolError::recoverable("nope")).into_tool_outcome()
        else {
            panic!()
        };
        assert!(e.is_recoverable());
        let io = std::io::Error::other("disk");
        let ToolOutcome::Error(e) = Err::<String, _>(io).into_tool_outcome() else {
            panic!()
        };
        assert!(e.is_fatal());
    }

    #[test]
    fn text_with_attachments_keeps_both() {
        let out = (
            "see file",
            vec![Attachment::bytes("text/plain", b"x".to_vec())],
        )
            .into_tool_outcome();
        let ToolOutcome::Output(out) = out else {
            panic!()
        };
        let parts = out.into_parts();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].as_text(), Some("see file"));
    }
}

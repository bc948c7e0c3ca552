//! Content parts: text, images and files, in messages and in tool results.

use std::fmt;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// One part of a message's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image or a file (the media type tells which).
    Attachment(Attachment),
    /// A search result a tool returned, for the model to cite.
    SearchResult(SearchResult),
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text { text: text.into() }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text { text } => Some(text),
            Part::Attachment(_) | Part::SearchResult(_) => None,
        }
    }

    /// The attachment of an attachment part.
    pub fn as_attachment(&self) -> Option<&Attachment> {
        match self {
            Part::Attachment(a) => Some(a),
            Part::Text { .. } | Part::SearchResult(_) => None,
        }
    }

    /// The search result of a search-result part.
    pub fn as_search_result(&self) -> Option<&SearchResult> {
        match self {
            Part::SearchResult(r) => Some(r),
            Part::Text { .. } | Part::Attachment(_) => None,
        }
    }
}

/// A search result a tool returns (from a knowledge base, a document store, a search API), so
/// the model can cite it: the answer's [`citations`](crate::Message::citations) then name its
/// source and title and quote the passage.
///
/// Anthropic sends it as a `search_result` block, Bedrock as a `searchResult` block, Cohere as a
/// `document`; the other protocols, which have no such block, get it as text (title, source and
/// content), so a tool can return search results whatever the provider.
///
/// ```
/// use llm_tools_core::{tool, RawArgs, SearchResult, Tool, ToolContext, ToolOutcome};
///
/// /// Searches the company knowledge base
/// #[tool]
/// async fn knowledge_base(query: String) -> Vec<SearchResult> {
///     vec![SearchResult::new(
///         "https://example.com/ruby-facts",
///         "Ruby Facts",
///         format!("What the knowledge base says about {query}."),
///     )]
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let args = RawArgs::new(r#"{"query": "Ruby"}"#);
/// let ToolOutcome::Output(out) = KnowledgeBase.call(args, ToolContext::detached("c1")).await else {
///     unreachable!()
/// };
/// assert_eq!(out.found()[0].title, "Ruby Facts");
/// assert_eq!(out.found()[0].content, ["What the knowledge base says about Ruby."]);
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SearchResult {
    /// Where it comes from: a URL or any identifier of the document.
    pub source: String,
    /// Its title.
    pub title: String,
    /// Its text, in passages (the model cites them by index).
    pub content: Vec<String>,
    /// Whether the model may cite it (on by default).
    #[serde(default = "cited_by_default")]
    pub citations: bool,
}

fn cited_by_default() -> bool {
    true
}

impl SearchResult {
    /// A result with one passage of text, citable.
    pub fn new(
        source: impl Into<String>,
        title: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self {
            source: source.into(),
            title: title.into(),
            content: vec![text.into()],
            citations: true,
        }
    }

    /// Adds a passage.
    #[must_use]
    pub fn with_passage(mut self, text: impl Into<String>) -> Self {
        self.content.push(text.into());
        self
    }

    /// Turns citations of this result off.
    #[must_use]
    pub fn without_citations(mut self) -> Self {
        self.citations = false;
        self
    }

    /// The result as text, for protocols without a search-result block: the title, the
    /// source in parentheses, then the passages.
    pub fn to_text(&self) -> String {
        let mut text = format!("{} ({})", self.title, self.source);
        for passage in &self.content {
            text.push('\n');
            text.push_str(passage);
        }
        text
    }
}

impl From<Attachment> for Part {
    fn from(a: Attachment) -> Self {
        Part::Attachment(a)
    }
}

/// An image or a file, with its media type: inline bytes or a URL.
///
/// ```
/// use llm_tools_core::Attachment;
///
/// let file = Attachment::bytes("text/plain", b"Ruby is the best.".to_vec()).with_filename("ruby.txt");
/// assert_eq!(file.media_type(), "text/plain");
/// assert!(!file.is_image());
/// assert_eq!(file.base64().as_deref(), Some("UnVieSBpcyB0aGUgYmVzdC4="));
/// ```
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Attachment {
    media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
    #[serde(flatten)]
    source: Source,
}

/// Where an attachment's bytes are.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Source {
    /// Inline bytes (base64 in JSON).
    #[serde(rename = "data", with = "base64_bytes")]
    Bytes(Vec<u8>),
    /// A URL the provider fetches.
    Url(String),
}

impl Attachment {
    /// An attachment with inline bytes.
    pub fn bytes(media_type: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self {
            media_type: media_type.into(),
            filename: None,
            source: Source::Bytes(bytes),
        }
    }

    /// An attachment the provider fetches from a URL.
    pub fn url(media_type: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            media_type: media_type.into(),
            filename: None,
            source: Source::Url(url.into()),
        }
    }

    /// Sets the file name shown to the model.
    #[must_use]
    pub fn with_filename(mut self, filename: impl Into<String>) -> Self {
        self.filename = Some(filename.into());
        self
    }

    /// The media type, e.g. `image/png`.
    pub fn media_type(&self) -> &str {
        &self.media_type
    }

    /// The file name, if any.
    pub fn filename(&self) -> Option<&str> {
        self.filename.as_deref()
    }

    /// Where the bytes are.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// Whether the media type is `image/*`.
    pub fn is_image(&self) -> bool {
        self.media_type.starts_with("image/")
    }

    /// Whether the media type is textual (`text/*`, JSON, XML).
    pub fn is_text(&self) -> bool {
        self.media_type.starts_with("text/")
            || self.media_type == "application/json"
            || self.media_type == "application/xml"
    }

    /// The inline bytes, base64-encoded; `None` for a URL.
    pub fn base64(&self) -> Option<String> {
        match &self.source {
            Source::Bytes(b) => Some(base64::engine::general_purpose::STANDARD.encode(b)),
            Source::Url(_) => None,
        }
    }
}

impl fmt::Debug for Attachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Attachment");
        s.field("media_type", &self.media_type);
        if let Some(name) = &self.filename {
            s.field("filename", name);
        }
        match &self.source {
            Source::Bytes(b) => s.field("bytes", &b.len()),
            Source::Url(u) => s.field("url", u),
        };
        s.finish()
    }
}

mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attachment_round_trips_through_json() {
        let a = Attachment::bytes("image/png", vec![0, 1, 2, 255]).with_filename("x.png");
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"media_type": "image/png", "filename": "x.png", "data": "AAEC/w=="})
        );
        let back: Attachment = serde_json::from_value(json).unwrap();
        assert_eq!(back, a);
        let url = Attachment::url("image/jpeg", "https://example.com/a.jpg");
        let back: Attachment = serde_json::from_value(serde_json::to_value(&url).unwrap()).unwrap();
        assert_eq!(back, url);
    }
}

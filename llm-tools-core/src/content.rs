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
            Part::Attachment(_) => None,
        }
    }

    /// The attachment of an attachment part.
    pub fn as_attachment(&self) -> Option<&Attachment> {
        match self {
            Part::Attachment(a) => Some(a),
            Part::Text { .. } => None,
        }
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

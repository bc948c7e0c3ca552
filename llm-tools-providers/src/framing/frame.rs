//! [`Frame`]: what every framing yields.

use std::borrow::Cow;

/// One frame of a stream: borrowed from the framing's buffer while a protocol reads it, owned
/// when [`frames`](super::frames) yields it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Frame<'a> {
    /// The event name: SSE's `event:` (`None` when the server gave none, which SSE reads as
    /// `message`), an event-stream message's `:event-type` or exception type; `None` in NDJSON.
    pub event: Option<Cow<'a, str>>,
    /// The data: SSE's `data:` lines joined with newlines, one NDJSON line, an event-stream
    /// payload.
    pub data: Cow<'a, str>,
    /// Whether the frame reports an error out of band (an event-stream `exception` or `error`
    /// message); always `false` in SSE and NDJSON, whose errors are in the data.
    pub exception: bool,
}

impl<'a> Frame<'a> {
    /// A frame of data only.
    pub fn data(data: impl Into<Cow<'a, str>>) -> Self {
        Self {
            event: None,
            data: data.into(),
            exception: false,
        }
    }

    /// A frame with an event name.
    pub fn event(event: impl Into<Cow<'a, str>>, data: impl Into<Cow<'a, str>>) -> Self {
        Self {
            event: Some(event.into()),
            data: data.into(),
            exception: false,
        }
    }

    /// The frame with its text owned.
    pub fn into_owned(self) -> Frame<'static> {
        Frame {
            event: self.event.map(|e| Cow::Owned(e.into_owned())),
            data: Cow::Owned(self.data.into_owned()),
            exception: self.exception,
        }
    }
}

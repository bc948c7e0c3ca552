//! The AWS event-stream binary framing ([`Framing::AwsEventStream`](super::Framing::AwsEventStream)),
//! as Bedrock's `ConverseStream` sends: each message is a 12-byte prelude (total length, headers
//! length, CRC-32 of the two), typed headers, a payload and a CRC-32 of the whole message.
//!
//! Decoding, checksums included, is `aws-smithy-eventstream`'s (the AWS SDKs' own decoder):
//! the format has corner cases (header value types, length limits) better left to the code
//! AWS maintains and fuzzes. A message becomes a [`Frame`]: its `:event-type` header is the
//! frame's event and its payload the data; an `exception` message's `:exception-type` (an
//! `error` message's `:error-code`, its `:error-message` the data) is the event, with
//! [`Frame::exception`] set.
//!
//! The decoder keeps no bound of its own: it waits for as many bytes as a message's prelude
//! claims (up to 4 GiB), and checks the prelude only once they are all there. So the length a
//! prelude claims is checked here first, against the format's largest message and the
//! configured `max_event_bytes` (the smaller of the two): a message claiming more is a
//! `Decode` error before its bytes are kept, and the framing stops. The decoder reads a
//! message once it is whole, so each byte is looked at once.

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::BytesMut;
use llm_tools_core::{ProviderError, ProviderErrorKind};

use super::Frame;

/// The prelude's length.
const PRELUDE: usize = 12;
/// The longest message the format allows (16 MiB of payload, 128 KiB of headers, the framing).
const MAX_MESSAGE: usize = 16 * 1024 * 1024 + 128 * 1024 + 16;

/// Decodes the bytes of one stream into messages.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The longest message kept (the smaller of the format's limit and the configured one).
    max_message: usize,
    buf: BytesMut,
    decoder: MessageFrameDecoder,
    /// The message last decoded, which the frame handed out borrows.
    current: Option<Message>,
    /// Whether the decoder holds the prelude of a message whose rest has not arrived.
    in_message: bool,
    /// A decoding error ends the stream: later bytes cannot be framed.
    failed: bool,
    ended: bool,
}

fn decode_error(name: &str, what: String) -> ProviderError {
    ProviderError::new(name, ProviderErrorKind::Decode, what)
}

fn header<'m>(message: &'m Message, name: &str) -> Option<&'m str> {
    message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
}

impl Decoder {
    /// A decoder of messages of at most `max_event_bytes` (and never more than the format
    /// allows).
    pub(crate) fn new(max_event_bytes: usize) -> Self {
        Self {
            max_message: max_event_bytes.min(MAX_MESSAGE),
            ..Self::default()
        }
    }

    /// Adds the next bytes of the stream.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if self.failed {
            return;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The stream has ended.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    /// The next complete message, or `None` until more bytes arrive. A bad checksum or length
    /// is a `Decode` error and ends the framing; bytes left over when the stream ends (a message
    /// cut short) are too.
    pub(crate) fn next_frame(&mut self, name: &str) -> Option<Result<Frame<'_>, ProviderError>> {
        if self.failed {
            return None;
        }
        if !self.in_message && self.buf.len() >= PRELUDE {
            // The decoder waits for a whole message before it checks anything: refuse a length
            // past the format's limit first, so a bad prelude cannot make it buffer gigabytes.
            let total = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
            if total as usize > MAX_MESSAGE {
                self.failed = true;
                self.buf = BytesMut::new();
                return Some(Err(decode_error(
                    name,
                    format!("the event stream cannot be read: a message claims {total} bytes"),
                )));
            }
            if total as usize > self.max_message {
                self.failed = true;
                self.buf = BytesMut::new();
                return Some(Err(crate::http::event_too_large(name, self.max_message)));
            }
            self.in_message = true;
        }
        match self.decoder.decode_frame(&mut self.buf) {
            Ok(DecodedFrame::Complete(message)) => {
                self.in_message = false;
                self.current = Some(message);
                let message = self.current.as_ref()?;
                Some(frame_of(name, message))
            }
            Ok(DecodedFrame::Incomplete) => {
                if self.ended && (self.in_message || !self.buf.is_empty()) {
                    self.failed = true;
                    return Some(Err(decode_error(
                        name,
                        "the event stream ended inside a message".into(),
                    )));
                }
                None
            }
            Err(e) => {
                self.failed = true;
                Some(Err(decode_error(
                    name,
                    format!("the event stream cannot be read: {e}"),
                )))
            }
        }
    }
}

fn frame_of<'m>(name: &str, message: &'m Message) -> Result<Frame<'m>, ProviderError> {
    let payload = || {
        std::str::from_utf8(message.payload())
            .map_err(|e| decode_error(name, format!("an event-stream payload is not UTF-8 ({e})")))
    };
    match header(message, ":message-type") {
        Some("exception") => Ok(Frame {
            event: header(message, ":exception-type").map(Into::into),
            data: payload()?.into(),
            exception: true,
        }),
        Some("error") => Ok(Frame {
            event: header(message, ":error-code").map(Into::into),
            data: header(message, ":error-message").unwrap_or_default().into(),
            exception: true,
        }),
        _ => Ok(Frame {
            event: header(message, ":event-type").map(Into::into),
            data: payload()?.into(),
            exception: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use aws_smithy_eventstream::frame::write_message_to;
    use aws_smithy_types::event_stream::Header;

    use super::*;

    fn message(kind: &'static str, event: &'static str, payload: &'static str) -> Vec<u8> {
        let name = if kind == "exception" {
            ":exception-type"
        } else {
            ":event-type"
        };
        let m = Message::new(payload.as_bytes())
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String(kind.into()),
            ))
            .add_header(Header::new(name, HeaderValue::String(event.into())))
            .add_header(Header::new(
                ":content-type",
                HeaderValue::String("application/json".into()),
            ));
        let mut out = Vec::new();
        write_message_to(&m, &mut out).unwrap();
        out
    }

    /// A decoded frame: its event, data and exception flag.
    type Decoded = Result<(Option<String>, String, bool), ProviderErrorKind>;

    fn decode(chunks: &[&[u8]]) -> Vec<Decoded> {
        let mut d = Decoder::new(MAX_MESSAGE);
        let mut out = Vec::new();
        let drain = |d: &mut Decoder, out: &mut Vec<_>| {
            while let Some(f) = d.next_frame("t") {
                out.push(
                    f.map(|f| {
                        (
                            f.event.map(|e| e.into_owned()),
                            f.data.into_owned(),
                            f.exception,
                        )
                    })
                    .map_err(|e| e.kind()),
                );
            }
        };
        for chunk in chunks {
            d.push(chunk);
            drain(&mut d, &mut out);
        }
        d.end();
        drain(&mut d, &mut out);
        out
    }

    #[test]
    fn messages_split_anywhere_reassemble() {
        let mut body = message("event", "contentBlockDelta", r#"{"delta":{"text":"hé"}}"#);
        body.extend(message(
            "exception",
            "throttlingException",
            r#"{"message":"slow down"}"#,
        ));
        for cut in 0..body.len() {
            let got = decode(&[&body[..cut], &body[cut..]]);
            assert_eq!(
                got,
                [
                    Ok((
                        Some("contentBlockDelta".into()),
                        r#"{"delta":{"text":"hé"}}"#.into(),
                        false
                    )),
                    Ok((
                        Some("throttlingException".into()),
                        r#"{"message":"slow down"}"#.into(),
                        true
                    )),
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_bad_checksum_is_a_decode_error_that_ends_the_framing() {
        let mut body = message("event", "messageStart", r#"{"role":"assistant"}"#);
        let last = body.len() - 1;
        body[last] ^= 0xff;
        body.extend(message("event", "messageStop", "{}"));
        assert_eq!(decode(&[&body]), [Err(ProviderErrorKind::Decode)]);
    }

    #[test]
    fn a_short_prelude_or_a_cut_message_is_a_decode_error_at_the_end() {
        let body = message("event", "messageStart", r#"{"role":"assistant"}"#);
        assert_eq!(decode(&[&body[..5]]), [Err(ProviderErrorKind::Decode)]);
        assert_eq!(
            decode(&[&body[..body.len() - 3]]),
            [Err(ProviderErrorKind::Decode)]
        );
    }

    #[test]
    fn a_prelude_claiming_gigabytes_is_refused_at_once() {
        let mut body = message("event", "messageStart", "{}");
        body[..4].copy_from_slice(&u32::MAX.to_be_bytes());
        let mut d = Decoder::new(MAX_MESSAGE);
        d.push(&body);
        let got = d
            .next_frame("t")
            .map(|f| f.map(|_| ()).map_err(|e| e.kind()));
        assert_eq!(got, Some(Err(ProviderErrorKind::Decode)));
    }

    #[test]
    fn a_prelude_with_an_impossible_length_is_a_decode_error() {
        let mut body = message("event", "messageStart", "{}");
        body[..4].copy_from_slice(&3u32.to_be_bytes());
        assert_eq!(decode(&[&body]), [Err(ProviderErrorKind::Decode)]);
    }

    #[test]
    fn a_message_past_the_configured_limit_is_refused_before_it_is_kept() {
        let small = message("event", "messageStart", r#"{"role":"assistant"}"#);
        let mut body = small.clone();
        body.extend(message(
            "event",
            "contentBlockDelta",
            &"x".repeat(4096).leak()[..],
        ));
        let mut d = Decoder::new(1024);
        // The whole of a small message, then only the prelude of the large one.
        d.push(&body[..small.len() + PRELUDE]);
        assert!(d.next_frame("t").unwrap().is_ok());
        let error = d.next_frame("t").unwrap().map(|_| ()).unwrap_err();
        assert_eq!(error.kind(), ProviderErrorKind::Decode);
        assert_eq!(
            crate::http::HttpLimit::of(&error),
            Some(crate::http::HttpLimit::StreamEventBytes)
        );
        assert!(error.message().contains("1024 bytes"), "{error}");
        d.push(&body[small.len() + PRELUDE..]);
        assert!(d.next_frame("t").is_none(), "the framing stopped");
        assert!(d.buf.is_empty());
    }
}

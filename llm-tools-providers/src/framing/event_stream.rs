//! The AWS event-stream binary framing ([`Framing::AwsEventStream`](super::Framing::AwsEventStream)),
//! as Bedrock's `ConverseStream` sends: each message is a 12-byte prelude (total length, headers
//! length, CRC-32 of the two), typed headers, a payload and a CRC-32 of the whole message.
//!
//! A message becomes a [`Frame`] borrowed from the stream's buffer: its `:event-type` header is
//! the frame's event and its payload the data; an `exception` message's `:exception-type` (an
//! `error` message's `:error-code`, its `:error-message` the data) is the event, with
//! [`Frame::exception`] set. Nothing is copied or allocated per message: the headers are read
//! in place, the two checksums are computed over the message's bytes with `crc32fast` (SIMD
//! where the processor has it).
//!
//! The reading follows the AWS SDKs' decoder (`aws-smithy-eventstream`), which the tests below
//! run side by side with this one on valid, corrupted and truncated messages: the same messages
//! are accepted, with the same frames, and the same refused. A message is refused (a `Decode`
//! error, and the framing stops) when its prelude or message checksum is wrong, its lengths
//! do not add up (a total under 16 bytes, a headers length of 1 or past the message), a header
//! runs past the headers (a name longer than what is left, a value cut short), a header's type
//! is unknown (past 9), or a header name or string value is not UTF-8. The payload of an
//! `event` or `exception` message must be UTF-8 (JSON text).
//!
//! The length a prelude claims is checked first, before the message's bytes are kept, against
//! the format's largest message and the configured `max_event_bytes` (the smaller of the two):
//! a message claiming more is a `Decode` error, and the framing stops. Each message's bytes are
//! read once its last byte has arrived, so each byte is looked at once.

use llm_tools_core::{ProviderError, ProviderErrorKind};

use super::frame::Frame;

/// The prelude's length.
const PRELUDE: usize = 12;
/// The shortest message: a prelude and the message's checksum.
const MIN_MESSAGE: usize = PRELUDE + 4;
/// The longest message the format allows (16 MiB of payload, 128 KiB of headers, the framing).
const MAX_MESSAGE: usize = 16 * 1024 * 1024 + 128 * 1024 + 16;

/// Decodes the bytes of one stream into messages.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The longest message kept (the smaller of the format's limit and the configured one).
    max_message: usize,
    buf: Vec<u8>,
    /// Where the bytes not yet read as messages start.
    pos: usize,
    /// A decoding error ends the stream: later bytes cannot be framed.
    failed: bool,
    ended: bool,
}

fn decode_error(name: &str, what: String) -> ProviderError {
    ProviderError::new(name, ProviderErrorKind::Decode, what)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
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
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The stream has ended.
    pub(crate) fn end(&mut self) {
        self.ended = true;
    }

    /// Stops the framing with `error`, letting the bytes kept go.
    fn fail(&mut self, error: ProviderError) -> Option<Result<Frame<'_>, ProviderError>> {
        self.failed = true;
        self.buf = Vec::new();
        self.pos = 0;
        Some(Err(error))
    }

    /// The next complete message, or `None` until more bytes arrive. A bad checksum, length or
    /// header is a `Decode` error and ends the framing; bytes left over when the stream ends (a
    /// message cut short) are too.
    pub(crate) fn next_frame(&mut self, name: &str) -> Option<Result<Frame<'_>, ProviderError>> {
        if self.failed {
            return None;
        }
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let Some(total) = u32_at(rest, 0).filter(|_| rest.len() >= PRELUDE) else {
            return self.incomplete(name);
        };
        // Refuse a length past the limits before waiting for its bytes, so a bad prelude
        // cannot make the framing buffer gigabytes.
        let total = total as usize;
        if total > MAX_MESSAGE {
            return self.fail(decode_error(
                name,
                format!("the event stream cannot be read: a message claims {total} bytes"),
            ));
        }
        if total > self.max_message {
            let max = self.max_message;
            return self.fail(crate::http::limits::event_too_large(name, max));
        }
        if total < MIN_MESSAGE {
            return self.fail(decode_error(
                name,
                format!("the event stream cannot be read: a message claims {total} bytes, fewer than its framing"),
            ));
        }
        if rest.len() < total {
            return self.incomplete(name);
        }
        let start = self.pos;
        self.pos += total;
        let message = self.buf.get(start..start + total).unwrap_or_default();
        match read_message(message) {
            Ok(m) => Some(frame_of(name, m)),
            Err(what) => {
                // (The bytes kept go with the decoder: nothing more is read.)
                self.failed = true;
                Some(Err(decode_error(
                    name,
                    format!("the event stream cannot be read: {what}"),
                )))
            }
        }
    }

    /// No whole message is there: `None`, or an error if the stream ended inside one.
    fn incomplete(&mut self, name: &str) -> Option<Result<Frame<'_>, ProviderError>> {
        if self.ended && self.pos < self.buf.len() {
            return self.fail(decode_error(
                name,
                "the event stream ended inside a message".into(),
            ));
        }
        None
    }
}

/// The headers a frame is made from (the first of each name; `None` inside when that header
/// is not a string), and the payload.
#[derive(Debug, Default, PartialEq, Eq)]
struct Message<'m> {
    message_type: Option<Option<&'m str>>,
    event_type: Option<Option<&'m str>>,
    exception_type: Option<Option<&'m str>>,
    error_code: Option<Option<&'m str>>,
    error_message: Option<Option<&'m str>>,
    payload: &'m [u8],
}

/// Reads one whole message (exactly its bytes): checksums, lengths and headers.
fn read_message(message: &[u8]) -> Result<Message<'_>, String> {
    let total = message.len();
    let (Some(headers_len), Some(prelude_crc), Some(message_crc)) = (
        u32_at(message, 4),
        u32_at(message, 8),
        u32_at(message, total.saturating_sub(4)),
    ) else {
        return Err("a message is shorter than its framing".into());
    };
    let computed = crc32fast::hash(message.get(..8).unwrap_or_default());
    if computed != prelude_crc {
        return Err(format!(
            "the prelude's checksum is {prelude_crc:#010x}, its bytes' {computed:#010x}"
        ));
    }
    let headers_len = headers_len as usize;
    if headers_len == 1 || headers_len > total - MIN_MESSAGE {
        return Err(format!(
            "a message of {total} bytes claims {headers_len} bytes of headers"
        ));
    }
    let computed = crc32fast::hash(message.get(..total - 4).unwrap_or_default());
    if computed != message_crc {
        return Err(format!(
            "the message's checksum is {message_crc:#010x}, its bytes' {computed:#010x}"
        ));
    }
    let headers = message
        .get(PRELUDE..PRELUDE + headers_len)
        .unwrap_or_default();
    let mut out = Message {
        payload: message
            .get(PRELUDE + headers_len..total - 4)
            .unwrap_or_default(),
        ..Message::default()
    };
    read_headers(headers, &mut out)?;
    Ok(out)
}

/// Splits `n` bytes off the front of `bytes`.
fn take<'b>(bytes: &mut &'b [u8], n: usize) -> Option<&'b [u8]> {
    let (head, tail) = bytes.split_at_checked(n)?;
    *bytes = tail;
    Some(head)
}

/// Reads every header (each must lie within the headers), keeping the first of each name the
/// frames use.
fn read_headers<'m>(mut headers: &'m [u8], out: &mut Message<'m>) -> Result<(), String> {
    const CUT: &str = "a header runs past the headers";
    const NOT_UTF8: &str = "a header's name or string value is not UTF-8";
    // Names and string values must be UTF-8: all of them are when the headers are ASCII (as
    // AWS's are), which is checked once rather than string by string.
    let ascii = headers.is_ascii();
    while !headers.is_empty() {
        let name_len = take(&mut headers, 1).ok_or(CUT)?[0] as usize;
        // (A name leaves at least its value's type byte.)
        if name_len >= headers.len() {
            return Err("a header's name runs past the headers".into());
        }
        let name = take(&mut headers, name_len).ok_or(CUT)?;
        if !ascii {
            std::str::from_utf8(name).map_err(|_| NOT_UTF8)?;
        }
        let value_type = take(&mut headers, 1).ok_or(CUT)?[0];
        let value = match value_type {
            // true, false
            0 | 1 => None,
            // byte, int16, int32, int64, timestamp, uuid
            2..=5 | 8 | 9 => {
                let size = match value_type {
                    2 => 1,
                    3 => 2,
                    4 => 4,
                    9 => 16,
                    _ => 8,
                };
                take(&mut headers, size).ok_or(CUT)?;
                None
            }
            // byte array, string
            6 | 7 => {
                let len = take(&mut headers, 2).ok_or(CUT)?;
                let len = u16::from_be_bytes([len[0], len[1]]) as usize;
                let bytes = take(&mut headers, len).ok_or(CUT)?;
                if value_type == 7 && !ascii {
                    std::str::from_utf8(bytes).map_err(|_| NOT_UTF8)?;
                }
                (value_type == 7).then_some(bytes)
            }
            other => return Err(format!("a header has an unknown type ({other})")),
        };
        let slot = match name {
            b":message-type" => &mut out.message_type,
            b":event-type" => &mut out.event_type,
            b":exception-type" => &mut out.exception_type,
            b":error-code" => &mut out.error_code,
            b":error-message" => &mut out.error_message,
            _ => continue,
        };
        if slot.is_none() {
            let value = match value {
                Some(bytes) => Some(std::str::from_utf8(bytes).map_err(|_| NOT_UTF8)?),
                None => None,
            };
            *slot = Some(value);
        }
    }
    Ok(())
}

fn frame_of<'m>(name: &str, message: Message<'m>) -> Result<Frame<'m>, ProviderError> {
    let payload = || {
        std::str::from_utf8(message.payload)
            .map_err(|e| decode_error(name, format!("an event-stream payload is not UTF-8 ({e})")))
    };
    match message.message_type.flatten() {
        Some("exception") => Ok(Frame {
            event: message.exception_type.flatten().map(Into::into),
            data: payload()?.into(),
            exception: true,
        }),
        Some("error") => Ok(Frame {
            event: message.error_code.flatten().map(Into::into),
            data: message.error_message.flatten().unwrap_or_default().into(),
            exception: true,
        }),
        _ => Ok(Frame {
            event: message.event_type.flatten().map(Into::into),
            data: payload()?.into(),
            exception: false,
        }),
    }
}

#[cfg(test)]
mod tests {
    use aws_smithy_eventstream::frame::{read_message_from, write_message_to};
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message as AwsMessage};

    use super::*;

    fn message(kind: &'static str, event: &'static str, payload: &'static str) -> Vec<u8> {
        let name = if kind == "exception" {
            ":exception-type"
        } else {
            ":event-type"
        };
        let m = AwsMessage::new(payload.as_bytes())
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

    /// A frame as the previous decoder made it from the AWS SDKs' `Message`.
    fn aws_frame(m: &AwsMessage) -> Decoded {
        let header = |name: &str| {
            m.headers()
                .iter()
                .find(|h| h.name().as_str() == name)
                .and_then(|h| match h.value() {
                    HeaderValue::String(s) => Some(s.as_str().to_owned()),
                    _ => None,
                })
        };
        let payload = || {
            std::str::from_utf8(m.payload())
                .map(str::to_owned)
                .map_err(|_| ProviderErrorKind::Decode)
        };
        match header(":message-type").as_deref() {
            Some("exception") => Ok((header(":exception-type"), payload()?, true)),
            Some("error") => Ok((
                header(":error-code"),
                header(":error-message").unwrap_or_default(),
                true,
            )),
            _ => Ok((header(":event-type"), payload()?, false)),
        }
    }

    /// A whole body framed with the AWS SDKs' message reader: what this decoder must match.
    fn decode_by_aws(body: &[u8]) -> Vec<Decoded> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < body.len() {
            let rest = &body[pos..];
            let Some(total) = u32_at(rest, 0).filter(|_| rest.len() >= PRELUDE) else {
                out.push(Err(ProviderErrorKind::Decode));
                break;
            };
            let total = total as usize;
            if !(PRELUDE..=MAX_MESSAGE).contains(&total) || rest.len() < total {
                out.push(Err(ProviderErrorKind::Decode));
                break;
            }
            match read_message_from(&rest[..total]) {
                Ok(m) => out.push(aws_frame(&m)),
                Err(_) => {
                    out.push(Err(ProviderErrorKind::Decode));
                    break;
                }
            }
            pos += total;
        }
        out
    }

    /// Messages with every header type, headers named twice, a non-string event type, empty
    /// and non-UTF-8 payloads, exceptions and errors; with where each starts and ends.
    fn varied_body() -> (Vec<u8>, Vec<(usize, usize)>) {
        let string = |s: &'static str| HeaderValue::String(s.into());
        let messages = vec![
            AwsMessage::new(&b"{\"role\":\"assistant\"}"[..])
                .add_header(Header::new(":message-type", string("event")))
                .add_header(Header::new(":event-type", string("messageStart")))
                .add_header(Header::new("flag", HeaderValue::Bool(true)))
                .add_header(Header::new("off", HeaderValue::Bool(false)))
                .add_header(Header::new("b", HeaderValue::Byte(-3)))
                .add_header(Header::new("s", HeaderValue::Int16(-300)))
                .add_header(Header::new("i", HeaderValue::Int32(70_000)))
                .add_header(Header::new("l", HeaderValue::Int64(1 << 40)))
                .add_header(Header::new(
                    "raw",
                    HeaderValue::ByteArray(bytes::Bytes::from_static(b"\xff\x00")),
                ))
                .add_header(Header::new(
                    "t",
                    HeaderValue::Timestamp(aws_smithy_types::DateTime::from_secs(1_700_000_000)),
                ))
                .add_header(Header::new("u", HeaderValue::Uuid(0x0123_4567_89ab_cdef))),
            AwsMessage::new(&b"{\"delta\":{\"text\":\"h\xc3\xa9\"}}"[..])
                .add_header(Header::new(":event-type", string("contentBlockDelta")))
                .add_header(Header::new(":event-type", string("ignored")))
                .add_header(Header::new(":message-type", string("event"))),
            AwsMessage::new(&b""[..])
                .add_header(Header::new(":event-type", HeaderValue::Int32(7)))
                .add_header(Header::new(":event-type", string("second"))),
            AwsMessage::new(&b"\xc3("[..]).add_header(Header::new(":event-type", string("bad"))),
            AwsMessage::new(&b"{\"message\":\"slow down\"}"[..])
                .add_header(Header::new(":message-type", string("exception")))
                .add_header(Header::new(
                    ":exception-type",
                    string("throttlingException"),
                )),
            AwsMessage::new(&b"\xff"[..])
                .add_header(Header::new(":message-type", string("error")))
                .add_header(Header::new(":error-code", string("InternalFailure")))
                .add_header(Header::new(":error-message", string("it broke"))),
            AwsMessage::new(&b"{}"[..]),
        ];
        let mut body = Vec::new();
        let mut bounds = Vec::new();
        for m in &messages {
            let start = body.len();
            write_message_to(m, &mut body).unwrap();
            bounds.push((start, body.len()));
        }
        (body, bounds)
    }

    fn decode_whole(body: &[u8], chunk: usize) -> Vec<Decoded> {
        let chunks: Vec<&[u8]> = body.chunks(chunk.max(1)).collect();
        decode(&chunks)
    }

    #[test]
    fn valid_messages_read_as_the_aws_decoder_reads_them() {
        let (body, _) = varied_body();
        let expected = decode_by_aws(&body);
        assert_eq!(expected.len(), 7);
        assert_eq!(
            expected[3],
            Err(ProviderErrorKind::Decode),
            "a non-UTF-8 payload"
        );
        for chunk in [1, 2, 5, 12, 13, 100, body.len()] {
            assert_eq!(decode_whole(&body, chunk), expected, "chunks of {chunk}");
        }
    }

    /// Every byte of the body changed, with the checksums made right again (so the headers
    /// and lengths are read) or left wrong; every cut of the body: both decoders accept the
    /// same messages, with the same frames, and refuse the same.
    #[test]
    fn corrupted_and_cut_messages_are_refused_as_the_aws_decoder_refuses_them() {
        let (body, bounds) = varied_body();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for at in 0..body.len() {
            for fix_checksums in [false, true] {
                for _ in 0..4 {
                    let mut corrupt = body.clone();
                    let byte = next() as u8;
                    corrupt[at] = if byte == body[at] { byte ^ 0x80 } else { byte };
                    if fix_checksums {
                        let &(start, end) =
                            bounds.iter().find(|(s, e)| (*s..*e).contains(&at)).unwrap();
                        let crc = crc32fast::hash(&corrupt[start..start + 8]);
                        if !(start + 8..start + 12).contains(&at) {
                            corrupt[start + 8..start + 12].copy_from_slice(&crc.to_be_bytes());
                        }
                        let crc = crc32fast::hash(&corrupt[start..end - 4]);
                        if at < end - 4 {
                            corrupt[end - 4..end].copy_from_slice(&crc.to_be_bytes());
                        }
                    }
                    let expected = decode_by_aws(&corrupt);
                    let chunk = 1 + (next() % 64) as usize;
                    assert_eq!(
                        decode_whole(&corrupt, chunk),
                        expected,
                        "byte {at} set to {byte:#04x}, checksums fixed: {fix_checksums}"
                    );
                }
            }
        }
        for cut in 0..body.len() {
            assert_eq!(
                decode_whole(&body[..cut], 7),
                decode_by_aws(&body[..cut]),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_header_past_its_section_or_of_an_unknown_type_is_refused() {
        // One message, its headers rewritten by hand and its checksums made right.
        let framed = |headers: &[u8], payload: &[u8]| {
            let total = (PRELUDE + headers.len() + payload.len() + 4) as u32;
            let mut m = Vec::new();
            m.extend(total.to_be_bytes());
            m.extend((headers.len() as u32).to_be_bytes());
            m.extend(crc32fast::hash(&m).to_be_bytes());
            m.extend(headers);
            m.extend(payload);
            m.extend(crc32fast::hash(&m).to_be_bytes());
            m
        };
        let ok = framed(b"\x0b:event-type\x07\x00\x01x", b"{}");
        assert_eq!(decode(&[&ok]), [Ok((Some("x".into()), "{}".into(), false))]);
        for (headers, what) in [
            (
                &b"\x0b:event-type\x07\x00\x05x"[..],
                "a string past the headers",
            ),
            (b"\x0b:event-type\x0a", "an unknown type"),
            (b"\x0b:event-type", "no type"),
            (b"\x01", "a lone name length"),
            (b"\x02\xff\xfe\x00", "a name that is not UTF-8"),
            (b"\x01a\x07\x00\x02\xc3(", "a string that is not UTF-8"),
            (b"\x01a\x09\x00\x00", "a uuid cut short"),
        ] {
            let m = framed(headers, b"{}");
            assert_eq!(decode(&[&m]), [Err(ProviderErrorKind::Decode)], "{what}");
            assert_eq!(
                decode_by_aws(&m),
                [Err(ProviderErrorKind::Decode)],
                "{what}"
            );
        }
    }
}

//! A message posted to a Streamable HTTP server, its answer read within the byte limits and a
//! plain JSON answer counted before it is parsed.
//!
//! rmcp's client for reqwest reads a plain `application/json` answer and parses it in one
//! function, with no place between the two; that is how every 2026-07-28 server answers a call.
//! So the client posts through [`post`] here instead: the status and header handling of
//! rmcp 3.11's own `post_message_with_response_limits` (the same errors, in the same cases),
//! with the body of a JSON answer counted ([`refused`]) between its read and its parse. One
//! holding more than [`MAX_JSON_VALUES`](llm_tools_core::json_values::MAX_JSON_VALUES) JSON
//! values never reaches the parser: the request gets the error response that
//! [`message_bound`](super::message_bound) writes for it, so the call fails at once naming the
//! bound, and the session goes on. An SSE answer is bounded per event (rmcp's
//! [`max_sse_event_size`](StreamableHttpResponseLimits::max_sse_event_size)) and its events
//! counted by the caller, as a `GET` stream's are.

use std::borrow::Cow;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures::{Stream, StreamExt as _, TryStreamExt as _};
use reqwest::StatusCode;
use reqwest::header::{
    ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE,
};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};

use super::message_bound::{Refused, error_answer, refused};

type PostError = StreamableHttpError<reqwest::Error>;

/// The longest `Retry-After` value kept from a 429 or 5xx answer (as rmcp keeps it).
const MAX_RETRY_AFTER_BYTES: usize = 128;

/// What stands for a diagnostic body that could not be read.
const UNREADABLE_BODY: &str = "<failed to read response body>";

/// Headers a caller's own headers may not set: the client sets them. (The protocol version,
/// reserved too, is let through: rmcp's worker sends it that way.)
const RESERVED_HEADERS: [&str; 3] = ["accept", HEADER_SESSION_ID, "last-event-id"];

/// What a posted message needs besides the client: where, on which session, with which
/// credentials and headers, within which limits.
pub(crate) struct Post {
    pub(crate) uri: Arc<str>,
    pub(crate) message: ClientJsonRpcMessage,
    pub(crate) session_id: Option<Arc<str>>,
    pub(crate) auth_token: Option<String>,
    pub(crate) custom_headers: HashMap<HeaderName, HeaderValue>,
    pub(crate) limits: StreamableHttpResponseLimits,
    /// The application's credentials for the server ([`sent_secrets`]).
    pub(crate) secrets: Arc<[String]>,
}

/// What was posted, as an answer's reading needs it.
#[derive(Clone, Copy)]
struct Sent<'a> {
    /// The server's name, for the log.
    server: &'a str,
    message: &'a ClientJsonRpcMessage,
    session_was_attached: bool,
    limits: StreamableHttpResponseLimits,
    /// The credentials the request carried ([`sent_secrets`]), kept out of the errors an
    /// answer's text goes into.
    secrets: &'a [String],
}

/// The shortest value taken for a secret: shorter ones (`1`, `true`, `json`) would blot out
/// ordinary words of a server's text.
const MIN_SECRET_LEN: usize = 8;

/// What a request carries that a server may echo in its error text (a gateway's `invalid
/// token 'X'`): the bearer token it was sent with (the application's, or an OAuth access
/// token) and the application's own credentials (`configured`: its bearer token and the values
/// of its headers, an API key usually), those of at least [`MIN_SECRET_LEN`] bytes. (The
/// protocol's own headers, which rmcp sends beside the application's, are no secrets: a
/// server's error names the protocol version it refuses.)
pub(crate) fn sent_secrets(auth_token: Option<&str>, configured: &[String]) -> Vec<String> {
    auth_token
        .into_iter()
        .chain(configured.iter().map(String::as_str))
        .filter(|value| value.len() >= MIN_SECRET_LEN)
        .map(str::to_owned)
        .collect()
}

/// The first `max` bytes of a body as text, `secrets` redacted before the cut, from enough of
/// the body that a secret starting within those bytes is whole: no part of one survives.
fn shown_start(body: &[u8], max: usize, secrets: &[String]) -> String {
    let longest_secret = secrets.iter().map(String::len).max().unwrap_or(0);
    let end = body.len().min(max.saturating_add(longest_secret));
    let text = redacted(
        String::from_utf8_lossy(body.get(..end).unwrap_or_default()).into_owned(),
        secrets,
    );
    text.get(..text.floor_char_boundary(max))
        .unwrap_or_default()
        .to_owned()
}

/// A server's `text` with every one of `secrets` in it shown as `<redacted>`.
fn redacted(text: String, secrets: &[String]) -> String {
    secrets.iter().fold(text, |text, secret| {
        if text.contains(secret.as_str()) {
            text.replace(secret.as_str(), "<redacted>")
        } else {
            text
        }
    })
}

/// Posts `post.message` and reads the answer as rmcp's client does, a plain JSON answer counted
/// before it is parsed (see the [module docs](self)). `server` names the server in the log.
pub(crate) async fn post(
    client: &reqwest::Client,
    server: &str,
    post: Post,
) -> Result<StreamableHttpPostResponse, PostError> {
    let Post {
        uri,
        message,
        session_id,
        auth_token,
        custom_headers,
        limits,
        secrets: configured,
    } = post;
    let secrets = sent_secrets(auth_token.as_deref(), &configured);
    let body = serde_json::to_vec(&message).map_err(StreamableHttpError::Deserialize)?;
    let mut request = client.post(uri.as_ref()).header(
        ACCEPT,
        format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
    );
    // The body's type, unless the caller's headers name one (sent once either way).
    if !custom_headers.contains_key(&CONTENT_TYPE) {
        request = request.header(CONTENT_TYPE, JSON_MIME_TYPE);
    }
    if let Some(token) = auth_token {
        request = request.bearer_auth(token);
    }
    for (name, value) in custom_headers {
        if RESERVED_HEADERS
            .iter()
            .any(|r| name.as_str().eq_ignore_ascii_case(r))
        {
            return Err(StreamableHttpError::ReservedHeaderConflict(
                name.to_string(),
            ));
        }
        request = request.header(name, value);
    }
    let session_was_attached = session_id.is_some();
    if let Some(session_id) = &session_id {
        request = request.header(HEADER_SESSION_ID, session_id.as_ref());
    }
    let response = request.body(body).send().await?;
    let status = response.status();
    if let Some(challenge) = response.headers().get(WWW_AUTHENTICATE) {
        let challenge = || {
            challenge.to_str().map(str::to_owned).map_err(|_| {
                StreamableHttpError::UnexpectedServerResponse(Cow::from(
                    "invalid www-authenticate header value",
                ))
            })
        };
        if status == StatusCode::UNAUTHORIZED {
            return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
                challenge()?,
            )));
        }
        if status == StatusCode::FORBIDDEN {
            let challenge = challenge()?;
            let scope = scope_of(&challenge);
            return Err(StreamableHttpError::InsufficientScope(
                InsufficientScopeError::new(challenge, scope),
            ));
        }
    }
    if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
        return Ok(StreamableHttpPostResponse::Accepted);
    }
    if status == StatusCode::NOT_FOUND && session_was_attached {
        return Err(StreamableHttpError::SessionExpired);
    }
    let content_type = response.headers().get(CONTENT_TYPE).cloned();
    let is_json = content_type
        .as_ref()
        .is_some_and(|ct| media_type_is(ct.as_bytes(), JSON_MIME_TYPE));
    // A rate limit, or a server error not in JSON, returns unread; a server error in JSON is
    // read for its JSON-RPC error.
    let status_error = match http_status_error(status, response.headers()) {
        Some(error) if !is_json || status == StatusCode::TOO_MANY_REQUESTS => {
            return Err(error.into());
        }
        error => error,
    };
    let content_length = response.content_length();
    let answer_session = response
        .headers()
        .get(HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // A POST of a notification or a response leaves nothing waiting for an answer.
    let awaits_no_response = !matches!(message, ClientJsonRpcMessage::Request(_));
    if status.is_success() && content_length == Some(0) && awaits_no_response {
        return Ok(StreamableHttpPostResponse::Accepted);
    }
    if !status.is_success() {
        let sent = Sent {
            server,
            message: &message,
            session_was_attached,
            limits,
            secrets: &secrets,
        };
        return failed(response, &sent, status_error, answer_session, is_json).await;
    }
    let content_type = content_type.as_ref().map(HeaderValue::as_bytes);
    match content_type {
        Some(ct) if media_type_is(ct, EVENT_STREAM_MIME_TYPE) => {
            let events =
                bounded_events(response.bytes_stream(), limits.max_sse_event_size, &message);
            Ok(StreamableHttpPostResponse::Sse(events, answer_session))
        }
        Some(ct) if media_type_is(ct, JSON_MIME_TYPE) => {
            let body = read_bounded(
                response.bytes_stream(),
                content_length,
                limits.max_json_response_size,
            )
            .await?;
            let body: Cow<'_, [u8]> = match refused(server, &body) {
                None => Cow::Borrowed(&body),
                Some(Refused::Answered(replacement)) => Cow::Owned(replacement.into_bytes()),
                Some(Refused::Dropped) if awaits_no_response => {
                    return Ok(StreamableHttpPostResponse::Accepted);
                }
                Some(Refused::Dropped) => {
                    return Err(StreamableHttpError::UnexpectedServerResponse(Cow::from(
                        "the server's answer held more JSON values than a message may",
                    )));
                }
            };
            match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, answer_session)),
                Err(error) if awaits_no_response => {
                    tracing::warn!(target: "llm_tools::mcp", server, %error, "the server's JSON answer to a notification is no JSON-RPC message; taken as accepted");
                    Ok(StreamableHttpPostResponse::Accepted)
                }
                Err(error) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!(
                        "could not parse JSON response as ServerJsonRpcMessage: {error}: {}",
                        preview(&body, &secrets)
                    ),
                ))),
            }
        }
        // Neither JSON nor SSE: a POST that waits for no answer needs nothing from it.
        _ if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
        _ => Err(StreamableHttpError::UnexpectedContentType(
            content_type.map(|ct| String::from_utf8_lossy(ct).into_owned()),
        )),
    }
}

/// The error of an answer whose status is no success: its JSON-RPC error when it carries one
/// (within the JSON limit, and within the value bound), otherwise the status with the start of
/// the body; a rejected `server/discover` on no session as the response rmcp's lifecycle falls
/// back on.
async fn failed(
    response: reqwest::Response,
    sent: &Sent<'_>,
    status_error: Option<HttpStatusError>,
    answer_session: Option<String>,
    is_json: bool,
) -> Result<StreamableHttpPostResponse, PostError> {
    let Sent {
        server,
        message,
        session_was_attached,
        limits,
        secrets,
    } = *sent;
    let status = response.status();
    let content_length = response.content_length();
    let is_auth_failure = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
    let max_diagnostic = limits.max_error_response_size;
    let unreadable = || UNREADABLE_BODY[..UNREADABLE_BODY.len().min(max_diagnostic)].to_owned();
    // A diagnostic: at most the first `max_diagnostic` bytes, read as text (invalid UTF-8
    // replaced, as reqwest's `text` does).
    let longest_secret = secrets.iter().map(String::len).max().unwrap_or(0);
    let prefix = |body: &[u8]| shown_start(body, max_diagnostic, secrets);
    let body = if is_json && !is_auth_failure {
        match read_bounded(
            response.bytes_stream(),
            content_length,
            limits.max_json_response_size,
        )
        .await
        {
            Ok(body) if refused(server, &body).is_none() => {
                let text = redacted(String::from_utf8_lossy(&body).into_owned(), secrets);
                if let Some(error) = json_rpc_error(&text) {
                    let discover =
                        discover_rejected(message, session_was_attached, status, Some(&error), "");
                    return Ok(
                        discover.unwrap_or(StreamableHttpPostResponse::Json(error, answer_session))
                    );
                }
                tracing::warn!(target: "llm_tools::mcp", server, %status, "the server's JSON error body is no JSON-RPC error");
                prefix(&body)
            }
            Ok(body) => prefix(&body),
            Err(error @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                return Err(status_error.map_or(error, StreamableHttpError::from));
            }
            Err(StreamableHttpError::Client(_)) => unreadable(),
            Err(error) => return Err(error),
        }
    } else {
        match read_prefix(
            response.bytes_stream(),
            max_diagnostic.saturating_add(longest_secret),
        )
        .await
        {
            Ok(body) => prefix(&body),
            Err(StreamableHttpError::Client(_)) => unreadable(),
            Err(error) => return Err(error),
        }
    };
    let error = json_rpc_error(&body);
    if let Some(answer) =
        discover_rejected(message, session_was_attached, status, error.as_ref(), &body)
    {
        return Ok(answer);
    }
    if let Some(error) = status_error {
        return Err(error.into());
    }
    Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
        format!("HTTP {status}: {body}"),
    )))
}

/// `text` as a JSON-RPC error message, if it is one. `text` is within the value bound (a whole
/// body counted, or a diagnostic's first bytes).
fn json_rpc_error(text: &str) -> Option<ServerJsonRpcMessage> {
    match serde_json::from_str::<ServerJsonRpcMessage>(text) {
        Ok(error @ ServerJsonRpcMessage::Error(_)) => Some(error),
        _ => None,
    }
}

/// A `server/discover` sent on no session and rejected with a client error (not 401 or 403):
/// the server's JSON-RPC `error`, or an invalid-request error naming the status and `body`, as
/// the response to the discover request. rmcp's lifecycle reads it: a version or header error
/// from a current server, or a legacy server to reach with `initialize`.
fn discover_rejected(
    message: &ClientJsonRpcMessage,
    session_was_attached: bool,
    status: StatusCode,
    error: Option<&ServerJsonRpcMessage>,
    body: &str,
) -> Option<StreamableHttpPostResponse> {
    if session_was_attached
        || !status.is_client_error()
        || matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        return None;
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let error = match error {
        Some(ServerJsonRpcMessage::Error(error)) => error.error.clone(),
        _ => ErrorData::invalid_request(
            format!("server/discover rejected with HTTP {status}: {body}"),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    ))
}

/// The status error of a 429 or 5xx answer, with its `Retry-After` when short enough.
fn http_status_error(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = headers
        .get(RETRY_AFTER)
        .filter(|value| value.as_bytes().len() <= MAX_RETRY_AFTER_BYTES)
        .and_then(|value| std::str::from_utf8(value.as_bytes()).ok())
        .map(str::to_owned);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

/// Whether a `Content-Type` value is `expected`, whatever its case and parameters.
fn media_type_is(value: &[u8], expected: &str) -> bool {
    value
        .split(|byte| *byte == b';')
        .next()
        .and_then(|essence| std::str::from_utf8(essence).ok())
        .is_some_and(|essence| {
            essence
                .trim_matches([' ', '\t'])
                .eq_ignore_ascii_case(expected)
        })
}

/// The `scope` of a `WWW-Authenticate` challenge, quoted or not.
fn scope_of(challenge: &str) -> Option<String> {
    let at = challenge.to_ascii_lowercase().find("scope=")?;
    let value = challenge.get(at + "scope=".len()..)?;
    if let Some(quoted) = value.strip_prefix('"') {
        return quoted.find('"').map(|end| quoted[..end].to_owned());
    }
    let end = value
        .find(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .unwrap_or(value.len());
    (end > 0).then(|| value[..end].to_owned())
}

/// The first 256 bytes of a body that did not parse, for the error, `secrets` redacted.
fn preview(body: &[u8], secrets: &[String]) -> String {
    if body.is_empty() {
        return "<empty>".into();
    }
    let text = shown_start(body, 256, secrets);
    if body.len() > 256 {
        format!("{text}…")
    } else {
        text
    }
}

/// A whole body of at most `max` bytes: a longer one (by its `Content-Length` or as it
/// arrives) is refused without keeping more than `max`.
async fn read_bounded<S>(
    stream: S,
    content_length: Option<u64>,
    max: usize,
) -> Result<Vec<u8>, PostError>
where
    S: Stream<Item = Result<Bytes, reqwest::Error>>,
{
    if content_length.is_some_and(|length| length > max as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
    }
    let mut stream = std::pin::pin!(stream);
    let mut body = Vec::new();
    while let Some(chunk) = stream.try_next().await? {
        if chunk.len() > max - body.len() {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// At most the first `max` bytes of a body (a diagnostic: the rest is not read).
async fn read_prefix<S>(stream: S, max: usize) -> Result<Vec<u8>, PostError>
where
    S: Stream<Item = Result<Bytes, reqwest::Error>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut body = Vec::new();
    while body.len() < max {
        let Some(chunk) = stream.try_next().await? else {
            break;
        };
        let take = chunk.len().min(max - body.len());
        body.extend_from_slice(&chunk[..take]);
    }
    Ok(body)
}

/// An SSE body's events, each of at most `max` bytes: the stream ends at the first byte past
/// it, before the parser keeps more. For the answer to a request, its last event is then an
/// error response to the request, so the call fails at once naming the bound (an error would
/// have rmcp open the stream again from its last event); otherwise the stream ends with an
/// error.
fn bounded_events<S>(stream: S, max: usize, request: &ClientJsonRpcMessage) -> BoxedSseResponse
where
    S: Stream<Item = Result<Bytes, reqwest::Error>> + Send + 'static,
{
    let bounded = EventBound {
        inner: Box::pin(stream),
        sizes: EventSizes::new(max),
        ended: false,
    };
    let events = sse_stream::SseStream::from_bytes_stream(bounded);
    let ClientJsonRpcMessage::Request(request) = request else {
        return events.boxed();
    };
    let Ok(id) = serde_json::to_string(&request.id) else {
        return events.boxed();
    };
    events
        .map(move |event| match event {
            Err(sse_stream::Error::Body(error))
                if matches!(
                    error.downcast_ref::<EventStreamError>(),
                    Some(EventStreamError::EventTooLarge { .. })
                ) =>
            {
                // Made only when it stands in: the stream ends after it.
                let why = format!(
                    "an event of the server's answer exceeded the maximum size of {max} bytes; the answer was dropped"
                );
                Ok(sse_stream::Sse::default().data(error_answer(&id, &why)))
            }
            other => other,
        })
        .boxed()
}

/// Why an SSE body ended early.
#[derive(Debug, thiserror::Error)]
enum EventStreamError {
    #[error(transparent)]
    Body(reqwest::Error),
    #[error("an SSE event exceeded the maximum size of {max} bytes")]
    EventTooLarge { max: usize },
}

/// A byte stream whose SSE events are measured as they pass ([`EventSizes`]).
struct EventBound<S> {
    inner: Pin<Box<S>>,
    sizes: EventSizes,
    ended: bool,
}

impl<S> Stream for EventBound<S>
where
    S: Stream<Item = Result<Bytes, reqwest::Error>>,
{
    type Item = Result<Bytes, EventStreamError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.ended {
            return Poll::Ready(None);
        }
        let item = ready!(self.inner.as_mut().poll_next(cx));
        Poll::Ready(match item {
            Some(Ok(chunk)) => {
                if self.sizes.fits(&chunk) {
                    Some(Ok(chunk))
                } else {
                    self.ended = true;
                    Some(Err(EventStreamError::EventTooLarge {
                        max: self.sizes.max,
                    }))
                }
            }
            Some(Err(error)) => {
                self.ended = true;
                // reqwest's error prints its URL, query and all.
                Some(Err(EventStreamError::Body(error.without_url())))
            }
            None => None,
        })
    }
}

/// The size of the SSE event being read, as its parser keeps it: the bytes of its field lines
/// and a line end for each (comment lines are not kept); a blank line ends the event.
#[derive(Debug)]
struct EventSizes {
    max: usize,
    kept: usize,
    line: usize,
    line_is_comment: bool,
    after_cr: bool,
}

impl EventSizes {
    fn new(max: usize) -> Self {
        Self {
            max,
            kept: 0,
            line: 0,
            line_is_comment: false,
            after_cr: false,
        }
    }

    /// Whether the event being read still fits after `chunk`.
    fn fits(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            if std::mem::take(&mut self.after_cr) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\r' | b'\n' => {
                    self.after_cr = byte == b'\r';
                    if self.line == 0 {
                        self.kept = 0;
                    } else if !self.line_is_comment {
                        self.kept = self.kept.saturating_add(self.line).saturating_add(1);
                    }
                    self.line = 0;
                    self.line_is_comment = false;
                }
                _ => {
                    if self.line == 0 {
                        self.line_is_comment = byte == b':';
                    }
                    self.line = self.line.saturating_add(1);
                }
            }
            if self.kept.saturating_add(self.line) > self.max {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_fits_up_to_its_limit_and_a_blank_line_starts_the_next() {
        let mut sizes = EventSizes::new(10);
        // "data: abc" is 9 bytes, kept with its line end: 10.
        assert!(sizes.fits(b"data: abc\n"));
        assert!(sizes.fits(b"\n"));
        assert!(sizes.fits(b"data: abc\r\n\r\n"));
        assert!(!sizes.fits(b"data: abcd\n"));
    }

    #[test]
    fn an_event_split_over_chunks_is_measured_whole() {
        let mut sizes = EventSizes::new(16);
        assert!(sizes.fits(b"data: 01"));
        assert!(sizes.fits(b"234567"));
        assert!(!sizes.fits(b"89abc"));
    }

    #[test]
    fn comment_lines_are_not_kept() {
        let mut sizes = EventSizes::new(8);
        for _ in 0..100 {
            assert!(sizes.fits(b": ping\n"));
        }
        assert!(sizes.fits(b"data: a\n\n"));
    }

    #[test]
    fn media_types_match_whatever_their_case_and_parameters() {
        assert!(media_type_is(
            b"Application/JSON; charset=utf-8",
            JSON_MIME_TYPE
        ));
        assert!(media_type_is(b" text/event-stream", EVENT_STREAM_MIME_TYPE));
        assert!(!media_type_is(b"application/json-seq", JSON_MIME_TYPE));
    }

    #[test]
    fn a_scope_is_read_quoted_or_not() {
        assert_eq!(
            scope_of(r#"Bearer error="insufficient_scope", scope="files:read files:write""#)
                .as_deref(),
            Some("files:read files:write")
        );
        assert_eq!(
            scope_of("Bearer scope=read:data, x=1").as_deref(),
            Some("read:data")
        );
        assert_eq!(scope_of("Bearer realm=x"), None);
    }

    fn message(json: serde_json::Value) -> ClientJsonRpcMessage {
        serde_json::from_value(json).unwrap_or_else(|e| panic!("a client message: {e}"))
    }

    fn chunks(parts: &[&str]) -> impl Stream<Item = Result<Bytes, reqwest::Error>> + use<> {
        let parts: Vec<Result<Bytes, reqwest::Error>> = parts
            .iter()
            .map(|part| Ok(Bytes::from(part.to_string())))
            .collect();
        futures::stream::iter(parts)
    }

    #[tokio::test]
    async fn an_event_past_its_limit_in_the_answer_to_a_request_becomes_an_error_response() {
        let ping = message(serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
        let body = chunks(&["data: {\"a\":1}\n\n", "data: 0123456789", "0123456789\n\n"]);
        let events: Vec<_> = bounded_events(body, 16, &ping).collect().await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(
            events[0].as_ref().ok().and_then(|e| e.data.as_deref()),
            Some("{\"a\":1}")
        );
        let answer: serde_json::Value = events[1]
            .as_ref()
            .ok()
            .and_then(|e| e.data.as_deref())
            .and_then(|data| serde_json::from_str(data).ok())
            .unwrap_or_default();
        assert_eq!(answer["id"], 7, "{answer}");
        let text = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(text.contains("maximum size of 16 bytes"), "{text}");
        // The answer parses as the error response to the request.
        assert!(matches!(
            serde_json::from_value::<ServerJsonRpcMessage>(answer),
            Ok(ServerJsonRpcMessage::Error(_))
        ));
    }

    #[tokio::test]
    async fn an_event_past_its_limit_in_the_answer_to_a_notification_ends_the_stream_with_an_error()
    {
        let note =
            message(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let body = chunks(&["data: 0123456789", "0123456789\n\n", "data: {}\n\n"]);
        let events: Vec<_> = bounded_events(body, 16, &note).collect().await;
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(events[0].is_err());
    }

    #[test]
    fn a_rejected_discover_keeps_the_servers_error_or_names_the_status() {
        let discover = message(serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}
        }));
        let error_code = |answer: Option<StreamableHttpPostResponse>| match answer {
            Some(StreamableHttpPostResponse::Json(ServerJsonRpcMessage::Error(e), _)) => {
                Some(e.error.code.0)
            }
            _ => None,
        };
        // The server's own JSON-RPC error, whatever the body's declared type: rmcp's lifecycle
        // tells a current server's version error from a legacy server by it.
        let own = r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32000,"message":"unsupported version"}}"#;
        let answer = discover_rejected(
            &discover,
            false,
            StatusCode::BAD_REQUEST,
            json_rpc_error(own).as_ref(),
            own,
        );
        assert_eq!(error_code(answer), Some(-32000));
        // A plain-text rejection is an invalid request.
        let answer = discover_rejected(&discover, false, StatusCode::NOT_FOUND, None, "Not Found");
        assert_eq!(
            error_code(answer),
            Some(rmcp::model::ErrorCode::INVALID_REQUEST.0)
        );
        // Not on a session, not for 401/403, not for server errors, not for other requests.
        let ping = message(serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
        for (request, on_session, status) in [
            (&discover, true, StatusCode::BAD_REQUEST),
            (&discover, false, StatusCode::UNAUTHORIZED),
            (&discover, false, StatusCode::BAD_GATEWAY),
            (&ping, false, StatusCode::BAD_REQUEST),
        ] {
            let error = json_rpc_error(own);
            assert!(
                discover_rejected(request, on_session, status, error.as_ref(), own).is_none(),
                "{on_session} {status}"
            );
        }
    }

    #[tokio::test]
    async fn a_body_past_its_limit_is_refused_by_its_length_or_as_it_arrives() {
        let chunks = || {
            futures::stream::iter(["abcd", "efgh"].map(|c| Ok::<_, reqwest::Error>(Bytes::from(c))))
        };
        assert_eq!(
            read_bounded(chunks(), None, 8).await.ok(),
            Some(b"abcdefgh".to_vec())
        );
        assert!(matches!(
            read_bounded(chunks(), None, 7).await,
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size: 7 })
        ));
        assert!(matches!(
            read_bounded(chunks(), Some(9), 8).await,
            Err(StreamableHttpError::ResponseBodyTooLarge { max_size: 8 })
        ));
        assert_eq!(
            read_prefix(chunks(), 6).await.ok(),
            Some(b"abcdef".to_vec())
        );
    }
}

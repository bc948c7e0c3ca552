//! Streamable HTTP: the HTTP client a session runs on (redirects stay on the server's origin,
//! so the bearer token and custom headers never reach another one), URLs as they may be shown
//! (query values and passwords redacted), and HTTP failures described without their URL. Each
//! message a server sends, in an SSE event or as a plain JSON answer, is counted before it is
//! parsed (see `message_bound`; a message is posted by `http_post`).

use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::client_side_sse::BoxedSseResponse;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};

use super::http_post::{self, Post};
use super::message_bound::{Refused, refused};
use super::stream_opens::{MAX_STREAM_OPENS_PER_MINUTE, Open, QUIET_STREAM_LIMIT, StreamOpens};

/// How many redirects within the server's origin a request follows, unless
/// [`McpServer::max_redirects`](crate::McpServer::max_redirects) says otherwise: 10 (reqwest's
/// own default).
pub const DEFAULT_MAX_REDIRECTS: usize = 10;

/// A redirect to another origin (scheme, host or port), refused: following it would send the
/// request's credentials and body there.
#[derive(Debug, thiserror::Error)]
#[error("a redirect from {from} to another origin, {to}, was refused")]
pub(crate) struct CrossOriginRedirect {
    pub(crate) from: String,
    pub(crate) to: String,
}

/// More redirects within the origin than allowed.
#[derive(Debug, thiserror::Error)]
#[error("more than {max} redirects")]
pub(crate) struct TooManyRedirects {
    max: usize,
}

/// The HTTP client of a session with `server`: reqwest's, following at most `max_redirects`
/// redirects and only within the origin they started from, its errors without their URL.
pub(crate) fn client(
    max_redirects: usize,
    server: &str,
    secrets: Vec<String>,
) -> Result<HttpClient, String> {
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        let Some(previous) = attempt.previous().last() else {
            return attempt.follow();
        };
        let (from, to) = (previous.origin(), attempt.url().origin());
        if !from.is_tuple() || from != to {
            let refused = CrossOriginRedirect {
                from: from.ascii_serialization(),
                to: to.ascii_serialization(),
            };
            return attempt.error(refused);
        }
        if attempt.previous().len() > max_redirects {
            return attempt.error(TooManyRedirects { max: max_redirects });
        }
        attempt.follow()
    });
    reqwest::Client::builder()
        .redirect(policy)
        .build()
        .map(|client| HttpClient {
            client,
            server: Arc::from(server),
            secrets: Arc::from(secrets),
            stream_opens: Arc::default(),
            stream_message: Arc::default(),
        })
        .map_err(|e| format!("the HTTP client cannot be built: {}", reqwest_kind(&e)))
}

/// reqwest's client as rmcp's Streamable HTTP client, with two changes:
/// - its errors carry no URL. A reqwest error prints its URL, query and all, in its `Display`
///   and `Debug`, and rmcp logs the errors it meets; the URL's query may hold a key;
/// - each message of an SSE stream is counted before rmcp parses it
///   ([`message_bound`](super::message_bound)).
#[derive(Clone)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
    /// The name given to the server, for the log.
    server: Arc<str>,
    /// The application's credentials for the server (its bearer token, its headers' values),
    /// kept out of the errors a server's answers go into (see `http_post`).
    secrets: Arc<[String]>,
    /// The opens of the session's event streams, shared by clones.
    stream_opens: Arc<Mutex<StreamOpens>>,
    /// Whether a message arrived on an event stream since the last open.
    stream_message: Arc<AtomicBool>,
}

impl HttpClient {
    /// When the next event stream may open (see [`stream_opens`](super::stream_opens)):
    /// after a delay (zero: at once), or never, the session's streams given up.
    fn next_stream_open(&self, session: Option<&str>) -> Option<Duration> {
        let message = self.stream_message.swap(false, Ordering::Relaxed);
        let open = self
            .stream_opens
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .next(Instant::now(), message, session);
        match open {
            Open::After(delay) => {
                if !delay.is_zero() {
                    tracing::warn!(target: "llm_tools::mcp", server = &*self.server, max = MAX_STREAM_OPENS_PER_MINUTE, ?delay, "the server's event stream ended too often within a minute; it opens again after a delay");
                }
                Some(delay)
            }
            Open::GivenUp { first } => {
                if first {
                    tracing::warn!(target: "llm_tools::mcp", server = &*self.server, max = MAX_STREAM_OPENS_PER_MINUTE, quiet = ?QUIET_STREAM_LIMIT, "the server's event stream kept ending without a message; it is not opened again in this session (calls go on; the server's notifications between calls are lost)");
                }
                None
            }
        }
    }

    /// Waits until the next event stream may open; `Err` (rmcp then stops reopening that
    /// stream) when the session's streams are given up.
    async fn stream_open_turn(
        &self,
        session: Option<&str>,
    ) -> Result<(), StreamableHttpError<HttpError>> {
        match self.next_stream_open(session) {
            // rmcp awaits this in the stream's own task; nothing else waits on it.
            Some(delay) => {
                // No timer for no wait: a session's stream goes out at once, before the
                // requests that follow the handshake (a server's request on that stream finds
                // it open).
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Ok(())
            }
            // The one error after which rmcp's reconnecting stream stops at once rather than
            // trying again ("repeating GET cannot enable SSE").
            None => Err(StreamableHttpError::ServerDoesNotSupportSse),
        }
    }

    /// A session's event stream (a `GET`): [`bounded`](Self::bounded), and each message it
    /// carries noted, so a stream that carries messages is never given up. A message is what
    /// rmcp reads as one: an event named `message` (or not named) with data; a priming event
    /// (empty data), a `ping` or a `retry` hint is not.
    fn bounded_get(&self, stream: BoxedSseResponse) -> BoxedSseResponse {
        let seen = Arc::clone(&self.stream_message);
        Box::pin(self.bounded(stream).map(move |event| {
            if let Ok(sse) = &event
                && matches!(sse.event.as_deref(), None | Some("" | "message"))
                && sse.data.as_deref().is_some_and(|d| !d.trim().is_empty())
            {
                seen.store(true, Ordering::Relaxed);
            }
            event
        }))
    }

    /// `stream` with each event's message counted: one holding too many JSON values reaches
    /// rmcp as the error response that replaces it, or as an event without data (skipped).
    fn bounded(&self, stream: BoxedSseResponse) -> BoxedSseResponse {
        let server = Arc::clone(&self.server);
        Box::pin(stream.map(move |event| {
            event.map(|mut sse| {
                match sse
                    .data
                    .as_deref()
                    .and_then(|data| refused(&server, data.as_bytes()))
                {
                    None => {}
                    Some(Refused::Answered(replacement)) => sse.data = Some(replacement),
                    // An event without data is skipped.
                    Some(Refused::Dropped) => sse.data = None,
                }
                sse
            })
        }))
    }

    /// `response`, its SSE stream (if it is one) [`bounded`](Self::bounded).
    fn bounded_post(&self, response: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
        match response {
            StreamableHttpPostResponse::Sse(stream, session) => {
                StreamableHttpPostResponse::Sse(self.bounded(stream), session)
            }
            other => other,
        }
    }
}

/// A reqwest error without its URL.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct HttpError(reqwest::Error);

/// The same error, its reqwest error without the URL.
fn without_url(error: StreamableHttpError<reqwest::Error>) -> StreamableHttpError<HttpError> {
    use StreamableHttpError as E;
    match error {
        E::Client(error) => E::Client(HttpError(error.without_url())),
        E::Sse(error) => E::Sse(error),
        E::Io(error) => E::Io(error),
        E::HttpStatus(error) => E::HttpStatus(error),
        E::UnexpectedEndOfStream => E::UnexpectedEndOfStream,
        E::UnexpectedServerResponse(text) => E::UnexpectedServerResponse(text),
        E::ResponseBodyTooLarge { max_size } => E::ResponseBodyTooLarge { max_size },
        E::UnexpectedContentType(kind) => E::UnexpectedContentType(kind),
        E::ServerDoesNotSupportSse => E::ServerDoesNotSupportSse,
        E::ServerDoesNotSupportDeleteSession => E::ServerDoesNotSupportDeleteSession,
        E::TokioJoinError(error) => E::TokioJoinError(error),
        E::Deserialize(error) => E::Deserialize(error),
        E::TransportChannelClosed => E::TransportChannelClosed,
        E::MissingSessionIdInResponse => E::MissingSessionIdInResponse,
        E::AuthRequired(error) => E::AuthRequired(error),
        E::InsufficientScope(error) => E::InsufficientScope(error),
        E::ReservedHeaderConflict(name) => E::ReservedHeaderConflict(name),
        E::SessionExpired => E::SessionExpired,
        E::SessionRecoveryTimeout => E::SessionRecoveryTimeout,
        E::ReinitializationFailed(error) => E::ReinitializationFailed(error),
        E::ControlRequestTimeout => E::ControlRequestTimeout,
        // A kind newer than this crate (none of them holds a reqwest error).
        other => E::UnexpectedServerResponse(other.to_string().into()),
    }
}

impl StreamableHttpClient for HttpClient {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<HttpError>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<HttpError>> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<HttpError>> {
        let post = Post {
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            limits,
            secrets: Arc::clone(&self.secrets),
        };
        http_post::post(&self.client, &self.server, post)
            .await
            .map(|response| self.bounded_post(response))
            .map_err(without_url)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<HttpError>> {
        self.client
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
            .map_err(without_url)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxedSseResponse, StreamableHttpError<HttpError>> {
        self.stream_open_turn(session_id.as_deref()).await?;
        self.client
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
            .map(|stream| self.bounded_get(stream))
            .map_err(without_url)
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxedSseResponse, StreamableHttpError<HttpError>> {
        self.stream_open_turn(session_id.as_deref()).await?;
        self.client
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
            .map(|stream| self.bounded_get(stream))
            .map_err(without_url)
    }
}

/// `url` as it may be shown: every query value and the password replaced by `<redacted>`, the
/// fragment left out. Which query parameters are secret is not known (`?key=`, `?sig=`,
/// `?token=`, …), so none is shown.
pub(crate) fn redacted_url(url: &str) -> String {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        // Not a URL: its part before any query, without credentials.
        let before_query = url.split(['?', '#']).next().unwrap_or_default();
        return match before_query.rsplit_once('@') {
            Some((_, after)) => format!("<redacted>@{after}"),
            None => before_query.to_owned(),
        };
    };
    let mut shown = format!("{}://", parsed.scheme());
    if !parsed.username().is_empty() || parsed.password().is_some() {
        shown.push_str(parsed.username());
        if parsed.password().is_some() {
            shown.push_str(":<redacted>");
        }
        shown.push('@');
    }
    shown.push_str(parsed.host_str().unwrap_or_default());
    if let Some(port) = parsed.port() {
        shown.push_str(&format!(":{port}"));
    }
    shown.push_str(parsed.path());
    if parsed.query().is_some() {
        let names: Vec<String> = parsed
            .query_pairs()
            .map(|(name, _)| format!("{name}=<redacted>"))
            .collect();
        shown.push('?');
        shown.push_str(&names.join("&"));
    }
    shown
}

/// What kind of failure a reqwest error is, without its URL.
fn reqwest_kind(error: &reqwest::Error) -> String {
    if let Some(status) = error.status() {
        format!("HTTP status {}", status.as_u16())
    } else if error.is_timeout() {
        "the request timed out".to_owned()
    } else if error.is_connect() {
        "could not connect".to_owned()
    } else if error.is_redirect() {
        "the redirect was not followed".to_owned()
    } else if error.is_body() {
        "reading the body failed".to_owned()
    } else if error.is_decode() {
        "the body could not be decoded".to_owned()
    } else if error.is_builder() {
        "the request could not be built".to_owned()
    } else {
        "the request failed".to_owned()
    }
}

/// The next error of a chain; rmcp's HTTP client error keeps reqwest's as a field rather than
/// as its source.
fn next_in_chain<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a (dyn StdError + 'static)> {
    if let Some(StreamableHttpError::Client(inner)) =
        error.downcast_ref::<StreamableHttpError<HttpError>>()
    {
        return Some(inner);
    }
    error.source()
}

/// The refused redirect anywhere in an error's chain.
pub(crate) fn refused_redirect<'a>(
    error: &'a (dyn StdError + 'static),
) -> Option<&'a CrossOriginRedirect> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(refused) = error.downcast_ref::<CrossOriginRedirect>() {
            return Some(refused);
        }
        current = next_in_chain(error);
    }
    None
}

/// An error and its causes as text a user can read: reqwest's errors by kind (their text holds
/// the URL with its query), the wrappers that only name Rust types left out. The causes may
/// quote the server (an HTTP error's body): errors show the text through `error::chain`, cut
/// and escaped as every server text is.
pub(crate) fn describe_chain(error: &(dyn StdError + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(error) = current {
        let part = if let Some(reqwest) = error.downcast_ref::<reqwest::Error>() {
            Some(reqwest_kind(reqwest))
        } else if let Some(HttpError(reqwest)) = error.downcast_ref::<HttpError>() {
            Some(reqwest_kind(reqwest))
        } else if error.is::<rmcp::transport::DynamicTransportError>() {
            // "Transport [<type name>] error: …": its source says the same without the type.
            None
        } else if let Some(http) = error.downcast_ref::<StreamableHttpError<HttpError>>() {
            match http {
                // Said by the reqwest error that follows.
                StreamableHttpError::Client(_) => None,
                other => Some(other.to_string()),
            }
        } else {
            Some(error.to_string())
        };
        if let Some(part) = part
            && !part.is_empty()
            && parts.last() != Some(&part)
        {
            parts.push(part);
        }
        current = next_in_chain(error);
    }
    if parts.is_empty() {
        "the transport failed".to_owned()
    } else {
        parts.join(": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_and_passwords_are_redacted() {
        assert_eq!(
            redacted_url("https://u:pw@mcp.example.com:8443/mcp?key=k1&tenant=acme#frag"),
            "https://u:<redacted>@mcp.example.com:8443/mcp?key=<redacted>&tenant=<redacted>"
        );
        assert_eq!(
            redacted_url("http://127.0.0.1:3000/mcp"),
            "http://127.0.0.1:3000/mcp"
        );
        assert_eq!(
            redacted_url("http://[::1]/mcp?t=1"),
            "http://[::1]/mcp?t=<redacted>"
        );
        assert_eq!(redacted_url("not a url?key=k1"), "not a url");
        assert_eq!(
            redacted_url("bad://u:pw@x?y"),
            "bad://u:<redacted>@x?y=<redacted>"
        );
    }

    #[test]
    fn a_refused_redirect_is_found_in_the_chain() {
        let refused = CrossOriginRedirect {
            from: "http://a".into(),
            to: "http://b".into(),
        };
        #[derive(Debug, thiserror::Error)]
        #[error("wrapped")]
        struct Wrapped(#[source] CrossOriginRedirect);
        let wrapped = Wrapped(refused);
        let found = refused_redirect(&wrapped).unwrap();
        assert_eq!(
            (found.from.as_str(), found.to.as_str()),
            ("http://a", "http://b")
        );
        assert!(refused_redirect(&std::io::Error::other("x")).is_none());
    }

    #[tokio::test]
    async fn event_streams_given_up_are_not_requested() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri: Arc<str> = format!("http://{}/mcp", listener.local_addr().unwrap()).into();
        let http = client(10, "quiet", Vec::new()).unwrap();
        *http.stream_opens.lock().unwrap() = StreamOpens::given_up(Some("s1"));
        for resume in [None, Some("7".to_owned())] {
            let result = http
                .get_stream(
                    Arc::clone(&uri),
                    Some("s1".into()),
                    resume,
                    None,
                    HashMap::new(),
                )
                .await;
            assert!(matches!(
                result,
                Err(StreamableHttpError::ServerDoesNotSupportSse)
            ));
        }
        let result = http
            .get_stream_with_max_sse_event_size(
                Arc::clone(&uri),
                Some("s1".into()),
                None,
                None,
                HashMap::new(),
                1024,
            )
            .await;
        assert!(matches!(
            result,
            Err(StreamableHttpError::ServerDoesNotSupportSse)
        ));
        // No connection was made.
        assert!(
            futures::FutureExt::now_or_never(listener.accept()).is_none(),
            "a given-up stream was requested"
        );
    }

    #[tokio::test]
    async fn a_message_on_an_event_stream_is_noted_and_a_retry_hint_is_not() {
        use futures::StreamExt as _;
        let http = client(10, "s", Vec::new()).unwrap();
        let hint: BoxedSseResponse = futures::stream::iter([
            Ok(sse_stream::Sse::default().retry(0)),
            // A priming event and a ping are not messages either.
            Ok(sse_stream::Sse::default().id("0").data("")),
            Ok(sse_stream::Sse::default().event("ping").data("{}")),
        ])
        .boxed();
        let _ = http.bounded_get(hint).collect::<Vec<_>>().await;
        assert!(!http.stream_message.load(Ordering::Relaxed));
        let message = sse_stream::Sse::default()
            .data(r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#);
        let _ = http
            .bounded_get(futures::stream::iter([Ok(message)]).boxed())
            .collect::<Vec<_>>()
            .await;
        assert!(http.stream_message.load(Ordering::Relaxed));
        // The next open takes the note.
        assert_eq!(http.next_stream_open(Some("s1")), Some(Duration::ZERO));
        assert!(!http.stream_message.load(Ordering::Relaxed));
    }
}

//! The HTTP server's connections and sessions, bounded so no client can stop it:
//!
//! - an `accept` that fails (out of file descriptors, say) is logged and tried again after a
//!   pause (10 ms, doubling up to 1 s while it keeps failing); serving never ends on it;
//! - at most [`DEFAULT_MAX_CONNECTIONS`] connections are open at once, and at most
//!   [`DEFAULT_MAX_CONNECTIONS_PER_PEER`] from one address: one more is answered `503` and
//!   closed, and those open go on;
//! - a connection is closed when a request's head takes longer than
//!   [`DEFAULT_HEADER_READ_TIMEOUT`] to arrive (counted from the connection's start, or from
//!   the first byte after a response), or when it stays idle (no request running, nothing
//!   read) for [`DEFAULT_IDLE_TIMEOUT`]; a request that runs (a long tool call, an event
//!   stream) keeps its connection open;
//! - a connection whose client stops reading is closed once a write has waited
//!   [`DEFAULT_WRITE_STALL_TIMEOUT`] without a byte going out, running request or not (a
//!   write waits once the socket's buffers are full: a quiet event stream whose client never
//!   reads is held by the per-address cap instead);
//! - at most [`DEFAULT_MAX_SESSIONS`] sessions opened with `initialize` live at once, each
//!   closed after [`DEFAULT_SESSION_IDLE_TIMEOUT`] without a request, and at most
//!   [`DEFAULT_MAX_SESSIONS_PER_PRINCIPAL`] of them one authorized principal's, counting those
//!   being opened: its `initialize` past that is refused before a session is made for it;
//! - a request of such a session whose response stream the client drops before its response
//!   (it hung up) is cancelled once [`DEFAULT_RESUME_WINDOW`] passes without the client taking
//!   the stream up again (`Last-Event-ID`), as if the client had sent `notifications/cancelled`;
//! - a request of such a session whose id is the id of one of the session's requests still
//!   unanswered is refused with a JSON-RPC error (`-32600`), and the first goes on: the second
//!   would take the first one's route, leaving its response stream open without an answer.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use rmcp::ErrorData;
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionHandle, LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// How many connections the HTTP server keeps open at once unless
/// [`HttpOptions::with_max_connections`](crate::HttpOptions::with_max_connections) says
/// otherwise; one more is answered `503` and closed.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// How many connections one client address keeps open at once unless
/// [`HttpOptions::with_max_connections_per_peer`](crate::HttpOptions::with_max_connections_per_peer)
/// says otherwise: a quarter of [`DEFAULT_MAX_CONNECTIONS`], so one client holding event
/// streams cannot take every place. With another connection limit the default is a quarter
/// of it, at least 8 (or the limit, if lower). One more is answered `503` and
/// closed. An IPv6 client is its /64 network. Behind a reverse proxy every client has the
/// proxy's address: raise it to the connection limit there.
pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = DEFAULT_MAX_CONNECTIONS / 4;

/// One client's default share of a server-wide limit: a quarter of it, at least 8 (or the
/// whole limit when it is lower).
pub(super) fn share_of(limit: usize) -> usize {
    (limit / 4).max(limit.min(8))
}

/// How long a write to a client may wait without a byte going out unless
/// [`HttpOptions::with_write_stall_timeout`](crate::HttpOptions::with_write_stall_timeout)
/// says otherwise: 30 s. Then the connection is closed, whatever runs on it: a client that
/// stops reading a response (a large result, a busy event stream) cannot hold its
/// connection. A write waits once the socket's buffers are full, so a quiet event stream
/// whose client never reads is bounded by [`DEFAULT_MAX_CONNECTIONS_PER_PEER`] instead, and a
/// client must take in about half a send buffer (hundreds of KiB on a fast link) per timeout.
pub const DEFAULT_WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a client may take to send a request's head (from the connection's start, or from
/// its first byte after a response) unless
/// [`HttpOptions::with_header_read_timeout`](crate::HttpOptions::with_header_read_timeout)
/// says otherwise: 10 s. Then the connection is closed.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take to send a request's body once its head has come, unless
/// [`HttpOptions::with_body_read_timeout`](crate::HttpOptions::with_body_read_timeout) says
/// otherwise: 30 s, room for the largest body on a slow link. Then the request fails and the
/// connection is closed: a body that never comes cannot hold a connection.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection may stay idle (no request running, nothing read) unless
/// [`HttpOptions::with_idle_timeout`](crate::HttpOptions::with_idle_timeout) says otherwise:
/// 60 s. Then it is closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How many sessions opened with `initialize` live at once unless
/// [`HttpOptions::with_max_sessions`](crate::HttpOptions::with_max_sessions) says otherwise;
/// one more `initialize` is refused (`500`, saying so).
pub const DEFAULT_MAX_SESSIONS: usize = 1_000;

/// How many live sessions opened with `initialize` one principal keeps unless
/// [`HttpOptions::with_max_sessions_per_principal`](crate::HttpOptions::with_max_sessions_per_principal)
/// says otherwise: a quarter of [`DEFAULT_MAX_SESSIONS`], so one authorized client cannot take
/// every session (with another session limit, a quarter of it, at least 8 or the limit). One more `initialize` is refused (`429`, saying so) and its session closed.
/// Without authorization every client is one anonymous principal, kept by the sessions' own
/// limit only.
pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: usize = DEFAULT_MAX_SESSIONS / 4;

/// How long one event stream of a session opened with `initialize` stays open unless
/// [`HttpOptions::with_max_event_stream_lifetime`](crate::HttpOptions::with_max_event_stream_lifetime)
/// says otherwise: 1 hour. Then the stream ends and the client opens another, as SSE clients
/// do: its stream for messages the server sends on its own (`GET`), or a response's stream (a
/// `POST`'s), taken up again with `Last-Event-ID` within the resume window or its request is
/// cancelled. A client that never reads its stream holds its connection no longer than this. A
/// 2026-07-28 response's stream lasts at least as long as the server's longest call may.
pub const DEFAULT_MAX_EVENT_STREAM_LIFETIME: Duration = Duration::from_secs(3600);

/// How long a session opened with `initialize` lives without a request unless
/// [`HttpOptions::with_session_idle_timeout`](crate::HttpOptions::with_session_idle_timeout)
/// says otherwise: 5 minutes.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a request of a session opened with `initialize` (a tool call) keeps running after
/// its client dropped the response's stream before the response came, unless
/// [`HttpOptions::with_resume_window`](crate::HttpOptions::with_resume_window) says otherwise:
/// 30 s, for the client to take the stream up again with `Last-Event-ID`. Then the request is
/// cancelled, as if the client had sent `notifications/cancelled`: a client that hangs up does
/// not leave its calls running.
pub const DEFAULT_RESUME_WINDOW: Duration = Duration::from_secs(30);

/// The first pause after a failed `accept`; it doubles while accepting keeps failing.
const ACCEPT_PAUSE_FIRST: Duration = Duration::from_millis(10);

/// The longest pause after a failed `accept`.
const ACCEPT_PAUSE_MAX: Duration = Duration::from_secs(1);

/// What a connection past the limit is told before it is closed.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
retry-after: 1\r\nconnection: close\r\ncontent-length: 44\r\n\r\nthe server has all the connections it takes\n";

/// How many connections the server keeps open: in all, and from one client address.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConnectionLimits {
    pub(super) max: usize,
    pub(super) max_per_peer: usize,
}

/// A connection's place among those open, given back when it drops: one of the server's
/// places, and one of its client address's.
pub(super) struct Place {
    _place: tokio::sync::OwnedSemaphorePermit,
    _peer: PeerPlace,
}

/// The open connections of each client address; an address leaves the map with its last
/// connection, so the map holds at most as many addresses as connections are open.
#[derive(Default)]
struct Peers(Mutex<std::collections::HashMap<IpAddr, usize>>);

impl Peers {
    fn lock(&self) -> MutexGuard<'_, std::collections::HashMap<IpAddr, usize>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for one more connection from `peer`, unless it has `max` open.
    fn take(self: &Arc<Self>, peer: IpAddr, max: usize) -> Option<PeerPlace> {
        let mut open = self.lock();
        let count = open.entry(peer).or_insert(0);
        if *count >= max {
            if *count == 0 {
                open.remove(&peer);
            }
            return None;
        }
        *count += 1;
        Some(PeerPlace {
            peers: Arc::clone(self),
            peer,
        })
    }
}

/// One connection's place among its client address's.
struct PeerPlace {
    peers: Arc<Peers>,
    peer: IpAddr,
}

impl Drop for PeerPlace {
    fn drop(&mut self) {
        let mut open = self.peers.lock();
        if let Some(count) = open.get_mut(&self.peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.peer);
            }
        }
    }
}

/// The client an address is, for the per-client cap: an IPv4 address (also when a dual-stack
/// listener sees it IPv4-mapped), or the /64 network of an IPv6 one, as one host is usually
/// given a whole /64 and could otherwise take a new address for each connection.
fn client_of(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V6(v6) => {
            let network = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(network.into())
        }
        v4 => v4,
    }
}

/// Accepts connections until the process ends, handing each to `serve` with its [`Place`]
/// among the open ones; a connection past either limit is answered `503` and closed.
pub(super) async fn accept_forever<F, Fut>(
    listener: tokio::net::TcpListener,
    limits: ConnectionLimits,
    serve: F,
) where
    F: Fn(tokio::net::TcpStream, Place) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let ConnectionLimits { max, max_per_peer } = limits;
    let places = Arc::new(tokio::sync::Semaphore::new(
        max.min(tokio::sync::Semaphore::MAX_PERMITS),
    ));
    let peers = Arc::new(Peers::default());
    let mut pause = ACCEPT_PAUSE_FIRST;
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok((stream, peer)) => {
                pause = ACCEPT_PAUSE_FIRST;
                (stream, client_of(peer.ip()))
            }
            Err(error) => {
                tracing::warn!(target: "llm_tools::mcp", %error, ?pause, "accepting a connection failed; serving goes on after a pause");
                tokio::time::sleep(pause).await;
                pause = pause.saturating_mul(2).min(ACCEPT_PAUSE_MAX);
                continue;
            }
        };
        let Some(peer_place) = peers.take(peer, max_per_peer) else {
            tracing::warn!(target: "llm_tools::mcp", max_per_peer, "refused a connection: its client address has its maximum of connections open");
            // Never waits on the client: what does not fit in the socket's buffer is lost.
            let _ = stream.try_write(BUSY);
            continue;
        };
        match Arc::clone(&places).try_acquire_owned() {
            Ok(place) => {
                tokio::spawn(serve(
                    stream,
                    Place {
                        _place: place,
                        _peer: peer_place,
                    },
                ));
            }
            Err(_) => {
                tracing::warn!(target: "llm_tools::mcp", max, "refused a connection: the server has its maximum of connections open");
                let _ = stream.try_write(BUSY);
            }
        }
    }
}

/// How a connection has been used, for its timeouts.
pub(super) struct Activity {
    state: Mutex<Usage>,
    /// Wakes the watchdog when its deadline changes: the last running request ended, or a
    /// request's head started to arrive.
    changed: tokio::sync::Notify,
    header_read_timeout: Duration,
    idle_timeout: Duration,
    write_stall_timeout: Duration,
    /// Whether the last write waited (a copy of `Usage::write_waiting_since.is_some()`, read
    /// without the lock on every write).
    write_waiting: AtomicBool,
}

/// A connection's timeouts.
#[derive(Clone, Copy, Debug)]
pub(super) struct Timeouts {
    pub(super) header_read: Duration,
    pub(super) idle: Duration,
    pub(super) write_stall: Duration,
}

struct Usage {
    /// Requests running (their response not yet sent).
    running: usize,
    /// When the connection last became idle.
    idle_since: Instant,
    /// When the head of the next request started to arrive.
    head_started: Option<Instant>,
    /// Since when a write has waited for the client to read, without a byte going out.
    write_waiting_since: Option<Instant>,
}

impl Activity {
    /// A connection accepted now: its first request's head is due within the header timeout.
    pub(super) fn new(timeouts: Timeouts) -> Arc<Self> {
        let now = Instant::now();
        Arc::new(Self {
            state: Mutex::new(Usage {
                running: 0,
                idle_since: now,
                head_started: Some(now),
                write_waiting_since: None,
            }),
            changed: tokio::sync::Notify::new(),
            header_read_timeout: timeouts.header_read,
            idle_timeout: timeouts.idle,
            write_stall_timeout: timeouts.write_stall,
            write_waiting: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Usage> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn read_some(&self) {
        let mut usage = self.lock();
        if usage.running == 0 && usage.head_started.is_none() {
            usage.head_started = Some(Instant::now());
            drop(usage);
            // The head's deadline may come before the idle one the watchdog waits for.
            self.changed.notify_one();
        }
    }

    /// A write waits for the client to read: the stall's deadline starts, unless it has.
    fn write_waits(&self) {
        if self.write_waiting.swap(true, Ordering::Relaxed) {
            return;
        }
        self.lock().write_waiting_since = Some(Instant::now());
        self.changed.notify_one();
    }

    /// A write went out: no stall.
    fn wrote(&self) {
        if self.write_waiting.swap(false, Ordering::Relaxed) {
            self.lock().write_waiting_since = None;
        }
    }

    /// A request starts; it runs until the returned guard (held by its response body) drops.
    pub(super) fn request_started(self: &Arc<Self>) -> Running {
        let mut usage = self.lock();
        usage.running = usage.running.saturating_add(1);
        usage.head_started = None;
        Running(Arc::clone(self))
    }

    /// When the connection is due to close, if nothing happens before.
    fn deadline(&self) -> Option<Instant> {
        let usage = self.lock();
        let stalled = usage
            .write_waiting_since
            .and_then(|since| since.checked_add(self.write_stall_timeout));
        let unused = if usage.running > 0 {
            None
        } else {
            match usage.head_started {
                Some(started) => started.checked_add(self.header_read_timeout),
                None => usage.idle_since.checked_add(self.idle_timeout),
            }
        };
        match (stalled, unused) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Ends when the connection has been idle, slow to send a request's head, or slow to read
    /// what it is sent, too long.
    pub(super) async fn expired(&self) {
        loop {
            let notified = self.changed.notified();
            match self.deadline() {
                None => notified.await,
                Some(deadline) => {
                    if deadline <= Instant::now() {
                        return;
                    }
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = notified => {}
                    }
                }
            }
        }
    }
}

/// A running request; the connection is idle again when the last one drops.
pub(super) struct Running(Arc<Activity>);

impl Drop for Running {
    fn drop(&mut self) {
        let mut usage = self.0.lock();
        usage.running = usage.running.saturating_sub(1);
        if usage.running == 0 {
            usage.idle_since = Instant::now();
            usage.head_started = None;
            drop(usage);
            self.0.changed.notify_one();
        }
    }
}

/// A response body that holds its request's [`Running`] until it is dropped (sent, or the
/// client gone); everything else is the body's own (its size, so `content-length` stays).
pub(super) struct Tracked<B> {
    body: B,
    _running: Running,
}

impl<B> Tracked<B> {
    pub(super) fn new(body: B, running: Running) -> Self {
        Self {
            body,
            _running: running,
        }
    }
}

impl<B: hyper::body::Body + Unpin> hyper::body::Body for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// A connection's stream, telling its [`Activity`] when bytes arrive.
pub(super) struct Watched<S> {
    stream: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    pub(super) fn new(stream: S, activity: Arc<Activity>) -> Self {
        Self { stream, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read_some();
        }
        polled
    }
}

impl<S> Watched<S> {
    /// Tells the activity whether a write went out or waits.
    fn note_write<T>(&self, polled: Poll<std::io::Result<T>>) -> Poll<std::io::Result<T>> {
        match &polled {
            Poll::Pending => self.activity.write_waits(),
            Poll::Ready(_) => self.activity.wrote(),
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.note_write(polled)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.note_write(polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

tokio::task_local! {
    /// Who the request being handled is from, for a session it opens ([`as_opener`]).
    static OPENER: std::cell::RefCell<Opener>;
}

/// The principal of a request that may open a session (`None`: the server has no
/// authorization), and the place held among its sessions for it.
pub(super) struct Opener {
    principal: Option<String>,
    place: Option<SessionPlace>,
}

impl Opener {
    pub(super) fn new(principal: Option<String>, place: Option<SessionPlace>) -> Self {
        Self { principal, place }
    }
}

/// Runs `handling` (rmcp's handling of one request) as `opener`'s: a session it opens is noted
/// as the opener's when it is created, in the place the opener holds, which is given back when
/// the handling ends without opening one.
pub(super) async fn as_opener<F: Future>(opener: Opener, handling: F) -> F::Output {
    OPENER
        .scope(std::cell::RefCell::new(opener), handling)
        .await
}

/// A place held among a principal's sessions for one being opened
/// ([`CappedSessions::hold_place`]); given back when dropped.
pub(super) struct SessionPlace {
    sessions: Arc<CappedSessions>,
    principal: String,
}

impl Drop for SessionPlace {
    fn drop(&mut self) {
        let mut opening = self.sessions.opening_by();
        if let Some(count) = opening.get_mut(&self.principal) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                opening.remove(&self.principal);
            }
        }
    }
}

/// Why a session could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionsError {
    /// The limit on sessions is reached.
    #[error("the server keeps {0} sessions already, its limit (HttpOptions::with_max_sessions)")]
    Full(usize),
    /// The local session manager's own error.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's in-memory sessions, at most `max` at once.
pub(super) struct CappedSessions {
    local: LocalSessionManager,
    max: usize,
    /// One `initialize` at a time counts and opens, so the limit holds.
    opening: tokio::sync::Mutex<()>,
    /// The principal that opened each session (`None`: the server has no authorization).
    owners: Mutex<std::collections::HashMap<String, Option<String>>>,
    /// The sessions each principal has being opened ([`SessionPlace`]s held), counted with its
    /// live ones.
    opening_by: Mutex<std::collections::HashMap<String, usize>>,
    /// The requests whose response stream was dropped unanswered, for their resume window.
    dropped: Arc<Dropped>,
    /// The requests of each session not yet answered, by id.
    open: Arc<OpenRequests>,
}

impl CappedSessions {
    pub(super) fn new(max: usize, idle_timeout: Duration, resume_window: Duration) -> Self {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(idle_timeout);
        Self {
            local,
            max,
            opening: tokio::sync::Mutex::new(()),
            owners: Mutex::default(),
            opening_by: Mutex::default(),
            dropped: Arc::new(Dropped {
                window: resume_window,
                ..Dropped::default()
            }),
            open: Arc::default(),
        }
    }

    /// The handle of session `id`, if it is live.
    async fn handle(&self, id: &SessionId) -> Option<LocalSessionHandle> {
        self.local.sessions.read().await.get(id).cloned()
    }

    /// `stream`, the response stream of `request` (one of the session's open requests) in
    /// session `id` (`handle`, taken before the stream was made), watched: dropped before the
    /// response to a request, the request is cancelled after the resume window, and its id is
    /// open until the response or the cancel. Made without waiting: once rmcp has the request,
    /// nothing is left for a dropped request (its client gone) to leave half done.
    fn answering(
        &self,
        id: &SessionId,
        handle: Option<LocalSessionHandle>,
        request: Option<RequestId>,
        http_request: Option<u64>,
        stream: impl Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    ) -> Answering {
        if let (Some(request), None) = (&request, &handle) {
            self.open.close(id, request);
        }
        let watch = request.zip(handle).map(|(request, handle)| Unanswered {
            dropped: Arc::clone(&self.dropped),
            open: Arc::clone(&self.open),
            handle,
            request,
            http_request,
            answered: false,
        });
        Answering {
            inner: Box::pin(stream),
            watch,
        }
    }

    fn owners(&self) -> MutexGuard<'_, std::collections::HashMap<String, Option<String>>> {
        self.owners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes that `principal` opened session `id`. Sessions that ended are forgotten here
    /// once as many are noted as the server keeps at most.
    pub(super) async fn opened(&self, id: &str, principal: Option<String>) {
        if self.owners().len() >= self.max {
            let live = self.local.sessions.read().await;
            self.owners().retain(|id, _| live.contains_key(id.as_str()));
        }
        self.owners().insert(id.to_owned(), principal);
    }

    fn opening_by(&self) -> MutexGuard<'_, std::collections::HashMap<String, usize>> {
        self.opening_by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many sessions `principal` has: live ones it opened, and those being opened for it.
    async fn sessions_of(&self, principal: &str) -> usize {
        let live = self.local.sessions.read().await;
        let theirs = self
            .owners()
            .iter()
            .filter(|(id, owner)| {
                owner.as_deref() == Some(principal) && live.contains_key(id.as_str())
            })
            .count();
        drop(live);
        theirs.saturating_add(self.opening_by().get(principal).copied().unwrap_or(0))
    }

    /// A place among `principal`'s at most `max` sessions for the `initialize` it sent, taken
    /// before the server makes a session for it: `None` when its sessions, live and being
    /// opened, make `max` already. So a principal at its share is refused before it takes one
    /// of the server's places, even for as long as an `initialize` takes: many at once from it
    /// could otherwise fill the server's places and turn the other principals away.
    pub(super) async fn hold_place(
        self: &Arc<Self>,
        principal: &str,
        max: usize,
    ) -> Option<SessionPlace> {
        let _one_at_a_time = self.opening.lock().await;
        if self.sessions_of(principal).await >= max {
            return None;
        }
        *self.opening_by().entry(principal.to_owned()).or_default() += 1;
        Some(SessionPlace {
            sessions: Arc::clone(self),
            principal: principal.to_owned(),
        })
    }

    /// Session `id`, just opened by a request of `principal`: noted as theirs unless its
    /// creation noted it already ([`as_opener`]), and whether it is within their share of `max`
    /// sessions (`false`: the caller closes it). A session opened in a place held
    /// ([`hold_place`](Self::hold_place)) always is; one opened without (a request not read as
    /// an `initialize`, which the server opened a session for all the same) is counted here.
    /// One at a time, so two sessions opened at once are counted one after the other.
    pub(super) async fn settle_opened(
        &self,
        id: &str,
        principal: Option<&str>,
        max: usize,
    ) -> bool {
        let _one_at_a_time = self.opening.lock().await;
        if !self.owners().contains_key(id) {
            self.opened(id, principal.map(str::to_owned)).await;
        }
        match principal {
            Some(principal) => self.sessions_of(principal).await <= max,
            None => true,
        }
    }

    /// Whether session `id` was opened by another principal than `principal`.
    pub(super) fn opened_by_another(&self, id: &str, principal: Option<&str>) -> bool {
        self.owners()
            .get(id)
            .is_some_and(|owner| owner.as_deref() != principal)
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _one_at_a_time = self.opening.lock().await;
        let live = self.local.sessions.read().await;
        if live.len() >= self.max {
            tracing::warn!(target: "llm_tools::mcp", max = self.max, "refused a session: the server has its maximum of sessions");
            return Err(SessionsError::Full(self.max));
        }
        // Sessions that ended are forgotten once as many are noted as the server keeps.
        if self.owners().len() >= self.max {
            self.owners().retain(|id, _| live.contains_key(id.as_str()));
        }
        drop(live);
        let created = self.local.create_session().await?;
        // The session is its opener's from its creation on, with no await between: a request
        // dropped at any later point (its client hung up mid-`initialize`) leaves a session
        // counted in its principal's share, never one nobody owns, which would take one of
        // the server's places outside every share.
        let opener = OPENER.try_with(|opener| {
            let mut opener = opener.borrow_mut();
            (opener.principal.clone(), opener.place.take())
        });
        if let Ok((principal, place)) = opener {
            self.owners().insert(created.0.to_string(), principal);
            // Counted as live from here on, no longer as being opened.
            drop(place);
        }
        Ok(created)
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.owners().remove(id.as_ref());
        self.open.close_session(id);
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let request = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        if let Some(request) = &request
            && !self.open.open(id, request)
        {
            tracing::warn!(target: "llm_tools::mcp", "refused a request whose id is the id of a request of its session still unanswered");
            return Ok(refusal(request));
        }
        // Closed again unless its stream is made: a request that fails, or is dropped while
        // the stream is made (its client hung up), never reached the session (rmcp hands the
        // session the request as the last step of making the stream, and a hand-over dropped
        // half-way hands nothing over), so nothing would close its id.
        let opened = OpenId {
            open: &self.open,
            session: id,
            request: request.as_ref(),
        };
        let handle = self.handle(id).await;
        let stream = self.local.create_stream(id, message).await?;
        opened.hand_over();
        Ok(self.answering(id, handle, request, None, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // A request's stream taken up again within its window: watched again, not cancelled.
        // Until it is taken up (a resume that fails, or is dropped first, its client gone),
        // the request still waits for its window's end.
        let http_request = http_request_of(&last_event_id);
        let handle = self.handle(id).await;
        let stream = self.local.resume(id, last_event_id).await?;
        let request = http_request.and_then(|http| self.dropped.take(id, http));
        Ok(self.answering(id, handle, request, http_request, stream))
    }
}

/// The response stream of a request refused because its id is open in its session: a
/// JSON-RPC error for it, and the end.
fn refusal(request: &RequestId) -> Answering {
    let error = ErrorData::invalid_request(
        "a request of this session with this id is still unanswered; a request's id must \
         be unique in its session",
        None,
    );
    let message =
        ServerSseMessage::from_message(ServerJsonRpcMessage::error(error, Some(request.clone())));
    Answering {
        inner: Box::pin(futures::stream::iter([message])),
        watch: None,
    }
}

/// A request's id opened among its session's ([`OpenRequests::open`]), closed when this drops
/// unless its stream took it over ([`OpenId::hand_over`]).
struct OpenId<'a> {
    open: &'a OpenRequests,
    session: &'a SessionId,
    /// `None` once handed over (or for a message that is no request).
    request: Option<&'a RequestId>,
}

impl OpenId<'_> {
    /// The request's stream closes its id from now on (its response, or its cancel).
    fn hand_over(mut self) {
        self.request = None;
    }
}

impl Drop for OpenId<'_> {
    fn drop(&mut self) {
        if let Some(request) = self.request {
            self.open.close(self.session, request);
        }
    }
}

/// The requests of each session opened with `initialize` not yet answered (nor cancelled), by
/// id: a request takes its id from its stream's start to its response, or, its stream dropped,
/// to its cancel once the resume window passes. rmcp routes a response by its request's id,
/// so a second request of an open id would take the first one's route.
#[derive(Default)]
struct OpenRequests(Mutex<std::collections::HashSet<(SessionId, RequestId)>>);

impl OpenRequests {
    fn lock(&self) -> MutexGuard<'_, std::collections::HashSet<(SessionId, RequestId)>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Opens `request` in session `id`, unless a request of its id is open there.
    fn open(&self, id: &SessionId, request: &RequestId) -> bool {
        self.lock().insert((id.clone(), request.clone()))
    }

    /// `request` of session `id` was answered or cancelled: its id is free.
    fn close(&self, id: &SessionId, request: &RequestId) {
        self.lock().remove(&(id.clone(), request.clone()));
    }

    /// Session `id` ended: none of its requests is open.
    fn close_session(&self, id: &SessionId) {
        self.lock().retain(|(session, _)| session != id);
    }
}

/// The HTTP request (rmcp's number for a `POST`'s response stream) an SSE event id names:
/// `{index}/{http request}`.
fn http_request_of(event_id: &str) -> Option<u64> {
    event_id.split_once('/')?.1.parse().ok()
}

/// The requests whose response streams were dropped unanswered, each until it is taken up again
/// or its window passes, by session and HTTP request.
#[derive(Default)]
struct Dropped {
    window: Duration,
    waiting: Mutex<std::collections::HashMap<(SessionId, u64), (RequestId, u64)>>,
    /// Tells one drop from a later one of the same stream.
    next: std::sync::atomic::AtomicU64,
}

impl Dropped {
    fn lock(
        &self,
    ) -> MutexGuard<'_, std::collections::HashMap<(SessionId, u64), (RequestId, u64)>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The request waiting for its stream `http` of session `id` to be taken up, if any: it
    /// is no longer cancelled.
    fn take(&self, id: &SessionId, http: u64) -> Option<RequestId> {
        self.lock()
            .remove(&(id.clone(), http))
            .map(|(request, _)| request)
    }
}

/// A response stream of a session opened with `initialize`, watched until the response to its
/// request goes by.
struct Answering {
    inner: Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync>>,
    /// `None` for a stream that answers no request of ours.
    watch: Option<Unanswered>,
}

/// A request whose response has not gone by; cancelled, after the resume window, when its
/// stream drops.
struct Unanswered {
    dropped: Arc<Dropped>,
    /// The session's open requests, this one among them until it is answered or cancelled.
    open: Arc<OpenRequests>,
    handle: LocalSessionHandle,
    request: RequestId,
    /// rmcp's number for the stream (from its events' ids), for a resume to find it.
    http_request: Option<u64>,
    answered: bool,
}

impl Stream for Answering {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if let (Poll::Ready(Some(event)), Some(watch)) = (&polled, &mut self.watch) {
            if watch.http_request.is_none() {
                watch.http_request = event.event_id.as_deref().and_then(http_request_of);
            }
            let answers = match event.message.as_deref() {
                Some(ServerJsonRpcMessage::Response(response)) => response.id == watch.request,
                Some(ServerJsonRpcMessage::Error(error)) => {
                    error.id.as_ref() == Some(&watch.request)
                }
                _ => false,
            };
            if answers && !watch.answered {
                watch.answered = true;
                // rmcp has let go of the id's route as it sent the response.
                watch.open.close(watch.handle.id(), &watch.request);
            }
        }
        polled
    }
}

impl Drop for Unanswered {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let dropped = Arc::clone(&self.dropped);
        let open = Arc::clone(&self.open);
        let handle = self.handle.clone();
        let request = self.request.clone();
        let key = self.http_request.map(|http| (handle.id().clone(), http));
        let mark = dropped.next.fetch_add(1, Ordering::Relaxed);
        if let Some(key) = &key {
            dropped.lock().insert(key.clone(), (request.clone(), mark));
        }
        runtime.spawn(async move {
            tokio::time::sleep(dropped.window).await;
            if let Some(key) = key {
                let mut waiting = dropped.lock();
                // Taken up again (and perhaps dropped again, with its own mark): not this one's.
                if waiting.get(&key).is_none_or(|(_, m)| *m != mark) {
                    return;
                }
                waiting.remove(&key);
            }
            let cancelled = serde_json::json!({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request, "reason": "the client dropped the response stream"},
            });
            if let Ok(cancelled) = serde_json::from_value::<ClientJsonRpcMessage>(cancelled) {
                tracing::debug!(target: "llm_tools::mcp", "cancelled a request whose client dropped its response stream");
                // A session that ended meanwhile has nothing left to cancel.
                let _ = handle.push_message(cancelled, None).await;
            }
            open.close(handle.id(), &request);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session opened by a principal's request is theirs from its creation on: counted in
    /// their share and closed to the others even if the request is dropped right after (its
    /// client hung up mid-`initialize`), before anything else notes it.
    #[tokio::test]
    async fn a_session_is_its_openers_from_its_creation_on() {
        let sessions = Arc::new(CappedSessions::new(
            10,
            Duration::from_secs(60),
            Duration::from_secs(30),
        ));
        let place = sessions.hold_place("alice", 1).await;
        assert!(place.is_some());
        let (id, _transport) = as_opener(
            Opener::new(Some("alice".to_owned()), place),
            sessions.create_session(),
        )
        .await
        .unwrap();
        assert_eq!(sessions.sessions_of("alice").await, 1);
        assert!(sessions.hold_place("alice", 1).await.is_none());
        assert!(sessions.opened_by_another(&id, Some("mallory")));
        assert!(!sessions.opened_by_another(&id, Some("alice")));
        // Settling it afterwards changes nothing: it is within alice's share.
        assert!(sessions.settle_opened(&id, Some("alice"), 1).await);
        assert_eq!(sessions.sessions_of("alice").await, 1);
    }

    /// A request of session `id`, numbered 7, and its id.
    fn ping() -> (ClientJsonRpcMessage, RequestId) {
        let message: ClientJsonRpcMessage = serde_json::from_value(
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}),
        )
        .unwrap();
        let ClientJsonRpcMessage::Request(request) = &message else {
            panic!("not a request: {message:?}");
        };
        let id = request.id.clone();
        (message, id)
    }

    /// A request whose client hangs up while its stream is being made (here, while the
    /// sessions are locked) leaves its id free in its session, for the client's next request.
    #[tokio::test]
    async fn a_request_dropped_while_its_stream_is_made_leaves_its_id_free() {
        use futures::FutureExt as _;
        let sessions = CappedSessions::new(10, Duration::from_secs(60), Duration::from_secs(30));
        let session: SessionId = "session-1".into();
        let (message, request) = ping();
        let locked = sessions.local.sessions.write().await;
        let mut creating = Box::pin(sessions.create_stream(&session, message));
        assert!(
            (&mut creating).now_or_never().is_none(),
            "waits for the lock"
        );
        assert!(
            sessions
                .open
                .lock()
                .contains(&(session.clone(), request.clone())),
            "open while its stream is made"
        );
        drop(creating);
        drop(locked);
        assert!(
            !sessions.open.lock().contains(&(session, request)),
            "its id is left open"
        );
    }

    /// A resume whose client hangs up before the stream is taken up leaves the request it
    /// would have taken up waiting for its window, to be cancelled at its end.
    #[tokio::test]
    async fn a_resume_dropped_before_its_stream_is_taken_up_leaves_its_request_waiting() {
        use futures::FutureExt as _;
        let sessions = CappedSessions::new(10, Duration::from_secs(60), Duration::from_secs(30));
        let session: SessionId = "session-1".into();
        let (_, request) = ping();
        sessions
            .dropped
            .lock()
            .insert((session.clone(), 5), (request, 0));
        let locked = sessions.local.sessions.write().await;
        let mut resuming = Box::pin(sessions.resume(&session, "0/5".to_owned()));
        assert!(
            (&mut resuming).now_or_never().is_none(),
            "waits for the lock"
        );
        drop(resuming);
        drop(locked);
        assert!(
            sessions.dropped.lock().contains_key(&(session, 5)),
            "no longer waiting: never cancelled"
        );
    }

    #[test]
    fn an_event_id_names_its_http_request() {
        assert_eq!(http_request_of("3/17"), Some(17));
        assert_eq!(http_request_of("3"), None);
        assert_eq!(http_request_of("3/x"), None);
    }

    #[test]
    fn the_busy_answer_says_its_length() {
        let text = std::str::from_utf8(BUSY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{text}"
        );
    }

    const TIMEOUTS: Timeouts = Timeouts {
        header_read: Duration::from_secs(10),
        idle: Duration::from_secs(60),
        write_stall: Duration::from_secs(30),
    };

    #[tokio::test(start_paused = true)]
    async fn a_write_that_waits_too_long_closes_the_connection_while_a_request_runs() {
        let activity = Activity::new(TIMEOUTS);
        let running = activity.request_started();
        assert_eq!(activity.deadline(), None, "a request runs");
        activity.write_waits();
        let waiting = Instant::now();
        tokio::time::advance(Duration::from_secs(5)).await;
        activity.write_waits();
        assert_eq!(
            activity.deadline(),
            Some(waiting + Duration::from_secs(30)),
            "counted from the first write that waited"
        );
        activity.wrote();
        assert_eq!(activity.deadline(), None, "a byte went out");
        drop(running);
        activity.write_waits();
        let idle = Instant::now();
        assert_eq!(
            activity.deadline(),
            Some(idle + Duration::from_secs(30)),
            "the earlier of the stall and the idle deadline"
        );
    }

    #[test]
    fn an_ipv6_client_is_its_64_network() {
        let one: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let same: IpAddr = "2001:db8:1:2:bbbb::7".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_of(one), client_of(same));
        assert_ne!(client_of(one), client_of(other));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let v4: IpAddr = [10, 0, 0, 1].into();
        assert_eq!(client_of(mapped), v4);
        assert_ne!(client_of(v4), client_of([10, 0, 0, 2].into()));
    }

    #[test]
    fn an_address_gets_its_places_back_as_its_connections_close() {
        let peers = Arc::new(Peers::default());
        let one: IpAddr = [127, 0, 0, 1].into();
        let two: IpAddr = [127, 0, 0, 2].into();
        let first = peers.take(one, 2).unwrap();
        let second = peers.take(one, 2).unwrap();
        assert!(peers.take(one, 2).is_none(), "a third from one address");
        let other = peers.take(two, 2).unwrap();
        drop(first);
        let third = peers.take(one, 2).unwrap();
        drop((second, third, other));
        assert!(
            peers.lock().is_empty(),
            "addresses leave with their last connection"
        );
        assert!(peers.take(one, 0).is_none());
        assert!(peers.lock().is_empty(), "a refused address is not kept");
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_due_to_close_only_while_no_request_runs() {
        let activity = Activity::new(TIMEOUTS);
        let opened = Instant::now();
        assert_eq!(
            activity.deadline(),
            Some(opened + Duration::from_secs(10)),
            "the first head"
        );
        let running = activity.request_started();
        assert_eq!(activity.deadline(), None, "a request runs");
        tokio::time::advance(Duration::from_secs(100)).await;
        drop(running);
        let idle = Instant::now();
        assert_eq!(
            activity.deadline(),
            Some(idle + Duration::from_secs(60)),
            "idle"
        );
        tokio::time::advance(Duration::from_secs(5)).await;
        activity.read_some();
        let head = Instant::now();
        assert_eq!(
            activity.deadline(),
            Some(head + Duration::from_secs(10)),
            "a head arrives"
        );
    }
}

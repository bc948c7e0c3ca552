//! Turns the server paused: an answer with `stop_reason: "pause_turn"` stopped in the middle of
//! a long server-tool loop (web search, tool search). The request is sent again with the paused
//! answer appended as it is, the model carries on from there, and the segments are merged into
//! the one assistant message the caller sees: its text, calls and server blocks in order, the
//! usage summed. Up to [`AnthropicConfig::with_pause_turn_continuations`] times; after that the
//! paused answer is returned with its `pause_turn` finish reason.
//!
//! The whole turn, every continuation included, keeps one deadline: the request's `timeout`
//! (or `stream_deadline` when it streams), counted from the first send. No continuation starts
//! once it passed (the paused answer is returned as it is), and a continuation still running
//! then ends with the `Deadline` error. The answer, every segment merged, stays within what one
//! answer may hold: the body limit (`max_body_bytes`, or `max_stream_bytes` when it streams)
//! and [`MAX_JSON_VALUES`](llm_tools_core::json_values::MAX_JSON_VALUES); a merged answer past
//! either ends the turn with that limit's error (each exchange is bounded on its own as well).
//!
//! [`AnthropicConfig::with_pause_turn_continuations`]: super::AnthropicConfig::with_pause_turn_continuations

use std::time::Duration;

use futures::StreamExt as _;
use llm_tools_core::{
    EventStream, Message, ProviderData, ProviderError, Request, Response, StreamEvent,
};
use serde_json::{Value, json};

use super::request::PROTOCOL;
use crate::protocol::{HttpProvider, Protocol};
use crate::wire;

/// The stop reason of an answer the server paused.
const PAUSE_TURN: &str = "pause_turn";

fn paused(response: &Response) -> bool {
    response.finish_reason.as_deref() == Some(PAUSE_TURN)
}

/// Fails when the merged answer of a paused turn holds more than one answer may: past
/// `max_bytes` written as JSON, or past the JSON value limit.
fn within_one_answer(
    name: &str,
    response: &Response,
    max_bytes: usize,
    streaming: bool,
) -> Result<(), ProviderError> {
    let written = serde_json::to_vec(&response.message)
        .map_err(|e| wire::decode_error(name, format!("the paused turn's answer: {e}")))?;
    if written.len() > max_bytes {
        return Err(crate::http::limits::paused_turn_too_large(
            name,
            written.len(),
            max_bytes,
            None,
            streaming,
        ));
    }
    if let Some(count) = llm_tools_core::json_values::too_many_values(&written) {
        return Err(crate::http::limits::paused_turn_too_large(
            name,
            written.len(),
            max_bytes,
            Some(count),
            streaming,
        ));
    }
    Ok(())
}

/// The conversation of `request` with the paused answer appended.
fn with_answer(request: &Request<'_>, answer: &Message) -> Vec<Message> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    messages.extend_from_slice(request.messages);
    messages.push(answer.clone());
    messages
}

/// The instant `allowed` from now; a deadline too far to count (`Duration::MAX`, the client's
/// "no deadline") is held at about 30 years, where Tokio's own timers stop counting.
fn deadline_after(allowed: Duration) -> tokio::time::Instant {
    const FAR: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);
    let now = tokio::time::Instant::now();
    now.checked_add(allowed.min(FAR))
        .or_else(|| now.checked_add(Duration::from_secs(24 * 60 * 60)))
        .unwrap_or(now)
}

/// Sends a request and reads the whole answer, continuing the turn while the server pauses it.
/// At most `limit` continuations.
pub(super) async fn complete<P: Protocol>(
    provider: &HttpProvider<P>,
    request: Request<'_>,
    limit: u32,
) -> Result<Response, ProviderError> {
    let allowed = provider.http().deadline_of(false);
    let until = deadline_after(allowed);
    let mut response = provider.send(request).await?;
    let mut continued = 0;
    while paused(&response) && continued < limit && tokio::time::Instant::now() < until {
        continued += 1;
        let messages = with_answer(&request, &response.message);
        let mut next = request;
        next.messages = &messages;
        let rest = tokio::time::timeout_at(until, provider.send(next))
            .await
            .map_err(|_| {
                crate::http::limits::deadline_exceeded(
                    provider.http().provider_name(),
                    allowed,
                    false,
                )
            })??;
        response = merged(response, rest);
        within_one_answer(
            provider.http().provider_name(),
            &response,
            provider.http().max_answer_bytes(false),
            false,
        )?;
    }
    Ok(response)
}

/// Sends a request and streams the answer, continuing the turn while the server pauses it: the
/// deltas of every segment flow through, the calls of later segments numbered after the
/// earlier ones, and the one `Completed` event carries the merged answer. At most `limit`
/// continuations.
pub(super) async fn stream<'a, P: Protocol>(
    provider: &'a HttpProvider<P>,
    request: Request<'a>,
    limit: u32,
) -> Result<EventStream<'a>, ProviderError> {
    let allowed = provider.http().deadline_of(true);
    let until = deadline_after(allowed);
    let events = provider.send_streaming(request).await?;
    if limit == 0 {
        return Ok(events);
    }
    let state = Segments {
        provider,
        request,
        limit,
        until,
        allowed,
        events,
        so_far: None,
        continued: 0,
        offset: 0,
        ended: false,
    };
    Ok(Box::pin(futures::stream::unfold(state, Segments::next)))
}

/// The state of a streamed turn that may be continued.
struct Segments<'a, P> {
    provider: &'a HttpProvider<P>,
    request: Request<'a>,
    /// How many continuations are allowed.
    limit: u32,
    /// The turn's one deadline, every segment included, and how long it allows.
    until: tokio::time::Instant,
    allowed: Duration,
    events: EventStream<'a>,
    /// The merged answer of the segments already finished.
    so_far: Option<Response>,
    continued: u32,
    /// How many calls the earlier segments had: the first index of this segment's calls.
    offset: usize,
    ended: bool,
}

impl<'a, P: Protocol> Segments<'a, P> {
    /// The error of a turn whose one deadline passed while a continuation ran.
    fn past_deadline(&self) -> ProviderError {
        crate::http::limits::deadline_exceeded(
            self.provider.http().provider_name(),
            self.allowed,
            true,
        )
    }

    async fn next(mut self) -> Option<(Result<StreamEvent, ProviderError>, Self)> {
        if self.ended {
            return None;
        }
        loop {
            // The first segment keeps its own deadline (the same one); later ones, what is left.
            let next = if self.continued == 0 {
                self.events.next().await
            } else {
                match tokio::time::timeout_at(self.until, self.events.next()).await {
                    Ok(next) => next,
                    Err(_) => Some(Err(self.past_deadline())),
                }
            };
            let event = match next? {
                Ok(event) => event,
                Err(e) => {
                    self.ended = true;
                    return Some((Err(e), self));
                }
            };
            let event = match event {
                StreamEvent::Completed(response) => {
                    let response = match self.so_far.take() {
                        Some(earlier) => {
                            let response = merged(earlier, *response);
                            let http = self.provider.http();
                            let name = http.provider_name();
                            if let Err(e) = within_one_answer(
                                name,
                                &response,
                                http.max_answer_bytes(true),
                                true,
                            ) {
                                self.ended = true;
                                return Some((Err(e), self));
                            }
                            response
                        }
                        None => *response,
                    };
                    if !paused(&response)
                        || self.continued >= self.limit
                        || tokio::time::Instant::now() >= self.until
                    {
                        self.ended = true;
                        return Some((Ok(StreamEvent::Completed(Box::new(response))), self));
                    }
                    self.continued += 1;
                    self.offset = response.message.tool_calls.len();
                    let messages = with_answer(&self.request, &response.message);
                    let mut next = self.request;
                    next.messages = &messages;
                    let sent =
                        tokio::time::timeout_at(self.until, self.provider.send_streaming(next))
                            .await
                            .unwrap_or_else(|_| Err(self.past_deadline()));
                    match sent {
                        Ok(events) => self.events = events,
                        Err(e) => {
                            self.ended = true;
                            return Some((Err(e), self));
                        }
                    }
                    self.so_far = Some(response);
                    continue;
                }
                StreamEvent::ToolCallStarted {
                    index,
                    id,
                    name,
                    namespace,
                } => StreamEvent::ToolCallStarted {
                    index: index + self.offset,
                    id,
                    name,
                    namespace,
                },
                StreamEvent::ToolCallDelta { index, fragment } => StreamEvent::ToolCallDelta {
                    index: index + self.offset,
                    fragment,
                },
                StreamEvent::ToolCallReady { index } => StreamEvent::ToolCallReady {
                    index: index + self.offset,
                },
                other => other,
            };
            return Some((Ok(event), self));
        }
    }
}

/// One answer from two segments of a turn: text, calls, blocks, provider tool uses and
/// citations of `earlier` then `later`,
/// usage summed, the finish reason, request id and model of the later one.
fn merged(earlier: Response, later: Response) -> Response {
    let mut message = earlier.message;
    let mut content = skeleton(&message);
    content.extend(skeleton(&later.message));
    message.content.extend(later.message.content);
    message.tool_calls.extend(later.message.tool_calls);
    message
        .server_tool_uses
        .extend(later.message.server_tool_uses);
    message.citations.extend(later.message.citations);
    message.usage = match (message.usage, later.message.usage) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    message.refusal = later.message.refusal.or(message.refusal);
    message.provider_data = Some(ProviderData::new(PROTOCOL, json!({ "content": content })));
    Response::new(message)
        .with_finish_reason(later.finish_reason)
        .with_request_id(later.request_id.or(earlier.request_id))
        .with_model(later.model.or(earlier.model))
}

/// The blocks of an answer in order: its kept skeleton, or (when it had only text and calls, so
/// none was kept) one text placeholder per text part, then one per call.
fn skeleton(message: &Message) -> Vec<Value> {
    if let Some(Value::Array(blocks)) = wire::protocol_data(message, PROTOCOL, "content") {
        return blocks.clone();
    }
    let texts = message
        .content
        .iter()
        .filter(|p| p.as_text().is_some())
        .map(|_| json!({"type": "text"}));
    let calls = message
        .tool_calls
        .iter()
        .map(|c| json!({"type": "tool_use", "id": c.id.as_str()}));
    texts.chain(calls).collect()
}

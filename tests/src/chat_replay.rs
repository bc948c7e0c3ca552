//! Driving the real [`Chat`] loop against a recording served by the loopback replay server, and
//! checking what happened against the recording: every request we sent means what the recorded
//! one meant, every answer's text and tool calls came out as recorded.

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use llm_tools_core::chat::{Chat, ChatEvent, Step, ToolOptions};
use llm_tools_core::{Message, Provider, Role, StreamEvent, Tool, ToolChoice};
use llm_tools_providers::record::{RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use serde_json::Value;

/// A recorded answer's text and tool calls (joined name, parsed arguments).
pub type RecordedAnswer = (String, Vec<(String, Value)>);

/// What a protocol's test supplies: how to read a request's meaning and a recorded answer.
pub struct Protocol {
    /// The canonical form of a request body (see each provider's `canonical_request`).
    pub canonical: fn(&Value) -> Value,
    /// The text and tool calls (joined name, parsed arguments) of a recorded answer, read
    /// without the providers crate.
    pub answer: fn(&RecordedResponse) -> RecordedAnswer,
}

/// The conversation a recording holds: what the chat is configured with and asked.
pub struct Scenario {
    /// The system prompt.
    pub instructions: Vec<String>,
    /// The user's messages, in order.
    pub asks: Vec<String>,
    /// The tools, as the recording declared them.
    pub tools: Vec<Arc<dyn Tool>>,
    /// The first request's tool choice.
    pub choice: ToolChoice,
    /// The chat's cap on calls per answer.
    pub calls: Option<usize>,
    /// Whether the chat streams.
    pub stream: bool,
}

/// Runs the scenario through a real chat on `provider`, against `server`: `ask` (streamed with
/// `ask_stream`) for each message, or `step` by step when the recording ends on tool calls (the
/// recorded client ran them and stopped). Returns the transcript.
pub async fn run(
    provider: impl Provider,
    scenario: &Scenario,
    server: &ReplayServer,
) -> Result<Vec<Message>, String> {
    let mut chat = Chat::new(provider);
    if !scenario.instructions.is_empty() {
        chat.with_instructions(scenario.instructions.join("\n\n"));
    }
    chat.with_tools(scenario.tools.clone())
        .map_err(|e| e.to_string())?;
    chat.with_tool_options(
        ToolOptions::default()
            .with_choice(scenario.choice.clone())
            .with_calls(scenario.calls),
    )
    .map_err(|e| e.to_string())?;
    for ask in &scenario.asks {
        if scenario.stream {
            streamed_turn(&mut chat, ask).await?;
            continue;
        }
        chat.add_message(Message::user(ask.clone()))
            .map_err(|e| e.to_string())?;
        loop {
            match chat.step().await.map_err(|e| e.to_string())? {
                Step::Done(_) => break,
                Step::Continue if server.is_done() => return Ok(chat.messages().to_vec()),
                Step::Continue => {}
                other => return Err(format!("unexpected step {other:?}")),
            }
        }
    }
    Ok(chat.messages().to_vec())
}

/// One streamed turn: the events must add up to the transcript's answers and results.
async fn streamed_turn(chat: &mut Chat, ask: &str) -> Result<(), String> {
    let before = chat.messages().len();
    let mut text = String::new();
    // Per call id: its argument fragments; per position in the current answer: its id.
    let mut fragments: Vec<(String, String)> = Vec::new();
    let mut round: Vec<String> = Vec::new();
    let mut results = Vec::new();
    let mut done = None;
    {
        let mut events = chat.ask_stream(ask);
        while let Some(event) = events.next().await {
            match event.map_err(|e| e.to_string())? {
                ChatEvent::Model(StreamEvent::TextDelta(t)) => text.push_str(&t),
                ChatEvent::Model(StreamEvent::ToolCallStarted { index, id, .. }) => {
                    if index == 0 {
                        round.clear();
                    }
                    if index != round.len() {
                        return Err(format!("call {index} started out of order"));
                    }
                    round.push(id.clone());
                    fragments.push((id, String::new()));
                }
                ChatEvent::Model(StreamEvent::ToolCallDelta { index, fragment }) => {
                    let id = round
                        .get(index)
                        .ok_or("a fragment for a call that never started")?;
                    if let Some((_, f)) = fragments.iter_mut().find(|(i, _)| i == id) {
                        f.push_str(&fragment);
                    }
                }
                ChatEvent::ToolResult { call, .. } => {
                    let streamed = fragments
                        .iter()
                        .find(|(i, _)| *i == call.id)
                        .map(|(_, f)| f.as_str())
                        .ok_or("a result for a call that never started")?;
                    let streamed: Value = match streamed {
                        "" => Value::Object(Default::default()),
                        f => serde_json::from_str(f).unwrap_or(Value::Null),
                    };
                    let called: Value =
                        serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
                    if streamed != called {
                        return Err(format!(
                            "the streamed fragments {streamed} do not add up to the call's arguments {called}"
                        ));
                    }
                    results.push(call.id);
                }
                ChatEvent::Done(answer) => done = Some(answer),
                _ => {}
            }
        }
    }
    let answer = done.ok_or("the stream ended without Done")?;
    let answers: String = chat.messages()[before..]
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(Message::text)
        .collect();
    if text != answers {
        return Err(format!(
            "the text deltas {text:?} are not the answers' text {answers:?}"
        ));
    }
    let started: Vec<&String> = fragments.iter().map(|(id, _)| id).collect();
    if started.len() != results.len() || started.iter().zip(&results).any(|(a, b)| *a != b) {
        return Err(format!(
            "calls started {started:?}, results for {results:?}"
        ));
    }
    if chat.messages().last() != Some(&answer) {
        return Err("Done is not the transcript's last message".into());
    }
    Ok(())
}

/// Replays every recording of one protocol's folder (`openai-chat`, …) with `replay`, and fails
/// with every recording that failed, after checking the folder holds at least `at_least`.
///
/// # Panics
///
/// When the folder has fewer recordings, or a recording fails.
#[allow(clippy::panic)] // a test's verdict
pub async fn replay_every(
    folder: &str,
    at_least: usize,
    replay: impl AsyncFn(&Path) -> Result<(), String>,
) {
    let files = crate::fixtures::recordings(folder);
    assert!(
        files.len() >= at_least,
        "expected the recordings of tests/fixtures/recorded/{folder}, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        if let Err(e) = replay(file).await {
            let name = file.file_name().unwrap_or_default().to_string_lossy();
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} recordings failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}

/// The instructions of a canonical request (see each provider's `canonical_request`).
pub fn instructions(canonical: &Value) -> Vec<String> {
    canonical["instructions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// What the user asked in a canonical request, in order.
pub fn asks(canonical: &Value) -> Vec<String> {
    canonical["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["text"].as_str())
        .map(str::to_owned)
        .collect()
}

/// Checks the requests `server` received against the recording's: the same paths and meaning
/// (compared in `canonical` form), and as many.
pub fn check_requests(
    canonical: fn(&Value) -> Value,
    recording: &Recording,
    server: &ReplayServer,
) -> Result<(), String> {
    let received = server.received();
    for (i, (got, want)) in received.iter().zip(&recording.interactions).enumerate() {
        // The recorded URL ends with the path (and query) asked for; its start is the recorded
        // server, or a placeholder for it (`<OLLAMA_API_BASE>`).
        // (Compared decoded: a model id is percent-encoded in the path we send, `…-v1%3A0`,
        // and was not in some recorded clients' URLs.)
        if !percent_decoded(&want.request.url).ends_with(&percent_decoded(&got.path)) {
            return Err(format!(
                "request {i} went to {} (recorded {})",
                got.path, want.request.url
            ));
        }
        let (ours, theirs) = (canonical(&got.body), canonical(&want.request.body));
        if ours != theirs {
            return Err(format!(
                "request {i} differs from the recording\n--- recorded\n{}\n--- sent\n{}",
                serde_json::to_string_pretty(&theirs).unwrap_or_default(),
                serde_json::to_string_pretty(&ours).unwrap_or_default()
            ));
        }
    }
    if received.len() != recording.interactions.len() {
        return Err(format!(
            "{} requests sent, {} recorded",
            received.len(),
            recording.interactions.len()
        ));
    }
    Ok(())
}

/// `text` with its `%XX` escapes decoded (an escape that is not one stays as it is).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Checks a finished run against the recording: the requests (count, paths, meaning) and every
/// answer (text and tool calls as recorded, in the transcript in order).
pub fn check(
    protocol: &Protocol,
    recording: &Recording,
    server: &ReplayServer,
    transcript: &[Message],
) -> Result<(), String> {
    check_requests(protocol.canonical, recording, server)?;
    let answers: Vec<&Message> = transcript
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    if answers.len() != recording.interactions.len() {
        return Err(format!(
            "{} answers in the transcript, {} recorded",
            answers.len(),
            recording.interactions.len()
        ));
    }
    for (i, (ours, recorded)) in answers.iter().zip(&recording.interactions).enumerate() {
        let (text, calls) = (protocol.answer)(&recorded.response);
        if ours.text() != text {
            return Err(format!(
                "answer {i}: text {:?}, recorded {text:?}",
                ours.text()
            ));
        }
        let our_calls: Vec<(String, Value)> = ours
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.joined_name(),
                    serde_json::from_str(&c.arguments).unwrap_or(Value::Null),
                )
            })
            .collect();
        if our_calls != calls {
            return Err(format!(
                "answer {i}: calls {our_calls:?}, recorded {calls:?}"
            ));
        }
    }
    // Every call got its result.
    for call in answers.iter().flat_map(|m| &m.tool_calls) {
        let answered = transcript
            .iter()
            .any(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call.id.as_str()));
        if !answered {
            return Err(format!("call {} got no result", call.id));
        }
    }
    Ok(())
}

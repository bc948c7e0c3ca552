//! Every recording in `tests/fixtures/recorded/openai-responses` and `openai-chat` replayed
//! from a loopback HTTP server through the real providers, with the recordings' tools: the
//! requests we send must mean what the recorded ones meant, the tool calls run as recorded,
//! and the final answer is the recorded one. Everything runs through the real chat loop
//! (`Chat`); streaming recordings through `ask_stream`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use llm_tools_core::chat::{ChatEvent, Step, ToolOptions};
use llm_tools_core::{Chat, Message, Outcome, Provider, StreamEvent, Tool, ToolChoice};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses, canonical_request};
use llm_tools_providers::record::Recording;
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::{chat_replay, fixtures};
use serde_json::Value;

/// What the conversation of a recording was: its instructions, the user's questions, the
/// tools, the first request's tool choice and parallel switch, and whether it streamed.
struct Script {
    instructions: Vec<String>,
    asks: Vec<String>,
    tools: Vec<Arc<dyn Tool>>,
    choice: ToolChoice,
    parallel: Option<bool>,
    stream: bool,
}

fn script(recording: &Recording) -> Script {
    let first = &recording.interactions[0].request.body;
    let last = &recording.interactions.last().unwrap().request.body;
    let canonical_first = canonical_request(first);
    let canonical_last = canonical_request(last);
    let tool_names: Vec<String> = canonical_first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let choice = match first.get("tool_choice") {
        None => ToolChoice::Auto,
        Some(Value::String(s)) if s == "none" => ToolChoice::None,
        Some(Value::String(s)) if s == "required" || s == "any" => ToolChoice::Required,
        Some(Value::String(_)) => ToolChoice::Auto,
        Some(obj) => ToolChoice::tool(
            obj.get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| obj.get("name"))
                .and_then(Value::as_str)
                .unwrap(),
        ),
    };
    Script {
        instructions: chat_replay::instructions(&canonical_first),
        asks: chat_replay::asks(&canonical_last),
        tools: fixtures::tools_named(&tool_names),
        choice,
        parallel: first.get("parallel_tool_calls").and_then(Value::as_bool),
        stream: first
            .get("stream")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

fn provider(recording: &Recording, url: String) -> Box<dyn Provider> {
    let model = recording.interactions[0].request.body["model"]
        .as_str()
        .unwrap();
    let config = match recording.provider.as_str() {
        "deepseek" => OpenAiConfig::deepseek(model),
        "mistral" => OpenAiConfig::mistral(model),
        "ollama" => OpenAiConfig::ollama(model),
        "openrouter" => OpenAiConfig::openrouter(model),
        _ => OpenAiConfig::openai(model),
    }
    .with_base_url(url)
    .with_api_key("test-key")
    .with_retry(RetryPolicy::none());
    match recording.protocol.as_str() {
        "openai-responses" => Box::new(OpenAiResponses::new(config).unwrap()),
        _ => Box::new(OpenAiChat::new(config).unwrap()),
    }
}

/// A streamed turn through the chat: the text deltas must add up to the answer, and every tool
/// call must be started, completed and answered while the stream runs.
async fn streamed_turn(chat: &mut Chat, ask: &str) -> Result<Message, String> {
    let mut stream = chat.ask_stream(ask);
    let mut text = String::new();
    let mut started = Vec::new();
    let mut results = Vec::new();
    while let Some(event) = stream.next().await {
        match event.map_err(|e| e.to_string())? {
            ChatEvent::Model(StreamEvent::TextDelta(t)) => text.push_str(&t),
            ChatEvent::Model(StreamEvent::ToolCallStarted { id, .. }) => started.push(id),
            ChatEvent::ToolResult { call, .. } => results.push(call.id),
            ChatEvent::Done(message) => {
                assert!(
                    message.text().ends_with(&text) || text.ends_with(&message.text()),
                    "deltas {text:?} vs answer {:?}",
                    message.text()
                );
                assert_eq!(started, results, "every streamed call ran, in order");
                return Ok(message);
            }
            ChatEvent::Paused(p) => return Err(format!("paused: {p:?}")),
            _ => {}
        }
    }
    Err("the stream ended without Done".into())
}

/// Runs the script through the real chat loop. A recording that ends on tool calls (the
/// recorded test checked the calls and stopped) is driven with `step`, one model request and
/// its tool round, for its last question.
async fn run(
    provider: Box<dyn Provider>,
    script: &Script,
    ends_on_calls: bool,
    transcript: &mut Vec<Message>,
) -> Result<Vec<String>, String> {
    let mut chat = Chat::with_shared_provider(Arc::from(provider));
    if !script.instructions.is_empty() {
        chat.with_instructions(script.instructions.join("\n\n"));
    }
    chat.with_tools(script.tools.clone())
        .map_err(|e| e.to_string())?;
    let calls = (script.parallel == Some(false)).then_some(1);
    chat.with_tool_options(
        ToolOptions::default()
            .with_choice(script.choice.clone())
            .with_calls(calls),
    )
    .map_err(|e| e.to_string())?;
    let mut finals = Vec::new();
    let mut result = Ok(());
    for (n, ask) in script.asks.iter().enumerate() {
        let outcome = if ends_on_calls && n + 1 == script.asks.len() {
            chat.add_message(Message::user(ask.clone()))
                .map_err(|e| e.to_string())?;
            match chat.step().await {
                Ok(Step::Continue) => break,
                Ok(other) => Err(format!("expected a tool round, got {other:?}")),
                Err(e) => Err(e.to_string()),
            }
        } else if script.stream {
            streamed_turn(&mut chat, ask).await
        } else {
            match chat.ask(ask.clone()).await {
                Ok(Outcome::Done(m)) => Ok(m),
                Ok(other) => Err(format!("expected an answer, got {other:?}")),
                Err(e) => Err(e.to_string()),
            }
        };
        match outcome {
            Ok(message) => finals.push(message.text()),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    transcript.extend(chat.messages().iter().cloned());
    result.map(|()| finals)
}

async fn replay(path: &Path) -> Result<(), String> {
    let recording = Recording::load(path).map_err(|e| e.to_string())?;
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let provider = provider(&recording, server.url());
    let script = script(&recording);
    let ends_on_calls =
        !fixtures::recorded_tool_calls(&recording, recording.interactions.len() - 1).is_empty();
    let mut transcript = Vec::new();
    let outcome = run(provider, &script, ends_on_calls, &mut transcript).await;

    chat_replay::check_requests(canonical_request, &recording, &server)
        .map_err(|e| format!("{e} (outcome: {outcome:?})"))?;
    let expected_final =
        fixtures::recorded_answer_text(&recording, recording.interactions.len() - 1);
    let last_answer = transcript
        .iter()
        .rev()
        .find(|m| m.role == llm_tools_core::Role::Assistant);
    let ended_on_calls = last_answer.is_some_and(Message::has_tool_calls);
    match outcome {
        Ok(_) if ended_on_calls => {
            // The recording stops at the tool calls: they ran, and gave their results.
            let calls = &last_answer.unwrap().tool_calls;
            let results = transcript
                .iter()
                .filter(|m| m.role == llm_tools_core::Role::Tool);
            let answered: Vec<_> = results.filter_map(|m| m.tool_call_id.clone()).collect();
            for call in calls {
                if !answered.contains(&call.id) {
                    return Err(format!("the last call {} got no result", call.id));
                }
            }
            let recorded_calls =
                fixtures::recorded_tool_calls(&recording, recording.interactions.len() - 1);
            let ours: Vec<(String, Value)> = calls
                .iter()
                .map(|c| (c.joined_name(), serde_json::from_str(&c.arguments).unwrap()))
                .collect();
            if ours != recorded_calls {
                return Err(format!("last calls {ours:?}, recorded {recorded_calls:?}"));
            }
        }
        Ok(finals) => {
            if finals.last().map(String::as_str) != Some(expected_final.as_str()) {
                return Err(format!(
                    "final answer {finals:?}, recorded {expected_final:?}"
                ));
            }
        }
        // The recording of a failing tool ends with the call: the turn stops there.
        Err(e) if recording.scenario.contains("tool_execution_fails") => {
            if !e.contains("This tool is broken") {
                return Err(format!("unexpected failure: {e}"));
            }
        }
        Err(e) => return Err(e),
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_openai_responses_recording_replays() {
    chat_replay::replay_every("openai-responses", 10, replay).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_openai_chat_recording_replays() {
    chat_replay::replay_every("openai-chat", 12, replay).await;
}

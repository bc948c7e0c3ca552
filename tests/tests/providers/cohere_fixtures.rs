//! Every recording in `tests/fixtures/recorded/cohere-v2` replayed from a loopback HTTP server
//! through the real Cohere provider and the real chat loop, with the recordings' tools: each
//! request we send means what the recorded one meant (messages, tool calls and results, tools,
//! tool choice), and every answer's text and tool calls come out as recorded. Streaming
//! recordings run through `ask_stream`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::Path;

use llm_tools_core::{Role, ToolChoice};
use llm_tools_providers::cohere::{Cohere, CohereConfig, canonical_request};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::{RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::chat_replay::{self, Protocol, Scenario};
use llm_tools_tests::fixtures;
use serde_json::Value;

/// The text and tool calls of a recorded answer: one body, or the events of an SSE stream.
fn answer(response: &RecordedResponse) -> (String, Vec<(String, Value)>) {
    let body = response.body.trim();
    let mut text = String::new();
    let mut calls = Vec::new();
    if body.starts_with('{') {
        let v: Value = serde_json::from_str(body).unwrap();
        for part in v["message"]["content"].as_array().into_iter().flatten() {
            text.push_str(part["text"].as_str().unwrap_or_default());
        }
        for c in v["message"]["tool_calls"].as_array().into_iter().flatten() {
            let args = serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
            calls.push((c["function"]["name"].as_str().unwrap().to_owned(), args));
        }
        return (text, calls);
    }
    let mut open: Vec<(String, String)> = Vec::new();
    for data in body.lines().filter_map(|l| l.strip_prefix("data:")) {
        let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        let m = &v["delta"]["message"];
        match v["type"].as_str().unwrap_or_default() {
            "content-delta" => text.push_str(m["content"]["text"].as_str().unwrap_or_default()),
            "tool-call-start" => open.push((
                m["tool_calls"]["function"]["name"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                m["tool_calls"]["function"]["arguments"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )),
            "tool-call-delta" => {
                if let Some(last) = open.last_mut() {
                    last.1.push_str(
                        m["tool_calls"]["function"]["arguments"]
                            .as_str()
                            .unwrap_or_default(),
                    );
                }
            }
            "tool-call-end" => {
                let (name, args) = open.remove(0);
                let args = if args.is_empty() {
                    serde_json::json!({})
                } else {
                    serde_json::from_str(&args).unwrap()
                };
                calls.push((name, args));
            }
            _ => {}
        }
    }
    (text, calls)
}

const COHERE: Protocol = Protocol {
    canonical: canonical_request,
    answer,
};

fn scenario(recording: &Recording) -> Scenario {
    let first = &recording.interactions[0].request;
    let last = &recording.interactions.last().unwrap().request.body;
    let canonical_first = canonical_request(&first.body);
    let names: Vec<String> = canonical_first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let tools = fixtures::tools_named(&names);
    assert_eq!(tools.len(), names.len(), "the recording's tools: {names:?}");
    let choice = match &canonical_first["tool_choice"] {
        Value::String(s) if s == "required" => ToolChoice::Required,
        Value::String(s) if s == "none" => ToolChoice::None,
        _ => ToolChoice::Auto,
    };
    Scenario {
        instructions: chat_replay::instructions(&canonical_first),
        asks: chat_replay::asks(&canonical_request(last)),
        tools,
        choice,
        calls: None,
        stream: first.body["stream"] == true,
    }
}

async fn replay(path: &Path) -> Result<(), String> {
    let recording = Recording::load(path).map_err(|e| e.to_string())?;
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let model = recording.interactions[0].request.body["model"]
        .as_str()
        .unwrap()
        .to_owned();
    let provider = Cohere::new(
        CohereConfig::new(model)
            .with_base_url(format!("{}/v2", server.url()))
            .with_api_key("test-key")
            .with_retry(RetryPolicy::none()),
    )
    .map_err(|e| e.to_string())?;
    // A recording of one question asked in separate chats (streamed, then not) runs as that
    // many chats.
    let independent = recording.interactions.len() > 1
        && recording
            .interactions
            .iter()
            .all(|i| i.request.body["messages"].as_array().map(Vec::len) == Some(1));
    let transcript = if independent {
        let mut transcript = Vec::new();
        for interaction in &recording.interactions {
            let mut one = recording.clone();
            one.interactions = vec![interaction.clone()];
            transcript.extend(chat_replay::run(provider.clone(), &scenario(&one), &server).await?);
        }
        transcript
    } else {
        chat_replay::run(provider, &scenario(&recording), &server).await?
    };
    chat_replay::check(&COHERE, &recording, &server, &transcript)?;
    for r in server.received() {
        if r.header("authorization") != Some("Bearer test-key") {
            return Err(format!("request headers {:?}", r.headers));
        }
    }
    // Every answer whose recording has a tool plan kept it, and the next request sent it back.
    let received = server.received();
    let answers: Vec<_> = transcript
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .collect();
    for (i, (m, recorded)) in answers.iter().zip(&recording.interactions).enumerate() {
        let body = &recorded.response.body;
        let planned = match serde_json::from_str::<Value>(body) {
            Ok(v) => v["message"]["tool_plan"]
                .as_str()
                .is_some_and(|p| !p.is_empty()),
            Err(_) => body.contains("event: tool-plan-delta"),
        };
        if !planned || m.tool_calls.is_empty() {
            continue;
        }
        let plan = m
            .provider_data
            .as_ref()
            .and_then(|d| d.for_protocol("cohere"))
            .and_then(|d| d.get("tool_plan"))
            .and_then(Value::as_str)
            .ok_or(format!("answer {i} lost its tool plan"))?;
        if let Some(next) = received.get(i + 1) {
            let sent = next.body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|msg| msg["tool_plan"].as_str() == Some(plan));
            if !sent {
                return Err(format!("the tool plan of answer {i} was not sent back"));
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cohere_recording_replays_through_the_chat_loop() {
    chat_replay::replay_every("cohere-v2", 14, async |path| replay(path).await).await;
}

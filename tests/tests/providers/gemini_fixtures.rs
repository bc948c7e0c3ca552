//! Every recording in `tests/fixtures/recorded/gemini` replayed from a loopback HTTP server
//! through the real Gemini provider and the real chat loop, with the recordings' tools, once
//! with each schema field (`parametersJsonSchema`, the default, and the older `parameters` the
//! recordings used): each request we send means what the recorded one meant (contents, function
//! responses, declarations modulo the schema field, thought signatures sent back, the
//! function-calling mode), and every answer's text and tool calls come out as recorded.
//! Streaming recordings run through `ask_stream`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::Path;
use std::sync::Arc;

use llm_tools_core::{Role, Tool, ToolChoice};
use llm_tools_providers::gemini::{Gemini, GeminiConfig, SchemaField, canonical_request};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::{RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::chat_replay::{self, Protocol, Scenario};
use llm_tools_tests::fixtures;
use serde_json::Value;

/// The text and tool calls of a recorded answer: one body, or the chunks of an SSE stream.
fn answer(response: &RecordedResponse) -> (String, Vec<(String, Value)>) {
    let body = response.body.trim();
    let chunks: Vec<Value> = if body.starts_with('{') {
        vec![serde_json::from_str(body).unwrap()]
    } else {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for chunk in chunks {
        for part in chunk["candidates"][0]["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(call) = part.get("functionCall") {
                calls.push((
                    call["name"].as_str().unwrap().to_owned(),
                    call.get("args")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({})),
                ));
            } else if part["thought"] != true
                && let Some(t) = part["text"].as_str()
            {
                text.push_str(t);
            }
        }
    }
    (text, calls)
}

const GEMINI: Protocol = Protocol {
    canonical: canonical_request,
    answer,
};

fn scenario(recording: &Recording) -> Scenario {
    let first = &recording.interactions[0].request;
    let last = &recording.interactions.last().unwrap().request.body;
    let canonical_first = canonical_request(&first.body);
    let names: Vec<String> = first.body["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_owned())
        .collect();
    let tools: Vec<Arc<dyn Tool>> = fixtures::tools_named(&names);
    assert_eq!(tools.len(), names.len(), "the recording's tools: {names:?}");
    let choice = match &canonical_first["tool_choice"] {
        Value::String(s) if s == "required" => ToolChoice::Required,
        Value::String(s) if s == "none" => ToolChoice::None,
        Value::Object(o) => ToolChoice::tool(o["tool"].as_str().unwrap()),
        _ => ToolChoice::Auto,
    };
    Scenario {
        instructions: chat_replay::instructions(&canonical_first),
        asks: chat_replay::asks(&canonical_request(last)),
        tools,
        choice,
        calls: None,
        stream: first.url.contains(":streamGenerateContent"),
    }
}

async fn replay(path: &Path, field: SchemaField) -> Result<(), String> {
    let recording = Recording::load(path).map_err(|e| e.to_string())?;
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let url = &recording.interactions[0].request.url;
    let model = url
        .split("/models/")
        .nth(1)
        .and_then(|m| m.split(':').next())
        .unwrap();
    let provider = Gemini::new(
        GeminiConfig::new(model)
            .with_base_url(format!("{}/v1beta", server.url()))
            .with_api_key("test-key")
            .with_schema_field(field)
            .with_retry(RetryPolicy::none()),
    )
    .map_err(|e| e.to_string())?;
    let scenario = scenario(&recording);
    let transcript = chat_replay::run(provider, &scenario, &server).await?;
    chat_replay::check(&GEMINI, &recording, &server, &transcript)?;
    let received = server.received();
    for r in &received {
        if r.header("x-goog-api-key") != Some("test-key") {
            return Err(format!("request headers {:?}", r.headers));
        }
        let declarations = &r.body["tools"][0]["functionDeclarations"];
        let key = match field {
            SchemaField::Parameters => "parameters",
            _ => "parametersJsonSchema",
        };
        if declarations
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| d.get(key).is_none())
        {
            return Err(format!("a declaration without `{key}`: {declarations}"));
        }
    }
    // Calls without ids got generated ones, which never went back to Gemini.
    for m in transcript.iter().filter(|m| m.role == Role::Assistant) {
        for call in &m.tool_calls {
            if call.id.is_empty() {
                return Err("a call without an id".into());
            }
        }
    }
    if received
        .iter()
        .any(|r| r.body.to_string().contains("\"id\":\"call_"))
    {
        return Err("a generated call id was sent to Gemini".into());
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_gemini_recording_replays_with_parameters_json_schema() {
    chat_replay::replay_every("gemini", 4, async |path| {
        replay(path, SchemaField::JsonSchema).await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_gemini_recording_replays_with_the_older_parameters_field() {
    chat_replay::replay_every("gemini", 4, async |path| {
        replay(path, SchemaField::Parameters).await
    })
    .await;
}

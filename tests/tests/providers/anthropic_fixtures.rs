//! Every recording in `tests/fixtures/recorded/anthropic-messages` replayed from a loopback HTTP
//! server through the real Anthropic provider and the real chat loop, with the recordings'
//! tools: each request we send means what the recorded one meant (messages, tool results, tool
//! definitions modulo our dialect, deferred tools, tool choice, parallel switch), and every
//! answer's text and tool calls come out as recorded. Streaming recordings run through
//! `ask_stream`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::Path;
use std::sync::Arc;

use llm_tools_core::{Tool, ToolChoice, tool};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig, canonical_request};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::{RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::chat_replay::{self, Protocol, Scenario};
use llm_tools_tests::fixtures;
use serde_json::Value;

// The tools of the tool-search recordings (`pr745_*`): five deferred, one loaded.

/// Looks up the current weather (temperature, wind) for a city by name.
///
/// # Arguments
/// * `city` - City name, e.g. "Berlin"
#[tool(defer)]
async fn weather_lookup(city: String) -> String {
    format!("Weather in {city}: 15C, wind 10 km/h, clear skies")
}

/// Fetches the latest equity stock price in USD for a ticker symbol.
///
/// # Arguments
/// * `ticker` - Uppercase ticker symbol, e.g. "AAPL"
#[tool(defer)]
async fn stock_price(ticker: String) -> String {
    format!("{ticker}: 123.45 USD")
}

/// Translates a short piece of text from one natural language to another.
///
/// # Arguments
/// * `text` - Text to translate
/// * `target_language` - Target language name, e.g. "Spanish"
#[tool(defer)]
async fn translate_text(text: String, target_language: String) -> String {
    format!("{text} ({target_language})")
}

/// Evaluates a basic arithmetic expression involving +, -, *, /.
///
/// # Arguments
/// * `expression` - Arithmetic expression, e.g. "2 + 2"
#[tool(defer)]
async fn calculator(expression: String) -> String {
    format!("{expression} = 4")
}

/// Looks up the dictionary definition of an English word.
///
/// # Arguments
/// * `word` - The word to define
#[tool(defer)]
async fn dictionary(word: String) -> String {
    format!("{word}: a word")
}

/// Returns the current server time as an ISO-8601 string.
#[tool]
async fn current_time() -> String {
    "2026-01-01T12:00:00Z".into()
}

fn all_tools() -> Vec<Arc<dyn Tool>> {
    let mut tools = fixtures::all_tools();
    tools.extend([
        Arc::new(WeatherLookup) as Arc<dyn Tool>,
        Arc::new(StockPrice),
        Arc::new(TranslateText),
        Arc::new(Calculator),
        Arc::new(Dictionary),
        Arc::new(CurrentTime),
    ]);
    tools
}

/// The text and tool calls of a recorded answer: a message body, or an SSE stream read event
/// by event.
fn answer(response: &RecordedResponse) -> (String, Vec<(String, Value)>) {
    let body = response.body.trim();
    let mut text = String::new();
    let mut calls = Vec::new();
    if body.starts_with('{') {
        let v: Value = serde_json::from_str(body).unwrap();
        for block in v["content"].as_array().into_iter().flatten() {
            match block["type"].as_str() {
                Some("text") => text.push_str(block["text"].as_str().unwrap()),
                Some("tool_use") => calls.push((
                    block["name"].as_str().unwrap().to_owned(),
                    block["input"].clone(),
                )),
                _ => {}
            }
        }
        return (text, calls);
    }
    let mut inputs: Vec<(u64, String, String)> = Vec::new();
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<Value>(data.trim()) else {
            continue;
        };
        let index = v["index"].as_u64().unwrap_or(0);
        match v["type"].as_str() {
            Some("content_block_start") if v["content_block"]["type"] == "tool_use" => {
                let name = v["content_block"]["name"].as_str().unwrap().to_owned();
                inputs.push((index, name, String::new()));
            }
            Some("content_block_delta") => match v["delta"]["type"].as_str() {
                Some("text_delta") => text.push_str(v["delta"]["text"].as_str().unwrap()),
                Some("input_json_delta") => {
                    if let Some(call) = inputs.iter_mut().find(|(i, _, _)| *i == index) {
                        call.2
                            .push_str(v["delta"]["partial_json"].as_str().unwrap());
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
    for (_, name, input) in inputs {
        let input = if input.is_empty() { "{}" } else { &input };
        calls.push((name, serde_json::from_str(input).unwrap()));
    }
    (text, calls)
}

const ANTHROPIC: Protocol = Protocol {
    canonical: canonical_request,
    answer,
};

fn scenario(recording: &Recording) -> Scenario {
    let first = &recording.interactions[0].request.body;
    let last = &recording.interactions.last().unwrap().request.body;
    let names: Vec<String> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.get("input_schema").and(t["name"].as_str()))
        .map(str::to_owned)
        .collect();
    let all = all_tools();
    let tools: Vec<Arc<dyn Tool>> = names
        .iter()
        .map(|n| {
            all.iter()
                .find(|t| t.spec().joined_name() == n)
                .unwrap_or_else(|| panic!("no tool {n}"))
                .clone()
        })
        .collect();
    let choice = match first["tool_choice"]["type"].as_str() {
        Some("tool") => ToolChoice::tool(first["tool_choice"]["name"].as_str().unwrap()),
        Some("any") => ToolChoice::Required,
        Some("none") => ToolChoice::None,
        _ => ToolChoice::Auto,
    };
    let calls = (first["tool_choice"]["disable_parallel_tool_use"] == true).then_some(1);
    let canonical_first = canonical_request(first);
    let canonical_last = canonical_request(last);
    Scenario {
        instructions: chat_replay::instructions(&canonical_first),
        asks: chat_replay::asks(&canonical_last),
        tools,
        choice,
        calls,
        stream: first["stream"] == true,
    }
}

async fn replay(path: &Path) -> Result<(), String> {
    let recording = Recording::load(path).map_err(|e| e.to_string())?;
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let model = recording.interactions[0].request.body["model"]
        .as_str()
        .unwrap();
    let provider = Anthropic::new(
        AnthropicConfig::new(model)
            .with_base_url(format!("{}/v1", server.url()))
            .with_api_key("test-key")
            .with_retry(RetryPolicy::none()),
    )
    .map_err(|e| e.to_string())?;
    let scenario = scenario(&recording);
    let transcript = chat_replay::run(provider, &scenario, &server).await?;
    chat_replay::check(&ANTHROPIC, &recording, &server, &transcript)?;
    // Every request carried the version header and the key.
    for r in server.received() {
        if r.header("anthropic-version") != Some("2023-06-01")
            || r.header("x-api-key") != Some("test-key")
        {
            return Err(format!("request headers {:?}", r.headers));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_anthropic_recording_replays_through_the_chat_loop() {
    chat_replay::replay_every("anthropic-messages", 7, replay).await;
}

/// The tool-search recording, looked at closely: the deferred tools go with `defer_loading` and
/// the BM25 search entry; the answer's search blocks go back in their place, and the tool the
/// search found stays deferred (the reference in the conversation keeps it loaded).
#[tokio::test]
async fn tool_search_blocks_go_back_and_found_tools_stay_deferred() {
    let path = fixtures::recordings("anthropic-messages")
        .into_iter()
        .find(|p| p.to_string_lossy().contains("promotes_a_deferred_tool"))
        .expect("the tool-search recording in tests/fixtures/recorded");
    let recording = Recording::load(&path).unwrap();
    let server = ReplayServer::start(recording.clone()).await.unwrap();
    let provider = Anthropic::new(
        AnthropicConfig::new("claude-haiku-4-5-20251001")
            .with_base_url(format!("{}/v1", server.url()))
            .with_api_key("test-key"),
    )
    .unwrap();
    let scenario = scenario(&recording);
    chat_replay::run(provider, &scenario, &server)
        .await
        .unwrap();
    let received = server.received();
    let first = &received[0].body;
    let tools = first["tools"].as_array().unwrap();
    assert_eq!(
        tools.last().unwrap(),
        &serde_json::json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
    let deferred: Vec<&str> = tools
        .iter()
        .filter(|t| t["defer_loading"] == true)
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        deferred,
        [
            "weather_lookup",
            "stock_price",
            "translate_text",
            "calculator",
            "dictionary"
        ]
    );
    let second = &received[1].body;
    let assistant = &second["messages"][1]["content"];
    let kinds: Vec<&str> = assistant
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "text",
            "server_tool_use",
            "tool_search_tool_result",
            "text",
            "tool_use"
        ]
    );
    assert_eq!(
        assistant[1]["input"],
        serde_json::json!({"query": "weather Berlin"})
    );
    let weather = second["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "weather_lookup")
        .unwrap();
    assert_eq!(weather["defer_loading"], true);
}

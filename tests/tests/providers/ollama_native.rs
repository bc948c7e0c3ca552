//! Ollama's native `/api/chat` through the real provider and the real chat loop, against the
//! loopback replay server serving answers in the documented format (`docs/api.md`,
//! `api/types.go`: no recording of the native API exists here): tool rounds whole and streamed
//! as NDJSON, thinking kept and sent back, results naming their tool and call, servers that
//! send no call ids, the schema in the form Ollama keeps, and bad input as typed errors with
//! the chat usable afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;

use llm_tools_core::chat::Chat;
use llm_tools_core::{Message, ProviderErrorKind, Request, Role, Tool, ToolChoice, tool};
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::record::{Interaction, RecordedResponse};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::Weather;
use llm_tools_tests::serving::{self, provider_error, stream_turn};
use serde_json::{Value, json};

/// A unit of temperature.
#[derive(serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Unit {
    /// Celsius.
    C,
    /// Fahrenheit.
    F,
}

/// A forecast's arguments.
#[derive(serde::Deserialize)]
struct ForecastArgs {
    days: u8,
    unit: Unit,
}

/// Forecasts the temperature
#[tool(schema = json!({
    "type": "object",
    "properties": {
        "days": {"type": "integer", "description": "How many days ahead", "minimum": 1, "maximum": 7},
        "unit": {"$ref": "#/$defs/Unit"}
    },
    "required": ["days", "unit"],
    "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}
}))]
async fn forecast(args: ForecastArgs) -> String {
    let ForecastArgs { days, unit } = args;
    let unit = match unit {
        Unit::C => "°C",
        Unit::F => "°F",
    };
    format!("{days} days: 15{unit}")
}

fn exchange(response: RecordedResponse) -> Interaction {
    serving::exchange("http://localhost:11434/api/chat", response)
}

fn ndjson(lines: &[Value]) -> RecordedResponse {
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    RecordedResponse::new(200, "application/x-ndjson", body)
}

fn done(content: &str) -> Value {
    json!({"model": "qwen3", "created_at": "2026-11-01T10:00:00Z",
           "message": {"role": "assistant", "content": content},
           "done": true, "done_reason": "stop", "prompt_eval_count": 30, "eval_count": 9})
}

fn provider(server: &ReplayServer) -> Ollama {
    Ollama::new(
        OllamaConfig::new("qwen3")
            .with_base_url(server.url())
            .with_think(true)
            .with_keep_alive("10m")
            .with_option("temperature", json!(0.0))
            .with_retry(llm_tools_providers::http::RetryPolicy::none()),
    )
    .unwrap()
}

/// Lists a customer's open orders
#[tool(defer)]
async fn open_orders(customer: String) -> String {
    format!("no open orders for {customer}")
}

fn tool_names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// Ollama has no tool search of its own, so the chat searches its deferred tools: the one the
/// search finds goes out with the next request (and the ones it did not find do not).
#[tokio::test]
async fn a_deferred_tool_the_chat_search_found_goes_out_with_the_next_request() {
    let search = json!({"model": "qwen3", "created_at": "2026-11-01T10:00:00Z",
        "message": {"role": "assistant", "content": "",
            "tool_calls": [{"id": "call_s1", "function": {"index": 0, "name": "tool_search",
                "arguments": {"query": "open orders of a customer"}}}]},
        "done": true, "done_reason": "stop", "prompt_eval_count": 20, "eval_count": 6});
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(200, search.to_string())),
        exchange(RecordedResponse::json(200, done("None open.").to_string())),
    ])
    .await
    .unwrap();
    let mut chat = Chat::new(provider(&server));
    chat.with_tools((Weather, OpenOrders)).unwrap();
    let answer = chat.ask("Any open orders for ACME?").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("None open."));

    let received = server.received();
    assert_eq!(tool_names(&received[0].body), ["weather", "tool_search"]);
    assert_eq!(tool_names(&received[1].body), ["weather", "open_orders"]);
}

/// Asked directly, without a chat to choose, Ollama leaves a deferred tool out.
#[test]
fn a_deferred_tool_is_left_out_unless_the_request_says_it_was_chosen() {
    let server_url = "http://127.0.0.1:9";
    let ollama = Ollama::new(OllamaConfig::new("qwen3").with_base_url(server_url)).unwrap();
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(OpenOrders)];
    let messages = [Message::user("Hi")];
    let body = |chosen: bool| -> Value {
        let request = Request::new(&messages, &tools).with_deferred_chosen(chosen);
        serde_json::from_slice(&ollama.request_body(&request, false).unwrap()).unwrap()
    };
    assert_eq!(tool_names(&body(false)), ["weather"]);
    assert_eq!(tool_names(&body(true)), ["weather", "open_orders"]);
    assert_eq!(tool_names(&body(false)), ["weather"], "each list as asked");
}

#[tokio::test]
async fn a_tool_round_goes_whole_and_results_name_their_tool_and_call() {
    let call = json!({"model": "qwen3", "created_at": "2026-11-01T10:00:00Z",
        "message": {"role": "assistant", "content": "", "thinking": "I need the weather.",
            "tool_calls": [{"id": "call_k3j9x0a2", "function": {"index": 0, "name": "weather",
                "arguments": {"latitude": "52.52", "longitude": "13.40"}}}]},
        "done": true, "done_reason": "stop", "prompt_eval_count": 40, "eval_count": 12});
    let server = ReplayServer::with_interactions(vec![
        exchange(RecordedResponse::json(200, call.to_string())),
        exchange(RecordedResponse::json(
            200,
            done("15°C in Berlin.").to_string(),
        )),
    ])
    .await
    .unwrap();
    let mut chat = Chat::new(provider(&server));
    chat.with_tools(Weather).unwrap();
    let answer = chat.ask("Weather in Berlin?").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("15°C in Berlin."));

    let received = server.received();
    let first = &received[0].body;
    assert_eq!(first["model"], "qwen3");
    assert_eq!(first["stream"], false);
    assert_eq!(first["think"], true);
    assert_eq!(first["keep_alive"], "10m");
    assert_eq!(first["options"], json!({"temperature": 0.0}));
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["function"]["name"], "weather");
    assert_eq!(
        first["tools"][0]["function"]["parameters"]["type"],
        "object"
    );
    let second = received[1].body["messages"].as_array().unwrap();
    let assistant = &second[1];
    assert_eq!(assistant["thinking"], "I need the weather.");
    assert_eq!(
        assistant["tool_calls"][0]["function"],
        json!({"index": 0, "name": "weather", "arguments": {"latitude": "52.52", "longitude": "13.40"}})
    );
    assert_eq!(assistant["tool_calls"][0]["id"], "call_k3j9x0a2");
    assert_eq!(
        second[2],
        json!({"role": "tool", "content": "Current weather at 52.52, 13.40: 15°C, Wind: 10 km/h",
               "tool_name": "weather", "tool_call_id": "call_k3j9x0a2"})
    );
    let usage = chat.messages()[1].usage.unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (40, 12));
}

#[tokio::test]
async fn a_streamed_round_reassembles_ndjson_lines_and_calls_without_ids_get_one() {
    let server = ReplayServer::with_interactions(vec![
        exchange(ndjson(&[
            json!({"model": "qwen3", "message": {"role": "assistant", "content": "", "thinking": "Let me "}, "done": false}),
            json!({"model": "qwen3", "message": {"role": "assistant", "content": "", "thinking": "check."}, "done": false}),
            // An older server: no call id.
            json!({"model": "qwen3", "message": {"role": "assistant", "content": "",
                "tool_calls": [{"function": {"name": "weather", "arguments": {"latitude": "1", "longitude": "2"}}}]}, "done": false}),
            json!({"model": "qwen3", "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop",
                   "prompt_eval_count": 20, "eval_count": 5}),
        ])),
        exchange(ndjson(&[
            json!({"model": "qwen3", "message": {"role": "assistant", "content": "It is "}, "done": false}),
            json!({"model": "qwen3", "message": {"role": "assistant", "content": "15°C."}, "done": false}),
            done(""),
        ])),
    ])
    .await
    .unwrap();
    let mut chat = Chat::new(provider(&server));
    chat.with_tools(Weather).unwrap();
    let (text, events) = stream_turn(&mut chat, "Weather?").await.unwrap();
    assert_eq!(text, "It is 15°C.");
    assert_eq!(serving::started_calls(&events), ["weather"]);
    let call = &chat.messages()[1].tool_calls[0];
    assert!(call.id.starts_with("call_"), "{}", call.id);
    let received = server.received();
    assert_eq!(received[0].header("accept"), Some("application/x-ndjson"));
    assert_eq!(received[0].body["stream"], true);
    let sent_back = &received[1].body["messages"][1];
    assert_eq!(sent_back["thinking"], "Let me check.");
    assert_eq!(
        received[1].body["messages"][2]["tool_call_id"],
        call.id.as_str()
    );
}

#[tokio::test]
async fn bad_lines_errors_and_cut_streams_are_typed_and_the_chat_goes_on() {
    let server = ReplayServer::with_interactions(vec![
        exchange(ndjson(&[
            json!({"model": "qwen3", "message": {"role": "assistant", "content": "Hal"}, "done": false}),
            json!({"error": "an error was encountered while running the model: unexpected EOF"}),
        ])),
        exchange(RecordedResponse::new(200, "application/x-ndjson", "{\"message\":{\"content\":\"a\"},\"done\":false}\nnot json\n")),
        exchange(RecordedResponse::new(200, "application/x-ndjson", "{\"message\":{\"content\":\"a\"},\"done\":false}\n")),
        exchange(RecordedResponse::json(404, r#"{"error":"model 'qwen9' not found"}"#)),
        exchange(ndjson(&[done("Fine.")])),
    ])
    .await
    .unwrap();
    let mut chat = Chat::new(provider(&server));
    let err = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(err.kind(), ProviderErrorKind::Stream);
    assert!(err.message().contains("unexpected EOF"), "{err}");
    let err = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(err.kind(), ProviderErrorKind::Decode);
    assert!(err.message().contains("not JSON"), "{err}");
    let err = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(err.kind(), ProviderErrorKind::Stream);
    assert!(err.is_retryable());
    let err = provider_error(chat.ask("Hi").await.unwrap_err());
    assert_eq!(err.status(), Some(404));
    assert_eq!(err.message(), "model 'qwen9' not found");
    let (text, _) = stream_turn(&mut chat, "Hi").await.unwrap();
    assert_eq!(text, "Fine.");
    assert_eq!(
        chat.messages()
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count(),
        1
    );
}

#[test]
fn the_schema_goes_in_the_form_ollama_keeps_and_forcing_a_tool_is_refused() {
    let provider = Ollama::new(OllamaConfig::new("qwen3")).unwrap();
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Forecast)];
    let messages = [Message::user("Forecast?")];
    let body: Value = serde_json::from_slice(
        &provider
            .request_body(&Request::new(&messages, &tools), false)
            .unwrap(),
    )
    .unwrap();
    let parameters = &body["tools"][0]["function"]["parameters"];
    let text = parameters.to_string();
    assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
    assert_eq!(parameters["properties"]["unit"]["enum"], json!(["c", "f"]));
    let days = parameters["properties"]["days"]["description"]
        .as_str()
        .unwrap();
    assert!(days.starts_with("How many days ahead"), "{days}");
    assert!(
        days.contains("minimum: 1") && days.contains("maximum: 7"),
        "{days}"
    );

    let err = provider
        .request_body(
            &Request::new(&messages, &tools).with_choice(&ToolChoice::Required),
            false,
        )
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Request);
    let none: Value = serde_json::from_slice(
        &provider
            .request_body(
                &Request::new(&messages, &tools).with_choice(&ToolChoice::None),
                false,
            )
            .unwrap(),
    )
    .unwrap();
    assert!(none.get("tools").is_none());
}

//! What the Anthropic provider writes and reads, without a network: joined names mapped back,
//! tool choice and the parallel switch, the computer toolset and the browser namespace, deferred
//! tools, strict schemas, definitions serialized once, thinking and server blocks kept in place,
//! tool results grouped per round with their attachments, usage, streamed thinking, recording.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use llm_tools_core::chat::Chat;
use llm_tools_core::{
    Attachment, Message, Namespace, Part, ProviderError, ProviderErrorKind, Request, StreamEvent,
    Tool, ToolCall, ToolChoice, tool,
};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig, ToolSearch};
use llm_tools_providers::record::{RecordedResponse, Recorder};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::Weather;
use llm_tools_tests::serving::exchange;
use serde_json::{Value, json};

/// Where Messages requests go.
const MESSAGES: &str = "https://api.anthropic.com/v1/messages";

const CRM: Namespace = Namespace::new("crm").description("Customer records");

/// Finds a customer by email
#[tool(namespace = CRM)]
async fn lookup(email: String) -> String {
    format!("customer {email}")
}

/// Takes a screenshot of the desktop
#[tool(namespace = "computer")]
async fn screenshot() -> String {
    "a screenshot".into()
}

/// Clicks at a point
#[tool(namespace = "computer")]
async fn left_click(coordinate: Vec<u32>) -> String {
    format!("clicked {coordinate:?}")
}

/// Not a member of the computer toolset
#[tool(namespace = "computer")]
async fn teleport() -> String {
    "no".into()
}

/// Opens a page
#[tool(namespace = "browser")]
async fn navigate(url: String) -> String {
    url
}

/// Looks up the weather for a city when found by tool search
///
/// # Arguments
/// * `city` - The city
#[tool(defer)]
async fn weather_lookup(city: String) -> String {
    format!("sunny in {city}")
}

/// Labels a record
#[tool(schema = serde_json::json!({
    "type": "object",
    "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
    "required": ["labels"]
}))]
async fn label(labels: serde_json::Map<String, Value>) -> String {
    format!("{} labels", labels.len())
}

fn provider(config: AnthropicConfig) -> Anthropic {
    Anthropic::new(config.with_api_key("k")).unwrap()
}

fn plain() -> Anthropic {
    provider(AnthropicConfig::new("claude-haiku-4-5"))
}

fn body(provider: &Anthropic, request: &Request<'_>) -> Value {
    serde_json::from_slice(&provider.request_body(request, false).unwrap()).unwrap()
}

fn answer(content: Value) -> Vec<u8> {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": content, "stop_reason": "tool_use",
        "usage": {"input_tokens": 100, "output_tokens": 20, "cache_read_input_tokens": 50, "cache_creation_input_tokens": 10}})
    .to_string()
    .into_bytes()
}

#[test]
fn namespaced_tools_travel_under_joined_names_and_calls_map_back() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(Lookup)];
    let messages = [Message::user("Who is ada@example.com?")];
    let choice = ToolChoice::tool("crm_lookup");
    let b = body(
        &plain(),
        &Request::new(&messages, &tools).with_choice(&choice),
    );
    let names: Vec<&str> = b["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["weather", "crm_lookup"]);
    assert_eq!(
        b["tool_choice"],
        json!({"type": "tool", "name": "crm_lookup"})
    );

    let response = plain()
        .parse_response(
            &answer(json!([{"type": "tool_use", "id": "toolu_1", "name": "crm_lookup", "input": {"email": "ada@example.com"}}])),
            &tools,
        )
        .unwrap();
    let call = &response.message.tool_calls[0];
    assert_eq!(call.name, "lookup");
    assert_eq!(call.namespace.as_deref(), Some("crm"));
    assert_eq!(call.arguments, r#"{"email":"ada@example.com"}"#);
    assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
}

#[test]
fn tool_choice_and_the_parallel_switch() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let messages = [Message::user("hi")];
    let p = plain();
    let choice_of = |choice: ToolChoice, parallel: Option<bool>| {
        let b = body(
            &p,
            &Request::new(&messages, &tools)
                .with_choice(&choice)
                .with_parallel_tool_calls(parallel),
        );
        b.get("tool_choice").cloned()
    };
    assert_eq!(choice_of(ToolChoice::Auto, None), None);
    assert_eq!(
        choice_of(ToolChoice::Auto, Some(false)),
        Some(json!({"type": "auto", "disable_parallel_tool_use": true}))
    );
    assert_eq!(
        choice_of(ToolChoice::Required, Some(false)),
        Some(json!({"type": "any", "disable_parallel_tool_use": true}))
    );
    assert_eq!(
        choice_of(ToolChoice::Required, Some(true)),
        Some(json!({"type": "any", "disable_parallel_tool_use": false}))
    );
    assert_eq!(
        choice_of(ToolChoice::None, Some(false)),
        Some(json!({"type": "none"}))
    );
    assert_eq!(
        choice_of(ToolChoice::tool("weather"), None),
        Some(json!({"type": "tool", "name": "weather"}))
    );
    let unknown = ToolChoice::tool("nope");
    let e = p
        .request_body(
            &Request::new(&messages, &tools).with_choice(&unknown),
            false,
        )
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Request);
    // No tools: no tools and no choice.
    let b = body(&p, &Request::new(&messages, &[]));
    assert!(b.get("tools").is_none() && b.get("tool_choice").is_none());
}

#[test]
fn the_computer_namespace_is_anthropics_computer_toolset() {
    let tools: Vec<Arc<dyn Tool>> =
        vec![Arc::new(Weather), Arc::new(Screenshot), Arc::new(LeftClick)];
    let p = plain();
    let messages = [Message::user("Click the OK button")];
    let b = body(&p, &Request::new(&messages, &tools));
    let entries = b["tools"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["type"], "computer_toolset_20260801");
    let configs = entries[1]["configs"].as_object().unwrap();
    assert_eq!(
        configs.len(),
        15,
        "every member without a tool is switched off"
    );
    assert!(configs.values().all(|c| c == &json!({"enabled": false})));
    assert!(!configs.contains_key("screenshot") && !configs.contains_key("left_click"));

    // Calls come back with the toolset's name; they go back, and their results, with it.
    let response = p
        .parse_response(
            &answer(
                json!([{"type": "tool_use", "id": "toolu_9", "toolset_name": "computer",
                "name": "left_click", "input": {"coordinate": [640, 360]}}]),
            ),
            &tools,
        )
        .unwrap();
    let call = response.message.tool_calls[0].clone();
    assert_eq!(call.name, "left_click");
    assert_eq!(call.namespace.as_deref(), Some("computer"));
    assert_eq!(call.joined_name(), "computer_left_click");
    let transcript = vec![
        messages[0].clone(),
        response.message,
        Message::tool_result("toolu_9", "clicked", false),
    ];
    let b = body(&p, &Request::new(&transcript, &tools));
    assert_eq!(
        b["messages"][1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_9", "name": "left_click",
               "input": {"coordinate": [640, 360]}, "toolset_name": "computer"})
    );
    assert_eq!(b["messages"][2]["content"][0]["toolset_name"], "computer");

    // A member cannot be forced.
    let forced = ToolChoice::tool("computer_screenshot");
    let e = p
        .request_body(&Request::new(&messages, &tools).with_choice(&forced), false)
        .unwrap_err();
    assert!(e.message().contains("ToolChoice::Required"), "{e}");

    // A tool in the namespace that is not a member is an error naming the members.
    let odd: Vec<Arc<dyn Tool>> = vec![Arc::new(Teleport)];
    let e = p
        .request_body(&Request::new(&messages, &odd), false)
        .unwrap_err();
    assert!(
        e.message().contains("no member `teleport`") && e.message().contains("left_click"),
        "{e}"
    );
}

#[test]
fn the_browser_namespace_is_a_clear_error() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Navigate)];
    let messages = [Message::user("Open example.com")];
    let e = plain()
        .request_body(&Request::new(&messages, &tools), false)
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Request);
    assert!(
        e.message().contains("browser_navigate") && e.message().contains("browser_state"),
        "{e}"
    );
}

#[test]
fn deferred_tools_go_with_the_search_entry_and_a_forced_one_goes_loaded() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(WeatherLookup)];
    let messages = [Message::user("Weather in Paris?")];
    let p = provider(AnthropicConfig::new("claude-haiku-4-5").with_tool_search(ToolSearch::Regex));
    let b = body(&p, &Request::new(&messages, &tools));
    let entries = b["tools"].as_array().unwrap();
    assert_eq!(entries.len(), 3);
    assert!(entries[0].get("defer_loading").is_none());
    assert_eq!(entries[1]["name"], "weather_lookup");
    assert_eq!(entries[1]["defer_loading"], true);
    assert_eq!(
        entries[2],
        json!({"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"})
    );

    let forced = ToolChoice::tool("weather_lookup");
    let b = body(&p, &Request::new(&messages, &tools).with_choice(&forced));
    let entries = b["tools"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "no search entry without deferred tools");
    assert!(entries[1].get("defer_loading").is_none());
    assert_eq!(b["tool_choice"]["name"], "weather_lookup");
}

#[test]
fn strict_mode_sends_the_strict_dialect_where_the_schema_allows() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(Label)];
    let messages = [Message::user("hi")];
    let b = body(
        &provider(AnthropicConfig::new("claude-haiku-4-5").with_strict(true)),
        &Request::new(&messages, &tools),
    );
    let weather = &b["tools"][0];
    assert_eq!(weather["strict"], true);
    assert_eq!(weather["input_schema"]["additionalProperties"], false);
    assert_eq!(
        weather["input_schema"]["required"],
        json!(["latitude", "longitude"])
    );
    // A map cannot be strict: it goes as it is.
    let label = &b["tools"][1];
    assert!(label.get("strict").is_none());
    assert_eq!(label["input_schema"], *Label.spec().parameters());
    // Without `with_strict`, nothing is strict.
    let b = body(&plain(), &Request::new(&messages, &tools));
    assert!(b["tools"][0].get("strict").is_none());
}

#[test]
fn definitions_are_serialized_once_per_dialect_and_reused() {
    let weather: Arc<dyn Tool> = Arc::new(Weather);
    let tools = vec![Arc::clone(&weather)];
    let messages = [Message::user("hi")];
    let p = plain();
    let first = p
        .request_body(&Request::new(&messages, &tools), false)
        .unwrap();
    let second = p
        .request_body(&Request::new(&messages, &tools), false)
        .unwrap();
    assert_eq!(first, second);
    // The definition sits in the spec's cache: asking again does not build it.
    let cached = weather
        .spec()
        .cached_definition("anthropic/plain", |_| -> Result<_, ProviderError> {
            panic!("the definition was not cached")
        })
        .unwrap();
    let b: Value = serde_json::from_slice(&first).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(cached.get()).unwrap(),
        b["tools"][0]
    );
}

#[test]
fn thinking_and_server_blocks_go_back_in_their_place() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let content = json!([
        {"type": "thinking", "thinking": "The user wants the weather.", "signature": "EqQBCkYI"},
        {"type": "text", "text": "Let me check."},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "Berlin"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"latitude": "52.52", "longitude": "13.40"}},
        {"type": "redacted_thinking", "data": "EmwKAhgB"}
    ]);
    let p = plain();
    let response = p.parse_response(&answer(content.clone()), &tools).unwrap();
    assert_eq!(response.message.text(), "Let me check.");
    assert_eq!(response.message.tool_calls.len(), 1);
    let transcript = vec![
        Message::user("Weather in Berlin?"),
        response.message,
        Message::tool_result("toolu_1", "15°C", false),
    ];
    let b = body(&p, &Request::new(&transcript, &tools));
    assert_eq!(b["messages"][1]["content"], content);
    // Another provider's data is not Anthropic's: a plain message goes back as text and calls.
    let mut other = transcript[1].clone();
    other.provider_data = Some(llm_tools_core::ProviderData::new(
        "gemini",
        json!({"parts": []}),
    ));
    let b = body(&p, &Request::new(std::slice::from_ref(&other), &tools));
    let kinds: Vec<&str> = b["messages"][0]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "tool_use"]);
}

#[test]
fn a_rounds_results_are_one_user_message_with_their_attachments() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let png = Attachment::bytes("image/png", vec![137, 80, 78, 71]).with_filename("map.png");
    let pdf = Attachment::url("application/pdf", "https://example.com/report.pdf");
    let txt =
        Attachment::bytes("text/plain", b"Ruby is the best.".to_vec()).with_filename("ruby.txt");
    let transcript = vec![
        Message::user("Two things"),
        Message::assistant_with_calls(
            "",
            vec![
                ToolCall::new("toolu_a", "weather", r#"{"latitude":"1","longitude":"2"}"#),
                ToolCall::new("toolu_b", "weather", r#"{"latitude":"3","longitude":"4"}"#),
            ],
        ),
        Message::tool_result_parts(
            "toolu_a",
            vec![Part::text("Here:"), png.into(), pdf.into(), txt.into()],
            false,
        ),
        Message::tool_result("toolu_b", "Service down", true),
        Message::user("Thanks"),
    ];
    let b = body(&plain(), &Request::new(&transcript, &tools));
    let messages = b["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    let results = &messages[2];
    assert_eq!(results["role"], "user");
    assert_eq!(
        results["content"][0],
        json!({"type": "tool_result", "tool_use_id": "toolu_a", "content": [
            {"type": "text", "text": "Here:"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
            {"type": "document", "source": {"type": "url", "url": "https://example.com/report.pdf"}},
            {"type": "text", "text": "<file name='ruby.txt' mime_type='text/plain'>Ruby is the best.</file>"}
        ]})
    );
    assert_eq!(
        results["content"][1],
        json!({"type": "tool_result", "tool_use_id": "toolu_b", "content": [{"type": "text", "text": "Service down"}], "is_error": true})
    );
    assert_eq!(
        messages[3],
        json!({"role": "user", "content": [{"type": "text", "text": "Thanks"}]})
    );

    let zip = Attachment::bytes("application/zip", vec![80, 75]).with_filename("all.zip");
    let transcript = vec![
        transcript[0].clone(),
        transcript[1].clone(),
        Message::tool_result_parts("toolu_a", vec![zip.into()], false),
        Message::tool_result("toolu_b", "ok", false),
    ];
    let e = plain()
        .request_body(&Request::new(&transcript, &tools), false)
        .unwrap_err();
    assert!(
        e.message().contains("all.zip") && e.message().contains("application/zip"),
        "{e}"
    );
}

#[test]
fn system_messages_go_to_the_system_prompt_and_usage_counts_cached_input() {
    let messages = [Message::system("Be brief."), Message::user("hi")];
    let b = body(&plain(), &Request::new(&messages, &[]));
    assert_eq!(b["system"], json!([{"type": "text", "text": "Be brief."}]));
    assert_eq!(b["messages"].as_array().unwrap().len(), 1);
    assert_eq!(b["max_tokens"], 8192);

    let r = plain()
        .parse_response(&answer(json!([{"type": "text", "text": "Hello"}])), &[])
        .unwrap();
    let usage = r.message.usage.unwrap();
    assert_eq!(usage.input_tokens, 160);
    assert_eq!(usage.cached_input_tokens, 50);
    assert_eq!(usage.output_tokens, 20);
}

#[tokio::test]
async fn streamed_thinking_is_reasoning_and_its_signature_is_kept() {
    let events = [
        json!({"type": "message_start", "message": {"model": "claude-sonnet-4-6", "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Weather "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "needed."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkYI"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"latitude\": \"1\", "}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"longitude\": \"2\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let bytes = futures::stream::iter(
        body.as_bytes()
            .chunks(7)
            .map(|c| Ok::<_, ProviderError>(Bytes::copy_from_slice(c)))
            .collect::<Vec<_>>(),
    );
    let got: Vec<StreamEvent> = plain()
        .stream_events(bytes, &tools)
        .map(Result::unwrap)
        .collect()
        .await;
    let reasoning: String = got
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "Weather needed.");
    let Some(StreamEvent::Completed(response)) = got.last() else {
        panic!("no Completed: {got:?}")
    };
    assert_eq!(
        response.message.tool_calls[0].arguments,
        r#"{"latitude": "1", "longitude": "2"}"#
    );
    assert_eq!(response.message.usage.unwrap().output_tokens, 40);
    let transcript = vec![
        Message::user("Weather?"),
        response.message.clone(),
        Message::tool_result("toolu_1", "15°C", false),
    ];
    let b: Value = serde_json::from_slice(
        &plain()
            .request_body(&Request::new(&transcript, &tools), true)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        b["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": "Weather needed.", "signature": "EqQBCkYI"})
    );
    assert_eq!(b["stream"], true);
}

/// A thinking block that came without its signature (a gateway that signs none), streamed or
/// whole, is not sent back: the API refuses it in every later request. The reasoning still
/// streams.
#[tokio::test]
async fn an_unsigned_thinking_block_is_not_sent_back() {
    let events = [
        json!({"type": "message_start", "message": {"model": "claude-sonnet-4-6", "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Weather needed."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"latitude\": \"1\", \"longitude\": \"2\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let bytes = futures::stream::iter(vec![Ok::<_, ProviderError>(Bytes::from(body))]);
    let got: Vec<StreamEvent> = plain()
        .stream_events(bytes, &tools)
        .map(Result::unwrap)
        .collect()
        .await;
    let Some(StreamEvent::Completed(response)) = got.last() else {
        panic!("no Completed: {got:?}")
    };
    let reasoning: String = got
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "Weather needed.");
    let whole = plain()
        .parse_response(
            &answer(json!([{"type": "thinking", "thinking": "Hm."},
                {"type": "text", "text": "Hello"}])),
            &[],
        )
        .unwrap();
    for message in [response.message.clone(), whole.message] {
        let transcript = vec![
            Message::user("Weather?"),
            message,
            Message::tool_result("toolu_1", "15°C", false),
        ];
        let b: Value = serde_json::from_slice(
            &plain()
                .request_body(&Request::new(&transcript, &tools), true)
                .unwrap(),
        )
        .unwrap();
        let blocks = b["messages"][1]["content"].as_array().unwrap();
        assert!(
            blocks.iter().all(|block| block["type"]
                .as_str()
                .is_some_and(|t| t != "thinking" && !t.is_empty())),
            "{blocks:?}"
        );
    }
}

#[tokio::test]
async fn a_chat_is_recorded_with_the_key_hidden_and_replays_offline() {
    let answer = RecordedResponse::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": "Hello!"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 2}})
        .to_string(),
    );
    let live = ReplayServer::with_interactions(vec![exchange(MESSAGES, answer)])
        .await
        .unwrap();
    let recorder = Recorder::new();
    let mut chat = Chat::new(
        Anthropic::new(
            AnthropicConfig::new("claude-haiku-4-5")
                .with_base_url(live.url())
                .with_api_key("sk-ant-secret")
                .with_recorder(recorder.clone()),
        )
        .unwrap(),
    );
    assert_eq!(
        chat.ask("Hi").await.unwrap().text().as_deref(),
        Some("Hello!")
    );
    let recording = recorder.recording("anthropic", "anthropic-messages", "hello");
    let text = serde_json::to_string(&recording).unwrap();
    assert!(!text.contains("sk-ant-secret"));
    assert_eq!(
        recording.interactions[0].request.headers["x-api-key"],
        "<ANTHROPIC_API_KEY>"
    );

    let offline = ReplayServer::start(recording).await.unwrap();
    let mut chat = Chat::new(
        Anthropic::new(
            AnthropicConfig::new("claude-haiku-4-5")
                .with_base_url(offline.url())
                .with_api_key("anything"),
        )
        .unwrap(),
    );
    assert_eq!(
        chat.ask("Hi").await.unwrap().text().as_deref(),
        Some("Hello!")
    );
    assert!(offline.is_done());
}

#[tokio::test]
async fn version_and_beta_headers_go_with_every_request() {
    let answer = RecordedResponse::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1}})
        .to_string(),
    );
    let server = ReplayServer::with_interactions(vec![exchange(MESSAGES, answer)])
        .await
        .unwrap();
    let mut chat = Chat::new(
        Anthropic::new(
            AnthropicConfig::new("claude-haiku-4-5")
                .with_base_url(format!("{}/v1", server.url()))
                .with_api_key("sk-ant-test")
                .with_beta("interleaved-thinking-2025-05-14")
                .with_beta("fine-grained-tool-streaming-2025-05-14"),
        )
        .unwrap(),
    );
    assert_eq!(chat.ask("Hi").await.unwrap().text().as_deref(), Some("Hi"));
    let request = &server.received()[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(
        request.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14")
    );
    assert!(request.header("authorization").is_none());
}

/// A call a code execution run made (a tool with `allowed_callers`) names its `caller`: the
/// call goes back with it, whole and streamed answers alike, so the API can pair it with the
/// run. A call the model made directly (`direct`) goes back as before, without it.
#[tokio::test]
async fn a_calls_caller_goes_back_with_it_unless_the_model_called_directly() {
    let by_code = json!({"type": "code_execution_20250825", "tool_id": "srvtoolu_1"});
    let content = json!([
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution",
         "input": {"code": "weather()"}},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"latitude": "1", "longitude": "2"},
         "caller": by_code},
        {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {"latitude": "3", "longitude": "4"},
         "caller": {"type": "direct"}}
    ]);
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let whole = plain()
        .parse_response(&answer(content.clone()), &tools)
        .unwrap()
        .message;
    let events = [
        json!({"type": "message_start", "message": {"model": "claude-sonnet-4-6", "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": content[0]}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {}, "caller": by_code}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"latitude\": \"1\", \"longitude\": \"2\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "weather", "input": {}, "caller": {"type": "direct"}}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"latitude\": \"3\", \"longitude\": \"4\"}"}}),
        json!({"type": "content_block_stop", "index": 2}),
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
        json!({"type": "message_stop"}),
    ];
    let sse: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let bytes = futures::stream::iter(vec![Ok::<_, ProviderError>(Bytes::from(sse))]);
    let got: Vec<StreamEvent> = plain()
        .stream_events(bytes, &tools)
        .map(Result::unwrap)
        .collect()
        .await;
    let Some(StreamEvent::Completed(streamed)) = got.last() else {
        panic!("no Completed: {got:?}")
    };
    for answered in [whole, streamed.message.clone()] {
        let transcript = vec![
            Message::user("Weather?"),
            answered,
            Message::tool_result("toolu_1", "15°C", false),
            Message::tool_result("toolu_2", "18°C", false),
        ];
        let sent = body(&plain(), &Request::new(&transcript, &tools));
        let blocks = sent["messages"][1]["content"].as_array().unwrap();
        let call = |id: &str| blocks.iter().find(|b| b["id"] == id).unwrap().clone();
        assert_eq!(call("toolu_1")["caller"], by_code, "{blocks:?}");
        assert!(call("toolu_2").get("caller").is_none(), "{blocks:?}");
    }
}

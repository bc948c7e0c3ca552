//! What the Gemini provider writes and reads: the function-calling modes, calls without ids
//! paired with their responses by position, thought signatures kept and sent back, integral
//! floats read into integer parameters, both schema fields, deferred tools, attachments of tool
//! results, usage and blocked prompts, definitions serialized once, recording.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;

use llm_tools_core::chat::Chat;
use llm_tools_core::{
    Attachment, Message, Namespace, Part, ProviderError, ProviderErrorKind, Request, Role, Tool,
    ToolCall, ToolChoice, tool,
};
use llm_tools_providers::gemini::{Gemini, GeminiConfig, SchemaField};
use llm_tools_providers::record::{RecordedResponse, Recorder};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::{BestLanguageToLearn, Weather};
use llm_tools_tests::serving::exchange;
use serde_json::{Value, json};

/// Where `generateContent` requests go.
const GENERATE: &str =
    "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent";

const CRM: Namespace = Namespace::new("crm").description("Customer records");

/// Finds a customer by email
#[tool(namespace = CRM)]
async fn lookup(email: String) -> String {
    format!("customer {email}")
}

/// Counts up to a number
///
/// # Arguments
/// * `n` - Where to stop
#[tool]
async fn count_to(n: u32) -> String {
    (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(" ")
}

/// Looks up the weather for a city when found by tool search
#[tool(defer)]
async fn weather_lookup(city: String) -> String {
    format!("sunny in {city}")
}

/// Tags things
#[tool(schema = serde_json::json!({
    "type": "object",
    "properties": {"tags": {"type": "array"}},
    "required": ["tags"]
}))]
async fn tags(tags: Vec<String>) -> String {
    tags.join(",")
}

fn provider(config: GeminiConfig) -> Gemini {
    Gemini::new(config.with_api_key("k")).unwrap()
}

fn plain() -> Gemini {
    provider(GeminiConfig::new("gemini-2.5-flash"))
}

fn body(provider: &Gemini, request: &Request<'_>) -> Value {
    serde_json::from_slice(&provider.request_body(request).unwrap()).unwrap()
}

fn answer(parts: Value) -> Vec<u8> {
    json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20, "thoughtsTokenCount": 30, "cachedContentTokenCount": 40},
        "modelVersion": "gemini-2.5-flash"})
    .to_string()
    .into_bytes()
}

#[test]
fn function_calling_modes() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(Lookup)];
    let messages = [Message::user("hi")];
    let p = plain();
    let config_of = |choice: ToolChoice| {
        body(&p, &Request::new(&messages, &tools).with_choice(&choice))
            .get("toolConfig")
            .cloned()
    };
    assert_eq!(config_of(ToolChoice::Auto), None);
    assert_eq!(
        config_of(ToolChoice::None),
        Some(json!({"functionCallingConfig": {"mode": "NONE"}}))
    );
    assert_eq!(
        config_of(ToolChoice::Required),
        Some(json!({"functionCallingConfig": {"mode": "ANY"}}))
    );
    assert_eq!(
        config_of(ToolChoice::tool("crm_lookup")),
        Some(
            json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["crm_lookup"]}})
        )
    );
    let unknown = ToolChoice::tool("nope");
    let e = p
        .request_body(&Request::new(&messages, &tools).with_choice(&unknown))
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Request);
    // The parallel switch has no Gemini form: it changes nothing.
    let a = body(&p, &Request::new(&messages, &tools));
    let b = body(
        &p,
        &Request::new(&messages, &tools).with_parallel_tool_calls(Some(false)),
    );
    assert_eq!(a, b);
}

#[test]
fn calls_without_ids_get_ids_and_their_responses_are_paired_by_position() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(Lookup)];
    let p = plain();
    let response = p
        .parse_response(
            &answer(json!([
                {"functionCall": {"name": "weather", "args": {"latitude": "1", "longitude": "2"}}, "thoughtSignature": "c2lnMQ=="},
                {"functionCall": {"name": "crm_lookup", "args": {"email": "ada@example.com"}}}
            ])),
            &tools,
        )
        .unwrap();
    let calls = response.message.tool_calls.clone();
    assert_eq!(calls.len(), 2);
    assert!(!calls[0].id.is_empty() && calls[0].id != calls[1].id);
    assert_eq!(
        (calls[1].name.as_str(), calls[1].namespace.as_deref()),
        ("lookup", Some("crm"))
    );
    // Results in another order than the calls: the responses still follow the calls.
    let transcript = vec![
        Message::user("Two things"),
        response.message,
        Message::tool_result(calls[1].id.clone(), "customer ada", false),
        Message::tool_result(calls[0].id.clone(), "15°C", false),
    ];
    let b = body(&p, &Request::new(&transcript, &tools));
    assert_eq!(
        b["contents"][1]["parts"],
        json!([
            {"functionCall": {"name": "weather", "args": {"latitude": "1", "longitude": "2"}}, "thoughtSignature": "c2lnMQ=="},
            {"functionCall": {"name": "crm_lookup", "args": {"email": "ada@example.com"}}}
        ])
    );
    assert_eq!(
        b["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "weather", "response": {"output": "15°C"}}},
            {"functionResponse": {"name": "crm_lookup", "response": {"output": "customer ada"}}}
        ]})
    );

    // Ids Gemini gave go back on the calls and their responses.
    let response = p
        .parse_response(
            &answer(json!([{"functionCall": {"id": "fc-7", "name": "weather", "args": {}}}])),
            &tools,
        )
        .unwrap();
    assert_eq!(response.message.tool_calls[0].id, "fc-7");
    let transcript = vec![
        Message::user("Weather"),
        response.message,
        Message::tool_result("fc-7", "Service down", true),
    ];
    let b = body(&p, &Request::new(&transcript, &tools));
    assert_eq!(b["contents"][1]["parts"][0]["functionCall"]["id"], "fc-7");
    assert_eq!(
        b["contents"][2]["parts"][0]["functionResponse"],
        json!({"id": "fc-7", "name": "weather", "response": {"error": "Service down"}})
    );
}

#[test]
fn a_round_that_does_not_answer_its_calls_is_an_error_before_any_request() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let calls = vec![
        ToolCall::new("a", "weather", "{}"),
        ToolCall::new("b", "weather", "{}"),
    ];
    let missing = vec![
        Message::user("hi"),
        Message::assistant_with_calls("", calls.clone()),
        Message::tool_result("a", "ok", false),
    ];
    let e = plain()
        .request_body(&Request::new(&missing, &tools))
        .unwrap_err();
    assert!(e.message().contains("`b`"), "{e}");
    let stray = vec![
        Message::user("hi"),
        Message::assistant_with_calls("", calls),
        Message::tool_result("a", "ok", false),
        Message::tool_result("b", "ok", false),
        Message::tool_result("c", "ok", false),
    ];
    let e = plain()
        .request_body(&Request::new(&stray, &tools))
        .unwrap_err();
    assert!(e.message().contains("`c` answers no call"), "{e}");
}

#[test]
fn thought_signatures_on_text_and_thoughts_go_back_in_their_place() {
    let parts = json!([
        {"text": "Thinking about the weather", "thought": true},
        {"text": "Let me check.", "thoughtSignature": "dGV4dA=="},
        {"functionCall": {"name": "weather", "args": {"latitude": "1", "longitude": "2"}}, "thoughtSignature": "Y2FsbA=="}
    ]);
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let p = plain();
    let response = p.parse_response(&answer(parts.clone()), &tools).unwrap();
    assert_eq!(response.message.text(), "Let me check.");
    let id = response.message.tool_calls[0].id.clone();
    let transcript = vec![
        Message::user("Weather?"),
        response.message,
        Message::tool_result(id, "15°C", false),
    ];
    let b = body(&p, &Request::new(&transcript, &tools));
    assert_eq!(b["contents"][1]["parts"], parts);
}

#[test]
fn usage_counts_thoughts_and_cached_input_and_a_blocked_prompt_is_a_refusal() {
    let r = plain()
        .parse_response(&answer(json!([{"text": "Hi"}])), &[])
        .unwrap();
    let usage = r.message.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.reasoning_tokens,
            usage.cached_input_tokens
        ),
        (100, 50, 30, 40)
    );
    assert_eq!(r.finish_reason.as_deref(), Some("STOP"));
    assert_eq!(r.model.as_deref(), Some("gemini-2.5-flash"));

    let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}});
    let r = plain()
        .parse_response(blocked.to_string().as_bytes(), &[])
        .unwrap();
    assert_eq!(
        r.message.refusal.as_deref(),
        Some("the prompt was blocked (SAFETY)")
    );
    assert!(r.message.text().is_empty());
}

#[tokio::test]
async fn integral_floats_reach_integer_parameters() {
    let call = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "count_to", "args": {"n": 3.0}}}]}, "finishReason": "STOP"}]});
    let done = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "1 2 3"}]}, "finishReason": "STOP"}]});
    let server = ReplayServer::with_interactions(vec![
        exchange(GENERATE, RecordedResponse::json(200, call.to_string())),
        exchange(GENERATE, RecordedResponse::json(200, done.to_string())),
    ])
    .await
    .unwrap();
    let mut chat = Chat::new(provider(
        GeminiConfig::new("gemini-2.5-flash").with_base_url(server.url()),
    ));
    chat.with_tools(CountTo).unwrap();
    let outcome = chat.ask("Count to three").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("1 2 3"));
    let call = &chat.messages()[1].tool_calls[0];
    assert_eq!(
        call.arguments, r#"{"n":3.0}"#,
        "the model's text reaches the tool as it was"
    );
    let result = chat
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap();
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(result.text(), "1 2 3");
}

#[test]
fn both_schema_fields_and_their_rejections() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(BestLanguageToLearn)];
    let messages = [Message::user("hi")];
    let json_schema = body(&plain(), &Request::new(&messages, &tools));
    let declarations = &json_schema["tools"][0]["functionDeclarations"];
    assert_eq!(
        declarations[0]["parametersJsonSchema"]["properties"]["latitude"]["type"],
        "string"
    );
    // A tool without parameters declares none.
    assert_eq!(
        declarations[1],
        json!({"name": "best_language_to_learn", "description": "Gets the best language to learn"})
    );
    let legacy =
        provider(GeminiConfig::new("gemini-2.0-flash").with_schema_field(SchemaField::Parameters));
    let b = body(&legacy, &Request::new(&messages, &tools));
    let declaration = &b["tools"][0]["functionDeclarations"][0];
    assert!(declaration.get("parametersJsonSchema").is_none());
    assert_eq!(declaration["parameters"]["type"], "OBJECT");
    assert_eq!(
        declaration["parameters"]["properties"]["latitude"]["type"],
        "STRING"
    );

    // An array without `items` is rejected by `parameters`: an error before any request.
    let bad: Vec<Arc<dyn Tool>> = vec![Arc::new(Tags)];
    let e = legacy
        .request_body(&Request::new(&messages, &bad))
        .unwrap_err();
    assert_eq!(e.kind(), ProviderErrorKind::Request);
    assert!(
        e.message().contains("`tags`") && e.message().contains("items"),
        "{e}"
    );
    assert!(plain().request_body(&Request::new(&messages, &bad)).is_ok());
}

#[test]
fn definitions_are_serialized_once_per_schema_field() {
    let weather: Arc<dyn Tool> = Arc::new(Weather);
    let tools = vec![Arc::clone(&weather)];
    let messages = [Message::user("hi")];
    let b = body(&plain(), &Request::new(&messages, &tools));
    let cached = weather
        .spec()
        .cached_definition("gemini/json-schema", |_| -> Result<_, ProviderError> {
            panic!("the definition was not cached")
        })
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(cached.get()).unwrap(),
        b["tools"][0]["functionDeclarations"][0]
    );
}

#[tokio::test]
async fn deferred_tools_are_found_by_the_chats_search_and_then_declared() {
    let call = |name: &str, args: Value| {
        exchange(
            GENERATE,
            RecordedResponse::json(
                200,
                String::from_utf8(answer(
                    json!([{"functionCall": {"name": name, "args": args}}]),
                ))
                .unwrap(),
            ),
        )
    };
    let server = ReplayServer::with_interactions(vec![
        call("tool_search", json!({"query": "weather lookup"})),
        call("weather_lookup", json!({"city": "Berlin"})),
        exchange(
            GENERATE,
            RecordedResponse::json(
                200,
                String::from_utf8(answer(json!([{"text": "Sunny."}]))).unwrap(),
            ),
        ),
    ])
    .await
    .unwrap();
    let mut chat = Chat::new(provider(
        GeminiConfig::new("gemini-2.5-flash").with_base_url(server.url()),
    ));
    chat.with_tools((Weather, WeatherLookup)).unwrap();
    let outcome = chat.ask("Weather in Berlin?").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Sunny."));

    let declared = |i: usize| -> Vec<String> {
        server.received()[i].body["tools"][0]["functionDeclarations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(declared(0), ["weather", "tool_search"]);
    assert_eq!(declared(1), ["weather", "weather_lookup"]);
    let results: Vec<String> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.text())
        .collect();
    assert!(results[0].contains("weather_lookup"), "{results:?}");
    assert_eq!(results[1], "sunny in Berlin");
}

#[test]
fn a_forced_deferred_tool_is_declared_and_named() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(WeatherLookup)];
    let messages = [Message::user("hi")];
    let forced = ToolChoice::tool("weather_lookup");
    let b = body(
        &plain(),
        &Request::new(&messages, &tools).with_choice(&forced),
    );
    assert_eq!(
        b["tools"][0]["functionDeclarations"][1]["name"],
        "weather_lookup"
    );
    assert_eq!(
        b["toolConfig"]["functionCallingConfig"]["allowedFunctionNames"],
        json!(["weather_lookup"])
    );
}

#[test]
fn attachments_of_tool_results_go_inside_on_gemini_3_and_beside_before() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let png = Attachment::bytes("image/png", vec![137, 80, 78, 71]);
    let txt =
        Attachment::bytes("text/plain", b"Ruby is the best.".to_vec()).with_filename("ruby.txt");
    let transcript = vec![
        Message::user("Map?"),
        Message::assistant_with_calls("", vec![ToolCall::new("a", "weather", "{}")]),
        Message::tool_result_parts(
            "a",
            vec![Part::text("Here:"), png.into(), txt.into()],
            false,
        ),
    ];
    let request = Request::new(&transcript, &tools);
    let inline = json!({"inlineData": {"mimeType": "image/png", "data": "iVBORw=="}});
    let output = "Here:\n<file name='ruby.txt' mime_type='text/plain'>Ruby is the best.</file>";

    let new = body(
        &provider(GeminiConfig::new("gemini-3-pro-preview")),
        &request,
    );
    assert_eq!(
        new["contents"][2]["parts"],
        json!([{"functionResponse": {"name": "weather", "response": {"output": output}, "parts": [inline]}}])
    );
    let old = body(&plain(), &request);
    assert_eq!(
        old["contents"][2]["parts"],
        json!([{"functionResponse": {"name": "weather", "response": {"output": output}}}, inline])
    );
}

#[tokio::test]
async fn a_chat_is_recorded_with_the_key_hidden_and_replays_offline() {
    let hello = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello!"}]}, "finishReason": "STOP"}]});
    let live = ReplayServer::with_interactions(vec![exchange(
        GENERATE,
        RecordedResponse::json(200, hello.to_string()),
    )])
    .await
    .unwrap();
    let recorder = Recorder::new();
    let mut chat = Chat::new(
        Gemini::new(
            GeminiConfig::new("gemini-2.5-flash")
                .with_base_url(live.url())
                .with_api_key("AIza-secret")
                .with_recorder(recorder.clone()),
        )
        .unwrap(),
    );
    assert_eq!(
        chat.ask("Hi").await.unwrap().text().as_deref(),
        Some("Hello!")
    );
    let recording = recorder.recording("gemini", "gemini", "hello");
    assert!(
        !serde_json::to_string(&recording)
            .unwrap()
            .contains("AIza-secret")
    );
    let request = &recording.interactions[0].request;
    assert_eq!(request.headers["x-goog-api-key"], "<GEMINI_API_KEY>");
    assert!(
        request
            .url
            .ends_with("/models/gemini-2.5-flash:generateContent"),
        "{}",
        request.url
    );

    let offline = ReplayServer::start(recording).await.unwrap();
    let mut chat = Chat::new(provider(
        GeminiConfig::new("gemini-2.5-flash").with_base_url(offline.url()),
    ));
    assert_eq!(
        chat.ask("Hi").await.unwrap().text().as_deref(),
        Some("Hello!")
    );
}

/// A prompt Gemini blocks has no candidate, only `promptFeedback.blockReason`: the whole
/// answer and the streamed one read the same, a refusal naming the reason and the finish
/// reason `BLOCKED`.
#[tokio::test]
async fn a_blocked_prompt_reads_the_same_whole_and_streamed() {
    use futures::StreamExt as _;
    use llm_tools_core::{Provider as _, StreamEvent};

    let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 7}, "modelVersion": "gemini-2.5-flash"});
    let stream = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    let server = ReplayServer::with_interactions(vec![
        exchange(GENERATE, RecordedResponse::json(200, blocked.to_string())),
        exchange(
            stream,
            RecordedResponse::sse(format!("data: {blocked}\r\n\r\n")),
        ),
    ])
    .await
    .unwrap();
    let gemini = provider(GeminiConfig::new("gemini-2.5-flash").with_base_url(server.url()));
    let messages = [Message::user("Something unsafe")];
    let whole = gemini.complete(Request::new(&messages, &[])).await.unwrap();
    let mut events = gemini.stream(Request::new(&messages, &[])).await.unwrap();
    let mut streamed = None;
    while let Some(event) = events.next().await {
        if let StreamEvent::Completed(response) = event.unwrap() {
            streamed = Some(*response);
        }
    }
    let streamed = streamed.unwrap();
    for r in [&whole, &streamed] {
        assert_eq!(
            r.message.refusal.as_deref(),
            Some("the prompt was blocked (SAFETY)")
        );
        assert_eq!(r.finish_reason.as_deref(), Some("BLOCKED"));
        assert!(r.message.text().is_empty());
    }
}

/// Metadata of another type than expected (a `null` token count, `null` candidates, search
/// queries that are not a list, a number for a finish reason) loses only itself: the call
/// beside it is kept, whole and streamed alike.
#[tokio::test]
async fn odd_metadata_beside_a_call_loses_only_itself_whole_and_streamed() {
    use futures::StreamExt as _;
    use llm_tools_core::{Provider as _, StreamEvent};

    let call = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": "weather", "args": {"latitude": "52.5", "longitude": "13.4"}}}]},
            "groundingMetadata": {"webSearchQueries": null}}],
        "usageMetadata": {"promptTokenCount": null, "candidatesTokenCount": 9}});
    let end = json!({"candidates": null,
        "usageMetadata": {"promptTokenCount": -1, "candidatesTokenCount": 9}});
    let finish = json!({"candidates": [{"finishReason": 7}], "usageMetadata": "none"});
    let whole = json!({"candidates": [{"content": call["candidates"][0]["content"].clone(),
            "finishReason": "STOP", "groundingMetadata": {"webSearchQueries": "one"}}],
        "usageMetadata": {"promptTokenCount": "12", "candidatesTokenCount": 9}});
    let stream = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";
    let server = ReplayServer::with_interactions(vec![
        exchange(GENERATE, RecordedResponse::json(200, whole.to_string())),
        exchange(
            stream,
            RecordedResponse::sse(format!(
                "data: {call}\r\n\r\ndata: {end}\r\n\r\ndata: {finish}\r\n\r\n"
            )),
        ),
    ])
    .await
    .unwrap();
    let gemini = provider(GeminiConfig::new("gemini-2.5-flash").with_base_url(server.url()));
    let messages = [Message::user("Weather in Berlin?")];
    let whole = gemini.complete(Request::new(&messages, &[])).await.unwrap();
    let mut events = gemini.stream(Request::new(&messages, &[])).await.unwrap();
    let mut streamed = None;
    while let Some(event) = events.next().await {
        if let StreamEvent::Completed(response) = event.unwrap() {
            streamed = Some(*response);
        }
    }
    let streamed = streamed.unwrap();
    for r in [&whole, &streamed] {
        assert_eq!(r.message.tool_calls.len(), 1, "{r:?}");
        assert_eq!(r.message.tool_calls[0].name, "weather");
        assert_eq!(
            serde_json::from_str::<Value>(&r.message.tool_calls[0].arguments).unwrap(),
            json!({"latitude": "52.5", "longitude": "13.4"})
        );
        assert_eq!(r.message.usage.unwrap().output_tokens, 9, "{r:?}");
        assert_eq!(r.message.usage.unwrap().input_tokens, 0, "{r:?}");
    }
    assert_eq!(whole.finish_reason.as_deref(), Some("STOP"));
    assert_eq!(streamed.finish_reason.as_deref(), Some("7"));
}

/// Calls Gemini did not make (another provider's answer, after a switch) carry no thought
/// signature, which Gemini 3 refuses for the calls of the current turn: the first call of such
/// a message goes with the stand-in Google documents for them. Gemini 2.5 takes calls without
/// one; calls with Gemini's own signature keep it.
#[test]
fn calls_gemini_did_not_make_get_the_documented_stand_in_signature_on_gemini_3() {
    let foreign = Message::assistant_with_calls(
        "",
        vec![
            ToolCall::new("toolu_1", "weather", r#"{"city":"Paris"}"#),
            ToolCall::new("toolu_2", "weather", r#"{"city":"Rome"}"#),
        ],
    );
    let mut own = ToolCall::new("c1", "weather", r#"{"city":"Oslo"}"#);
    own.provider_data = Some(json!({"thoughtSignature": "sig-1"}));
    let messages = [
        Message::user("Weather in Paris and Rome?"),
        foreign,
        Message::tool_result("toolu_1", "15°C", false),
        Message::tool_result("toolu_2", "18°C", false),
        Message::user("And Oslo?"),
        Message::assistant_with_calls("", vec![own]),
        Message::tool_result("c1", "5°C", false),
    ];
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let request = Request::new(&messages, &tools);
    let signatures = |model: &str| -> Vec<Value> {
        let b = body(&provider(GeminiConfig::new(model)), &request);
        b["contents"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["parts"].as_array().unwrap().clone())
            .filter(|p| p.get("functionCall").is_some())
            .map(|p| p.get("thoughtSignature").cloned().unwrap_or(Value::Null))
            .collect()
    };
    assert_eq!(
        signatures("gemini-3-flash-preview"),
        [
            json!("skip_thought_signature_validator"),
            Value::Null,
            json!("sig-1")
        ]
    );
    assert_eq!(
        signatures("gemini-2.5-flash"),
        [Value::Null, Value::Null, json!("sig-1")]
    );
}

/// A thought streamed in several parts is kept as one part, signature included, as the whole
/// answer keeps it, and goes back as one.
#[tokio::test]
async fn a_thought_streamed_in_parts_is_kept_as_the_whole_answer_keeps_it() {
    use bytes::Bytes;
    use futures::StreamExt as _;
    use llm_tools_core::StreamEvent;

    let chunk = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        format!("data: {}\r\n\r\n", json!({"candidates": [candidate]}))
    };
    let sse = [
        chunk(json!([{"text": "Weather ", "thought": true}]), None),
        chunk(
            json!([{"text": "first.", "thought": true, "thoughtSignature": "sig-1"}]),
            None,
        ),
        chunk(json!([{"text": "Sunny."}]), Some("STOP")),
    ]
    .concat();
    let whole = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"text": "Weather first.", "thought": true, "thoughtSignature": "sig-1"},
        {"text": "Sunny."}]}, "finishReason": "STOP", "index": 0}]});
    let expected = plain()
        .parse_response(whole.to_string().as_bytes(), &[])
        .unwrap()
        .message;
    let bytes = futures::stream::iter(vec![Ok::<_, ProviderError>(Bytes::from(sse))]);
    let events: Vec<StreamEvent> = plain()
        .stream_events(bytes, &[])
        .map(Result::unwrap)
        .collect()
        .await;
    let Some(StreamEvent::Completed(streamed)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(streamed.message.text(), "Sunny.");
    assert_eq!(
        streamed.message.provider_data.as_ref().map(|d| &d.data),
        expected.provider_data.as_ref().map(|d| &d.data)
    );
}

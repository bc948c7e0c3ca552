//! Anthropic `web_fetch`, Responses `image_generation`, xAI `x_search` and Gemini File Search,
//! from each API reference's formats (no recording of them exists here): each typed tool takes
//! its protocol's form (or is refused, naming the fix, where the protocol lacks it), and an
//! answer that used it, served from a loopback server through the real HTTP client and the chat
//! loop, reports what ran and what it cites and sends the provider's items back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use base64::Engine as _;
use llm_tools_core::chat::{Chat, ChatState};
use llm_tools_core::provider_tools::{ImageGeneration, WebFetch, XSearch};
use llm_tools_core::{Message, Part, ProviderTool, Request};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig, WEB_FETCH_BETA};
use llm_tools_providers::gemini::{Gemini, GeminiConfig, GoogleCredentials};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, RecordedRequest, RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

fn recording(url: &str, bodies: &[Value]) -> Recording {
    let interactions: Vec<Interaction> = bodies
        .iter()
        .map(|b| {
            Interaction::new(
                RecordedRequest::post(url, json!({})),
                RecordedResponse::json(200, b.to_string()),
            )
        })
        .collect();
    Recording::from_json(&json!({ "interactions": interactions }).to_string()).unwrap()
}

#[tokio::test]
async fn anthropic_web_fetch_is_a_beta_tool_whose_blocks_and_citations_go_back() {
    let fetch = WebFetch::default()
        .with_max_uses(2)
        .with_allowed_domains(["ruby-lang.org"])
        .with_citations(true)
        .with_max_content_tokens(50_000);
    let tools = [ProviderTool::WebFetch(fetch)];
    let messages = [Message::user(
        "Summarise https://www.ruby-lang.org/en/downloads/",
    )];
    let request = Request::new(&messages, &[]).with_provider_tools(&tools);

    // Without the beta: refused before sending, naming the fix.
    let plain = Anthropic::new(AnthropicConfig::new("claude-haiku-4-5").with_api_key("k")).unwrap();
    let error = plain.request_body(&request, false).unwrap_err().to_string();
    assert!(error.contains("with_web_fetch()"), "{error}");
    assert!(error.contains(WEB_FETCH_BETA), "{error}");

    // The documented answer: the fetch, its result (a document), text citing it.
    let use_block = json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_fetch",
        "input": {"url": "https://www.ruby-lang.org/en/downloads/"}});
    let result_block = json!({"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_1",
        "content": {"type": "web_fetch_result", "url": "https://www.ruby-lang.org/en/downloads/",
            "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                "data": "The current stable version is 4.0.6."},
                "title": "Download Ruby", "citations": {"enabled": true}},
            "retrieved_at": "2026-08-25T10:30:00Z"}});
    let citation = json!({"type": "char_location", "document_index": 0,
        "document_title": "Download Ruby", "start_char_index": 0, "end_char_index": 36,
        "cited_text": "The current stable version is 4.0.6."});
    let text_block = json!({"type": "text", "text": "Ruby 4.0.6 is the stable version.",
        "citations": [citation]});
    let first = json!({"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude-haiku-4-5", "content": [use_block, result_block, text_block],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 900, "output_tokens": 40,
            "server_tool_use": {"web_fetch_requests": 1}}});
    let second = json!({"id": "msg_2", "type": "message", "role": "assistant",
        "model": "claude-haiku-4-5", "content": [{"type": "text", "text": "OK."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 950, "output_tokens": 2}});
    let server = ReplayServer::start(recording(
        "https://api.anthropic.com/v1/messages",
        &[first, second],
    ))
    .await
    .unwrap();
    let mut chat = Chat::new(
        Anthropic::new(
            AnthropicConfig::new("claude-haiku-4-5")
                .with_base_url(format!("{}/v1", server.url()))
                .with_api_key("k")
                .with_web_fetch()
                .with_retry(RetryPolicy::none()),
        )
        .unwrap(),
    );
    chat.with_provider_tool(tools[0].clone());
    let answer = chat
        .ask("Summarise https://www.ruby-lang.org/en/downloads/")
        .await
        .unwrap()
        .into_message()
        .unwrap();
    assert_eq!(answer.text(), "Ruby 4.0.6 is the stable version.");
    assert_eq!(answer.server_tool_uses[0].name, "web_fetch");
    assert_eq!(
        answer.server_tool_uses[0].input,
        json!({"url": "https://www.ruby-lang.org/en/downloads/"})
    );
    assert_eq!(answer.usage.unwrap().server_tool_requests, 1);
    assert_eq!(answer.citations[0].title.as_deref(), Some("Download Ruby"));
    assert_eq!(
        answer.citations[0].cited_text.as_deref(),
        Some("The current stable version is 4.0.6.")
    );
    let ok = chat.ask("Say OK.").await.unwrap();
    assert_eq!(ok.text().as_deref(), Some("OK."));

    let received = server.received();
    let sent = &received[0];
    assert_eq!(
        sent.body["tools"],
        json!([{"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 2,
            "allowed_domains": ["ruby-lang.org"], "citations": {"enabled": true},
            "max_content_tokens": 50_000}])
    );
    assert!(
        sent.header("anthropic-beta")
            .is_some_and(|b| b.contains(WEB_FETCH_BETA))
    );
    assert_eq!(
        received[1].body["messages"][1]["content"],
        json!([use_block, result_block, text_block])
    );
}

#[tokio::test]
async fn responses_image_generation_gives_image_parts_kept_once_and_sent_back() {
    let image = b"\x89PNG\r\n\x1a\nnot really an image".to_vec();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&image);
    let call = json!({"type": "image_generation_call", "id": "ig_1", "status": "completed",
        "output_format": "png", "revised_prompt": "A red cube on a white table",
        "result": b64});
    let first = json!({"id": "resp_1", "object": "response", "status": "completed",
        "model": "gpt-5.4", "output": [call,
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Here is your cube.", "annotations": []}]}],
        "usage": {"input_tokens": 20, "output_tokens": 10}});
    let second = json!({"id": "resp_2", "object": "response", "status": "completed",
        "model": "gpt-5.4", "output": [{"type": "message", "id": "msg_2", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "OK.", "annotations": []}]}]});
    let server = ReplayServer::start(recording(
        "https://api.openai.com/v1/responses",
        &[first, second],
    ))
    .await
    .unwrap();
    let mut chat = Chat::new(
        OpenAiResponses::new(
            OpenAiConfig::openai("gpt-5.4")
                .with_base_url(server.url())
                .with_api_key("k")
                .with_retry(RetryPolicy::none()),
        )
        .unwrap(),
    );
    chat.with_provider_tool(ProviderTool::ImageGeneration(
        ImageGeneration::default()
            .with_size("1024x1024")
            .with_quality("low")
            .with_output_format("png"),
    ));
    let answer = chat
        .ask("Draw a red cube.")
        .await
        .unwrap()
        .into_message()
        .unwrap();
    assert_eq!(answer.text(), "Here is your cube.");
    let images: Vec<_> = answer
        .content
        .iter()
        .filter_map(Part::as_attachment)
        .collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0].media_type(), "image/png");
    assert_eq!(images[0].filename(), Some("ig_1.png"));
    assert_eq!(images[0].base64().as_deref(), Some(b64.as_str()));
    assert_eq!(answer.server_tool_uses[0].name, "image_generation");
    assert_eq!(
        answer.server_tool_uses[0].input,
        json!("A red cube on a white table")
    );
    // Saved, the image is there once (as the part), and the chat loads again.
    let saved = serde_json::to_string(chat.state()).unwrap();
    assert_eq!(saved.matches(&b64).count(), 1);
    let _: ChatState = serde_json::from_str(&saved).unwrap();

    let ok = chat.ask("Say OK.").await.unwrap();
    assert_eq!(ok.text().as_deref(), Some("OK."));
    let received = server.received();
    assert_eq!(
        received[0].body["tools"],
        json!([{"type": "image_generation", "size": "1024x1024", "quality": "low",
            "output_format": "png"}])
    );
    let input = received[1].body["input"].as_array().unwrap();
    let sent_call = input
        .iter()
        .find(|i| i["type"] == "image_generation_call")
        .unwrap();
    assert_eq!(
        sent_call, &call,
        "the item goes back whole, its result refilled"
    );
    let assistant = input.iter().find(|i| i["role"] == "assistant").unwrap();
    assert_eq!(
        assistant["content"],
        json!([{"type": "output_text", "text": "Here is your cube."}])
    );
}

/// Two image calls, the first failed (no result), the second with its image; and an output
/// item without a type. Sent back, each image call takes its own image (the failed one none),
/// and the typeless item, which the API would refuse in every later request, is left out.
#[tokio::test]
async fn responses_image_calls_take_back_their_own_images_and_typeless_items_are_left_out() {
    let b64 = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG image b");
    let failed = json!({"type": "image_generation_call", "id": "ig_a", "status": "failed"});
    let made = json!({"type": "image_generation_call", "id": "ig_b", "status": "completed",
        "output_format": "png", "result": b64});
    let first = json!({"id": "resp_1", "object": "response", "status": "completed",
        "model": "gpt-5.4", "output": [failed, made, {"id": "x_1", "status": "completed"},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "One of two.", "annotations": []}]}]});
    let second = json!({"id": "resp_2", "object": "response", "status": "completed",
        "model": "gpt-5.4", "output": [{"type": "message", "id": "msg_2", "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "OK.", "annotations": []}]}]});
    let server = ReplayServer::start(recording(
        "https://api.openai.com/v1/responses",
        &[first, second],
    ))
    .await
    .unwrap();
    let mut chat = Chat::new(
        OpenAiResponses::new(
            OpenAiConfig::openai("gpt-5.4")
                .with_base_url(server.url())
                .with_api_key("k")
                .with_retry(RetryPolicy::none()),
        )
        .unwrap(),
    );
    chat.with_provider_tool(ProviderTool::ImageGeneration(ImageGeneration::default()));
    let answer = chat.ask("Draw two.").await.unwrap();
    assert_eq!(answer.text().as_deref(), Some("One of two."));
    let ok = chat.ask("Say OK.").await.unwrap();
    assert_eq!(ok.text().as_deref(), Some("OK."));
    let received = server.received();
    let input = received[1].body["input"].as_array().unwrap();
    let calls: Vec<&Value> = input
        .iter()
        .filter(|i| i["type"] == "image_generation_call")
        .collect();
    assert_eq!(
        calls,
        [&failed, &made],
        "each call with its own image, or none"
    );
    assert!(
        input
            .iter()
            .all(|i| i["type"].as_str().is_some_and(|t| !t.is_empty()) || i.get("role").is_some()),
        "no item without a type goes back: {input:?}"
    );
}

#[tokio::test]
async fn xai_x_search_takes_its_form_on_xai_only_and_its_citations_come_back() {
    let search = XSearch::default()
        .with_allowed_handles(["rustlang"])
        .with_from_date("2026-01-01")
        .with_to_date("2026-06-30");
    let tools = [ProviderTool::XSearch(search)];
    let messages = [Message::user("What did @rustlang post about 1.95?")];
    let request = Request::new(&messages, &[]).with_provider_tools(&tools);

    let openai = OpenAiResponses::new(OpenAiConfig::openai("gpt-5.4").with_api_key("k")).unwrap();
    let error = openai
        .request_body(&request, false)
        .unwrap_err()
        .to_string();
    assert!(error.contains("no X search tool"), "{error}");
    assert!(error.contains("OpenAiConfig::xai"), "{error}");

    let answer = json!({"id": "resp_1", "object": "response", "status": "completed",
        "model": "grok-4.3", "output": [{"type": "message", "id": "msg_1", "role": "assistant",
            "status": "completed", "content": [{"type": "output_text",
                "text": "Rust 1.95 is out [[1]](https://x.com/rustlang/status/1).",
                "annotations": [{"type": "url_citation", "url": "https://x.com/rustlang/status/1",
                    "title": "1", "start_index": 19, "end_index": 56}]}]}],
        "usage": {"input_tokens": 30, "output_tokens": 12, "num_server_side_tools_used": 1}});
    let server = ReplayServer::start(recording("https://api.x.ai/v1/responses", &[answer]))
        .await
        .unwrap();
    let mut chat = Chat::new(
        OpenAiResponses::new(
            OpenAiConfig::xai("grok-4.3")
                .with_base_url(server.url())
                .with_api_key("k")
                .with_retry(RetryPolicy::none()),
        )
        .unwrap(),
    );
    chat.with_provider_tool(tools[0].clone());
    let m = chat
        .ask("What did @rustlang post about 1.95?")
        .await
        .unwrap()
        .into_message()
        .unwrap();
    assert_eq!(
        m.citations[0].url.as_deref(),
        Some("https://x.com/rustlang/status/1")
    );
    assert_eq!(
        server.received()[0].body["tools"],
        json!([{"type": "x_search", "allowed_x_handles": ["rustlang"],
            "from_date": "2026-01-01", "to_date": "2026-06-30"}])
    );
}

#[tokio::test]
async fn gemini_file_search_reads_the_stores_and_cites_the_passages() {
    let tools = [ProviderTool::FileSearch {
        vector_store_ids: vec!["fileSearchStores/handbook-1".into()],
        max_results: Some(5),
    }];
    let messages = [Message::user("How many leave days do I get?")];
    let request = Request::new(&messages, &[]).with_provider_tools(&tools);

    // Vertex AI has no File Search stores.
    let vertex = Gemini::new(
        GeminiConfig::vertex("proj-1", "us-central1", "gemini-3-flash-preview")
            .with_google_credentials(GoogleCredentials::refresh_token("c", "s", "r")),
    )
    .unwrap();
    let error = vertex.request_body(&request).unwrap_err().to_string();
    assert!(error.contains("no file search tool"), "{error}");

    let answer = json!({"candidates": [{"content": {"role": "model",
            "parts": [{"text": "You get 30 leave days a year."}]},
        "finishReason": "STOP",
        "groundingMetadata": {"groundingChunks": [{"retrievedContext": {
            "title": "handbook.pdf", "text": "Every employee gets 30 days of paid leave a year.",
            "fileSearchStore": "fileSearchStores/handbook-1"}}],
            "groundingSupports": [{"segment": {"startIndex": 0, "endIndex": 29,
                "text": "You get 30 leave days a year."}, "groundingChunkIndices": [0]}]}}],
        "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 9}});
    let server = ReplayServer::start(recording(
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-flash-preview:generateContent",
        &[answer],
    ))
    .await
    .unwrap();
    let mut chat = Chat::new(
        Gemini::new(
            GeminiConfig::new("gemini-3-flash-preview")
                .with_base_url(format!("{}/v1beta", server.url()))
                .with_api_key("k")
                .with_retry(RetryPolicy::none()),
        )
        .unwrap(),
    );
    chat.with_provider_tool(tools[0].clone());
    let m = chat
        .ask("How many leave days do I get?")
        .await
        .unwrap()
        .into_message()
        .unwrap();
    assert_eq!(m.text(), "You get 30 leave days a year.");
    assert_eq!(m.server_tool_uses[0].name, "file_search");
    assert_eq!(
        m.server_tool_uses[0].input,
        json!({"stores": ["fileSearchStores/handbook-1"]})
    );
    assert_eq!(m.citations[0].title.as_deref(), Some("handbook.pdf"));
    assert_eq!(
        m.citations[0].cited_text.as_deref(),
        Some("Every employee gets 30 days of paid leave a year.")
    );
    assert_eq!(
        server.received()[0].body["tools"],
        json!([{"file_search": {"file_search_store_names": ["fileSearchStores/handbook-1"],
            "top_k": 5}}])
    );
}

#[test]
fn the_new_tools_are_part_of_the_saved_state() {
    use llm_tools_core::testing::ScriptedProvider;
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_provider_tool(ProviderTool::WebFetch(WebFetch::default().with_max_uses(1)))
        .with_provider_tool(ProviderTool::ImageGeneration(
            ImageGeneration::default().with_size("auto"),
        ))
        .with_provider_tool(ProviderTool::XSearch(
            XSearch::default().with_excluded_handles(["spam"]),
        ));
    let saved = serde_json::to_string(chat.state()).unwrap();
    let state: ChatState = serde_json::from_str(&saved).unwrap();
    let restored = Chat::from_state(ScriptedProvider::new(), state).unwrap();
    assert_eq!(restored.provider_tools(), chat.provider_tools());
}

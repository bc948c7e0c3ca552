//! Every provider-tool recording (`tests/fixtures/recorded/provider-tools`: web search on
//! Responses for xAI and DeepSeek, on Anthropic, on Gemini as Google Search grounding, on
//! OpenRouter's Chat Completions; Anthropic's code execution) replayed from a loopback HTTP
//! server through the real provider and the real chat loop: each request offers the recorded
//! provider tool in the recorded form, each answer's text comes out as recorded with the
//! searches it ran and the sources it cites, and a second turn sends the first turn's server
//! items back so the conversation continues.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::Path;

use llm_tools_core::chat::Chat;
use llm_tools_core::{Message, ProviderTool, WebSearch};
use llm_tools_providers::record::{Interaction, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::{chat_replay, recorded_provider};
use serde_json::Value;

/// The provider tools of a recorded request, as `(type, name)` pairs (Gemini: the key).
fn offered(protocol: &str, body: &Value) -> Vec<(String, String)> {
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    if protocol == "bedrock-converse" {
        return body["toolConfig"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t.get("systemTool"))
            .map(|s| ("systemTool".to_owned(), str_of(s, "name")))
            .collect();
    }
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| match protocol {
            "gemini" => t
                .as_object()
                .and_then(|o| o.keys().find(|k| *k != "functionDeclarations"))
                .map(|k| (k.clone(), String::new())),
            _ if str_of(t, "type") == "function" => None,
            _ => Some((str_of(t, "type"), str_of(t, "name"))),
        })
        .collect()
}

/// The typed provider tool the recording's tool stands for.
fn typed(kind: &str) -> ProviderTool {
    if kind == "systemTool" {
        ProviderTool::WebSearch(WebSearch::default())
    } else if kind.starts_with("code_execution") {
        ProviderTool::CodeExecution
    } else {
        assert!(
            kind.contains("web_search") || kind == "google_search",
            "no typed tool for {kind}"
        );
        ProviderTool::WebSearch(WebSearch::default())
    }
}

/// The recorded answer: its text, whether it shows a server tool's use, whether it cites.
fn recorded_answer(protocol: &str, interaction: &Interaction) -> (String, bool, bool) {
    if protocol == "bedrock-converse" {
        return bedrock_answer(interaction);
    }
    let body: Value = serde_json::from_str(interaction.response.body.trim()).unwrap();
    let texts = |parts: &Value| -> String {
        parts
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["thought"] != true)
            .filter_map(|p| p["text"].as_str())
            .collect()
    };
    match protocol {
        "openai-responses" => {
            let output = body["output"].as_array().unwrap();
            let messages = output.iter().filter(|i| i["type"] == "message");
            let text = messages.clone().map(|i| texts(&i["content"])).collect();
            let used = output.iter().any(|i| i["type"] == "web_search_call");
            let cites = messages
                .flat_map(|i| i["content"].as_array().unwrap())
                .any(|p| {
                    p["annotations"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|a| a["type"] == "url_citation"))
                });
            (text, used, cites)
        }
        "anthropic-messages" => {
            let content = body["content"].as_array().unwrap();
            let used = content.iter().any(|b| b["type"] == "server_tool_use");
            let cites = content
                .iter()
                .any(|b| b["citations"].as_array().is_some_and(|c| !c.is_empty()));
            (texts(&body["content"]), used, cites)
        }
        "gemini" => {
            let candidate = &body["candidates"][0];
            let grounding = &candidate["groundingMetadata"];
            let used = grounding["webSearchQueries"]
                .as_array()
                .is_some_and(|q| !q.is_empty());
            let cites = grounding["groundingChunks"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["web"]["uri"].is_string()));
            (texts(&candidate["content"]["parts"]), used, cites)
        }
        "openai-chat" => {
            let message = &body["choices"][0]["message"];
            let cites = message["annotations"]
                .as_array()
                .is_some_and(|a| !a.is_empty());
            (
                message["content"].as_str().unwrap_or_default().to_owned(),
                false,
                cites,
            )
        }
        other => panic!("no provider tools for {other}"),
    }
}

/// The provider tool requests the recorded usage reports: Anthropic's `server_tool_use`
/// counts summed, xAI's `num_server_side_tools_used`.
fn recorded_server_requests(interaction: &Interaction) -> Option<u64> {
    let body: Value = serde_json::from_str(interaction.response.body.trim()).ok()?;
    let usage = &body["usage"];
    if let Some(counts) = usage["server_tool_use"].as_object() {
        return Some(counts.values().filter_map(Value::as_u64).sum());
    }
    usage["num_server_side_tools_used"].as_u64()
}

/// A Bedrock answer, whole or as ConverseStream's AWS event-stream events.
fn bedrock_answer(interaction: &Interaction) -> (String, bool, bool) {
    use futures::StreamExt as _;
    use llm_tools_providers::framing::{self, Framing};
    let body = interaction.response.body_bytes();
    let blocks: Vec<Value> = if body.first() == Some(&b'{') {
        let v: Value = serde_json::from_slice(&body).unwrap();
        v["output"]["message"]["content"]
            .as_array()
            .unwrap()
            .clone()
    } else {
        let frames = framing::frames(
            Framing::AwsEventStream,
            "recording",
            futures::stream::iter([Ok(bytes::Bytes::from(body))]),
        );
        futures::executor::block_on(frames.collect::<Vec<_>>())
            .into_iter()
            .map(|f| serde_json::from_str::<Value>(&f.unwrap().data).unwrap())
            .flat_map(|e| {
                // Starts and deltas, as blocks of the same shape as a whole answer's.
                let start = e.get("start").cloned();
                let delta = e.get("delta").cloned();
                start.into_iter().chain(delta)
            })
            .collect()
    };
    let text = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
    let used = blocks
        .iter()
        .any(|b| b["toolUse"]["type"] == "server_tool_use");
    let cites = blocks
        .iter()
        .any(|b| b.get("citationsContent").is_some() || b.get("citation").is_some());
    (text, used, cites)
}

fn question(protocol: &str, body: &Value) -> String {
    let canonical = match protocol {
        "openai-responses" | "openai-chat" => llm_tools_providers::openai::canonical_request(body),
        "anthropic-messages" => llm_tools_providers::anthropic::canonical_request(body),
        "gemini" => llm_tools_providers::gemini::canonical_request(body),
        "bedrock-converse" => llm_tools_providers::bedrock::canonical_request(body),
        other => panic!("no provider tools for {other}"),
    };
    chat_replay::asks(&canonical).pop().unwrap()
}

/// Whether `request` (the next turn's body) sends back the server items of `answer`.
fn sends_back(protocol: &str, answer: &Message, request: &Value) -> bool {
    let ids: Vec<&str> = answer
        .server_tool_uses
        .iter()
        .filter_map(|u| u.id.as_deref())
        .collect();
    let sent = request.to_string();
    !ids.is_empty()
        && ids.iter().all(|id| sent.contains(id))
        && match protocol {
            "openai-responses" => request["input"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["type"] == "web_search_call"),
            "anthropic-messages" => request["messages"][1]["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b["type"] == "web_search_tool_result"),
            // Each server tool use goes back as the assistant's own `toolUse` block, ahead of
            // the `toolResult` that answers it (a result without its use is refused).
            "bedrock-converse" => {
                let blocks = request["messages"][1]["content"].as_array().unwrap();
                let at =
                    |key: &str, id: &str| blocks.iter().position(|b| b[key]["toolUseId"] == id);
                ids.iter()
                    .all(|id| match (at("toolUse", id), at("toolResult", id)) {
                        (Some(used), Some(answered)) => used < answered,
                        (used, None) => used.is_some(),
                        (None, Some(_)) => false,
                    })
            }
            _ => true,
        }
}

/// A streamed turn: the text deltas must add up to the answer.
async fn streamed_turn(chat: &mut Chat, ask: String) -> Result<Message, String> {
    use futures::StreamExt as _;
    use llm_tools_core::StreamEvent;
    use llm_tools_core::chat::ChatEvent;
    let mut stream = chat.ask_stream(ask);
    let mut text = String::new();
    let mut done = None;
    while let Some(event) = stream.next().await {
        match event.map_err(|e| e.to_string())? {
            ChatEvent::Model(StreamEvent::TextDelta(t)) => text.push_str(&t),
            ChatEvent::Done(message) => done = Some(message),
            _ => {}
        }
    }
    let answer = done.ok_or("the stream ended without an answer")?;
    if answer.text() != text {
        return Err(format!("streamed {text:?}, answered {:?}", answer.text()));
    }
    Ok(answer)
}

async fn replay(path: &Path) -> Result<(), String> {
    let recording = Recording::load(path).map_err(|e| e.to_string())?;
    let protocol = recording.protocol.clone();
    let server = ReplayServer::start(recording.clone())
        .await
        .map_err(|e| e.to_string())?;
    let mut chat = Chat::new(recorded_provider::for_recording(&recording, &server)?);
    let tools = offered(&protocol, &recording.interactions[0].request.body);
    if tools.is_empty() {
        return Err("the recording offers no provider tool".into());
    }
    for (kind, _) in &tools {
        chat.with_provider_tool(typed(kind));
    }
    let mut answers = Vec::new();
    for turn in &recording.interactions {
        let ask = question(&protocol, &turn.request.body);
        let streamed =
            turn.request.url.ends_with("converse-stream") || turn.request.body["stream"] == true;
        let answer = if streamed {
            streamed_turn(&mut chat, ask).await?
        } else {
            let outcome = chat.ask(ask).await.map_err(|e| e.to_string())?;
            outcome.into_message().ok_or("the turn paused")?
        };
        let (text, used, cites) = recorded_answer(&protocol, turn);
        if answer.text() != text {
            return Err(format!("answer {:?}, recorded {text:?}", answer.text()));
        }
        if used && answer.server_tool_uses.is_empty() {
            return Err("the answer lost the server tool's use".into());
        }
        if cites && answer.citations.is_empty() && protocol != "openai-chat" {
            return Err("the answer lost its citations".into());
        }
        let reported = recorded_server_requests(turn);
        let counted = answer.usage.map_or(0, |u| u.server_tool_requests);
        if reported.is_some_and(|n| n != counted) {
            return Err(format!(
                "usage counts {counted} provider tool requests, the provider reported {reported:?}"
            ));
        }
        answers.push(answer);
    }
    let received = server.received();
    for (i, (request, turn)) in received.iter().zip(&recording.interactions).enumerate() {
        let sent = offered(&protocol, &request.body);
        if sent != tools {
            return Err(format!("request {i} offers {sent:?}, recorded {tools:?}"));
        }
        if i > 0 && !sends_back(&protocol, &answers[i - 1], &request.body) {
            return Err(format!(
                "request {i} does not send back the server items of answer {}",
                i - 1
            ));
        }
        let _ = turn;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_tool_recording_replays_through_the_chat_loop() {
    chat_replay::replay_every("provider-tools", 10, async |path| replay(path).await).await;
}

/// What each protocol does with the typed tools it has, has not, and raw definitions.
mod mapping {
    use llm_tools_core::{Message, ProviderTool, RemoteMcp, Request, WebSearch};
    use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
    use llm_tools_providers::cohere::{Cohere, CohereConfig};
    use llm_tools_providers::gemini::{Gemini, GeminiConfig};
    use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
    use serde_json::{Value, json};

    fn tools_of(bytes: Vec<u8>) -> Value {
        serde_json::from_slice::<Value>(&bytes).unwrap()["tools"].clone()
    }

    #[test]
    fn typed_tools_take_each_protocols_form_with_their_options() {
        let messages = [Message::user("Latest Ruby?")];
        let tools = [
            ProviderTool::WebSearch(
                WebSearch::default()
                    .with_max_uses(2)
                    .with_allowed_domains(["ruby-lang.org"])
                    .with_blocked_domains(["example.com"]),
            ),
            ProviderTool::CodeExecution,
        ];
        let request = Request::new(&messages, &[]).with_provider_tools(&tools);

        let anthropic =
            Anthropic::new(AnthropicConfig::new("claude-haiku-4-5").with_api_key("k")).unwrap();
        assert_eq!(
            tools_of(anthropic.request_body(&request, false).unwrap()),
            json!([
                {"type": "web_search_20260318", "name": "web_search", "max_uses": 2,
                 "allowed_domains": ["ruby-lang.org"], "blocked_domains": ["example.com"]},
                {"type": "code_execution_20260521", "name": "code_execution"}
            ])
        );
        let responses =
            OpenAiResponses::new(OpenAiConfig::openai("gpt-5.4").with_api_key("k")).unwrap();
        assert_eq!(
            tools_of(responses.request_body(&request, false).unwrap()),
            json!([
                {"type": "web_search", "filters": {"allowed_domains": ["ruby-lang.org"]}},
                {"type": "code_interpreter", "container": {"type": "auto"}}
            ])
        );
        let gemini =
            Gemini::new(GeminiConfig::new("gemini-3-flash-preview").with_api_key("k")).unwrap();
        assert_eq!(
            tools_of(gemini.request_body(&request).unwrap()),
            json!([{"google_search": {}}, {"code_execution": {}}])
        );
    }

    #[test]
    fn a_tool_the_protocol_lacks_is_refused_before_sending_and_names_both() {
        let messages = [Message::user("Read https://example.com")];
        let tools = [ProviderTool::UrlContext];
        let request = Request::new(&messages, &[]).with_provider_tools(&tools);
        let anthropic =
            Anthropic::new(AnthropicConfig::new("claude-haiku-4-5").with_api_key("k")).unwrap();
        let error = anthropic
            .request_body(&request, false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("no URL context tool"), "{error}");
        assert!(error.contains("ProviderTool::raw"), "{error}");

        let chat = OpenAiChat::new(OpenAiConfig::openai("gpt-5.4").with_api_key("k")).unwrap();
        let web = [ProviderTool::WebSearch(WebSearch::default())];
        let request = Request::new(&messages, &[]).with_provider_tools(&web);
        assert!(chat.request_body(&request, false).is_err());
        let cohere = Cohere::new(CohereConfig::new("command-a-03-2025").with_api_key("k")).unwrap();
        assert!(cohere.request_body(&request, false).is_err());
    }

    /// Remote MCP servers, from each API reference's format (no recording of them exists
    /// here): the server in each protocol's form, its token from the provider's config.
    #[test]
    fn a_remote_mcp_server_takes_each_protocols_form_with_its_token() {
        let messages = [Message::user("How does tokio schedule tasks?")];
        let wiki = RemoteMcp::new("deepwiki", "https://mcp.deepwiki.com/mcp")
            .with_description("Documentation of public repositories")
            .with_allowed_tools(["ask_question"]);
        let tools = [ProviderTool::RemoteMcp(wiki)];
        let request = Request::new(&messages, &[]).with_provider_tools(&tools);
        let body = |bytes: Vec<u8>| serde_json::from_slice::<Value>(&bytes).unwrap();

        let config = OpenAiConfig::openai("gpt-5.4")
            .with_api_key("k")
            .with_mcp_token("deepwiki", "mcp-secret-1");
        assert!(!format!("{config:?}").contains("mcp-secret-1"));
        let responses = OpenAiResponses::new(config).unwrap();
        assert_eq!(
            tools_of(responses.request_body(&request, false).unwrap()),
            json!([{"type": "mcp", "server_label": "deepwiki",
                "server_url": "https://mcp.deepwiki.com/mcp", "require_approval": "never",
                "server_description": "Documentation of public repositories",
                "allowed_tools": ["ask_question"], "authorization": "mcp-secret-1"}])
        );

        let config = AnthropicConfig::new("claude-haiku-4-5")
            .with_api_key("k")
            .with_mcp_token("deepwiki", "mcp-secret-2");
        let without_beta = Anthropic::new(config.clone()).unwrap();
        let error = without_beta
            .request_body(&request, false)
            .unwrap_err()
            .to_string();
        assert!(error.contains("with_mcp_connector()"), "{error}");
        let anthropic = Anthropic::new(config.with_mcp_connector()).unwrap();
        let b = body(anthropic.request_body(&request, false).unwrap());
        assert_eq!(
            b["mcp_servers"],
            json!([{"type": "url", "url": "https://mcp.deepwiki.com/mcp", "name": "deepwiki",
                "authorization_token": "mcp-secret-2"}])
        );
        assert_eq!(
            b["tools"],
            json!([{"type": "mcp_toolset", "mcp_server_name": "deepwiki",
                "default_config": {"enabled": false},
                "configs": {"ask_question": {"enabled": true}}}])
        );

        let gemini = Gemini::new(
            GeminiConfig::new("gemini-3-flash-preview")
                .with_api_key("k")
                .with_mcp_token("deepwiki", "mcp-secret-3"),
        )
        .unwrap();
        assert_eq!(
            tools_of(gemini.request_body(&request).unwrap()),
            json!([{"mcpServers": [{"name": "deepwiki", "streamableHttpTransport": {
                "url": "https://mcp.deepwiki.com/mcp",
                "headers": {"Authorization": "Bearer mcp-secret-3"}}}]}])
        );

        // Chat Completions has no remote MCP; xAI's and DeepSeek's are on their Responses API.
        let xai = OpenAiChat::new(OpenAiConfig::xai("grok-4.3").with_api_key("k")).unwrap();
        let error = xai.request_body(&request, false).unwrap_err().to_string();
        assert!(error.contains("no remote MCP tool"), "{error}");
        assert!(error.contains("OpenAiConfig::xai"), "{error}");
    }

    #[test]
    fn remote_mcp_calls_in_an_answer_are_reported_and_sent_back() {
        let responses =
            OpenAiResponses::new(OpenAiConfig::openai("gpt-5.4").with_api_key("k")).unwrap();
        let list = json!({"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "deepwiki",
            "tools": [{"name": "ask_question", "input_schema": {"type": "object"}}]});
        let call = json!({"type": "mcp_call", "id": "mcp_1", "server_label": "deepwiki",
            "name": "ask_question", "arguments": "{\"question\":\"scheduler\"}",
            "output": "Work stealing.", "status": "completed"});
        let answer = json!({"id": "resp_1", "status": "completed", "output": [list, call,
            {"type": "message", "id": "msg_1", "role": "assistant",
             "content": [{"type": "output_text", "text": "Tokio steals work.", "annotations": []}]}],
            "usage": {"input_tokens": 10, "output_tokens": 4}});
        let m = responses
            .parse_response(answer.to_string().as_bytes(), &[])
            .unwrap()
            .message;
        assert_eq!(m.text(), "Tokio steals work.");
        let used = m.server_tool_uses.iter().find(|u| u.name == "mcp").unwrap();
        assert_eq!(
            used.input,
            json!({"server": "deepwiki", "tool": "ask_question",
                "arguments": {"question": "scheduler"}})
        );
        let history = [
            Message::user("How?"),
            m.clone(),
            Message::user("And tasks?"),
        ];
        let b: Value = serde_json::from_slice(
            &responses
                .request_body(&Request::new(&history, &[]), false)
                .unwrap(),
        )
        .unwrap();
        let kinds: Vec<&str> = b["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["type"].as_str())
            .collect();
        assert!(
            kinds.contains(&"mcp_list_tools") && kinds.contains(&"mcp_call"),
            "{kinds:?}"
        );

        let anthropic = Anthropic::new(
            AnthropicConfig::new("claude-haiku-4-5")
                .with_api_key("k")
                .with_mcp_connector(),
        )
        .unwrap();
        let use_block = json!({"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "ask_question",
            "server_name": "deepwiki", "input": {"question": "scheduler"}});
        let result_block = json!({"type": "mcp_tool_result", "tool_use_id": "mcptoolu_1",
            "is_error": false, "content": [{"type": "text", "text": "Work stealing."}]});
        let answer = json!({"id": "msg_1", "type": "message", "role": "assistant",
            "content": [use_block, result_block, {"type": "text", "text": "Tokio steals work."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 4}});
        let m = anthropic
            .parse_response(answer.to_string().as_bytes(), &[])
            .unwrap()
            .message;
        assert_eq!(m.text(), "Tokio steals work.");
        assert_eq!(
            m.server_tool_uses[0].input,
            json!({"server": "deepwiki", "tool": "ask_question",
                "arguments": {"question": "scheduler"}})
        );
        let history = [
            Message::user("How?"),
            m.clone(),
            Message::user("And tasks?"),
        ];
        let b: Value = serde_json::from_slice(
            &anthropic
                .request_body(&Request::new(&history, &[]), false)
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            b["messages"][1]["content"],
            json!([use_block, result_block, {"type": "text", "text": "Tokio steals work."}])
        );
    }

    #[test]
    fn a_raw_definition_goes_only_to_its_protocol() {
        let messages = [Message::user("Fetch it")];
        let fetch = json!({"type": "web_fetch_20250910", "name": "web_fetch"});
        let tools = [ProviderTool::raw("anthropic", fetch.clone())];
        let request = Request::new(&messages, &[]).with_provider_tools(&tools);
        let anthropic =
            Anthropic::new(AnthropicConfig::new("claude-haiku-4-5").with_api_key("k")).unwrap();
        assert_eq!(
            tools_of(anthropic.request_body(&request, false).unwrap()),
            json!([fetch])
        );
        let gemini =
            Gemini::new(GeminiConfig::new("gemini-3-flash-preview").with_api_key("k")).unwrap();
        assert_eq!(
            tools_of(gemini.request_body(&request).unwrap()),
            Value::Null
        );
    }
}

#[test]
fn provider_tools_are_part_of_the_saved_state() {
    use llm_tools_core::chat::ChatState;
    use llm_tools_core::testing::ScriptedProvider;
    let mut chat = Chat::new(ScriptedProvider::new());
    chat.with_provider_tool(ProviderTool::FileSearch {
        vector_store_ids: vec!["vs_1".into()],
        max_results: Some(4),
    });
    let saved = serde_json::to_string(chat.state()).unwrap();
    let state: ChatState = serde_json::from_str(&saved).unwrap();
    let restored = Chat::from_state(ScriptedProvider::new(), state).unwrap();
    assert_eq!(restored.provider_tools(), chat.provider_tools());
}

/// Bad input from the provider's side: a server tool's error block and an item kind nobody
/// knows are kept, sent back as they came, and never fatal.
mod bad_input {
    use llm_tools_core::chat::Chat;
    use llm_tools_core::{ProviderTool, WebSearch};
    use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
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
                    RecordedResponse::new(200, "application/json", b.to_string()),
                )
            })
            .collect();
        Recording::from_json(&json!({ "interactions": interactions }).to_string()).unwrap()
    }

    #[tokio::test]
    async fn a_server_tool_error_block_is_kept_and_sent_back() {
        let error_block = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
            "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}});
        let first = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "ruby"}},
                error_block,
                {"type": "text", "text": "The search failed; from memory, Ruby 4.0."}
            ],
            "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 5}});
        let second = json!({"id": "msg_2", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": "OK."}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 1}});
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
                    .with_retry(RetryPolicy::none()),
            )
            .unwrap(),
        );
        chat.with_provider_tool(ProviderTool::WebSearch(WebSearch::default()));
        let answer = chat.ask("Latest Ruby?").await.unwrap();
        assert_eq!(
            answer.text().as_deref(),
            Some("The search failed; from memory, Ruby 4.0.")
        );
        assert_eq!(answer.message().unwrap().server_tool_uses.len(), 1);
        let ok = chat.ask("Say OK").await.unwrap();
        assert_eq!(ok.text().as_deref(), Some("OK."));
        let sent = &server.received()[1].body["messages"][1]["content"];
        assert_eq!(sent[1], error_block, "{sent}");
    }

    #[tokio::test]
    async fn an_unknown_responses_item_is_kept_sent_back_and_not_fatal() {
        let unknown = json!({"type": "hologram_call", "id": "hc_1", "status": "completed",
            "arguments": "{\"depth\":3}", "novel": {"nested": [1, 2]}});
        let first = json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5.4",
            "output": [unknown, {"type": "message", "id": "msg_1", "role": "assistant",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}]});
        let second = json!({"id": "resp_2", "object": "response", "status": "completed", "model": "gpt-5.4",
            "output": [{"type": "message", "id": "msg_2", "role": "assistant",
                "content": [{"type": "output_text", "text": "Again.", "annotations": []}]}]});
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
        let answer = chat.ask("Go").await.unwrap();
        assert_eq!(answer.text().as_deref(), Some("Done."));
        let uses = &answer.message().unwrap().server_tool_uses;
        assert_eq!(uses[0].name, "hologram");
        let again = chat.ask("Again").await.unwrap();
        assert_eq!(again.text().as_deref(), Some("Again."));
        let input = server.received()[1].body["input"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(input[1], unknown);
        assert_eq!(input[2]["role"], "assistant");
    }
}

/// Citations and grounding that arrive in a stream, from the documented event formats.
mod streamed {
    use futures::StreamExt as _;
    use llm_tools_core::chat::{Chat, ChatEvent};
    use llm_tools_core::{Message, Provider};
    use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
    use llm_tools_providers::gemini::{Gemini, GeminiConfig};
    use llm_tools_providers::http::RetryPolicy;
    use llm_tools_providers::record::{Interaction, RecordedRequest, RecordedResponse, Recording};
    use llm_tools_providers::replay::ReplayServer;
    use serde_json::{Value, json};

    fn sse(events: &[(&str, Value)]) -> String {
        events
            .iter()
            .map(|(event, data)| {
                if event.is_empty() {
                    format!("data: {data}\n\n")
                } else {
                    format!("event: {event}\ndata: {data}\n\n")
                }
            })
            .collect()
    }

    async fn streamed_answer(provider: impl Provider) -> Message {
        let mut chat = Chat::new(provider);
        let mut stream = chat.ask_stream("Latest Ruby?");
        let mut answer = None;
        while let Some(event) = stream.next().await {
            if let ChatEvent::Done(m) = event.unwrap() {
                answer = Some(m);
            }
        }
        answer.unwrap()
    }

    fn server_for(url: &str, body: String) -> Recording {
        let interaction = Interaction::new(
            RecordedRequest::post(url, json!({"stream": true})),
            RecordedResponse::new(200, "text/event-stream", body),
        );
        Recording::from_json(&json!({ "interactions": [interaction] }).to_string()).unwrap()
    }

    #[tokio::test]
    async fn anthropic_citations_deltas_become_citations() {
        let body = sse(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "model": "claude-haiku-4-5", "content": [], "usage": {"input_tokens": 9, "output_tokens": 0}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": "", "citations": []}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta",
                "citation": {"type": "web_search_result_location", "url": "https://www.ruby-lang.org/en/downloads/",
                             "title": "Download Ruby", "cited_text": "The current stable version is 4.0.6.",
                             "encrypted_index": "Eo8B"}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "Ruby 4.0.6."}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 4, "server_tool_use": {"web_search_requests": 1}}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);
        let server = ReplayServer::start(server_for("https://api.anthropic.com/v1/messages", body))
            .await
            .unwrap();
        let answer = streamed_answer(
            Anthropic::new(
                AnthropicConfig::new("claude-haiku-4-5")
                    .with_base_url(format!("{}/v1", server.url()))
                    .with_api_key("k")
                    .with_retry(RetryPolicy::none()),
            )
            .unwrap(),
        )
        .await;
        assert_eq!(answer.text(), "Ruby 4.0.6.");
        assert_eq!(answer.citations.len(), 1);
        let citation = &answer.citations[0];
        assert_eq!(
            citation.url.as_deref(),
            Some("https://www.ruby-lang.org/en/downloads/")
        );
        assert_eq!(citation.title.as_deref(), Some("Download Ruby"));
        assert_eq!(
            citation.cited_text.as_deref(),
            Some("The current stable version is 4.0.6.")
        );
        assert_eq!(answer.usage.unwrap().server_tool_requests, 1);
    }

    #[tokio::test]
    async fn gemini_grounding_in_a_stream_becomes_searches_and_citations() {
        let body = sse(&[
            (
                "",
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Ruby "}]}}]}),
            ),
            (
                "",
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "4.0.6."}]},
                "finishReason": "STOP",
                "groundingMetadata": {"webSearchQueries": ["latest ruby version"],
                    "groundingChunks": [{"web": {"uri": "https://www.ruby-lang.org/", "title": "ruby-lang.org"}}]}}],
                "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3}}),
            ),
        ]);
        let server = ReplayServer::start(server_for(
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-3-flash-preview:streamGenerateContent?alt=sse",
            body,
        ))
        .await
        .unwrap();
        let answer = streamed_answer(
            Gemini::new(
                GeminiConfig::new("gemini-3-flash-preview")
                    .with_base_url(format!("{}/v1beta", server.url()))
                    .with_api_key("k")
                    .with_retry(RetryPolicy::none()),
            )
            .unwrap(),
        )
        .await;
        assert_eq!(answer.text(), "Ruby 4.0.6.");
        assert_eq!(answer.server_tool_uses[0].name, "google_search");
        assert_eq!(
            answer.server_tool_uses[0].input,
            json!({"queries": ["latest ruby version"]})
        );
        assert_eq!(
            answer.citations[0].url.as_deref(),
            Some("https://www.ruby-lang.org/")
        );
    }
}

/// Nova's `nova_grounding` is a tool use the provider ran itself: the answer holds its
/// `toolUse`, then the `toolResult` that answers it, then the text. The next turn sends the
/// assistant's blocks back in that order, the use ahead of its result (a result without its
/// use is refused); the use is not taken for a call of the chat's own tools.
#[tokio::test]
async fn nova_grounding_goes_back_as_its_tool_use_ahead_of_its_result() {
    use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
    use llm_tools_providers::http::RetryPolicy;
    use llm_tools_providers::record::{RecordedRequest, RecordedResponse};
    use serde_json::json;

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "fixtures/recorded/provider-tools/chat_web_search_with_bedrock_amazon_nova-2-lite-v1_0_grounds_the_answer_with_web_citations.json",
    );
    let recording = Recording::load(&path).unwrap();
    let grounded = recording.interactions[0].response.clone();
    let url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse";
    let server = ReplayServer::with_interactions(vec![
        Interaction::new(RecordedRequest::post(url, json!({})), grounded),
        Interaction::new(
            RecordedRequest::post(url, json!({})),
            RecordedResponse::json(
                200,
                json!({"output": {"message": {"role": "assistant", "content": [{"text": "OK."}]}},
                       "stopReason": "end_turn",
                       "usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}})
                .to_string(),
            ),
        ),
    ])
    .await
    .unwrap();
    let config = BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
        .with_credentials(AwsCredentials::new("AKIDTEST", "secret"))
        .with_base_url(server.url())
        .with_retry(RetryPolicy::none());
    let mut chat = Chat::new(Bedrock::new(config).unwrap());
    chat.with_provider_tool(ProviderTool::WebSearch(WebSearch::default()));
    let first = chat.ask("What is the latest Ruby?").await.unwrap();
    let answer = chat.messages().last().unwrap().clone();
    assert!(first.text().is_some());
    let ids: Vec<String> = answer
        .server_tool_uses
        .iter()
        .filter_map(|u| u.id.clone())
        .collect();
    assert!(!ids.is_empty(), "the recording's answer grounds itself");
    let ok = chat.ask("Say OK.").await.unwrap();
    assert_eq!(ok.text().as_deref(), Some("OK."));

    let sent = &server.received()[1].body;
    let blocks = sent["messages"][1]["content"].as_array().unwrap();
    for id in &ids {
        let at = |key: &str| {
            blocks
                .iter()
                .position(|b| b[key]["toolUseId"] == id.as_str())
        };
        let (used, answered) = (at("toolUse"), at("toolResult"));
        assert!(used.is_some(), "no toolUse {id} in {blocks:?}");
        assert!(
            used < answered,
            "the use of {id} after its result: {blocks:?}"
        );
        assert_eq!(
            blocks[used.unwrap()]["toolUse"]["type"],
            "server_tool_use",
            "{blocks:?}"
        );
    }
}

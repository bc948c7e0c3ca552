//! Every structured-output recording (`tests/fixtures/recorded/structured-output`: Responses on
//! OpenAI and xAI, Chat Completions on OpenRouter, xAI on Azure and Mistral, Anthropic, Gemini
//! and Vertex AI, Bedrock, Cohere) replayed from a loopback HTTP server through the real
//! provider and the real chat loop: the chat is given the recorded schema, each request carries
//! it in exactly the recorded form (and none after `without_output`, for the recordings that
//! remove it mid-conversation), and each structured answer decodes to the recorded object.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::path::Path;

use llm_tools_core::OutputSchema;
use llm_tools_core::chat::Chat;
use llm_tools_providers::record::{Interaction, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::chat_replay;
use llm_tools_tests::recorded_provider::{self, model_interactions};
use serde_json::Value;

/// The body field that carries the structured output, by protocol.
fn format_field<'a>(protocol: &str, body: &'a Value) -> Option<&'a Value> {
    let field = match protocol {
        "openai-responses" => body.get("text"),
        "openai-chat" | "cohere-v2" => body.get("response_format"),
        "anthropic-messages" => body.get("output_config"),
        "gemini" => body
            .get("generationConfig")
            .filter(|g| g.get("responseJsonSchema").is_some()),
        "bedrock-converse" => body.get("outputConfig"),
        other => panic!("no structured output for {other}"),
    };
    field.filter(|f| !f.is_null())
}

/// The recorded schema and its name, as the chat is given them.
fn output_schema(protocol: &str, field: &Value) -> OutputSchema {
    let (name, schema) = match protocol {
        "openai-responses" => (
            field["format"]["name"].as_str().unwrap(),
            field["format"]["schema"].clone(),
        ),
        "openai-chat" => (
            field["json_schema"]["name"].as_str().unwrap(),
            field["json_schema"]["schema"].clone(),
        ),
        "cohere-v2" => ("response", field["json_schema"].clone()),
        "anthropic-messages" => ("response", field["format"]["schema"].clone()),
        "gemini" => ("response", field["responseJsonSchema"].clone()),
        "bedrock-converse" => {
            let json = &field["textFormat"]["structure"]["jsonSchema"];
            (
                json["name"].as_str().unwrap(),
                serde_json::from_str(json["schema"].as_str().unwrap()).unwrap(),
            )
        }
        other => panic!("no structured output for {other}"),
    };
    OutputSchema::new(name, schema).unwrap()
}

/// The recorded answer's text, read straight from the response body.
fn answer_text(protocol: &str, interaction: &Interaction) -> String {
    let body: Value = serde_json::from_str(interaction.response.body.trim()).unwrap();
    let texts = |parts: &Value, key: &str| -> String {
        parts
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["thought"] != true)
            .filter_map(|p| p[key].as_str())
            .collect()
    };
    match protocol {
        "openai-responses" => body["output"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["type"] == "message")
            .map(|item| texts(&item["content"], "text"))
            .collect(),
        "openai-chat" => body["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .to_owned(),
        "cohere-v2" => texts(&body["message"]["content"], "text"),
        "anthropic-messages" => texts(&body["content"], "text"),
        "gemini" => texts(&body["candidates"][0]["content"]["parts"], "text"),
        "bedrock-converse" => texts(&body["output"]["message"]["content"], "text"),
        other => panic!("no structured output for {other}"),
    }
}

/// The user's question of a recorded request: its last user message's text.
fn question(recording: &Recording, body: &Value) -> String {
    let canonical = match recording.protocol.as_str() {
        "openai-responses" | "openai-chat" => llm_tools_providers::openai::canonical_request(body),
        "cohere-v2" => llm_tools_providers::cohere::canonical_request(body),
        "anthropic-messages" => llm_tools_providers::anthropic::canonical_request(body),
        "gemini" => llm_tools_providers::gemini::canonical_request(body),
        "bedrock-converse" => llm_tools_providers::bedrock::canonical_request(body),
        other => panic!("no structured output for {other}"),
    };
    chat_replay::asks(&canonical).pop().unwrap()
}

async fn replay(path: &Path) -> Result<(), String> {
    let recording = Recording::load(path).map_err(|e| e.to_string())?;
    let protocol = recording.protocol.clone();
    let server = ReplayServer::start(recording.clone())
        .await
        .map_err(|e| e.to_string())?;
    let mut chat = Chat::new(recorded_provider::for_recording(&recording, &server)?);
    let turns = model_interactions(&recording);
    let mut expected_fields = Vec::new();
    for turn in &turns {
        let recorded = format_field(&protocol, &turn.request.body);
        match recorded {
            Some(field) => {
                chat.with_output_schema(output_schema(&protocol, field));
            }
            None => {
                chat.without_output();
            }
        }
        expected_fields.push(recorded.cloned());
        let outcome = chat
            .ask(question(&recording, &turn.request.body))
            .await
            .map_err(|e| e.to_string())?;
        let text = answer_text(&protocol, turn);
        if recorded.is_some() {
            let parsed: Value = outcome.parsed().map_err(|e| e.to_string())?;
            let want: Value = serde_json::from_str(text.trim()).map_err(|e| e.to_string())?;
            if parsed != want {
                return Err(format!("decoded {parsed}, recorded {want}"));
            }
        } else if outcome.text().as_deref() != Some(text.as_str()) {
            return Err(format!("answer {:?}, recorded {text:?}", outcome.text()));
        }
    }
    let sent: Vec<_> = server
        .received()
        .into_iter()
        .filter(|r| !r.path.contains("token"))
        .collect();
    if sent.len() != turns.len() {
        return Err(format!(
            "{} requests sent, {} recorded",
            sent.len(),
            turns.len()
        ));
    }
    for (i, (request, want)) in sent.iter().zip(&expected_fields).enumerate() {
        let got = format_field(&protocol, &request.body).cloned();
        if &got != want {
            return Err(format!(
                "request {i} carries {got:?} where the recording has {want:?}"
            ));
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_structured_output_recording_replays_through_the_chat_loop() {
    chat_replay::replay_every("structured-output", 24, async |path| replay(path).await).await;
}

/// A typed schema with an optional field and a nested type, as each dialect sends it.
mod dialects {
    use llm_tools_core::{Message, OutputSchema, Request};
    use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
    use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
    use llm_tools_providers::cohere::{Cohere, CohereConfig};
    use llm_tools_providers::gemini::{Gemini, GeminiConfig};
    use llm_tools_providers::ollama::{Ollama, OllamaConfig};
    use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
    use serde_json::{Value, json};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Ticket {
        /// One-line summary
        title: String,
        priority: Option<u8>,
        owner: Owner,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Owner {
        email: String,
    }

    fn body(bytes: Vec<u8>) -> Value {
        serde_json::from_slice(&bytes).unwrap()
    }

    fn sent<F: Fn(&Request<'_>) -> Vec<u8>>(params: Option<Value>, write: F) -> Value {
        let output = OutputSchema::of::<Ticket>().unwrap();
        let messages = [Message::user("File a ticket")];
        let params = params.map(|p| p.as_object().unwrap().clone());
        let request = Request::new(&messages, &[])
            .with_output(Some(&output))
            .with_params(params.as_ref());
        // Twice: the second request reuses the cached field and must be identical.
        let first = body(write(&request));
        assert_eq!(first, body(write(&request)));
        first
    }

    fn strict_openai_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "One-line summary"},
                "priority": {"type": ["integer", "null"], "minimum": 0, "maximum": 255},
                "owner": {
                    "type": "object",
                    "properties": {"email": {"type": "string"}},
                    "required": ["email"],
                    "additionalProperties": false
                }
            },
            "required": ["title", "priority", "owner"],
            "additionalProperties": false
        })
    }

    #[test]
    fn openai_sends_the_strict_form_named_after_the_type() {
        let config = OpenAiConfig::openai("gpt-5-nano").with_api_key("k");
        let responses = OpenAiResponses::new(config.clone()).unwrap();
        let b = sent(Some(json!({"text": {"verbosity": "low"}})), |r| {
            responses.request_body(r, false).unwrap()
        });
        assert_eq!(
            b["text"],
            json!({
                "format": {"type": "json_schema", "name": "Ticket", "schema": strict_openai_schema(), "strict": true},
                "verbosity": "low"
            })
        );
        let chat = OpenAiChat::new(config).unwrap();
        let b = sent(None, |r| chat.request_body(r, false).unwrap());
        assert_eq!(
            b["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "Ticket", "schema": strict_openai_schema(), "strict": true}})
        );
    }

    #[test]
    fn a_schema_strict_mode_cannot_express_goes_without_strict() {
        let open = OutputSchema::new(
            "tags",
            json!({"type": "object", "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        )
        .unwrap();
        let messages = [Message::user("Tag it")];
        let chat = OpenAiChat::new(OpenAiConfig::openai("gpt-5-nano").with_api_key("k")).unwrap();
        let request = Request::new(&messages, &[]).with_output(Some(&open));
        let b = body(chat.request_body(&request, false).unwrap());
        assert_eq!(b["response_format"]["json_schema"]["strict"], false);
        assert_eq!(
            b["response_format"]["json_schema"]["schema"],
            *open.schema()
        );
    }

    #[test]
    fn anthropic_and_bedrock_close_every_object_and_keep_optional_fields_optional() {
        let anthropic =
            Anthropic::new(AnthropicConfig::new("claude-haiku-4-5").with_api_key("k")).unwrap();
        let b = sent(None, |r| anthropic.request_body(r, false).unwrap());
        let schema = &b["output_config"]["format"]["schema"];
        assert_eq!(b["output_config"]["format"]["type"], "json_schema");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["owner"]["additionalProperties"], false);
        assert_eq!(schema["required"], json!(["title", "owner"]));

        let bedrock = Bedrock::new(
            BedrockConfig::new("us.anthropic.claude-haiku-4-5-20251001-v1:0")
                .with_region("eu-west-3")
                .with_credentials(AwsCredentials::new("AKIDTEST", "secret")),
        )
        .unwrap();
        let b = sent(None, |r| bedrock.request_body(r).unwrap());
        let json = &b["outputConfig"]["textFormat"]["structure"]["jsonSchema"];
        assert_eq!(b["outputConfig"]["textFormat"]["type"], "json_schema");
        assert_eq!(json["name"], "Ticket");
        let inner: Value = serde_json::from_str(json["schema"].as_str().unwrap()).unwrap();
        assert_eq!(&inner, schema);
    }

    #[test]
    fn gemini_merges_the_schema_into_the_generation_config_of_the_params() {
        let gemini =
            Gemini::new(GeminiConfig::new("gemini-3-flash-preview").with_api_key("k")).unwrap();
        let b = sent(Some(json!({"generationConfig": {"temperature": 0}})), |r| {
            gemini.request_body(r).unwrap()
        });
        let config = &b["generationConfig"];
        assert_eq!(config["temperature"], 0);
        assert_eq!(config["responseMimeType"], "application/json");
        assert_eq!(
            config["responseJsonSchema"]["required"],
            json!(["title", "owner"])
        );
    }

    #[test]
    fn gemini_with_the_older_schema_field_sends_response_schema() {
        use llm_tools_providers::gemini::SchemaField;
        let gemini = Gemini::new(
            GeminiConfig::new("gemini-2.0-flash")
                .with_api_key("k")
                .with_schema_field(SchemaField::Parameters),
        )
        .unwrap();
        let b = sent(None, |r| gemini.request_body(r).unwrap());
        let config = &b["generationConfig"];
        assert!(config.get("responseJsonSchema").is_none(), "{config}");
        let schema = &config["responseSchema"];
        assert_eq!(schema["type"], "OBJECT");
        assert_eq!(schema["properties"]["title"]["type"], "STRING");
        assert_eq!(schema["properties"]["priority"]["type"], "INTEGER");
        assert_eq!(
            schema["propertyOrdering"],
            json!(["title", "priority", "owner"])
        );
        assert_eq!(schema["required"], json!(["title", "owner"]));
        // A schema the subset cannot express (an array without `items`) goes as
        // `responseJsonSchema`.
        let open = OutputSchema::new(
            "tags",
            json!({"type": "object", "properties": {"tags": {"type": "array"}}}),
        )
        .unwrap();
        let messages = [Message::user("Tag it")];
        let request = Request::new(&messages, &[]).with_output(Some(&open));
        let b = body(gemini.request_body(&request).unwrap());
        assert_eq!(b["generationConfig"]["responseJsonSchema"], *open.schema());
    }

    #[test]
    fn cohere_and_ollama_send_their_json_formats() {
        let cohere = Cohere::new(CohereConfig::new("command-a-03-2025").with_api_key("k")).unwrap();
        let b = sent(None, |r| cohere.request_body(r, false).unwrap());
        assert_eq!(b["response_format"]["type"], "json_object");
        assert_eq!(
            b["response_format"]["json_schema"],
            *OutputSchema::of::<Ticket>().unwrap().schema()
        );

        let ollama = Ollama::new(OllamaConfig::new("llama3.2")).unwrap();
        let b = sent(None, |r| ollama.request_body(r, false).unwrap());
        assert_eq!(b["format"]["type"], "object");
        assert_eq!(
            b["format"]["properties"]["owner"]["properties"]["email"]["type"],
            "string"
        );
    }
}

#[test]
fn the_portability_check_covers_output_schemas() {
    use llm_tools_providers::schema::{Dialect, FindingKind, check_output_portability};
    let open = OutputSchema::new(
        "labels",
        serde_json::json!({
            "type": "object",
            "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
            "required": ["labels"]
        }),
    )
    .unwrap();
    let report = check_output_portability(&open, Dialect::ALL);
    assert!(!report.is_portable());
    assert_eq!(report.not_strict(Dialect::OpenAiResponses), ["labels"]);
    // Gemini's `parameters` form cannot say what the map's values are.
    assert!(
        report
            .for_tool("labels")
            .any(|f| f.dialect == Dialect::GeminiParameters)
    );
    assert!(report.findings().iter().all(|f| f.tool == "labels"));
    assert!(
        report
            .findings()
            .iter()
            .any(|f| f.kind == FindingKind::NotStrict)
    );
}

/// Anthropic models without structured output (Claude 3, Sonnet 4, Opus 4 / 4.1) answer
/// through a forced tool, `final_answer`, whose input is the object. From the Messages API's
/// documented forms (no recording of an older model exists here), through the real provider
/// and chat loop against a loopback server.
mod anthropic_answer_tool {
    use llm_tools_core::chat::Chat;
    use llm_tools_core::{Message, OutputSchema, Request, tool};
    use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
    use llm_tools_providers::record::RecordedResponse;
    use llm_tools_providers::replay::ReplayServer;
    use llm_tools_tests::serving;
    use serde_json::{Value, json};

    #[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
    struct Ticket {
        /// One-line summary
        title: String,
        priority: Option<u8>,
    }

    /// Finds the on-call engineer
    #[tool]
    async fn on_call() -> String {
        "ada@example.com".into()
    }

    fn older(url: Option<String>) -> Anthropic {
        let mut config = AnthropicConfig::new("claude-3-5-haiku-latest").with_api_key("k");
        if let Some(url) = url {
            config = config.with_base_url(url);
        }
        Anthropic::new(config).unwrap()
    }

    fn answer(content: Value, stop: &str) -> Value {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-3-5-haiku-latest",
            "content": content, "stop_reason": stop,
            "usage": {"input_tokens": 20, "output_tokens": 10}})
    }

    #[test]
    fn the_schema_goes_as_a_forced_tool_instead_of_output_config() {
        let output = OutputSchema::of::<Ticket>().unwrap();
        let messages = [Message::user("File a ticket")];
        let request = Request::new(&messages, &[]).with_output(Some(&output));
        let b: Value =
            serde_json::from_slice(&older(None).request_body(&request, false).unwrap()).unwrap();
        assert!(b.get("output_config").is_none(), "{b}");
        assert_eq!(b["tools"][0]["name"], "final_answer");
        assert_eq!(b["tools"][0]["input_schema"]["additionalProperties"], false);
        assert_eq!(b["tools"][0]["input_schema"]["required"], json!(["title"]));
        assert_eq!(
            b["tool_choice"],
            json!({"type": "tool", "name": "final_answer"})
        );

        // Models with structured output keep `output_config`, and the switch overrides the
        // model family either way.
        let newer =
            Anthropic::new(AnthropicConfig::new("claude-haiku-4-5").with_api_key("k")).unwrap();
        let b: Value =
            serde_json::from_slice(&newer.request_body(&request, false).unwrap()).unwrap();
        assert!(
            b.get("output_config").is_some() && b.get("tools").is_none(),
            "{b}"
        );
        let forced = Anthropic::new(
            AnthropicConfig::new("claude-haiku-4-5")
                .with_api_key("k")
                .with_native_structured_output(false),
        )
        .unwrap();
        let b: Value =
            serde_json::from_slice(&forced.request_body(&request, false).unwrap()).unwrap();
        assert_eq!(b["tools"][0]["name"], "final_answer");
    }

    #[tokio::test]
    async fn with_tools_the_model_runs_them_then_answers_through_the_tool() {
        let url = "https://api.anthropic.com/v1/messages";
        let bodies = [
            answer(
                json!([{"type": "tool_use", "id": "toolu_1", "name": "on_call", "input": {}}]),
                "tool_use",
            ),
            answer(
                json!([{"type": "tool_use", "id": "toolu_2", "name": "final_answer",
                    "input": {"title": "Disk full on db-1", "priority": 1}}]),
                "tool_use",
            ),
        ];
        let interactions = bodies
            .iter()
            .map(|b| serving::exchange(url, RecordedResponse::json(200, b.to_string())))
            .collect();
        let server = ReplayServer::with_interactions(interactions).await.unwrap();
        let mut chat = Chat::new(older(Some(format!("{}/v1", server.url()))));
        chat.with_tools(OnCall).unwrap();
        chat.with_output::<Ticket>().unwrap();
        let outcome = chat
            .ask("db-1 is out of disk; file a ticket")
            .await
            .unwrap();
        let ticket: Ticket = outcome.parsed().unwrap();
        assert_eq!(
            ticket,
            Ticket {
                title: "Disk full on db-1".into(),
                priority: Some(1)
            }
        );

        let sent: Vec<Value> = server.received().into_iter().map(|r| r.body).collect();
        assert_eq!(sent.len(), 2, "one request per answer");
        // The chat's tool and the answer tool are offered; the model must call one of them.
        let names: Vec<&str> = sent[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["on_call", "final_answer"]);
        assert_eq!(sent[0]["tool_choice"], json!({"type": "any"}));
        // The answer is text (the object), not a call to run: the history stays valid.
        let last = chat.messages().last().unwrap();
        assert!(last.tool_calls.is_empty());
        assert_eq!(
            serde_json::from_str::<Value>(&last.text()).unwrap(),
            json!({"title": "Disk full on db-1", "priority": 1})
        );
    }
}

//! A tool's provider options (`ToolSpec::with_provider_options`, `#[tool(provider_options(…))]`)
//! in the request bodies of every protocol: sent where the protocol's definitions take added
//! fields (Anthropic, Responses, Gemini, Bedrock's `toolSpec` and `cachePoint`), refused with an
//! error naming the tool where they do not (Chat Completions, Cohere, Ollama), refused where
//! they would overwrite a field the library writes, and ignored by the protocols they are not
//! for. One test sends a macro-built tool through a chat to a loopback server.
#![cfg(all(
    feature = "openai",
    feature = "anthropic",
    feature = "gemini",
    feature = "bedrock",
    feature = "cohere",
    feature = "ollama",
    feature = "replay"
))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;

use llm_tools_core::chat::Chat;
use llm_tools_core::{
    BoxFuture, Message, Namespace, ProviderError, ProviderErrorKind, RawArgs, Request, Tool,
    ToolContext, ToolOutcome, ToolOutput, ToolSpec, tool,
};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::gemini::{Gemini, GeminiConfig};
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::protocol::ids;
use llm_tools_providers::record::{Interaction, RecordedRequest, RecordedResponse};
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

/// Gets the weather for a city
#[tool(provider_options(
    anthropic = {
        "cache_control": { "type": "ephemeral", "ttl": "1h" },
        "input_examples": [{ "city": "Paris" }, { "city": "Lima" }],
    },
    openai_responses = { "allowed_callers": ["direct"] },
    gemini = { "behavior": "NON_BLOCKING" },
    bedrock = { "strict": true, "cachePoint": { "type": "default" } },
))]
async fn weather(city: String) -> String {
    format!("sunny in {city}")
}

/// A value computed in Rust: options given as an expression.
fn examples() -> Value {
    json!({ "input_examples": [{ "text": "hi" }] })
}

/// Repeats the text
#[tool(provider_options(anthropic = examples()))]
async fn echo(text: String) -> String {
    text
}

/// A tool whose spec is written by hand.
struct Hand(ToolSpec);

impl Hand {
    fn with(protocol: &str, options: Value) -> Arc<dyn Tool> {
        Arc::new(Hand(
            ToolSpec::new("hand", "Written by hand").with_provider_options(protocol, options),
        ))
    }
}

impl Tool for Hand {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn call<'a>(&'a self, _: RawArgs<'a>, _: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async { ToolOutcome::Output(ToolOutput::text("done")) })
    }
}

/// Each protocol's body for one request with `tools`.
struct Bodies {
    anthropic: Result<Value, ProviderError>,
    responses: Result<Value, ProviderError>,
    chat: Result<Value, ProviderError>,
    gemini: Result<Value, ProviderError>,
    bedrock: Result<Value, ProviderError>,
    cohere: Result<Value, ProviderError>,
    ollama: Result<Value, ProviderError>,
}

fn bodies(tools: &[Arc<dyn Tool>]) -> Bodies {
    let messages = [Message::user("hi")];
    let request = Request::new(&messages, tools);
    let json = |body: Result<Vec<u8>, ProviderError>| {
        body.map(|b| serde_json::from_slice::<Value>(&b).unwrap())
    };
    let anthropic =
        Anthropic::new(AnthropicConfig::new("claude-haiku-4-5").with_api_key("k")).unwrap();
    let responses = OpenAiResponses::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let chat = OpenAiChat::new(OpenAiConfig::openai("m").with_api_key("k")).unwrap();
    let gemini = Gemini::new(GeminiConfig::new("gemini-2.5-flash").with_api_key("k")).unwrap();
    let bedrock = Bedrock::new(
        BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
            .with_credentials(AwsCredentials::new("AKIDTEST", "secret")),
    )
    .unwrap();
    let cohere = Cohere::new(CohereConfig::new("command-a-03-2025").with_api_key("k")).unwrap();
    let ollama = Ollama::new(OllamaConfig::new("qwen3")).unwrap();
    Bodies {
        anthropic: json(anthropic.request_body(&request, false)),
        responses: json(responses.request_body(&request, false)),
        chat: json(chat.request_body(&request, false)),
        gemini: json(gemini.request_body(&request)),
        bedrock: json(bedrock.request_body(&request)),
        cohere: json(cohere.request_body(&request, false)),
        ollama: json(ollama.request_body(&request, false)),
    }
}

/// One protocol's body among the [`Bodies`].
type Pick = fn(Bodies) -> Result<Value, ProviderError>;

/// The request error's message, which names the tool.
fn refused(body: Result<Value, ProviderError>) -> String {
    let e = body.expect_err("a request error");
    assert_eq!(e.kind(), ProviderErrorKind::Request, "{e}");
    e.to_string()
}

#[test]
fn options_go_where_each_protocol_takes_them() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather)];
    let b = bodies(&tools);
    let anthropic = b.anthropic.unwrap();
    let tool = &anthropic["tools"][0];
    assert_eq!(tool["name"], "weather");
    assert_eq!(
        tool["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    assert_eq!(
        tool["input_examples"],
        json!([{"city": "Paris"}, {"city": "Lima"}])
    );
    assert_eq!(tool["input_schema"], *Weather.spec().parameters());

    let responses = b.responses.unwrap();
    let tool = &responses["tools"][0];
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["allowed_callers"], json!(["direct"]));
    assert!(tool.get("cache_control").is_none(), "{tool}");

    let gemini = b.gemini.unwrap();
    let declaration = &gemini["tools"][0]["functionDeclarations"][0];
    assert_eq!(declaration["name"], "weather");
    assert_eq!(declaration["behavior"], "NON_BLOCKING");

    // Bedrock: the fields in `toolSpec`, the cache point an entry of its own after the tool.
    let bedrock = b.bedrock.unwrap();
    let entries = bedrock["toolConfig"]["tools"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(entries[0]["toolSpec"]["name"], "weather");
    assert_eq!(entries[0]["toolSpec"]["strict"], true);
    assert!(entries[0]["toolSpec"].get("cachePoint").is_none());
    assert_eq!(entries[1], json!({"cachePoint": {"type": "default"}}));

    // The protocols without per-tool options were given none for themselves: they send the
    // tool as always, without another protocol's options.
    for body in [b.chat.unwrap(), b.cohere.unwrap(), b.ollama.unwrap()] {
        let function = &body["tools"][0]["function"];
        assert_eq!(function["name"], "weather");
        let fields: Vec<&str> = function
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert!(
            fields
                .iter()
                .all(|f| ["name", "description", "parameters", "strict"].contains(f)),
            "{fields:?}"
        );
        assert_eq!(body["tools"][0].as_object().unwrap().len(), 2);
    }
}

#[test]
fn options_given_as_an_expression_are_sent() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Echo)];
    let anthropic = bodies(&tools).anthropic.unwrap();
    assert_eq!(
        anthropic["tools"][0]["input_examples"],
        json!([{"text": "hi"}])
    );
}

#[test]
fn protocols_without_per_tool_options_refuse_their_own() {
    for (protocol, pick) in [
        (ids::OPENAI_CHAT, (|b: Bodies| b.chat) as Pick),
        (ids::COHERE, |b: Bodies| b.cohere),
        (ids::OLLAMA, |b: Bodies| b.ollama),
    ] {
        let tools = vec![Hand::with(protocol, json!({"x": 1}))];
        let message = refused(pick(bodies(&tools)));
        assert!(message.contains("the definition of `hand`"), "{message}");
        assert!(
            message.contains(&format!("it has provider options for `{protocol}`")),
            "{message}"
        );
        assert!(message.contains("remove them"), "{message}");
        // Every other protocol ignores them.
        let b = bodies(&tools);
        assert!(b.anthropic.is_ok() && b.responses.is_ok() && b.gemini.is_ok());
        assert!(b.bedrock.is_ok());
    }
}

#[test]
fn options_never_overwrite_the_fields_the_library_writes() {
    let cases: [(&str, &str, Pick); 8] = [
        (ids::ANTHROPIC, "input_schema", |b| b.anthropic),
        (ids::ANTHROPIC, "name", |b| b.anthropic),
        (ids::ANTHROPIC, "defer_loading", |b| b.anthropic),
        (ids::OPENAI_RESPONSES, "parameters", |b| b.responses),
        (ids::OPENAI_RESPONSES, "strict", |b| b.responses),
        (ids::GEMINI, "parametersJsonSchema", |b| b.gemini),
        (ids::GEMINI, "description", |b| b.gemini),
        (ids::BEDROCK_CONVERSE, "inputSchema", |b| b.bedrock),
    ];
    for (protocol, field, pick) in cases {
        let tools = vec![Hand::with(
            protocol,
            json!({ field: {}, "cache_control": {"type": "ephemeral"} }),
        )];
        let message = refused(pick(bodies(&tools)));
        assert!(message.contains("the definition of `hand`"), "{message}");
        assert!(
            message.contains(&format!(
                "its provider options for `{protocol}` set `{field}`, which the library writes"
            )),
            "{message}"
        );
    }
    let tools = vec![Hand::with(ids::ANTHROPIC, json!({"defer_loading": true}))];
    let message = refused(bodies(&tools).anthropic);
    assert!(message.contains("the tool's `defer`"), "{message}");
}

#[test]
fn a_computer_toolset_member_has_no_fields_of_its_own() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Hand(
        ToolSpec::new("screenshot", "Takes a screenshot")
            .with_namespace(Some(Namespace::new("computer")))
            .with_provider_options(
                ids::ANTHROPIC,
                json!({"cache_control": {"type": "ephemeral"}}),
            ),
    ))];
    let message = refused(bodies(&tools).anthropic);
    assert!(
        message.contains("tool `computer_screenshot` has provider options for `anthropic`"),
        "{message}"
    );
    assert!(
        message.contains("member of the computer toolset"),
        "{message}"
    );
}

#[test]
fn options_that_are_not_an_object_are_refused() {
    let tools = vec![Hand::with(ids::GEMINI, json!([{"behavior": "BLOCKING"}]))];
    let message = refused(bodies(&tools).gemini);
    assert!(
        message.contains("its provider options for `gemini` are an array, not a JSON object"),
        "{message}"
    );
}

#[test]
fn a_key_that_is_no_protocol_id_reaches_no_protocol() {
    // The keys are protocol ids: `openai` (a vendor) is none, and no protocol sends it.
    let tools = vec![Hand::with("openai", json!({"strict": false, "x": 1}))];
    let b = bodies(&tools);
    assert!(b.responses.unwrap()["tools"][0].get("x").is_none());
    assert!(b.chat.unwrap()["tools"][0]["function"].get("x").is_none());
}

/// The Messages answer of the loopback server: text, no tool call.
fn messages_answer() -> String {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2}})
    .to_string()
}

#[tokio::test]
async fn a_macro_built_tool_carries_its_options_to_the_server() {
    let server = ReplayServer::with_interactions(vec![Interaction::new(
        RecordedRequest::post("https://api.anthropic.com/v1/messages", json!({})),
        RecordedResponse::json(200, messages_answer()),
    )])
    .await
    .unwrap();
    let mut chat = Chat::new(
        Anthropic::new(
            AnthropicConfig::new("claude-haiku-4-5")
                .with_base_url(server.url())
                .with_api_key("k"),
        )
        .unwrap(),
    );
    chat.with_tools(Weather).unwrap();
    assert_eq!(
        chat.ask("Weather in Paris?")
            .await
            .unwrap()
            .text()
            .as_deref(),
        Some("Sunny.")
    );
    let received = server.received();
    assert_eq!(received.len(), 1);
    let tool = &received[0].body["tools"][0];
    assert_eq!(tool["name"], "weather");
    assert_eq!(
        tool["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    assert_eq!(tool["input_examples"][1], json!({"city": "Lima"}));
}

//! Hostile tool schemas through the real chat loop, the real HTTP client and the loopback
//! replay server, on every protocol: a tool whose schema multiplies when its `$ref`s are
//! followed (sixteen definitions that each name the one before twice, with a description beside
//! each reference: 2^16 objects, in 1.6 KB) sits in a chat beside an ordinary tool. The
//! request that reaches the server holds the ordinary tool and not the hostile one, a warning
//! names the tool and the limit, the answer comes back, and the next `ask` works the same way.
//! Forcing the hostile tool is a request error naming the limit, with nothing sent; a provider
//! configured with a larger budget sends it.
//!
//! Each case is one test per protocol, named `<protocol>::<case>`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use llm_tools_core::chat::{Chat, ToolOptions};
use llm_tools_core::{
    BoxFuture, Provider, ProviderErrorKind, RawArgs, Role, Tool, ToolChoice, ToolContext,
    ToolOutcome, ToolSpec,
};
use llm_tools_providers::anthropic::{Anthropic, AnthropicConfig};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::config::ProviderConfig;
use llm_tools_providers::gemini::{Gemini, GeminiConfig, SchemaField};
use llm_tools_providers::ollama::{Ollama, OllamaConfig};
use llm_tools_providers::openai::{OpenAiChat, OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, RecordedResponse};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_providers::schema::{
    Dialect, FindingKind, SchemaBudget, SchemaLimit, check_portability_within,
};
use llm_tools_tests::fixtures::Weather;
use llm_tools_tests::serving::{self, RetryLog, on_server, provider_error};
use serde_json::{Map, Value, json};

/// The hostile tool's name: it must appear in no request.
const HOSTILE: &str = "browse_catalog";

/// Sixteen definitions that each name the one before twice (a description beside each
/// `$ref`, so the strict dialects inline them): 2^16 objects once followed.
fn multiplying_schema() -> Value {
    let mut defs = Map::new();
    defs.insert("D0".into(), json!({"type": "string"}));
    for level in 1..=16 {
        let before = format!("#/$defs/D{}", level - 1);
        defs.insert(
            format!("D{level}"),
            json!({"type": "object", "properties": {
                "a": {"$ref": before, "description": "left"},
                "b": {"$ref": before, "description": "right"}
            }, "required": ["a", "b"]}),
        );
    }
    json!({"type": "object", "properties": {"shelf": {"$ref": "#/$defs/D16", "description": "where"}},
           "required": ["shelf"], "$defs": defs})
}

/// A tool whose schema came from somewhere hostile (an MCP server's `inputSchema`, say).
struct BrowseCatalog;

impl Tool for BrowseCatalog {
    fn spec(&self) -> &ToolSpec {
        static SPEC: OnceLock<ToolSpec> = OnceLock::new();
        SPEC.get_or_init(|| {
            ToolSpec::new(HOSTILE, "Browses the catalog").with_parameters(multiplying_schema())
        })
    }

    fn call<'a>(&'a self, _: RawArgs<'a>, _: ToolContext) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async { ToolOutcome::error("never called") })
    }
}

/// One protocol: how to reach it (with a schema budget), and its answer with some text.
struct Protocol {
    provider: fn(&ReplayServer, SchemaBudget) -> Arc<dyn Provider>,
    text: fn(&str) -> RecordedResponse,
}

fn on<O>(
    config: ProviderConfig<O>,
    server: &ReplayServer,
    budget: SchemaBudget,
) -> ProviderConfig<O> {
    on_server(config, server, 0, &RetryLog::default()).with_schema_budget(budget)
}

fn chat_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "c1", "object": "chat.completion", "model": "gpt-5-nano",
               "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
        .to_string(),
    )
}

const CHAT_COMPLETIONS: Protocol = Protocol {
    provider: |server, budget| {
        let config = on(
            OpenAiConfig::openai("gpt-5-nano").with_api_key("k"),
            server,
            budget,
        );
        Arc::new(OpenAiChat::new(config).unwrap())
    },
    text: chat_text,
};

fn responses_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5-nano",
               "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": text, "annotations": []}]}],
               "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}})
        .to_string(),
    )
}

const RESPONSES: Protocol = Protocol {
    provider: |server, budget| {
        let config = on(
            OpenAiConfig::openai("gpt-5-nano").with_api_key("k"),
            server,
            budget,
        );
        Arc::new(OpenAiResponses::new(config).unwrap())
    },
    text: responses_text,
};

fn anthropic_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
               "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
               "usage": {"input_tokens": 10, "output_tokens": 5}})
        .to_string(),
    )
}

const ANTHROPIC: Protocol = Protocol {
    provider: |server, budget| {
        let config = AnthropicConfig::new("claude-haiku-4-5").with_api_key("k");
        Arc::new(Anthropic::new(on(config, server, budget)).unwrap())
    },
    text: anthropic_text,
};

const ANTHROPIC_STRICT: Protocol = Protocol {
    provider: |server, budget| {
        let config = AnthropicConfig::new("claude-haiku-4-5")
            .with_api_key("k")
            .with_strict(true);
        Arc::new(Anthropic::new(on(config, server, budget)).unwrap())
    },
    text: anthropic_text,
};

fn gemini_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0,
                               "finishReason": "STOP"}],
               "modelVersion": "gemini-2.5-flash",
               "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4, "totalTokenCount": 14}})
        .to_string(),
    )
}

const GEMINI: Protocol = Protocol {
    provider: |server, budget| {
        let config = GeminiConfig::new("gemini-2.5-flash").with_api_key("k");
        Arc::new(Gemini::new(on(config, server, budget)).unwrap())
    },
    text: gemini_text,
};

const GEMINI_PARAMETERS: Protocol = Protocol {
    provider: |server, budget| {
        let config = GeminiConfig::new("gemini-2.5-flash")
            .with_api_key("k")
            .with_schema_field(SchemaField::Parameters);
        Arc::new(Gemini::new(on(config, server, budget)).unwrap())
    },
    text: gemini_text,
};

fn bedrock_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"output": {"message": {"role": "assistant", "content": [{"text": text}]}},
               "stopReason": "end_turn", "usage": {"inputTokens": 5, "outputTokens": 2, "totalTokens": 7}})
        .to_string(),
    )
}

const BEDROCK: Protocol = Protocol {
    provider: |server, budget| {
        let config = BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
            .with_credentials(AwsCredentials::new("AKIDTEST", "secret"));
        Arc::new(Bedrock::new(on(config, server, budget)).unwrap())
    },
    text: bedrock_text,
};

fn cohere_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"id": "r1", "finish_reason": "COMPLETE",
               "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
               "usage": {"billed_units": {"input_tokens": 5, "output_tokens": 2},
                         "tokens": {"input_tokens": 5, "output_tokens": 2}}})
        .to_string(),
    )
}

const COHERE: Protocol = Protocol {
    provider: |server, budget| {
        let config = CohereConfig::new("command-a-03-2025").with_api_key("k");
        let config = on(config, server, budget).with_base_url(format!("{}/v2", server.url()));
        Arc::new(Cohere::new(config).unwrap())
    },
    text: cohere_text,
};

fn ollama_text(text: &str) -> RecordedResponse {
    RecordedResponse::json(
        200,
        json!({"model": "qwen3", "created_at": "2026-11-01T10:00:00Z",
               "message": {"role": "assistant", "content": text}, "done": true,
               "done_reason": "stop", "prompt_eval_count": 30, "eval_count": 9})
        .to_string(),
    )
}

const OLLAMA: Protocol = Protocol {
    provider: |server, budget| {
        let config = OllamaConfig::new("qwen3");
        Arc::new(Ollama::new(on(config, server, budget)).unwrap())
    },
    text: ollama_text,
};

/// What the library logs, captured by the process's own subscriber.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

/// The warnings of this process, captured by a global subscriber installed on first use.
///
/// The cases that read warnings run in a process of their own
/// ([`schema_warnings_are_logged_in_a_process_of_their_own`]), one at a time: `tracing` caches
/// each log site's interest for the whole process, and a scoped subscriber set while another
/// test's thread meets the same site can find it switched off.
fn captured() -> &'static Captured {
    static CAPTURED: OnceLock<Captured> = OnceLock::new();
    CAPTURED.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber)
            .expect("the only subscriber of this process");
        captured
    })
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// Forgets what was logged so far.
    fn clear(&self) {
        self.0.lock().unwrap().clear();
    }

    /// The warnings logged so far, one per line.
    fn warnings(&self) -> Vec<String> {
        let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .filter(|l| l.contains("WARN"))
            .map(str::to_owned)
            .collect()
    }
}

/// A chat on `p` with the hostile tool and the weather tool, served `answers` in order.
async fn chat_on(p: &Protocol, budget: SchemaBudget, answers: &[&str]) -> (ReplayServer, Chat) {
    let interactions: Vec<Interaction> = answers
        .iter()
        .map(|a| serving::exchange("https://provider.example/any", (p.text)(a)))
        .collect();
    let server = ReplayServer::with_interactions(interactions).await.unwrap();
    let mut chat = Chat::with_shared_provider((p.provider)(&server, budget));
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(BrowseCatalog), Arc::new(Weather)];
    chat.with_tools(tools).unwrap();
    (server, chat)
}

/// A bounded `ask` (a hang fails the test instead of hanging it).
async fn ask(
    chat: &mut Chat,
    text: &str,
) -> Result<llm_tools_core::chat::Outcome, llm_tools_core::Error> {
    tokio::time::timeout(Duration::from_secs(60), chat.ask(text))
        .await
        .expect("the ask finished within 60 s")
}

async fn a_tool_whose_schema_multiplies_is_left_out_and_the_chat_goes_on(p: &Protocol) {
    let captured = captured();
    captured.clear();

    let (server, mut chat) = chat_on(p, SchemaBudget::default(), &["Hello.", "Still here."]).await;
    let outcome = ask(&mut chat, "Hi").await.expect("the ask works");
    assert_eq!(outcome.text().as_deref(), Some("Hello."));
    let outcome = ask(&mut chat, "Are you there?")
        .await
        .expect("the next ask works");
    assert_eq!(outcome.text().as_deref(), Some("Still here."));

    let received = server.received();
    assert_eq!(received.len(), 2);
    for request in &received {
        let body = request.body.to_string();
        assert!(
            body.contains("\"weather\""),
            "the ordinary tool goes out: {body}"
        );
        assert!(
            !body.contains(HOSTILE),
            "the hostile tool stays out: {body}"
        );
        assert!(body.len() < 8_000, "{} bytes", body.len());
    }
    let roles: Vec<Role> = chat.messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
    let warnings = captured.warnings();
    assert_eq!(warnings.len(), 2, "one warning per request: {warnings:?}");
    let budget = SchemaBudget::default();
    for warning in &warnings {
        // Which limit a dialect passes first depends on how it converts (Ollama copies each
        // definition it inlines, and runs out of bytes before objects).
        let named = [SchemaLimit::Nodes, SchemaLimit::Bytes, SchemaLimit::Depth]
            .into_iter()
            .any(|limit| {
                warning.contains(&format!("limit=\"{}\"", limit.name()))
                    && warning.contains(&format!("max={}", budget.limit(limit)))
            });
        assert!(
            named && warning.contains(HOSTILE) && warning.contains("left out of the request"),
            "{warning}"
        );
    }
}

async fn forcing_the_tool_left_out_is_a_request_error_naming_the_limit(p: &Protocol) {
    let (server, mut chat) = chat_on(p, SchemaBudget::default(), &["Still here."]).await;
    chat.with_tool_options(
        ToolOptions::default().with_choice(ToolChoice::Tool(HOSTILE.to_owned())),
    )
    .unwrap();
    let e = provider_error(ask(&mut chat, "Browse").await.unwrap_err());
    assert_eq!(e.kind(), ProviderErrorKind::Request, "{e}");
    let message = e.to_string();
    assert!(
        message.contains(HOSTILE) && message.contains("max_nodes is 20000"),
        "{message}"
    );
    assert!(server.received().is_empty(), "nothing was sent");
    chat.with_tool_options(ToolOptions::default()).unwrap();
    let outcome = ask(&mut chat, "Are you there?")
        .await
        .expect("the next ask works");
    assert_eq!(outcome.text().as_deref(), Some("Still here."));
}

async fn a_larger_budget_sends_the_tool(p: &Protocol) {
    let budget = SchemaBudget::default()
        .with_max_nodes(1 << 20)
        .with_max_bytes(64 << 20);
    let (server, mut chat) = chat_on(p, budget, &["Hello."]).await;
    let outcome = ask(&mut chat, "Hi").await.expect("the ask works");
    assert_eq!(outcome.text().as_deref(), Some("Hello."));
    let body = server.received()[0].body.to_string();
    assert!(body.contains(HOSTILE), "{body}");
    assert!(
        body.len() <= budget.max_bytes() + 8_000,
        "{} bytes",
        body.len()
    );
}

macro_rules! cases {
    ($($protocol:ident => $def:expr;)*) => {$(
        mod $protocol {
            use super::*;

            #[tokio::test]
            async fn a_larger_budget_sends_the_tool() {
                super::a_larger_budget_sends_the_tool(&$def).await;
            }

            /// Run by [`schema_warnings_are_logged_in_a_process_of_their_own`].
            #[tokio::test]
            #[ignore = "run in a process of its own by schema_warnings_are_logged_in_a_process_of_their_own"]
            async fn a_tool_whose_schema_multiplies_is_left_out_and_the_chat_goes_on() {
                super::a_tool_whose_schema_multiplies_is_left_out_and_the_chat_goes_on(&$def)
                    .await;
            }
        }
    )*};
}

/// The cases that read the warnings, every protocol's, in a process of their own where the
/// capturing subscriber is the only one (see [`captured`]).
#[test]
fn schema_warnings_are_logged_in_a_process_of_their_own() {
    llm_tools_tests::run_alone(
        "a_tool_whose_schema_multiplies_is_left_out_and_the_chat_goes_on",
        9,
    );
}

cases! {
    chat_completions => CHAT_COMPLETIONS;
    responses => RESPONSES;
    anthropic => ANTHROPIC;
    anthropic_strict => ANTHROPIC_STRICT;
    gemini => GEMINI;
    gemini_parameters => GEMINI_PARAMETERS;
    bedrock => BEDROCK;
    cohere => COHERE;
    ollama => OLLAMA;
}

/// Forcing is checked where a protocol can force a tool by name (Ollama cannot).
mod forcing {
    use super::*;

    macro_rules! forcing {
        ($($protocol:ident => $def:expr;)*) => {$(
            #[tokio::test]
            async fn $protocol() {
                super::forcing_the_tool_left_out_is_a_request_error_naming_the_limit(&$def).await;
            }
        )*};
    }

    forcing! {
        chat_completions => CHAT_COMPLETIONS;
        responses => RESPONSES;
        anthropic => ANTHROPIC;
        gemini => GEMINI;
        bedrock => BEDROCK;
        cohere => COHERE;
    }
}

#[test]
fn the_portability_check_names_the_tool_every_dialect_leaves_out() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(BrowseCatalog), Arc::new(Weather)];
    let report = check_portability_within(&tools, Dialect::ALL, &SchemaBudget::default());
    for dialect in Dialect::ALL {
        assert_eq!(report.too_large(*dialect), [HOSTILE], "{dialect}");
    }
    let budget = SchemaBudget::default();
    for finding in report.for_tool(HOSTILE) {
        if finding.kind == FindingKind::TooLarge {
            let e = finding.too_large.as_ref().unwrap();
            // Which limit a dialect passes first depends on how it converts: counting objects
            // as a reader follows the `$ref`s, or copying definitions as it inlines them.
            assert_eq!(e.max, budget.limit(e.limit), "{finding}");
            assert_eq!(e.tool.as_deref(), Some(HOSTILE));
            assert!(finding.message.contains(e.limit.name()), "{finding}");
        }
    }
    assert_eq!(
        report
            .findings()
            .iter()
            .find(|f| f.dialect == Dialect::Bedrock && f.tool == HOSTILE)
            .and_then(|f| f.too_large.as_ref())
            .map(|e| e.limit),
        Some(SchemaLimit::Nodes)
    );
    assert!(
        report
            .for_tool("weather")
            .all(|f| f.kind == FindingKind::Weakened)
    );
    assert!(!report.is_portable());
    let roomy = check_portability_within(
        &tools,
        Dialect::ALL,
        &SchemaBudget::default().with_max_nodes(1 << 20),
    );
    assert!(roomy.too_large(Dialect::GeminiJsonSchema).is_empty());
}

#[tokio::test]
async fn a_definition_a_larger_budget_let_through_does_not_reach_a_smaller_one() {
    // The same tool (one spec, whose definitions are built once per dialect) on two providers
    // of one protocol: the roomy one sends it, the default one still leaves it out.
    let roomy = SchemaBudget::default().with_max_nodes(1 << 20);
    let (server, mut chat) = chat_on(&CHAT_COMPLETIONS, roomy, &["Hello."]).await;
    let _ = ask(&mut chat, "Hi").await.expect("the ask works");
    assert!(server.received()[0].body.to_string().contains(HOSTILE));

    let (server, mut chat) = chat_on(&CHAT_COMPLETIONS, SchemaBudget::default(), &["Hello."]).await;
    let _ = ask(&mut chat, "Hi").await.expect("the ask works");
    let body = server.received()[0].body.to_string();
    assert!(!body.contains(HOSTILE), "{body}");
    assert!(body.contains("\"weather\""), "{body}");
}

//! What the Bedrock provider writes and reads: system blocks, tool results with their error
//! status and attachments in one user turn with the next question, the tool choices Converse
//! has (and the one it lacks), namespaced names mapped back, reasoning blocks kept and sent back
//! in place, and the path of a model id.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;

use llm_tools_core::{
    Attachment, Message, Namespace, Part, ProviderErrorKind, Request, Tool, ToolCall, ToolChoice,
    tool,
};
use llm_tools_providers::bedrock::{AwsCredentials, Bedrock, BedrockConfig};
use llm_tools_tests::fixtures::Weather;
use serde_json::{Value, json};

const CRM: Namespace = Namespace::new("crm").description("Customer records");

/// Finds a customer by email
#[tool(namespace = CRM)]
async fn lookup(email: String) -> String {
    format!("customer {email}")
}

fn provider() -> Bedrock {
    Bedrock::new(
        BedrockConfig::new("us.amazon.nova-2-lite-v1:0")
            .with_credentials(AwsCredentials::new("AKIDTEST", "secret"))
            .with_max_tokens(512),
    )
    .unwrap()
}

/// Lists a customer's open orders
#[tool(defer)]
async fn open_orders(customer: String) -> String {
    format!("no open orders for {customer}")
}

/// Converse has no tool search: a deferred tool goes out only when the chat chose it (its own
/// search found it).
#[test]
fn a_deferred_tool_goes_out_only_when_chosen() {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(OpenOrders)];
    let messages = [Message::user("Hi")];
    let bedrock = provider();
    let names = |chosen: bool| -> Vec<String> {
        let request = Request::new(&messages, &tools).with_deferred_chosen(chosen);
        let body: Value = serde_json::from_slice(&bedrock.request_body(&request).unwrap()).unwrap();
        body["toolConfig"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["toolSpec"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(names(false), ["weather"]);
    assert_eq!(names(true), ["weather", "open_orders"]);
}

fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(Weather), Arc::new(Lookup)]
}

fn body(provider: &Bedrock, messages: &[Message], choice: &ToolChoice) -> Value {
    let tools = tools();
    let request = Request::new(messages, &tools).with_choice(choice);
    serde_json::from_slice(&provider.request_body(&request).unwrap()).unwrap()
}

#[test]
fn results_errors_and_attachments_travel_in_one_user_turn_with_the_next_question() {
    let calls = vec![
        ToolCall::new("tu-1", "weather", r#"{"latitude":"1","longitude":"2"}"#),
        ToolCall::new("tu-2", "lookup", r#"{"email":"a@b.c"}"#).with_namespace(Some("crm".into())),
    ];
    let png = Attachment::bytes("image/png", vec![0x89, b'P', b'N', b'G']);
    let messages = vec![
        Message::system("Be brief."),
        Message::user("Weather and customer?"),
        Message::assistant_with_calls("Looking.", calls),
        Message::tool_result_parts(
            "tu-1",
            vec![Part::text("15°C"), Part::Attachment(png)],
            false,
        ),
        Message::tool_result("tu-2", "Service down", true),
        Message::user("Thanks"),
    ];
    let b = body(&provider(), &messages, &ToolChoice::Auto);
    assert_eq!(b["system"], json!([{"text": "Be brief."}]));
    assert_eq!(b["inferenceConfig"], json!({"maxTokens": 512}));
    let turns = b["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{turns:#?}");
    assert_eq!(
        turns[1]["content"],
        json!([
            {"text": "Looking."},
            {"toolUse": {"toolUseId": "tu-1", "name": "weather", "input": {"latitude": "1", "longitude": "2"}}},
            {"toolUse": {"toolUseId": "tu-2", "name": "crm_lookup", "input": {"email": "a@b.c"}}}
        ])
    );
    assert_eq!(
        turns[2],
        json!({"role": "user", "content": [
            {"toolResult": {"toolUseId": "tu-1", "content": [
                {"text": "15°C"},
                {"image": {"format": "png", "source": {"bytes": "iVBORw=="}}}
            ]}},
            {"toolResult": {"toolUseId": "tu-2", "content": [{"text": "Service down"}], "status": "error"}},
            {"text": "Thanks"}
        ]})
    );
    // Auto is Converse's default: no toolChoice.
    assert!(b["toolConfig"].get("toolChoice").is_none());
    let names: Vec<&str> = b["toolConfig"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["toolSpec"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["weather", "crm_lookup"]);
}

#[test]
fn tool_choices_map_to_any_and_tool_and_none_is_refused_once_tools_were_used() {
    let p = provider();
    let ask = [Message::user("Hi")];
    assert_eq!(
        body(&p, &ask, &ToolChoice::Required)["toolConfig"]["toolChoice"],
        json!({"any": {}})
    );
    assert_eq!(
        body(&p, &ask, &ToolChoice::tool("crm_lookup"))["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "crm_lookup"}})
    );
    // Before any call, `None` sends no tools at all.
    assert!(
        body(&p, &ask, &ToolChoice::None)
            .get("toolConfig")
            .is_none()
    );
    let used = [
        Message::user("Hi"),
        Message::assistant_with_calls("", vec![ToolCall::new("tu-1", "weather", "{}")]),
        Message::tool_result("tu-1", "15°C", false),
    ];
    let tools = tools();
    let err = p
        .request_body(&Request::new(&used, &tools).with_choice(&ToolChoice::None))
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Request);
    assert!(err.message().contains("cannot forbid"), "{err}");
    let err = p
        .request_body(&Request::new(&ask, &tools).with_choice(&ToolChoice::tool("nope")))
        .unwrap_err();
    assert!(err.message().contains("nope"), "{err}");
}

#[test]
fn url_attachments_are_refused_with_the_reason() {
    let messages = [
        Message::user("Hi"),
        Message::assistant_with_calls("", vec![ToolCall::new("tu-1", "weather", "{}")]),
        Message::tool_result_parts(
            "tu-1",
            vec![Part::Attachment(Attachment::url(
                "image/png",
                "https://example.com/a.png",
            ))],
            false,
        ),
    ];
    let tools = tools();
    let err = provider()
        .request_body(&Request::new(&messages, &tools))
        .unwrap_err();
    assert!(err.message().contains("not URLs"), "{err}");
}

#[test]
fn reasoning_blocks_are_kept_and_sent_back_in_place_and_names_map_back() {
    let p = provider();
    let answer = json!({"output": {"message": {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": "I should look it up.", "signature": "sig-1"}}},
        {"text": "Let me check."},
        {"toolUse": {"toolUseId": "tu-9", "name": "crm_lookup", "input": {"email": "a@b.c"}}}
    ]}}, "stopReason": "tool_use",
       "usage": {"inputTokens": 10, "outputTokens": 5, "cacheReadInputTokens": 4, "totalTokens": 19}});
    let tools = tools();
    let response = p
        .parse_response(answer.to_string().as_bytes(), &tools)
        .unwrap();
    let m = &response.message;
    assert_eq!(m.text(), "Let me check.");
    assert_eq!(m.tool_calls[0].name, "lookup");
    assert_eq!(m.tool_calls[0].namespace.as_deref(), Some("crm"));
    let usage = m.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.cached_input_tokens,
            usage.output_tokens
        ),
        (14, 4, 5)
    );
    assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));

    let history = [
        Message::user("Find a@b.c"),
        m.clone(),
        Message::tool_result("tu-9", "customer a@b.c", false),
    ];
    let b = body(&p, &history, &ToolChoice::Auto);
    assert_eq!(
        b["messages"][1]["content"],
        json!([
            {"reasoningContent": {"reasoningText": {"text": "I should look it up.", "signature": "sig-1"}}},
            {"text": "Let me check."},
            {"toolUse": {"toolUseId": "tu-9", "name": "crm_lookup", "input": {"email": "a@b.c"}}}
        ])
    );
}

#[test]
fn an_answer_without_output_is_a_decode_error() {
    let err = provider()
        .parse_response(br#"{"stopReason":"end_turn"}"#, &[])
        .unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Decode);
    let err = provider().parse_response(b"<html>", &[]).unwrap_err();
    assert_eq!(err.kind(), ProviderErrorKind::Decode);
}

#[test]
fn cache_points_follow_the_system_prompt_and_the_tools() {
    let p = Bedrock::new(
        BedrockConfig::new("us.anthropic.claude-haiku-4-5-20251001-v1:0")
            .with_credentials(AwsCredentials::new("AKIDTEST", "secret"))
            .with_cache_points(true),
    )
    .unwrap();
    let messages = [Message::system("Be brief."), Message::user("Hi")];
    let b = body(&p, &messages, &ToolChoice::Auto);
    assert_eq!(
        b["system"],
        json!([{"text": "Be brief."}, {"cachePoint": {"type": "default"}}])
    );
    let tools = b["toolConfig"]["tools"].as_array().unwrap();
    assert_eq!(
        tools.last().unwrap(),
        &json!({"cachePoint": {"type": "default"}})
    );
    assert_eq!(tools.len(), 3);
    // Off by default.
    let plain = body(&provider(), &messages, &ToolChoice::Auto);
    assert_eq!(plain["system"], json!([{"text": "Be brief."}]));
}

#[test]
fn cited_text_is_the_answers_text_and_goes_back_once_inside_its_block() {
    // Claude on Bedrock answering over a tool's search results: the text is inside the
    // `citationsContent` block, next to plain text blocks.
    let p = provider();
    let cited = json!({"citationsContent": {
        "citations": [{"location": {"searchResultLocation": {"searchResultIndex": 0, "start": 0, "end": 1}},
            "source": "https://example.com/ruby-facts", "title": "Ruby Facts",
            "sourceContent": [{"text": "Ruby was created by Matz."}]}],
        "content": [{"text": "Ruby was created by Matz"}]}});
    let content = json!([{"text": "From the knowledge base: "}, cited, {"text": "."}]);
    let answer = json!({"output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "end_turn", "usage": {"inputTokens": 10, "outputTokens": 5}});
    let tools = tools();
    let response = p
        .parse_response(answer.to_string().as_bytes(), &tools)
        .unwrap();
    let m = &response.message;
    assert_eq!(
        m.text(),
        "From the knowledge base: Ruby was created by Matz."
    );
    assert_eq!(m.citations.len(), 1);
    assert_eq!(
        m.citations[0].cited_text.as_deref(),
        Some("Ruby was created by Matz.")
    );

    let history = [
        Message::user("Who made Ruby?"),
        m.clone(),
        Message::user("Thanks"),
    ];
    let b = body(&p, &history, &ToolChoice::Auto);
    assert_eq!(
        b["messages"][1]["content"], content,
        "each text goes back once"
    );
}

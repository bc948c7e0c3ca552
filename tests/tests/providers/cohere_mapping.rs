//! What the Cohere provider writes and reads beyond the recordings: a forced tool offered alone
//! with `REQUIRED`, results as documents (an error's text saying so), citations kept, the
//! recorded auth and context-length errors typed, a stream cut short, and the key never shown.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use std::sync::Arc;

use llm_tools_core::chat::Chat;
use llm_tools_core::{Message, ProviderErrorKind, Request, Tool, ToolCall, ToolChoice};
use llm_tools_providers::cohere::{Cohere, CohereConfig};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::record::{RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use llm_tools_tests::fixtures::{self, BestLanguageToLearn, Weather};
use llm_tools_tests::serving::{self, provider_error, stream_turn};
use serde_json::{Value, json};

const KEY: &str = "co-canary-key-41d0";

fn provider(url: String) -> Cohere {
    Cohere::new(
        CohereConfig::new("command-a-03-2025")
            .with_base_url(url)
            .with_api_key(KEY)
            .with_retry(RetryPolicy::none()),
    )
    .unwrap()
}

/// Lists a customer's open orders
#[llm_tools_core::tool(defer)]
async fn open_orders(customer: String) -> String {
    format!("no open orders for {customer}")
}

/// Cohere has no tool search: a deferred tool goes out only when the chat chose it (its own
/// search found it).
#[test]
fn a_deferred_tool_goes_out_only_when_chosen() {
    let p = provider("http://127.0.0.1:9/v2".into());
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(OpenOrders)];
    let messages = [Message::user("Hi")];
    let names = |chosen: bool| -> Vec<String> {
        let request = Request::new(&messages, &tools).with_deferred_chosen(chosen);
        let body: Value =
            serde_json::from_slice(&p.request_body(&request, false).unwrap()).unwrap();
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(false), ["weather"]);
    assert_eq!(names(true), ["weather", "open_orders"]);
    assert_eq!(names(false), ["weather"], "each list as asked");
}

#[test]
fn a_forced_tool_is_offered_alone_and_results_go_as_documents() {
    let p = provider("http://127.0.0.1:9/v2".into());
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Weather), Arc::new(BestLanguageToLearn)];
    let messages = [
        Message::user("Hi"),
        Message::assistant_with_calls(
            "",
            vec![ToolCall::new("c1", "weather", r#"{"latitude":"1"}"#)],
        ),
        Message::tool_result("c1", "Service down", true),
    ];
    let choice = ToolChoice::tool("best_language_to_learn");
    let body: Value = serde_json::from_slice(
        &p.request_body(&Request::new(&messages, &tools).with_choice(&choice), false)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(body["tool_choice"], "REQUIRED");
    assert_eq!(body["tools"].as_array().unwrap().len(), 1);
    assert_eq!(
        body["tools"][0]["function"]["name"],
        "best_language_to_learn"
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "tool", "tool_call_id": "c1",
               "content": [{"type": "document", "document": {"data": "Error: Service down"}}]})
    );
    // An assistant turn of calls only sends no empty content.
    assert!(body["messages"][1].get("content").is_none());
}

#[test]
fn citations_are_kept_in_order() {
    let p = provider("http://127.0.0.1:9/v2".into());
    let answer = json!({"id": "a1", "message": {"role": "assistant",
        "content": [{"type": "text", "text": "It is 15°C."}],
        "citations": [{"start": 6, "end": 11, "text": "15°C.", "sources": [{"type": "tool", "id": "c1:0"}]}]},
        "finish_reason": "COMPLETE",
        "usage": {"tokens": {"input_tokens": 12, "output_tokens": 4}, "cached_tokens": 8}});
    let response = p
        .parse_response(answer.to_string().as_bytes(), &[])
        .unwrap();
    let data = response.message.provider_data.unwrap();
    let citations = &data.for_protocol("cohere").unwrap()["citations"];
    assert_eq!(citations[0]["text"], "15°C.");
    let usage = response.message.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cached_input_tokens
        ),
        (12, 4, 8)
    );
    assert_eq!(response.request_id.as_deref(), Some("a1"));
}

#[tokio::test]
async fn recorded_errors_and_a_cut_stream_are_typed_and_the_key_never_shows() {
    for file in fixtures::recordings("cohere-v2-errors") {
        let recording = Recording::load(&file).unwrap();
        let status = recording.interactions[0].response.status;
        let server = ReplayServer::start(recording).await.unwrap();
        let mut chat = Chat::new(provider(format!("{}/v2", server.url())));
        let err = provider_error(chat.ask("Hi").await.unwrap_err());
        assert_eq!(err.status(), Some(status));
        assert!(!err.is_retryable());
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains(KEY), "{shown}");
        if status == 400 {
            assert_eq!(err.error_type(), Some("TOO_MANY_TOKENS"));
        }
    }
    let cut = serving::sse_events(&[
        (
            "message-start",
            json!({"type": "message-start", "id": "m1", "delta": {"message": {"role": "assistant"}}}),
        ),
        (
            "content-delta",
            json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "Hal"}}}}),
        ),
    ]);
    let whole = serving::sse_events(&[
        (
            "content-delta",
            json!({"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "Fine."}}}}),
        ),
        (
            "message-end",
            json!({"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}),
        ),
    ]);
    let server = ReplayServer::with_interactions(vec![
        serving::exchange("https://api.cohere.com/v2/chat", RecordedResponse::sse(cut)),
        serving::exchange(
            "https://api.cohere.com/v2/chat",
            RecordedResponse::sse(whole),
        ),
    ])
    .await
    .unwrap();
    let mut chat = Chat::new(provider(format!("{}/v2", server.url())));
    let err = provider_error(stream_turn(&mut chat, "Hi").await.unwrap_err());
    assert_eq!(err.kind(), ProviderErrorKind::Stream);
    assert!(err.is_retryable());
    let (text, _) = stream_turn(&mut chat, "Hi").await.unwrap();
    assert_eq!(text, "Fine.");
}

#[tokio::test]
async fn a_tool_call_start_that_is_not_an_object_does_not_panic() {
    // Found by the `protocols` fuzz target: `tool_calls` as an array in `tool-call-start`.
    use futures::StreamExt;
    let p = provider("http://127.0.0.1:9/v2".into());
    let body = serving::sse_events(&[
        (
            "tool-call-start",
            json!({"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": [1, 2]}}}),
        ),
        (
            "tool-call-end",
            json!({"type": "tool-call-end", "index": 0}),
        ),
        (
            "message-end",
            json!({"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}),
        ),
    ]);
    let bytes = futures::stream::iter([Ok(bytes::Bytes::from(body))]);
    let events: Vec<_> = p.stream_events(bytes, &[]).collect().await;
    let Some(Ok(llm_tools_core::StreamEvent::Completed(done))) = events.last() else {
        panic!("{events:?}");
    };
    // A call with no name: the chat reports it to the model as an unknown tool.
    assert_eq!(done.message.tool_calls.len(), 1);
    assert_eq!(done.message.tool_calls[0].name, "");
}

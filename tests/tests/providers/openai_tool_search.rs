//! OpenAI's native `tool_search` on Responses, from the protocol's documented format (no
//! recording of it exists here): the answers below are written after the API reference's
//! `tool_search_call` / `tool_search_output` items and served from a loopback HTTP server to
//! the real provider and the real chat loop. Deferred tools go with `defer_loading: true`
//! beside a `tool_search` tool on models that have it, the search items are kept and sent back
//! in order, and a model without it gets the chat's own search.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers

use llm_tools_core::chat::{Chat, TOOL_SEARCH_NAME};
use llm_tools_core::{Namespace, tool};
use llm_tools_providers::http::RetryPolicy;
use llm_tools_providers::openai::{OpenAiConfig, OpenAiResponses};
use llm_tools_providers::record::{Interaction, RecordedRequest, RecordedResponse, Recording};
use llm_tools_providers::replay::ReplayServer;
use serde_json::{Value, json};

const CRM: Namespace = Namespace::new("crm").description("CRM tools for customers and orders");

/// Gets the current weather for a city
#[tool]
async fn weather(city: String) -> String {
    format!("15°C in {city}")
}

/// Lists the open orders of a customer
#[tool(defer, namespace = CRM)]
async fn list_open_orders(customer_id: String) -> String {
    format!("order 7 for {customer_id}: shipped")
}

/// Gets the weather forecast for the next days
#[tool(defer)]
async fn forecast(city: String, days: u8) -> String {
    format!("sunny in {city} for {days} days")
}

fn answer(output: Value) -> RecordedResponse {
    let body = json!({
        "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5.4",
        "output": output,
        "usage": {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150}
    });
    RecordedResponse::new(200, "application/json", body.to_string())
}

fn recording(answers: Vec<RecordedResponse>) -> Recording {
    let request = RecordedRequest::post("https://api.openai.com/v1/responses", json!({}));
    let interactions: Vec<Interaction> = answers
        .into_iter()
        .map(|a| Interaction::new(request.clone(), a))
        .collect();
    Recording::from_json(&json!({ "interactions": interactions }).to_string()).unwrap()
}

fn provider(model: &str, server: &ReplayServer) -> OpenAiResponses {
    OpenAiResponses::new(
        OpenAiConfig::openai(model)
            .with_base_url(server.url())
            .with_api_key("test-key")
            .with_retry(RetryPolicy::none()),
    )
    .unwrap()
}

#[tokio::test]
async fn deferred_tools_go_to_openais_search_and_its_items_are_sent_back_in_order() {
    let search_call = json!({
        "type": "tool_search_call", "id": "tsc_1", "call_id": null, "execution": "server",
        "arguments": {"query": "open orders"}, "status": "completed"
    });
    let search_output = json!({
        "type": "tool_search_output", "id": "tso_1", "call_id": null, "execution": "server",
        "tools": [{"type": "namespace", "name": "crm", "description": "CRM tools for customers and orders",
                   "tools": [{"type": "function", "name": "list_open_orders", "defer_loading": true,
                              "parameters": {"type": "object", "properties": {"customer_id": {"type": "string"}}}}]}],
        "status": "completed"
    });
    let call = json!({
        "type": "function_call", "id": "fc_1", "call_id": "call_1", "namespace": "crm",
        "name": "list_open_orders", "arguments": "{\"customer_id\":\"42\"}", "status": "completed"
    });
    let text = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": "Order 7 has shipped.", "annotations": []}]});
    let server = ReplayServer::start(recording(vec![
        answer(json!([search_call, search_output, call])),
        answer(json!([text])),
    ]))
    .await
    .unwrap();

    let mut chat = Chat::new(provider("gpt-5.4", &server));
    chat.with_tools((Weather, ListOpenOrders, Forecast))
        .unwrap();
    let outcome = chat.ask("Open orders for customer 42?").await.unwrap();
    assert_eq!(outcome.text().as_deref(), Some("Order 7 has shipped."));

    let received = server.received();
    let tools = received[0].body["tools"].as_array().unwrap().clone();
    // Every tool is offered, the deferred ones marked, and OpenAI's search beside them; the
    // chat's own search tool is not.
    assert_eq!(tools.len(), 4, "{tools:?}");
    assert_eq!(tools[0]["name"], "weather");
    assert!(tools[0].get("defer_loading").is_none());
    assert_eq!(tools[1]["type"], "namespace");
    assert_eq!(tools[1]["tools"][0]["defer_loading"], true);
    assert_eq!(tools[2]["name"], "forecast");
    assert_eq!(tools[2]["defer_loading"], true);
    assert_eq!(tools[3], json!({"type": "tool_search"}));
    assert!(!tools.iter().any(|t| t["name"] == TOOL_SEARCH_NAME));

    // The search's items go back whole, in the order the model produced them, before the call.
    let input = received[1].body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "tool_search_call",
            "tool_search_output",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(input[1], search_call);
    assert_eq!(input[2], search_output);
    // The search shows as a server tool use on the answer.
    let first_answer = &chat.messages()[1];
    assert_eq!(first_answer.server_tool_uses.len(), 1);
    assert_eq!(first_answer.server_tool_uses[0].name, "tool_search");
    assert_eq!(
        first_answer.server_tool_uses[0].input,
        json!({"query": "open orders"})
    );
}

#[tokio::test]
async fn a_model_without_tool_search_gets_the_chats_own_search() {
    let text = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": "Hello.", "annotations": []}]});
    let server = ReplayServer::start(recording(vec![answer(json!([text]))]))
        .await
        .unwrap();
    let mut chat = Chat::new(provider("gpt-5-nano", &server));
    chat.with_tools((Weather, ListOpenOrders, Forecast))
        .unwrap();
    let hello = chat.ask("Hi").await.unwrap();
    assert_eq!(hello.text().as_deref(), Some("Hello."));
    let tools = server.received()[0].body["tools"]
        .as_array()
        .unwrap()
        .clone();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["weather", TOOL_SEARCH_NAME]);
    assert!(!tools.iter().any(|t| t["type"] == "tool_search"));
    assert!(!tools.iter().any(|t| t.get("defer_loading").is_some()));
}

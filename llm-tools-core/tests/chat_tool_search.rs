//! Deferred tools and the chat's own tool search: what each request offers, what a search
//! finds and loads, its errors, forced tools, providers with a native search, a tool of the
//! user's named `tool_search`, and the found tools kept across a saved state.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside `#[test]` fns

mod common;

use llm_tools_core::chat::{Chat, MAX_FOUND, Outcome, TOOL_SEARCH_NAME, ToolOptions};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Namespace, Role, ToolChoice, tool};
use serde_json::json;

const BILLING: Namespace = Namespace::new("billing").description("Invoices and payments");

/// Gets the current weather for a city
#[tool]
async fn weather(city: String) -> String {
    format!("15°C in {city}")
}

/// Gets the weather forecast for the next days
#[tool(defer)]
async fn forecast(city: String, days: u8) -> String {
    format!("sunny in {city} for {days} days")
}

/// Lists the open orders of a customer
#[tool(defer)]
async fn open_orders(customer_id: String) -> String {
    format!("no open orders for {customer_id}")
}

/// Finds an invoice by its number
#[tool(defer, namespace = BILLING)]
async fn invoice(number: u32) -> String {
    format!("invoice {number}: paid")
}

fn done(outcome: Outcome) {
    common::answered(outcome);
}

fn results(chat: &Chat) -> Vec<String> {
    common::tool_result_texts(chat.messages())
}

/// The joined names each request offered.
fn offered(model: &ScriptedProvider) -> Vec<Vec<String>> {
    model.requests().into_iter().map(|r| r.tools).collect()
}

fn chat_with(model: &ScriptedProvider) -> Chat {
    let mut chat = Chat::new(model.clone());
    chat.with_tools((Weather, Forecast, OpenOrders, Invoice))
        .unwrap();
    chat
}

#[tokio::test]
async fn a_search_loads_the_matching_tools_for_the_rest_of_the_chat() {
    let model = ScriptedProvider::new()
        .then_call(TOOL_SEARCH_NAME, json!({"query": "weather forecast"}))
        .then_call("forecast", json!({"city": "Berlin", "days": 3}))
        .then_text("Sunny.")
        .then_text("Anything else?");
    let mut chat = chat_with(&model);
    done(chat.ask("Weather in Berlin for three days?").await.unwrap());
    done(chat.ask("Thanks").await.unwrap());

    let offered = offered(&model);
    assert_eq!(offered[0], ["weather", "tool_search"]);
    assert_eq!(offered[1], ["weather", "forecast", "tool_search"]);
    assert_eq!(offered[3], offered[1], "found tools stay loaded");
    let results = results(&chat);
    assert_eq!(
        results[0],
        "These tools are loaded; call them in your next answer:\n\
         - forecast: Gets the weather forecast for the next days"
    );
    assert_eq!(results[1], "sunny in Berlin for 3 days");
}

#[tokio::test]
async fn names_count_most_and_namespaces_are_searched_by_their_description() {
    let model = ScriptedProvider::new()
        .then_call(TOOL_SEARCH_NAME, json!({"query": "payments"}))
        .then_call(TOOL_SEARCH_NAME, json!({"query": "customer orders city"}))
        .then_text("Done.");
    let mut chat = chat_with(&model);
    done(chat.ask("Find things").await.unwrap());
    let results = results(&chat);
    assert!(results[0].ends_with("- billing_invoice: Finds an invoice by its number"));
    // `orders` is in the name of `open_orders` (3 + 1 for `customer`), `city` only a
    // parameter of `forecast` (1): best first.
    let lines: Vec<&str> = results[1].lines().skip(1).collect();
    assert_eq!(
        lines,
        [
            "- open_orders: Lists the open orders of a customer",
            "- forecast: Gets the weather forecast for the next days",
        ]
    );
    // Every deferred tool is loaded: the search tool is no longer offered.
    assert_eq!(
        offered(&model)[2],
        ["weather", "forecast", "open_orders", "billing_invoice"]
    );
}

#[tokio::test]
async fn a_search_loads_at_most_max_found_tools() {
    let tools: Vec<common::TestTool> = (0..MAX_FOUND + 3)
        .map(|i| {
            let name: &'static str = Box::leak(format!("sales_report_{i}").into_boxed_str());
            common::TestTool::text(name, "report").spec_mut(|s| s.with_defer(true))
        })
        .collect();
    let model = ScriptedProvider::new()
        .then_call(TOOL_SEARCH_NAME, json!({"query": "sales report"}))
        .then_text("Done.");
    let mut chat = Chat::new(model.clone());
    chat.with_tools(tools).unwrap();
    done(chat.ask("Reports?").await.unwrap());
    assert_eq!(results(&chat)[0].lines().count(), 1 + MAX_FOUND);
    assert_eq!(
        offered(&model)[1].len(),
        MAX_FOUND + 1,
        "found tools and the search"
    );
}

/// A query of megabytes is read, and shown back, as its first thousand characters.
#[tokio::test]
async fn a_query_of_megabytes_is_read_as_its_first_thousand_characters() {
    let query = format!("spaceship {}", "z".repeat(4 << 20));
    let model = ScriptedProvider::new()
        .then_call(TOOL_SEARCH_NAME, json!({"query": query}))
        .then_text("Nothing found.");
    let mut chat = chat_with(&model);
    done(chat.ask("Fly me to the moon").await.unwrap());
    let results = results(&chat);
    assert!(results[0].len() < 1_200, "{} bytes", results[0].len());
    assert!(
        results[0].starts_with("No tool matches \"spaceship zzz"),
        "{}",
        &results[0][..60]
    );
    assert!(
        results[0].contains("…\" (3 not loaded yet)"),
        "{}",
        &results[0][results[0].len() - 80..]
    );
}

#[tokio::test]
async fn no_match_and_bad_arguments_are_told_to_the_model_and_load_nothing() {
    let model = ScriptedProvider::new()
        .then_call(TOOL_SEARCH_NAME, json!({"query": "spaceship"}))
        .then_call(TOOL_SEARCH_NAME, json!({"query": "  "}))
        .then_call(TOOL_SEARCH_NAME, json!({"words": "weather"}))
        .then_text("Nothing found.");
    let mut chat = chat_with(&model);
    done(chat.ask("Fly me to the moon").await.unwrap());
    let results = results(&chat);
    assert_eq!(
        results[0],
        "No tool matches \"spaceship\" (3 not loaded yet). Search again with other words."
    );
    assert!(results[1].contains("`query` is empty"), "{results:?}");
    assert!(results[2].contains("query"), "{results:?}");
    let errors: Vec<bool> = chat
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.is_error)
        .collect();
    assert_eq!(errors, [false, true, true]);
    assert!(
        offered(&model)
            .iter()
            .all(|tools| tools == &["weather", "tool_search"])
    );
}

#[tokio::test]
async fn a_forced_deferred_tool_is_offered() {
    let model = ScriptedProvider::new()
        .then_call("open_orders", json!({"customer_id": "42"}))
        .then_text("None.");
    let mut chat = chat_with(&model);
    chat.with_tool_options(ToolOptions::default().with_choice(ToolChoice::tool("open_orders")))
        .unwrap();
    done(chat.ask("Orders of 42?").await.unwrap());
    assert_eq!(
        offered(&model)[0],
        ["weather", "open_orders", "tool_search"]
    );
    assert_eq!(results(&chat), ["no open orders for 42"]);
}

#[tokio::test]
async fn a_provider_with_a_native_search_is_offered_every_tool() {
    let model = ScriptedProvider::new()
        .with_native_tool_search()
        .then_text("Hi.");
    let mut chat = chat_with(&model);
    done(chat.ask("Hi").await.unwrap());
    assert_eq!(
        offered(&model)[0],
        ["weather", "forecast", "open_orders", "billing_invoice"]
    );
}

/// The user's own search, which the chat must leave alone
#[tool]
async fn tool_search(query: String) -> String {
    format!("the user's search for {query}")
}

#[tokio::test]
async fn a_tool_of_the_users_named_tool_search_wins_and_deferred_tools_are_sent_loaded() {
    let model = ScriptedProvider::new()
        .then_call(TOOL_SEARCH_NAME, json!({"query": "weather"}))
        .then_text("Done.");
    let mut chat = chat_with(&model);
    chat.with_tools(ToolSearch).unwrap();
    done(chat.ask("Search").await.unwrap());
    assert_eq!(results(&chat), ["the user's search for weather"]);
    assert_eq!(
        offered(&model)[0],
        [
            "weather",
            "forecast",
            "open_orders",
            "billing_invoice",
            "tool_search"
        ]
    );
}

#[tokio::test]
async fn found_tools_are_part_of_the_saved_state() {
    let model = ScriptedProvider::new()
        .then_call(TOOL_SEARCH_NAME, json!({"query": "forecast"}))
        .then_text("Found it.")
        .then_text("Still here.");
    let mut chat = chat_with(&model);
    done(chat.ask("Find the forecast tool").await.unwrap());
    let saved = serde_json::to_string(chat.state()).unwrap();

    let mut restored =
        Chat::from_state(model.clone(), serde_json::from_str(&saved).unwrap()).unwrap();
    restored
        .with_tools((Weather, Forecast, OpenOrders, Invoice))
        .unwrap();
    done(restored.ask("And now?").await.unwrap());
    assert_eq!(offered(&model)[2], ["weather", "forecast", "tool_search"]);
}

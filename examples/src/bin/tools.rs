//! Declaring tools and giving them to a chat: an `async fn` with `#[tool]`, a type with context
//! and an `execute` method, adding, replacing and clearing tools, and what happens when the model
//! calls a tool the chat does not have.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin tools
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use std::collections::HashMap;

use llm_tools_core::chat::Chat;
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{ToolError, tool};
use llm_tools_examples::print_transcript;
use serde_json::json;

/// Returns the current date, time, and time zone
#[tool]
async fn current_time() -> String {
    "2026-12-02 14:00 UTC".to_owned()
}

/// Gets current weather for a location
///
/// # Arguments
/// * `latitude` - Latitude in decimal degrees, e.g. 52.52
/// * `longitude` - Longitude in decimal degrees
#[tool]
async fn weather(latitude: f64, longitude: f64) -> Result<String, ToolError> {
    if !(-90.0..=90.0).contains(&latitude) {
        return Err(ToolError::recoverable(
            "latitude must be between -90 and 90",
        ));
    }
    Ok(format!("15°C, wind 10 km/h at {latitude}, {longitude}"))
}

/// A tool that needs application state: a type with an `execute` method.
struct CustomerLookup {
    customers: HashMap<String, String>,
}

#[tool]
impl CustomerLookup {
    /// Finds a customer by email
    ///
    /// # Arguments
    /// * `email` - The customer's email address
    async fn execute(&self, email: String) -> Option<String> {
        self.customers.get(&email).cloned()
    }
}

#[tokio::main]
async fn main() -> Result<(), llm_tools_core::Error> {
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    // The scripted provider plays the model: it asks for tools, then answers.
    let model = ScriptedProvider::new()
        .then_calls([
            ("weather", json!({"latitude": 52.52, "longitude": 13.40})),
            ("current_time", json!({})),
        ])
        .then_text("It's 15°C in Berlin at 14:00 UTC.")
        .then_call("customer_lookup", json!({"email": "ada@example.com"}))
        .then_text("Ada Lovelace is a customer.")
        .then_call("wether", json!({}))
        .then_text("Sorry, I misspelled the tool.");

    let mut chat = Chat::new(model);
    chat.with_tools((Weather, CurrentTime))?;
    let lookup = CustomerLookup {
        customers: HashMap::from([("ada@example.com".into(), "Ada Lovelace".into())]),
    };
    // Tools can be added at any time; a second tool with a taken name is an error, never a
    // silent overwrite.
    chat.with_tools(lookup)?;
    if let Err(e) = chat.with_tools(Weather) {
        println!("Adding `weather` twice: {e}\n");
    }

    let outcome = chat
        .ask("What's the weather in Berlin, and what time is it?")
        .await?;
    println!("Answer: {}", outcome.text().unwrap_or_default());
    let outcome = chat.ask("Is ada@example.com a customer?").await?;
    println!("Answer: {}", outcome.text().unwrap_or_default());

    // A call to a tool the chat does not have gets an error result naming similar tools, and
    // the conversation goes on.
    let outcome = chat.ask("And the weather again?").await?;
    println!("Answer: {}\n", outcome.text().unwrap_or_default());
    print_transcript(chat.messages());

    // Replace the whole set, or clear it.
    chat.replace_tools(CurrentTime)?;
    println!("\nAfter replace_tools: {} tool(s)", chat.tools().len());
    chat.clear_tools();
    println!("After clear_tools: {} tool(s)", chat.tools().len());
    Ok(())
}

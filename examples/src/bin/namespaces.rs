//! Namespaces: groups of tools that may share names. A chat keys each tool by its joined name
//! (`crm_lookup`), routes the model's calls by namespace and name, and can force a namespaced
//! tool by its joined name.
//!
//! ```sh
//! cargo run -p llm-tools-examples --bin namespaces
//! ```
#![allow(clippy::print_stdout)] // an example program talks to its user

use llm_tools_core::chat::{Chat, ToolOptions};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Namespace, ToolCall, ToolChoice, tool, toolset};
use llm_tools_examples::print_transcript;

/// Customer records and orders.
pub const CRM: Namespace = Namespace::new("crm").description("Customer records and orders");

/// Invoices and payments.
pub const BILLING: Namespace = Namespace::new("billing").description("Invoices and payments");

/// Both namespaces have a `lookup` tool: their joined names differ.
pub struct Crm;

#[toolset(namespace = CRM)]
impl Crm {
    /// Finds a customer by email
    #[tool]
    pub async fn lookup(&self, email: String) -> String {
        format!("{email}: Ada Lovelace, customer since 1843")
    }

    /// Counts the customers
    #[tool(namespace = none)]
    pub async fn customer_count(&self) -> usize {
        1
    }
}

/// Finds an invoice by number
#[tool(namespace = BILLING)]
async fn lookup(number: u32) -> String {
    format!("invoice {number}: 42 EUR, paid")
}

#[tokio::main]
async fn main() -> Result<(), llm_tools_core::Error> {
    // LLM_TOOLS_DEBUG=1 or RUST_LOG prints the requests and the tool traffic to stderr.
    llm_tools_core::debug_log::init_from_env();
    // Providers map joined names back to namespaces; a call may also arrive under its joined
    // name without a namespace, and the chat routes it the same way.
    let model = ScriptedProvider::new()
        .then_tool_calls(vec![
            ToolCall::new("c1", "lookup", r#"{"email":"ada@example.com"}"#)
                .with_namespace(Some("crm".into())),
            ToolCall::new("c2", "billing_lookup", r#"{"number":7}"#),
            ToolCall::new("c3", "customer_count", "{}"),
        ])
        .then_text("Ada is a customer; invoice 7 is paid; you have one customer.")
        .then_tool_calls(vec![
            ToolCall::new("c4", "lookup", r#"{"email":"ada@example.com"}"#)
                .with_namespace(Some("crm".into())),
        ])
        .then_text("Still Ada.");

    let mut chat = Chat::new(model.clone());
    chat.with_tools((Crm, Lookup))?;
    let names: Vec<&str> = chat
        .tools()
        .iter()
        .map(|t| t.spec().joined_name())
        .collect();
    println!("Registered: {names:?}");

    let _ = chat
        .ask("Who is ada@example.com, is invoice 7 paid, how many customers?")
        .await?;

    // Force one namespaced tool for the next answer; the choice resets after that round.
    chat.with_tool_options(ToolOptions::default().with_choice(ToolChoice::tool("crm_lookup")))?;
    let _ = chat.ask("Look Ada up again.").await?;
    let choices: Vec<ToolChoice> = model.requests().into_iter().map(|r| r.choice).collect();
    println!("Tool choice per request: {choices:?}\n");

    print_transcript(chat.messages());
    Ok(())
}

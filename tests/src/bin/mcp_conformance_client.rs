//! The client the MCP conformance runner (`@modelcontextprotocol/conformance client`) drives:
//! it connects to the scenario's server (its URL is the last argument) with `llm-tools-mcp`,
//! the way an application does, and calls tools through a chat: the calls the scenario's
//! context names (`MCP_CONFORMANCE_CONTEXT`'s `toolCalls`), else every tool the server lists,
//! with arguments made from its input schema (a tool that takes a `schema` object gets another
//! tool's input schema as the client holds it, which is how a scenario sees what the client
//! kept of it); a question the server asks on the way
//! (elicitation) is answered in place ([`McpServer::on_elicitation`]), accepting the form's
//! defaults.
//!
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` (set by the runner from 0.2) picks the lifecycle:
//! 2026-07-28 and later `server/discover` (with the fallback to `initialize`), else the
//! `initialize` handshake the older scenario servers speak.

use std::process::ExitCode;

use llm_tools_core::chat::{Chat, Outcome};
use llm_tools_core::testing::ScriptedProvider;
use llm_tools_core::{Answer, ToolSource};
use llm_tools_mcp::{Lifecycle, McpChat as _, McpServer};
use serde_json::{Map, Value, json};

/// Arguments for a tool from its input schema: each required property gets a value of its
/// type (its `default` or first `enum` value when it has one).
fn arguments_for(schema: &Value) -> Value {
    let properties = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    for (name, property) in properties.into_iter().flatten() {
        if !required.contains(&name.as_str()) {
            continue;
        }
        out.insert(name.clone(), value_for(property));
    }
    Value::Object(out)
}

fn value_for(property: &Value) -> Value {
    if let Some(default) = property.get("default") {
        return default.clone();
    }
    if let Some(first) = property
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    match property.get("type").and_then(Value::as_str) {
        Some("number" | "integer") => json!(2),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        Some("object") => arguments_for(property),
        _ => json!("conformance"),
    }
}

async fn run(url: String) -> Result<(), String> {
    let modern =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").is_ok_and(|v| v.as_str() >= "2026-07-28");
    let lifecycle = if modern {
        Lifecycle::Auto
    } else {
        Lifecycle::Initialize
    };
    let client = McpServer::http(url)
        .lifecycle(lifecycle)
        .on_elicitation(|_question| async { Answer::accept(json!({})) })
        .connect("conformance")
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let tools = client.tools();
    eprintln!(
        "connected ({}), tools: {:?}",
        client.protocol_version().unwrap_or_default(),
        client.tool_names()
    );
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    let calls: Vec<(String, Value)> = match context.get("toolCalls").and_then(Value::as_array) {
        Some(named) => named
            .iter()
            .filter_map(|c| {
                let name = c.get("name")?.as_str()?;
                let tool = tools.iter().find(|t| t.spec().name() == name)?;
                let arguments = c.get("arguments").cloned().unwrap_or_else(|| json!({}));
                Some((tool.spec().joined_name().to_owned(), arguments))
            })
            .collect(),
        None => tools
            .iter()
            .map(|tool| {
                let spec = tool.spec();
                let takes_schema = spec.parameters()["properties"]["schema"]["type"] == "object";
                let other = tools.iter().find(|t| t.spec().name() != spec.name());
                let arguments = match other {
                    Some(other) if takes_schema => json!({"schema": other.spec().parameters()}),
                    _ => arguments_for(spec.parameters()),
                };
                (spec.joined_name().to_owned(), arguments)
            })
            .collect(),
    };
    for (name, arguments) in calls {
        let model = ScriptedProvider::new()
            .then_call(name.as_str(), arguments)
            .then_text("done");
        let mut chat = Chat::new(model);
        chat.with_mcp(&client).map_err(|e| e.to_string())?;
        let mut outcome = chat.ask("Run the tool").await.map_err(|e| e.to_string())?;
        // Questions on the way (elicitation) are accepted with the form's defaults.
        for _ in 0..5 {
            if !matches!(outcome, Outcome::Paused(_)) {
                break;
            }
            let calls: Vec<String> = chat
                .pending_questions()
                .iter()
                .map(|q| q.call.id.clone())
                .collect();
            if calls.is_empty() {
                break;
            }
            for id in calls {
                chat.answer(&id, json!({})).map_err(|e| e.to_string())?;
            }
            outcome = chat.complete().await.map_err(|e| e.to_string())?;
        }
        let result = chat
            .messages()
            .iter()
            .rev()
            .find(|m| m.tool_call_id.is_some())
            .map(|m| (m.text(), m.is_error))
            .unwrap_or_default();
        eprintln!("{name}: {result:?}");
    }
    client.close().await;
    Ok(())
}

fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: mcp_conformance_client <server URL>");
        return ExitCode::FAILURE;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(url)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

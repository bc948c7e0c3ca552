//! The meaning of a Messages request body, for comparing what we send with recorded traffic.

use serde_json::{Value, json};

use crate::wire::canonical::{is_inlined_file, schema};

/// What a Messages request body asks for, with the details of dialect and client left out: the
/// model, the system prompt, the messages (text, tool calls with parsed inputs, tool results
/// with their attachments and error flag, thinking sent back), the tools (names, descriptions,
/// schemas read back into the neutral dialect, whether each is still deferred), the server
/// tools, the tool choice, the parallel switch and whether it streams.
///
/// A deferred tool that a `tool_reference` in the conversation already loaded counts as loaded:
/// sending the search blocks back (so Anthropic expands the reference) and sending the found
/// tool without `defer_loading` mean the same. Server-tool blocks themselves are not messages
/// and are left out; text blocks of one answer are joined.
///
/// ```
/// use llm_tools_providers::anthropic::canonical_request;
/// use serde_json::json;
///
/// let recorded = json!({"model": "m", "max_tokens": 64000, "stream": false,
///     "messages": [{"role": "user", "content": "hi"}],
///     "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object",
///         "properties": {"x": {"type": "string"}}, "required": [], "additionalProperties": false, "strict": true}}]});
/// let ours = json!({"model": "m", "max_tokens": 8192, "stream": false,
///     "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
///     "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object",
///         "properties": {"x": {"type": "string"}}}}]});
/// assert_eq!(canonical_request(&recorded), canonical_request(&ours));
/// ```
pub fn canonical_request(body: &Value) -> Value {
    let mut instructions = Vec::new();
    match body.get("system") {
        Some(Value::String(s)) => instructions.push(Value::from(s.as_str())),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                if let Some(t) = b.get("text").and_then(Value::as_str) {
                    instructions.push(Value::from(t));
                }
            }
        }
        _ => {}
    }
    let mut messages = Vec::new();
    let mut loaded: Vec<String> = Vec::new();
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or_default();
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            Some(Value::Array(blocks)) => blocks.clone(),
            _ => Vec::new(),
        };
        if role == "assistant" {
            messages.push(assistant(&blocks, &mut loaded));
        } else {
            user(&blocks, &mut messages);
        }
    }
    let mut tools = Vec::new();
    let mut server_tools = Vec::new();
    for t in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let kind = t.get("type").and_then(Value::as_str);
        if kind.is_some_and(|k| k != "custom") {
            server_tools.push(t.clone());
            continue;
        }
        let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
        let deferred =
            t.get("defer_loading") == Some(&Value::Bool(true)) && !loaded.iter().any(|l| l == name);
        tools.push(json!({
            "name": name,
            "description": t.get("description").cloned().unwrap_or(Value::Null),
            "parameters": schema(t.get("input_schema").unwrap_or(&Value::Null)),
            "deferred": deferred,
        }));
    }
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    server_tools.sort_by_key(Value::to_string);
    let choice = body.get("tool_choice");
    let tool_choice = match choice.and_then(|c| c.get("type")).and_then(Value::as_str) {
        None | Some("auto") => json!("auto"),
        Some("any") => json!("required"),
        Some("none") => json!("none"),
        Some("tool") => json!({"tool": choice.and_then(|c| c.get("name"))}),
        Some(other) => json!(other),
    };
    let parallel = match choice
        .and_then(|c| c.get("disable_parallel_tool_use"))
        .and_then(Value::as_bool)
    {
        Some(disable) => Value::Bool(!disable),
        None => Value::Null,
    };
    json!({
        "model": body.get("model").cloned().unwrap_or(Value::Null),
        "instructions": instructions,
        "messages": messages,
        "tools": tools,
        "server_tools": server_tools,
        "tool_choice": tool_choice,
        "parallel_tool_calls": parallel,
        "stream": body.get("stream").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// Text (joined) and attachments (inlined files, images, documents) of some blocks.
fn content(blocks: &[Value]) -> (String, Vec<Value>) {
    let mut text = Vec::new();
    let mut attachments = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = b.get("text").and_then(Value::as_str).unwrap_or_default();
                if is_inlined_file(t) {
                    attachments.push(Value::from(t));
                } else {
                    text.push(t);
                }
            }
            Some("image" | "document") => attachments.push(b.clone()),
            _ => {}
        }
    }
    (text.join("\n"), attachments)
}

fn user(blocks: &[Value], out: &mut Vec<Value>) {
    let mut plain = Vec::new();
    for b in blocks {
        if b.get("type").and_then(Value::as_str) == Some("tool_result") {
            let inner: Vec<Value> = match b.get("content") {
                Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
                Some(Value::Array(items)) => items.clone(),
                _ => Vec::new(),
            };
            let (text, attachments) = content(&inner);
            out.push(json!({
                "role": "tool",
                "call_id": b.get("tool_use_id"),
                "text": text,
                "attachments": attachments,
                "is_error": b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            }));
        } else {
            plain.push(b.clone());
        }
    }
    if !plain.is_empty() {
        let (text, attachments) = content(&plain);
        out.push(json!({"role": "user", "text": text, "attachments": attachments}));
    }
}

fn assistant(blocks: &[Value], loaded: &mut Vec<String>) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut reasoning = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                text.push_str(b.get("text").and_then(Value::as_str).unwrap_or_default())
            }
            Some("tool_use") => calls.push(json!({
                "id": b.get("id"),
                "name": b.get("name"),
                "toolset": b.get("toolset_name"),
                "arguments": b.get("input").cloned().unwrap_or_else(|| json!({})),
            })),
            Some("thinking" | "redacted_thinking") => reasoning.push(b.clone()),
            Some("tool_search_tool_result") => {
                let references = b
                    .get("content")
                    .and_then(|c| c.get("tool_references"))
                    .and_then(Value::as_array);
                for r in references.into_iter().flatten() {
                    if let Some(name) = r.get("tool_name").and_then(Value::as_str) {
                        loaded.push(name.to_owned());
                    }
                }
            }
            _ => {}
        }
    }
    json!({"role": "assistant", "text": text, "calls": calls, "reasoning": reasoning})
}

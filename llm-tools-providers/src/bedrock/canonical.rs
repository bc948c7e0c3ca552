//! The meaning of a Converse request body, for comparing what we send with recorded traffic.

use serde_json::{Value, json};

use crate::wire::canonical::{is_inlined_file, schema};

/// What a Converse request body asks for, with the details of dialect and client left out: the
/// system prompt, the messages (user text and attachments; tool results with their text, error
/// status and attachments; assistant text, tool uses with their arguments, reasoning blocks),
/// the tools (names, descriptions, schemas read back into the neutral dialect) and the tool
/// choice. The order of the tools does not matter.
///
/// ```
/// use llm_tools_providers::bedrock::canonical_request;
/// use serde_json::json;
///
/// let recorded = json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}],
///     "inferenceConfig": {},
///     "toolConfig": {"tools": [{"toolSpec": {"name": "t", "description": "d",
///         "inputSchema": {"json": {"type": "object", "properties": {}, "additionalProperties": false, "strict": true}}}}]}});
/// let ours = json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}],
///     "toolConfig": {"tools": [{"toolSpec": {"name": "t", "description": "d",
///         "inputSchema": {"json": {"type": "object", "properties": {}}}}}], "toolChoice": {"auto": {}}}});
/// assert_eq!(canonical_request(&recorded), canonical_request(&ours));
/// ```
pub fn canonical_request(body: &Value) -> Value {
    let instructions: Vec<Value> = body
        .get("system")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("text").cloned())
        .collect();
    let mut messages = Vec::new();
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let content: &[Value] = m
            .get("content")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        if m.get("role").and_then(Value::as_str) == Some("assistant") {
            messages.push(assistant(content));
        } else {
            user(content, &mut messages);
        }
    }
    let config = body.get("toolConfig");
    let mut tools: Vec<Value> = config
        .and_then(|c| c.get("tools"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("toolSpec"))
        .map(|spec| {
            let parameters = spec
                .get("inputSchema")
                .and_then(|s| s.get("json"))
                .map(schema)
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            json!({
                "name": spec.get("name"),
                "description": spec.get("description").cloned().unwrap_or(Value::Null),
                "parameters": parameters,
            })
        })
        .collect();
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let choice = config.and_then(|c| c.get("toolChoice"));
    let tool_choice = match choice {
        None => json!("auto"),
        Some(c) if c.get("auto").is_some() => json!("auto"),
        Some(c) if c.get("any").is_some() => json!("required"),
        Some(c) => match c.get("tool").and_then(|t| t.get("name")) {
            Some(name) => json!({"tool": name}),
            None => c.clone(),
        },
    };
    json!({
        "instructions": instructions,
        "messages": messages,
        "tools": tools,
        "tool_choice": tool_choice,
    })
}

fn user(content: &[Value], out: &mut Vec<Value>) {
    let mut text = Vec::new();
    let mut attachments = Vec::new();
    for block in content {
        if let Some(result) = block.get("toolResult") {
            let mut texts = Vec::new();
            let mut media = Vec::new();
            for part in result
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match part.get("text").and_then(Value::as_str) {
                    Some(t) if is_inlined_file(t) => media.push(Value::from(t)),
                    Some(t) => texts.push(t.to_owned()),
                    None => match part.get("json") {
                        Some(j) => texts.push(j.to_string()),
                        None => media.push(part.clone()),
                    },
                }
            }
            out.push(json!({
                "role": "tool",
                "id": result.get("toolUseId"),
                "text": texts.join("\n"),
                "is_error": result.get("status").and_then(Value::as_str) == Some("error"),
                "attachments": media,
            }));
        } else if let Some(t) = block.get("text").and_then(Value::as_str) {
            if is_inlined_file(t) {
                attachments.push(Value::from(t));
            } else {
                text.push(t);
            }
        } else {
            attachments.push(block.clone());
        }
    }
    if !text.is_empty() || !attachments.is_empty() {
        out.push(json!({"role": "user", "text": text.join("\n"), "attachments": attachments}));
    }
}

fn assistant(content: &[Value]) -> Value {
    let mut text = String::new();
    let mut calls = Vec::new();
    let mut other = Vec::new();
    for block in content {
        if let Some(u) = block.get("toolUse") {
            calls.push(json!({
                "id": u.get("toolUseId"),
                "name": u.get("name"),
                "arguments": u.get("input").cloned().unwrap_or_else(|| json!({})),
            }));
        } else if let Some(t) = block.get("text").and_then(Value::as_str) {
            text.push_str(t);
        } else {
            other.push(block.clone());
        }
    }
    json!({"role": "assistant", "text": text, "calls": calls, "other": other})
}

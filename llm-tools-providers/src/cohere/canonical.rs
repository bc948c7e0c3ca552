//! The meaning of a v2 chat request body, for comparing what we send with recorded traffic.

use serde_json::{Value, json};

use crate::wire::canonical::{is_inlined_file, schema};

/// What a Cohere request body asks for, with the details of dialect and client left out: the
/// system prompt, the messages (user text and images; assistant text and calls with their
/// arguments, the tool plan left out; tool results' text, from a string, text parts or
/// documents), the tools (schemas read back into the neutral dialect, in any order) and the
/// tool choice.
///
/// ```
/// use llm_tools_providers::cohere::canonical_request;
/// use serde_json::json;
///
/// let recorded = json!({"messages": [{"role": "tool", "tool_call_id": "c1", "content": "15°C"}]});
/// let ours = json!({"messages": [{"role": "tool", "tool_call_id": "c1",
///     "content": [{"type": "document", "document": {"data": "15°C"}}]}]});
/// assert_eq!(canonical_request(&recorded), canonical_request(&ours));
/// ```
pub fn canonical_request(body: &Value) -> Value {
    let mut instructions = Vec::new();
    let mut messages = Vec::new();
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (text, attachments) = content(m.get("content"));
        match m.get("role").and_then(Value::as_str) {
            Some("system") => instructions.push(Value::String(text)),
            Some("assistant") => {
                let calls: Vec<Value> = m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let arguments = match c["function"].get("arguments") {
                            Some(Value::String(s)) => {
                                serde_json::from_str(s).unwrap_or_else(|_| json!({}))
                            }
                            Some(other) => other.clone(),
                            None => json!({}),
                        };
                        json!({"id": c.get("id"), "name": c["function"].get("name"), "arguments": arguments})
                    })
                    .collect();
                messages.push(json!({"role": "assistant", "text": text, "calls": calls}));
            }
            Some("tool") => messages.push(json!({
                "role": "tool",
                "id": m.get("tool_call_id"),
                "text": text,
                "attachments": attachments,
            })),
            _ => messages.push(json!({"role": "user", "text": text, "attachments": attachments})),
        }
    }
    let mut tools: Vec<Value> = body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("function"))
        .map(|f| {
            json!({
                "name": f.get("name"),
                "description": f.get("description").cloned().unwrap_or(Value::Null),
                "parameters": f.get("parameters").map(schema).unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            })
        })
        .collect();
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let tool_choice = match body.get("tool_choice").and_then(Value::as_str) {
        Some(c) => Value::String(c.to_ascii_lowercase()),
        None => json!("auto"),
    };
    json!({
        "instructions": instructions,
        "messages": messages,
        "tools": tools,
        "tool_choice": tool_choice,
    })
}

/// A message's text (text parts and documents joined) and its other parts.
fn content(content: Option<&Value>) -> (String, Vec<Value>) {
    match content {
        Some(Value::String(s)) => (s.clone(), Vec::new()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::new();
            let mut other = Vec::new();
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => texts.push(p["text"].as_str().unwrap_or_default().to_owned()),
                    Some("document") => texts.push(match &p["document"]["data"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    }),
                    _ => other.push(p.clone()),
                }
            }
            texts.retain(|t| !t.is_empty());
            // Text files inlined into a message are its attachments, as the other protocols
            // send them.
            let (files, texts): (Vec<String>, Vec<String>) =
                texts.into_iter().partition(|t| is_inlined_file(t));
            other.extend(files.into_iter().map(Value::String));
            (texts.join("\n"), other)
        }
        _ => (String::new(), Vec::new()),
    }
}

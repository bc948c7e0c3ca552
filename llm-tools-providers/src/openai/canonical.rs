//! The meaning of a request body, for comparing what we send with recorded traffic.

use serde_json::{Value, json};

use crate::wire::canonical::{is_inlined_file, schema};

/// What an OpenAI request body (Responses or Chat Completions) asks for, with the details of
/// each dialect and client left out: the model, instructions, messages (text, tool calls with
/// parsed arguments, tool results with their attachments, reasoning sent back), tools (joined
/// names, descriptions, schemas modulo strict mode), tool choice, the parallel switch and
/// whether it streams.
///
/// Two bodies that mean the same request have equal canonical forms, so a test can compare the
/// requests a provider sends with recorded ones:
///
/// ```
/// use llm_tools_providers::openai::canonical_request;
/// use serde_json::json;
///
/// let recorded = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": false,
///     "tools": [{"type": "function", "function": {"name": "t", "description": "d",
///         "parameters": {"type": "object", "properties": {"x": {"type": "string"}}, "required": []}}}]});
/// let ours = json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "stream": false,
///     "tools": [{"type": "function", "function": {"name": "t", "description": "d", "strict": true,
///         "parameters": {"type": "object", "properties": {"x": {"type": ["string", "null"]}},
///                        "required": ["x"], "additionalProperties": false}}}]});
/// assert_eq!(canonical_request(&recorded), canonical_request(&ours));
/// ```
pub fn canonical_request(body: &Value) -> Value {
    let mut instructions: Vec<Value> = Vec::new();
    if let Some(i) = body.get("instructions").and_then(Value::as_str) {
        instructions.push(Value::from(i));
    }
    let mut messages: Vec<Value> = Vec::new();
    if let Some(input) = body.get("input") {
        responses_messages(input, &mut instructions, &mut messages);
    } else if let Some(Value::Array(list)) = body.get("messages") {
        chat_messages(list, &mut instructions, &mut messages);
    }
    let mut tools = canonical_tools(body.get("tools"));
    // The order tools are declared in means nothing.
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let tool_count = tools.len();
    let mut choice = match body.get("tool_choice") {
        None | Some(Value::Null) => Value::from("auto"),
        Some(Value::String(s)) if s == "any" => Value::from("required"),
        Some(Value::String(s)) => Value::from(s.as_str()),
        Some(obj) => {
            let name = obj
                .get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| obj.get("name"))
                .cloned()
                .unwrap_or(Value::Null);
            json!({ "tool": name })
        }
    };
    // Forcing the only tool there is means the same as requiring a tool call.
    if choice.get("tool").is_some() && tool_count == 1 {
        choice = Value::from("required");
    }
    json!({
        "model": body.get("model").cloned().unwrap_or(Value::Null),
        "instructions": instructions,
        "messages": messages,
        "tools": tools,
        "tool_choice": choice,
        "parallel_tool_calls": body.get("parallel_tool_calls").cloned().unwrap_or(Value::Null),
        "stream": body.get("stream").and_then(Value::as_bool).unwrap_or(false),
    })
}

/// Text and attachments of a content value (a string or a list of parts).
fn content(v: Option<&Value>) -> (String, Vec<Value>) {
    let mut text = String::new();
    let mut attachments = Vec::new();
    match v {
        Some(Value::String(s)) => text.push_str(s),
        Some(Value::Array(parts)) => {
            for p in parts {
                let t = p.get("text").and_then(Value::as_str);
                match (p.get("type").and_then(Value::as_str), t) {
                    (_, Some(t)) if t.starts_with("<file ") => attachments.push(Value::from(t)),
                    (Some("text" | "input_text" | "output_text"), Some(t)) => text.push_str(t),
                    (Some("refusal"), _) => {}
                    _ => {
                        let mut a = p.clone();
                        if let Value::Object(o) = &mut a {
                            o.remove("type");
                        }
                        attachments.push(a);
                    }
                }
            }
        }
        _ => {}
    }
    (text, attachments)
}

fn arguments(v: Option<&Value>) -> Value {
    match v {
        Some(Value::String(s)) if s.trim().is_empty() => json!({}),
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::from(s.as_str()))
        }
        Some(other) => other.clone(),
        None => json!({}),
    }
}

fn attachments_note(text: &str) -> Option<&str> {
    text.strip_prefix("Attachments from tool call ")
        .and_then(|rest| rest.strip_suffix(':'))
}

/// Adds attachments sent in a user message after tool results to the result they belong to.
fn fold_attachments(messages: &mut [Value], text: &str, attachments: Vec<Value>) -> bool {
    let Some(call_id) = attachments_note(text) else {
        return false;
    };
    let result = messages
        .iter_mut()
        .rev()
        .find(|m| m["role"] == "tool" && m["call_id"] == call_id);
    match result {
        Some(m) => {
            if let Some(Value::Array(list)) = m.get_mut("attachments") {
                list.extend(attachments);
            }
            true
        }
        None => false,
    }
}

fn assistant(text: String, calls: Vec<Value>, reasoning: Vec<Value>) -> Value {
    json!({"role": "assistant", "text": text, "calls": calls, "reasoning": reasoning})
}

fn responses_messages(input: &Value, instructions: &mut Vec<Value>, out: &mut Vec<Value>) {
    let items = match input {
        Value::String(s) => {
            out.push(json!({"role": "user", "text": s, "attachments": []}));
            return;
        }
        Value::Array(items) => items,
        _ => return,
    };
    let mut current: Option<(String, Vec<Value>, Vec<Value>)> = None;
    let flush = |current: &mut Option<(String, Vec<Value>, Vec<Value>)>, out: &mut Vec<Value>| {
        if let Some((text, calls, reasoning)) = current.take() {
            out.push(assistant(text, calls, reasoning));
        }
    };
    for item in items {
        let kind = item.get("type").and_then(Value::as_str);
        let role = item.get("role").and_then(Value::as_str);
        match (kind, role) {
            (Some("reasoning"), _) => {
                let enc = item
                    .get("encrypted_content")
                    .cloned()
                    .unwrap_or(Value::Null);
                current.get_or_insert_with(Default::default).2.push(enc);
            }
            (Some("function_call"), _) => {
                let name = match item.get("namespace").and_then(Value::as_str) {
                    Some(ns) => format!("{ns}_{}", item["name"].as_str().unwrap_or_default()),
                    None => item["name"].as_str().unwrap_or_default().to_owned(),
                };
                current.get_or_insert_with(Default::default).1.push(json!({
                    "id": item.get("call_id"),
                    "name": name,
                    "arguments": arguments(item.get("arguments")),
                }));
            }
            (_, Some("assistant")) => {
                let (text, _) = content(item.get("content"));
                current
                    .get_or_insert_with(Default::default)
                    .0
                    .push_str(&text);
            }
            (Some("function_call_output"), _) => {
                flush(&mut current, out);
                let (text, attachments) = content(item.get("output"));
                out.push(json!({"role": "tool", "call_id": item.get("call_id"), "text": text, "attachments": attachments}));
            }
            (_, Some("system" | "developer")) => {
                flush(&mut current, out);
                instructions.push(Value::from(content(item.get("content")).0));
            }
            (_, Some("user")) => {
                flush(&mut current, out);
                let (text, attachments) = content(item.get("content"));
                if !fold_attachments(out, &text, attachments.clone()) {
                    out.push(json!({"role": "user", "text": text, "attachments": attachments}));
                }
            }
            _ => {}
        }
    }
    flush(&mut current, out);
}

fn chat_messages(list: &[Value], instructions: &mut Vec<Value>, out: &mut Vec<Value>) {
    for m in list {
        match m.get("role").and_then(Value::as_str) {
            Some("system" | "developer") => {
                instructions.push(Value::from(content(m.get("content")).0));
            }
            Some("user") => {
                let (text, attachments) = content(m.get("content"));
                if !fold_attachments(out, &text, attachments.clone()) {
                    out.push(json!({"role": "user", "text": text, "attachments": attachments}));
                }
            }
            Some("assistant") => {
                let (text, _) = content(m.get("content"));
                let calls = m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        json!({
                            "id": c.get("id"),
                            "name": c.get("function").and_then(|f| f.get("name")),
                            "arguments": arguments(c.get("function").and_then(|f| f.get("arguments"))),
                        })
                    })
                    .collect();
                let reasoning: Vec<Value> = m
                    .get("reasoning_content")
                    .or_else(|| m.get("reasoning"))
                    .filter(|r| r.as_str().is_some_and(|s| !s.is_empty()))
                    .cloned()
                    .into_iter()
                    .collect();
                out.push(assistant(text, calls, reasoning));
            }
            Some("tool") => {
                let (text, attachments) = content(m.get("content"));
                let (text, mut inline) = split_inline_files(&text);
                inline.extend(attachments);
                out.push(json!({"role": "tool", "call_id": m.get("tool_call_id"), "text": text, "attachments": inline}));
            }
            _ => {}
        }
    }
}

/// Tool-message text may carry inlined text files (`<file …>…</file>` lines) after the result.
fn split_inline_files(text: &str) -> (String, Vec<Value>) {
    let mut kept = Vec::new();
    let mut files = Vec::new();
    for line in text.split('\n') {
        if is_inlined_file(line) {
            files.push(Value::from(line));
        } else {
            kept.push(line);
        }
    }
    (kept.join("\n"), files)
}

fn canonical_tools(tools: Option<&Value>) -> Vec<Value> {
    let mut out = Vec::new();
    for t in tools.and_then(Value::as_array).into_iter().flatten() {
        if t.get("type").and_then(Value::as_str) == Some("namespace") {
            let ns = t.get("name").and_then(Value::as_str).unwrap_or_default();
            for inner in t
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(canonical_tool(inner, Some(ns)));
            }
        } else {
            out.push(canonical_tool(t, None));
        }
    }
    out
}

fn canonical_tool(t: &Value, namespace: Option<&str>) -> Value {
    let f = t.get("function").unwrap_or(t);
    let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
    let name = match namespace {
        Some(ns) => format!("{ns}_{name}"),
        None => name.to_owned(),
    };
    let parameters = f
        .get("parameters")
        .map(schema)
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    json!({
        "name": name,
        "description": f.get("description").cloned().unwrap_or(Value::Null),
        "parameters": parameters,
    })
}

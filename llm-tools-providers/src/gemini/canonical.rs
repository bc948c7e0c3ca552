//! The meaning of a `generateContent` request body, for comparing what we send with recorded
//! traffic.

use serde_json::{Value, json};

use crate::wire::canonical::{is_inlined_file, schema};

/// What a Gemini request body asks for, with the details of dialect and client left out: the
/// system instruction, the contents (text, function calls with their arguments, ids and thought
/// signatures, function responses with their text, error flag and attachments), the function
/// declarations (names, descriptions, schemas read back into the neutral dialect from either
/// `parametersJsonSchema` or `parameters`), and the function-calling mode.
///
/// A function response's text is read from any of the shapes clients use: `{"output": …}` and
/// `{"error": …}` (the documented keys), `{"result": …}` (Google's SDK) or `{"content":
/// [{"text": …}]}`.
///
/// ```
/// use llm_tools_providers::gemini::canonical_request;
/// use serde_json::json;
///
/// let recorded = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
///     "tools": [{"functionDeclarations": [{"name": "t", "description": "d",
///         "parameters": {"type": "OBJECT", "properties": {"x": {"type": "STRING", "nullable": true}}, "required": ["x"]}}]}],
///     "toolConfig": {"functionCallingConfig": {"mode": "any", "allowedFunctionNames": ["t"]}}});
/// let ours = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
///     "tools": [{"functionDeclarations": [{"name": "t", "description": "d",
///         "parametersJsonSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}]}],
///     "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["t"]}}});
/// assert_eq!(canonical_request(&recorded), canonical_request(&ours));
/// ```
pub fn canonical_request(body: &Value) -> Value {
    let instructions: Vec<Value> = body
        .get("systemInstruction")
        .and_then(|s| s.get("parts"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("text").cloned())
        .collect();
    let mut messages = Vec::new();
    for content in body
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let parts: &[Value] = content
            .get("parts")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        if content.get("role").and_then(Value::as_str) == Some("model") {
            messages.push(model(parts));
        } else {
            user(parts, &mut messages);
        }
    }
    let mut tools = Vec::new();
    for entry in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for decl in entry
            .get("functionDeclarations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let parameters = decl
                .get("parametersJsonSchema")
                .or_else(|| decl.get("parameters"))
                .map(schema)
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            tools.push(json!({
                "name": decl.get("name"),
                "description": decl.get("description").cloned().unwrap_or(Value::Null),
                "parameters": parameters,
            }));
        }
    }
    tools.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let calling = body
        .get("toolConfig")
        .and_then(|c| c.get("functionCallingConfig"));
    let mode = calling
        .and_then(|c| c.get("mode"))
        .and_then(Value::as_str)
        .unwrap_or("AUTO")
        .to_ascii_uppercase();
    let allowed = calling
        .and_then(|c| c.get("allowedFunctionNames"))
        .and_then(Value::as_array);
    let tool_choice = match (mode.as_str(), allowed) {
        ("ANY", Some(names)) if names.len() == 1 => json!({"tool": names[0]}),
        ("ANY", _) => json!("required"),
        ("NONE", _) => json!("none"),
        ("AUTO" | "MODE_UNSPECIFIED", _) => json!("auto"),
        (other, _) => json!(other.to_ascii_lowercase()),
    };
    json!({
        "instructions": instructions,
        "messages": messages,
        "tools": tools,
        "tool_choice": tool_choice,
    })
}

/// The text of a function response, and whether it reports an error.
fn response_text(response: Option<&Value>) -> (String, bool) {
    let text_of = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let Some(Value::Object(r)) = response else {
        return (response.map(text_of).unwrap_or_default(), false);
    };
    if let Some(e) = r.get("error") {
        return (text_of(e), true);
    }
    if let Some(o) = r.get("output").or_else(|| r.get("result")) {
        return (text_of(o), false);
    }
    if let Some(Value::Array(items)) = r.get("content") {
        let texts: Vec<String> = items
            .iter()
            .filter_map(|i| i.get("text").and_then(Value::as_str).map(str::to_owned))
            .collect();
        return (texts.join("\n"), false);
    }
    (Value::Object(r.clone()).to_string(), false)
}

fn user(parts: &[Value], out: &mut Vec<Value>) {
    let mut text = Vec::new();
    let mut attachments = Vec::new();
    let mut results = Vec::new();
    for p in parts {
        if let Some(r) = p.get("functionResponse") {
            let (t, is_error) = response_text(r.get("response"));
            let (kept, mut files): (Vec<&str>, Vec<&str>) =
                t.split('\n').partition(|line| !is_inlined_file(line));
            let mut media: Vec<Value> = files.drain(..).map(Value::from).collect();
            media.extend(
                r.get("parts")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .cloned(),
            );
            results.push(json!({
                "role": "tool",
                "id": r.get("id"),
                "name": r.get("name"),
                "text": kept.join("\n"),
                "is_error": is_error,
                "attachments": media,
            }));
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            if is_inlined_file(t) {
                attachments.push(Value::from(t));
            } else {
                text.push(t);
            }
        } else {
            attachments.push(p.clone());
        }
    }
    if !results.is_empty() {
        // Media sent beside the responses belong to the round's results.
        if let Some(Value::Array(list)) = results.last_mut().and_then(|r| r.get_mut("attachments"))
        {
            list.append(&mut attachments);
        }
        out.extend(results);
    }
    if !text.is_empty() || !attachments.is_empty() {
        out.push(json!({"role": "user", "text": text.join("\n"), "attachments": attachments}));
    }
}

fn model(parts: &[Value]) -> Value {
    let mut text = String::new();
    let mut signatures = Vec::new();
    let mut calls = Vec::new();
    let mut thoughts = Vec::new();
    for p in parts {
        if let Some(c) = p.get("functionCall") {
            calls.push(json!({
                "id": c.get("id"),
                "name": c.get("name"),
                "arguments": c.get("args").cloned().unwrap_or_else(|| json!({})),
                "signature": p.get("thoughtSignature"),
            }));
        } else if p.get("thought") == Some(&Value::Bool(true))
            && p.get("text").is_none()
            && let Some(sig) = p.get("thoughtSignature")
        {
            // A signature some clients send back in a part of its own, not on the text part
            // it came with: the same signature for the turn.
            signatures.push(sig.clone());
        } else if p.get("thought") == Some(&Value::Bool(true)) {
            thoughts.push(p.clone());
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            text.push_str(t);
            if let Some(sig) = p.get("thoughtSignature") {
                signatures.push(sig.clone());
            }
        }
    }
    json!({
        "role": "assistant",
        "text": text,
        "text_signatures": signatures,
        "calls": calls,
        "reasoning": thoughts,
    })
}

//! Reading v2 chat answers: a whole body (`message.content`, `tool_plan`, `tool_calls`,
//! `citations`, `finish_reason`, `usage`), and a stream of named events (`content-delta`,
//! `tool-plan-delta`, `tool-call-start`/`-delta`/`-end`, `citation-start`, `message-end`).

use llm_tools_core::{
    Citation, Message, Part, ProviderData, ProviderError, Response, ToolCall, Usage,
};
use serde_json::{Map, Value};
use std::collections::HashSet;

use super::request::PROTOCOL;
use crate::protocol::NameMap;
use crate::wire;

/// Cohere's usage: the tokens the model saw (`usage.tokens`), the cached part apart.
pub(super) fn usage_of(v: &Value) -> Usage {
    let tokens = v.get("tokens").unwrap_or(&Value::Null);
    let count = |t: &Value, k: &str| {
        t.get(k)
            .and_then(Value::as_f64)
            .map_or(0, |n| n.max(0.0) as u64)
    };
    Usage::new(
        count(tokens, "input_tokens"),
        count(tokens, "output_tokens"),
    )
    .with_cached_input_tokens(count(v, "cached_tokens"))
}

/// One answer being put together.
#[derive(Default)]
pub(super) struct Answer {
    pub(super) text: String,
    pub(super) plan: String,
    pub(super) calls: Vec<ToolCall>,
    pub(super) citations: Vec<Value>,
    pub(super) usage: Option<Usage>,
    pub(super) finish_reason: Option<String>,
    pub(super) id: Option<String>,
}

/// The sources Cohere's citations name (a tool's document: its `url` or id, `title` and
/// `text`), once each, in the order they are first cited. The raw citations, with the spans of
/// the answer they cover, stay in the provider data.
fn typed_citations(citations: &[Value]) -> Vec<Citation> {
    let mut out: Vec<Citation> = Vec::new();
    // The url, title and text of each citation in `out`: all a citation here has.
    let mut seen: HashSet<(&str, Option<&str>, Option<&str>)> = HashSet::new();
    let sources = citations
        .iter()
        .filter_map(|c| c.get("sources").and_then(Value::as_array))
        .flatten();
    for source in sources {
        let fields = source
            .get("tool_output")
            .or_else(|| source.get("document"))
            .unwrap_or(source);
        let text = |key: &str| fields.get(key).and_then(Value::as_str);
        let Some(url) = text("url")
            .or_else(|| text("id"))
            .or_else(|| source.get("id").and_then(Value::as_str))
        else {
            continue;
        };
        let (title, cited_text) = (text("title"), text("text"));
        if seen.insert((url, title, cited_text)) {
            out.push(
                Citation::url(url)
                    .with_title(title.map(str::to_owned))
                    .with_cited_text(cited_text.map(str::to_owned)),
            );
        }
    }
    out
}

impl Answer {
    pub(super) fn response(self, request_id: Option<String>) -> Response {
        let mut message = Message::assistant_with_calls("", self.calls);
        if !self.text.is_empty() {
            message.content = vec![Part::text(self.text)];
        }
        message.usage = self.usage;
        message.citations = typed_citations(&self.citations);
        let mut data = Map::new();
        if !self.plan.is_empty() {
            data.insert("tool_plan".into(), Value::String(self.plan));
        }
        if !self.citations.is_empty() {
            data.insert("citations".into(), Value::Array(self.citations));
        }
        if !data.is_empty() {
            message.provider_data = Some(ProviderData::new(PROTOCOL, Value::Object(data)));
        }
        Response::new(message)
            .with_finish_reason(self.finish_reason)
            .with_request_id(request_id.or(self.id))
    }
}

pub(super) fn call_of(names: &NameMap, call: &Value, arguments: String) -> ToolCall {
    let function = call.get("function").unwrap_or(&Value::Null);
    let wire_name = function
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
    wire::call_read(id, names.resolve(wire_name), arguments)
}

pub(super) fn text_of(content: Option<&Value>) -> String {
    content
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// Reads a whole answer.
pub(crate) fn parse(
    name: &str,
    body: &[u8],
    names: &NameMap,
    request_id: Option<String>,
) -> Result<Response, ProviderError> {
    let v: Value = wire::parse_body(name, body)?;
    let Some(message) = v.get("message").filter(|m| m.is_object()) else {
        return Err(wire::decode_error(name, "the answer has no `message`"));
    };
    let calls_in = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    // Each call charged as a stream's is, before any is built.
    wire::KeptValues::whole_answer().keep_calls(name, calls_in.len())?;
    let calls = calls_in
        .iter()
        .map(|c| {
            let arguments = match c.get("function").and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Object(o)) => Value::Object(o.clone()).to_string(),
                _ => String::new(),
            };
            call_of(names, c, arguments)
        })
        .collect();
    let answer = Answer {
        text: text_of(message.get("content")),
        plan: message
            .get("tool_plan")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        calls,
        citations: message
            .get("citations")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        usage: v.get("usage").map(usage_of),
        finish_reason: v
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_owned),
        id: v.get("id").and_then(Value::as_str).map(str::to_owned),
    };
    Ok(answer.response(request_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Sources cited many times are named once each, in the order first cited; sources that
    /// differ in title or text are apart, and one with nothing to name it is left out.
    #[test]
    fn sources_cited_many_times_are_named_once_in_the_order_first_cited() {
        let count = 3000;
        let mut citations: Vec<Value> = (0..count)
            .map(|i| {
                let n = (i * 13 + 5) % 17;
                json!({"start": i, "sources": [
                    {"type": "tool", "id": format!("s{n}"), "tool_output": {"title": format!("t{n}")}},
                    {"type": "document", "document": {"id": "doc", "text": "same"}},
                ]})
            })
            .collect();
        citations.push(json!({"sources": [
            {"document": {"id": "doc", "text": "other"}},
            {"tool_output": {"url": "https://a", "title": "x"}},
            {"tool_output": {"url": "https://a"}},
            {"tool_output": {"title": "no url or id"}},
            {"tool_output": {"url": "https://a", "title": "x"}},
        ]}));
        let answer = Answer {
            citations,
            ..Answer::default()
        };
        let got = answer.response(None).message.citations;

        let mut want: Vec<Citation> = Vec::new();
        for i in 0..count {
            let n = (i * 13 + 5) % 17;
            let source = Citation::url(format!("s{n}")).with_title(Some(format!("t{n}")));
            let document = Citation::url("doc").with_cited_text(Some("same".into()));
            for c in [source, document] {
                if !want.contains(&c) {
                    want.push(c);
                }
            }
        }
        want.push(Citation::url("doc").with_cited_text(Some("other".into())));
        want.push(Citation::url("https://a").with_title(Some("x".into())));
        want.push(Citation::url("https://a"));
        assert_eq!(want.len(), 17 + 4);
        assert_eq!(got, want);
    }
}

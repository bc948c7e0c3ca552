//! Elicitation, both ways: a server asking the user something during a call, as the client
//! answers it and as a `ToolServer` asks it.
//!
//! **Answering a server, as a client.** A server's form or URL request becomes a chat
//! [`Question`] ([`question_of`]), and the user's [`Answer`] its result ([`result_of`]); or an
//! [`ElicitationHandler`] (`McpServer::on_elicitation`) answers it in place. A URL request
//! reaches the user only for a URL a browser may open safely: `https` (and `http` to a loopback
//! host: `localhost`, `127.0.0.0/8`, `::1`), with no credentials in it. Any other
//! (`javascript:`, `file:`, `data:`, `http` to another host, …) is declined for the server, and
//! a warning logged; the user never sees it.
//!
//! **Asking a client, as a server** (feature `server`). A tool's question becomes an
//! elicitation request (`elicitation_of`): asked in place on sessions opened with `initialize`
//! (`elicit`), or as input requests on 2026-07-28 (`question_requests`), whose answers come
//! back with the call sent again (`answers_of`). A client that declared no elicitation
//! capability is not asked (`can_elicit`).

use std::fmt;
use std::sync::Arc;

use llm_tools_core::{Answer, BoxFuture, Question};
#[cfg(feature = "server")]
use rmcp::model::{ElicitRequest, InputRequest, InputRequests, InputResponses};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
#[cfg(feature = "server")]
use rmcp::service::RequestContext;
#[cfg(feature = "server")]
use rmcp::{Peer, RoleServer};
#[cfg(feature = "server")]
use serde_json::json;
use serde_json::{Map, Value};

// Answering a server, as a client.

/// Answers a server's question (an elicitation) in place, while the call that asked waits:
/// see [`McpServer::on_elicitation`](crate::McpServer::on_elicitation).
#[derive(Clone)]
pub(crate) struct ElicitationHandler(
    pub(crate) Arc<dyn Fn(Question) -> BoxFuture<'static, Answer> + Send + Sync>,
);

impl fmt::Debug for ElicitationHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ElicitationHandler")
    }
}

/// Why a server's elicitation is not put to the user.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unasked {
    /// A mode newer than this client.
    UnknownMode,
    /// A URL the user must not be sent to (why, without the URL); it is declined.
    UnsafeUrl(String),
    /// A form with more fields than [`MAX_ELICITATION_FIELDS`] (how many); it is declined.
    TooManyFields(usize),
    /// A form whose schema is longer than [`MAX_ELICITATION_FORM_BYTES`] as JSON; it is
    /// declined.
    FormTooLarge,
}

/// The most fields a server's form (an elicitation's `requestedSchema`) may have: 100.
/// Elicitation forms are flat lists of strings, numbers, booleans and choices a person fills
/// in; a larger one is declined without asking, with a warning.
pub const MAX_ELICITATION_FIELDS: usize = 100;

/// The most bytes a server's form (its `requestedSchema` written as JSON: the fields' names,
/// titles, descriptions, choices) may take: 64 KiB. The form is kept in the paused call's
/// question (and in a durable chat's store) and shown to a person; a larger one is declined
/// without asking, with a warning.
pub const MAX_ELICITATION_FORM_BYTES: usize = 64 * 1024;

/// The longest URL a server may ask the user to visit: 8 KiB. A longer one is declined
/// without asking, with a warning.
pub const MAX_ELICITATION_URL_BYTES: usize = 8 * 1024;

impl Unasked {
    /// Logs why the question is not asked (a URL's reason as a warning).
    pub(crate) fn log(&self, server: &str) {
        match self {
            Self::UnknownMode => tracing::debug!(
                target: "llm_tools::mcp",
                server,
                "an elicitation in a mode this client does not know"
            ),
            Self::UnsafeUrl(reason) => tracing::warn!(
                target: "llm_tools::mcp",
                server,
                reason = reason.as_str(),
                "an elicitation URL was declined without asking the user"
            ),
            Self::FormTooLarge => tracing::warn!(
                target: "llm_tools::mcp",
                server,
                max_bytes = MAX_ELICITATION_FORM_BYTES,
                "an elicitation form larger than a person is asked to fill was declined"
            ),
            Self::TooManyFields(fields) => tracing::warn!(
                target: "llm_tools::mcp",
                server,
                fields,
                max = MAX_ELICITATION_FIELDS,
                "an elicitation form with more fields than a person is asked to fill was declined"
            ),
        }
    }
}

/// The URL a user may be sent to, as a browser reads it; or why not.
pub(crate) fn safe_url(url: &str) -> Result<String, String> {
    if url.len() > MAX_ELICITATION_URL_BYTES {
        return Err(format!(
            "a URL of {} bytes, past the {MAX_ELICITATION_URL_BYTES} one may have",
            url.len()
        ));
    }
    let parsed = reqwest::Url::parse(url).map_err(|_| "it is not a URL".to_owned())?;
    let host = parsed.host_str().unwrap_or_default();
    match parsed.scheme() {
        "https" if !host.is_empty() => {}
        "http" if is_loopback(host) => {}
        "http" => return Err("an http URL to a host that is not loopback".to_owned()),
        scheme => {
            let scheme = crate::error::cut(scheme, 32);
            return Err(format!("the scheme `{scheme}` (only https is opened)"));
        }
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("a URL with credentials in it".to_owned());
    }
    // Written out, the URL can be longer than sent (spaces and other characters escaped).
    if parsed.as_str().len() > MAX_ELICITATION_URL_BYTES {
        return Err(format!(
            "a URL of {} bytes written out, past the {MAX_ELICITATION_URL_BYTES} one may have",
            parsed.as_str().len()
        ));
    }
    Ok(parsed.into())
}

/// `localhost`, `127.0.0.0/8` or `::1` (as a URL writes it, `[::1]`).
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The chat question for a server's elicitation request, or why it is not asked.
pub(crate) fn question_of(request: &ElicitRequestParams) -> Result<Question, Unasked> {
    Ok(match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => {
            if crate::json_len::json_len(requested_schema, MAX_ELICITATION_FORM_BYTES).is_none() {
                return Err(Unasked::FormTooLarge);
            }
            let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
            let properties = schema.get("properties").and_then(Value::as_object);
            let fields = properties.map_or(0, Map::len);
            if fields > MAX_ELICITATION_FIELDS {
                return Err(Unasked::TooManyFields(fields));
            }
            let required: std::collections::HashSet<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let message = crate::error::cut(message, crate::error::MAX_SERVER_TEXT).into_owned();
            let mut question = Question::new(message);
            if let Some(properties) = properties {
                for (name, field) in properties {
                    let field = shown_field(field);
                    question = if required.contains(&name.as_str()) {
                        question.required_field(name.clone(), field)
                    } else {
                        question.field(name.clone(), field)
                    };
                }
            }
            question
        }
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            let message = crate::error::cut(message, crate::error::MAX_SERVER_TEXT).into_owned();
            Question::visit(message, safe_url(url).map_err(Unasked::UnsafeUrl)?)
        }
        _ => return Err(Unasked::UnknownMode),
    })
}

/// A form field's schema as the user may be shown it: the words a form shows (`title`,
/// `description`, `enumNames`), anywhere in it, with their control characters escaped (see
/// [`crate::error::cut`]), so a terminal that shows the form acts on none of them. The values
/// the answer must match (`enum`, `const`) stay as the server gave them. (The whole form is
/// within [`MAX_ELICITATION_FORM_BYTES`].)
fn shown_field(field: &Value) -> Value {
    let shown = |text: &str| {
        Value::String(crate::error::cut(text, crate::error::MAX_SERVER_TEXT).into_owned())
    };
    match field {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, value)| {
                    let value = match (key.as_str(), value) {
                        ("title" | "description", Value::String(text)) => shown(text),
                        ("enumNames", Value::Array(names)) => Value::Array(
                            names
                                .iter()
                                .map(|name| match name {
                                    Value::String(text) => shown(text),
                                    other => other.clone(),
                                })
                                .collect(),
                        ),
                        ("enum" | "const" | "default", other) => other.clone(),
                        (_, other) => shown_field(other),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(shown_field).collect()),
        other => other.clone(),
    }
}

/// The result that declines a question.
pub(crate) fn declined() -> ElicitResult {
    ElicitResult::new(ElicitationAction::Decline)
}

/// The elicitation result for the user's answer.
pub(crate) fn result_of(answer: &Answer) -> ElicitResult {
    match answer.values() {
        Some(values) => {
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(values.clone()))
        }
        None => ElicitResult::new(ElicitationAction::Decline),
    }
}

// Asking a client, as a server.

/// The elicitation request for a question (`mode` form or url).
#[cfg(feature = "server")]
pub(crate) fn elicitation_of(question: &Question, id: &str) -> Result<ElicitRequestParams, String> {
    let value = match question.url() {
        Some(url) => {
            json!({"mode": "url", "message": question.message(), "url": url, "elicitationId": id})
        }
        None => {
            json!({"mode": "form", "message": question.message(), "requestedSchema": question.requested_schema()})
        }
    };
    serde_json::from_value(value).map_err(|e| {
        format!("the question cannot be asked over MCP (elicitation allows flat forms of strings, numbers, booleans and enums): {e}")
    })
}

/// Whether the client said it can ask its user (the elicitation capability).
#[cfg(feature = "server")]
pub(crate) fn can_elicit(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|caps| caps.elicitation.is_some())
}

/// Asks the client in place (sessions opened with `initialize`).
#[cfg(feature = "server")]
pub(crate) async fn elicit(
    peer: &Peer<RoleServer>,
    question: &Question,
    call_id: &str,
    index: usize,
) -> Result<Answer, String> {
    let supported = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some());
    if !supported {
        return Err(format!(
            "the tool needs the user's answer to \"{}\", and this MCP client cannot ask (no elicitation capability)",
            question.message()
        ));
    }
    let request = elicitation_of(question, &format!("{call_id}-{index}"))?;
    let result = peer
        .create_elicitation(request)
        .await
        .map_err(|e| format!("asking the user failed: {e}"))?;
    Ok(answer_of(&result))
}

/// The chat answer for a client's elicitation result: accepted values, or a decline.
#[cfg(feature = "server")]
pub(crate) fn answer_of(result: &ElicitResult) -> Answer {
    match (&result.action, &result.content) {
        (ElicitationAction::Accept, Some(content)) => Answer::accept(content.clone()),
        (ElicitationAction::Accept, None) => Answer::accept(json!({})),
        _ => Answer::decline(None),
    }
}

/// The key of the `index`th question of a call among a 2026-07-28 call's input requests and
/// responses.
#[cfg(feature = "server")]
pub(crate) fn question_key(index: usize) -> String {
    format!("q{index:02}")
}

/// The 2026-07-28 input requests for the next question of a call.
#[cfg(feature = "server")]
pub(crate) fn question_requests(question: &Question, index: usize) -> InputRequests {
    let mut requests = InputRequests::new();
    match elicitation_of(question, &format!("q{index}")) {
        Ok(params) => {
            requests.insert(
                question_key(index),
                InputRequest::Elicitation(ElicitRequest::new(params)),
            );
        }
        Err(message) => {
            tracing::warn!(target: "llm_tools::mcp", message = message.as_str(), "a question cannot be asked")
        }
    }
    requests
}

/// The answers a 2026-07-28 client sent with the call for the questions from `from` on, in
/// the order of the questions (keys `q00`, `q01`, …; other keys are not answers).
#[cfg(feature = "server")]
pub(crate) fn answers_of(responses: Option<&InputResponses>, from: usize) -> Vec<Answer> {
    let Some(responses) = responses else {
        return Vec::new();
    };
    let mut answers = Vec::new();
    for index in from.. {
        let Some(value) = responses.get(&question_key(index)) else {
            break;
        };
        answers.push(
            match serde_json::from_value::<ElicitResult>(value.clone()) {
                Ok(result) => answer_of(&result),
                Err(_) => Answer::decline(None),
            },
        );
    }
    answers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_form_request_becomes_a_form_question_with_its_required_fields() {
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "Who are you?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["name"]
            }
        }))
        .unwrap();
        let question = question_of(&request).unwrap();
        assert_eq!(question.message(), "Who are you?");
        assert_eq!(question.required(), ["name"]);
        assert_eq!(
            question.fields().unwrap()["age"],
            json!({"type": "integer"})
        );
    }

    /// A server's terminal escapes (a hyperlink to a `file:` URL behind harmless words) reach
    /// the user escaped, in the message and in the words of the form's fields; the values an
    /// answer must match stay as the server gave them.
    #[test]
    fn terminal_escapes_in_a_question_show_escaped() {
        let link = "\u{1b}]8;;file:///etc/passwd\u{1b}\\Continue\u{1b}]8;;\u{1b}\\";
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": link,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "plan": {"type": "string", "title": link, "description": link,
                             "enum": ["a\u{1b}"], "enumNames": [link]}
                }
            }
        }))
        .unwrap();
        let question = question_of(&request).unwrap();
        assert!(
            !question.message().contains('\u{1b}'),
            "{}",
            question.message()
        );
        assert!(
            question.message().contains("\\u{1b}]8;;file:"),
            "{}",
            question.message()
        );
        let field = &question.fields().unwrap()["plan"];
        for words in [
            &field["title"],
            &field["description"],
            &field["enumNames"][0],
        ] {
            let words = words.as_str().unwrap();
            assert!(!words.contains('\u{1b}'), "{field}");
        }
        assert_eq!(field["enum"][0], "a\u{1b}", "{field}");
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": link, "url": "https://example.com/a",
            "elicitationId": "e-1"
        }))
        .unwrap();
        let question = question_of(&request).unwrap();
        assert!(
            !question.message().contains('\u{1b}'),
            "{}",
            question.message()
        );
    }

    fn form(fields: usize, required: usize, message: &str) -> ElicitRequestParams {
        let properties: Map<String, Value> = (0..fields)
            .map(|i| (format!("f{i}"), json!({"type": "string"})))
            .collect();
        // Required names repeat, as a hostile server may send them.
        let required: Vec<String> = (0..required).map(|i| format!("f{}", i % 7)).collect();
        serde_json::from_value(json!({
            "mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": properties, "required": required}
        }))
        .unwrap()
    }

    #[test]
    fn a_form_past_the_field_limit_is_declined_unasked_and_its_message_is_cut() {
        let at_limit = question_of(&form(MAX_ELICITATION_FIELDS, 1_000, "Fill in")).unwrap();
        assert_eq!(at_limit.fields().unwrap().len(), MAX_ELICITATION_FIELDS);
        assert_eq!(at_limit.required().len(), 7);
        // 100,000 required names are past the form's bytes.
        assert_eq!(
            question_of(&form(MAX_ELICITATION_FIELDS, 100_000, "Fill in")).err(),
            Some(Unasked::FormTooLarge)
        );
        assert!(matches!(
            question_of(&form(MAX_ELICITATION_FIELDS + 1, 0, "Fill in")),
            Err(Unasked::TooManyFields(101))
        ));
        let long = "m".repeat(1 << 20);
        let cut = question_of(&form(1, 0, &long)).unwrap();
        assert!(cut.message().len() < 9_000, "{}", cut.message().len());
        assert!(cut.message().ends_with("bytes cut]"));
    }

    /// A form whose fields are few but large (a choice of a million values, a long
    /// description) is declined past 64 KiB as JSON; one just within is asked.
    #[test]
    fn a_form_past_its_bytes_is_declined_unasked() {
        let with_description = |bytes: usize| -> ElicitRequestParams {
            serde_json::from_value(json!({
                "mode": "form", "message": "Fill in",
                "requestedSchema": {"type": "object", "properties": {
                    "f": {"type": "string", "description": "d".repeat(bytes)}}}
            }))
            .unwrap()
        };
        assert!(question_of(&with_description(MAX_ELICITATION_FORM_BYTES - 200)).is_ok());
        assert_eq!(
            question_of(&with_description(MAX_ELICITATION_FORM_BYTES)).err(),
            Some(Unasked::FormTooLarge)
        );
        let choices: Vec<String> = (0..1_000_000).map(|i| i.to_string()).collect();
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form", "message": "Pick",
            "requestedSchema": {"type": "object", "properties": {
                "f": {"type": "string", "enum": choices}}}
        }))
        .unwrap();
        assert_eq!(question_of(&request).err(), Some(Unasked::FormTooLarge));
    }

    /// A URL past 8 KiB is declined unasked, saying how long it was and never what it was.
    #[test]
    fn a_url_past_its_bytes_is_declined_unasked() {
        let base = "https://example.com/login?state=";
        let within = format!(
            "{base}{}",
            "s".repeat(MAX_ELICITATION_URL_BYTES - base.len())
        );
        assert!(question_of(&url_request(&within)).is_ok());
        // Escaped when written out: 3,000 spaces are 9,000 bytes.
        let spaces = format!("{base}{}x", " ".repeat(3_000));
        match question_of(&url_request(&spaces)) {
            Err(Unasked::UnsafeUrl(why)) => assert!(why.contains("written out"), "{why}"),
            other => panic!("{other:?}"),
        }
        let past = format!("{within}s");
        match question_of(&url_request(&past)) {
            Err(Unasked::UnsafeUrl(why)) => {
                assert!(why.contains(&past.len().to_string()), "{why}");
                assert!(!why.contains("example.com"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_url_request_becomes_a_visit() {
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url", "message": "Sign in", "url": "https://example.com/login", "elicitationId": "e1"
        }))
        .unwrap();
        assert_eq!(
            question_of(&request).unwrap().url(),
            Some("https://example.com/login")
        );
    }

    fn url_request(url: &str) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "url", "message": "Open", "url": url, "elicitationId": "e1"
        }))
        .unwrap()
    }

    #[test]
    fn https_and_loopback_http_urls_are_asked() {
        for url in [
            "https://example.com/login?state=x",
            "HTTPS://Example.com/",
            "http://localhost:8080/callback",
            "http://127.0.0.2/cb",
            "http://[::1]:9/cb",
        ] {
            let question = question_of(&url_request(url)).unwrap();
            assert!(question.url().is_some(), "{url}");
        }
        // As a browser reads it: tabs and newlines inside, spaces around, are not part of it.
        assert_eq!(
            question_of(&url_request(" https://exa\tmple.com/a\nb "))
                .unwrap()
                .url(),
            Some("https://example.com/ab")
        );
    }

    #[test]
    fn other_urls_are_declined_with_the_reason() {
        for (url, reason) in [
            ("javascript:alert(1)", "the scheme `javascript`"),
            ("JavaScript:alert(1)", "the scheme `javascript`"),
            ("file:///etc/passwd", "the scheme `file`"),
            ("data:text/html,<b>x</b>", "the scheme `data`"),
            ("vbscript:msgbox", "the scheme `vbscript`"),
            ("http://example.com/", "not loopback"),
            ("http://127.0.0.1.example.com/", "not loopback"),
            ("https://trusted.example@evil.example/", "credentials"),
            ("/relative/path", "not a URL"),
            ("", "not a URL"),
        ] {
            match question_of(&url_request(url)) {
                Err(Unasked::UnsafeUrl(why)) => assert!(why.contains(reason), "{url}: {why}"),
                other => panic!("{url}: {other:?}"),
            }
        }
    }

    #[test]
    fn answers_become_accept_or_decline() {
        let accepted = result_of(&Answer::accept(json!({"name": "Ada"})));
        assert_eq!(
            serde_json::to_value(&accepted).unwrap(),
            json!({"action": "accept", "content": {"name": "Ada"}})
        );
        let declined = result_of(&Answer::decline(None));
        assert_eq!(
            serde_json::to_value(&declined).unwrap()["action"],
            "decline"
        );
    }

    #[cfg(feature = "server")]
    #[test]
    fn a_question_asked_as_a_server_reads_the_same_as_a_client() {
        let question = Question::new("Who are you?")
            .required_field("name", json!({"type": "string"}))
            .field("age", json!({"type": "integer"}));
        let request = elicitation_of(&question, "call-0").unwrap();
        let read = question_of(&request).unwrap();
        assert_eq!(read.message(), "Who are you?");
        assert_eq!(read.required(), ["name"]);
        assert_eq!(read.fields().unwrap()["age"], json!({"type": "integer"}));

        let answer = Answer::accept(json!({"name": "Ada"}));
        assert_eq!(answer_of(&result_of(&answer)).values(), answer.values());
        assert_eq!(answer_of(&declined()).values(), None);
    }
}

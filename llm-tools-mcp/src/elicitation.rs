//! Elicitation ↔ chat questions: a server's form or URL request is a [`Question`], the user's
//! [`Answer`] is the elicitation's result, and back for serving.
//!
//! A URL request reaches the user only for a URL a browser may open safely: `https` (and
//! `http` to a loopback host: `localhost`, `127.0.0.0/8`, `::1`), with no credentials in it.
//! Any other (`javascript:`, `file:`, `data:`, `http` to another host, …) is declined for the
//! server, and a warning logged; the user never sees it.

use llm_tools_core::{Answer, Question};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::Value;

/// Why a server's elicitation is not put to the user.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unasked {
    /// A mode newer than this client.
    UnknownMode,
    /// A URL the user must not be sent to (why, without the URL); it is declined.
    UnsafeUrl(String),
}

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
        }
    }
}

/// The URL a user may be sent to, as a browser reads it; or why not.
pub(crate) fn safe_url(url: &str) -> Result<String, String> {
    let parsed = reqwest::Url::parse(url).map_err(|_| "it is not a URL".to_owned())?;
    let host = parsed.host_str().unwrap_or_default();
    match parsed.scheme() {
        "https" if !host.is_empty() => {}
        "http" if is_loopback(host) => {}
        "http" => return Err("an http URL to a host that is not loopback".to_owned()),
        scheme => return Err(format!("the scheme `{scheme}` (only https is opened)")),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("a URL with credentials in it".to_owned());
    }
    Ok(parsed.into())
}

/// `localhost`, `127.0.0.0/8` or `::1` (as a URL writes it, `[::1]`).
fn is_loopback(host: &str) -> bool {
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
            let schema = serde_json::to_value(requested_schema).unwrap_or(Value::Null);
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut question = Question::new(message.clone());
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, field) in properties {
                    question = if required.contains(&name.as_str()) {
                        question.required_field(name.clone(), field.clone())
                    } else {
                        question.field(name.clone(), field.clone())
                    };
                }
            }
            question
        }
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            Question::visit(message.clone(), safe_url(url).map_err(Unasked::UnsafeUrl)?)
        }
        _ => return Err(Unasked::UnknownMode),
    })
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
}

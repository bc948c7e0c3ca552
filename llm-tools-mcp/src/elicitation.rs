//! Elicitation ↔ chat questions: a server's form or URL request is a [`Question`], the user's
//! [`Answer`] is the elicitation's result, and back for serving.

use llm_tools_core::{Answer, Question};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::Value;

/// The chat question for a server's elicitation request; `None` for a mode newer than this
/// client.
pub(crate) fn question_of(request: &ElicitRequestParams) -> Option<Question> {
    Some(match request {
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
            Question::visit(message.clone(), url.clone())
        }
        _ => return None,
    })
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

//! Questions a tool asks the user while it runs, and their answers.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A question a tool asks through [`ToolContext::ask`](crate::ToolContext::ask): a form whose
/// fields are JSON Schema properties, or a page to visit.
///
/// ```
/// use llm_tools_core::Question;
/// use serde_json::json;
///
/// let q = Question::new("Which region should I deploy to?")
///     .field("region", json!({"type": "string", "enum": ["eu", "us"]}))
///     .required_field("approver", json!({"type": "string", "title": "Your name"}));
/// assert_eq!(q.required(), ["approver"]);
/// assert_eq!(q.requested_schema()["properties"]["region"]["enum"], json!(["eu", "us"]));
///
/// let visit = Question::visit("Sign in to continue", "https://example.com/login");
/// assert_eq!(visit.url(), Some("https://example.com/login"));
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Question {
    message: String,
    #[serde(flatten)]
    kind: QuestionKind,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
enum QuestionKind {
    Form {
        #[serde(default)]
        fields: Map<String, Value>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        required: Vec<String>,
    },
    Url {
        url: String,
    },
}

impl Question {
    /// A form question with no fields yet (a plain yes/no confirmation if none are added).
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            kind: QuestionKind::Form {
                fields: Map::new(),
                required: Vec::new(),
            },
        }
    }

    /// A request to visit a page (to sign in, say).
    pub fn visit(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            kind: QuestionKind::Url { url: url.into() },
        }
    }

    /// A form question whose fields are given as one JSON object of JSON Schema properties. A
    /// property holding `"required": true` (the RubyLLM spelling) is listed as required.
    pub fn with_fields(message: impl Into<String>, fields: Value) -> Self {
        let mut q = Self::new(message);
        if let Value::Object(props) = fields {
            for (name, schema) in props {
                q = q.add_field(name, schema, false);
            }
        }
        q
    }

    /// Adds an optional field.
    #[must_use]
    pub fn field(self, name: impl Into<String>, schema: Value) -> Self {
        self.add_field(name.into(), schema, false)
    }

    /// Adds a field the user must fill.
    #[must_use]
    pub fn required_field(self, name: impl Into<String>, schema: Value) -> Self {
        self.add_field(name.into(), schema, true)
    }

    fn add_field(mut self, name: String, mut schema: Value, mut required: bool) -> Self {
        if let Value::Object(obj) = &mut schema
            && let Some(Value::Bool(flag)) = obj.remove("required")
        {
            required |= flag;
        }
        if let QuestionKind::Form {
            fields,
            required: req,
        } = &mut self.kind
        {
            if required && !req.contains(&name) {
                req.push(name.clone());
            }
            fields.insert(name, schema);
        }
        self
    }

    /// The question's text.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The form's fields (JSON Schema properties); empty for a URL question.
    pub fn fields(&self) -> Option<&Map<String, Value>> {
        match &self.kind {
            QuestionKind::Form { fields, .. } => Some(fields),
            QuestionKind::Url { .. } => None,
        }
    }

    /// The fields the user must fill.
    pub fn required(&self) -> &[String] {
        match &self.kind {
            QuestionKind::Form { required, .. } => required,
            QuestionKind::Url { .. } => &[],
        }
    }

    /// The page to visit, for a URL question.
    pub fn url(&self) -> Option<&str> {
        match &self.kind {
            QuestionKind::Url { url } => Some(url),
            QuestionKind::Form { .. } => None,
        }
    }

    /// The form as one object schema (`{"type":"object","properties":…,"required":…}`), the
    /// shape MCP elicitation uses. `Null` for a URL question.
    pub fn requested_schema(&self) -> Value {
        match &self.kind {
            QuestionKind::Form { fields, required } => {
                let mut schema = Map::new();
                schema.insert("type".into(), Value::from("object"));
                schema.insert("properties".into(), Value::Object(fields.clone()));
                if !required.is_empty() {
                    schema.insert(
                        "required".into(),
                        Value::Array(required.iter().cloned().map(Value::from).collect()),
                    );
                }
                Value::Object(schema)
            }
            QuestionKind::Url { .. } => Value::Null,
        }
    }

    /// Fills the fields `values` leaves out with their schemas' `default`s (as MCP's
    /// elicitation asks of a client, SEP-1034); fields given, even as `null`, stay as given.
    ///
    /// ```
    /// use llm_tools_core::Question;
    /// use serde_json::json;
    ///
    /// let question = Question::new("Deploy?")
    ///     .field("region", json!({"type": "string", "default": "eu-west-1"}))
    ///     .field("replicas", json!({"type": "integer", "default": 2}));
    /// let mut values = json!({"replicas": 5}).as_object().cloned().unwrap();
    /// question.fill_defaults(&mut values);
    /// assert_eq!(values, *json!({"region": "eu-west-1", "replicas": 5}).as_object().unwrap());
    /// ```
    pub fn fill_defaults(&self, values: &mut Map<String, Value>) {
        let Some(fields) = self.fields() else { return };
        for (name, schema) in fields {
            if let Some(default) = schema.get("default")
                && !values.contains_key(name)
            {
                values.insert(name.clone(), default.clone());
            }
        }
    }

    /// Checks that `values` fills every required field; the error names the missing ones.
    pub fn check_answer(&self, values: &Map<String, Value>) -> Result<(), String> {
        let missing: Vec<&str> = self
            .required()
            .iter()
            .filter(|f| values.get(f.as_str()).is_none_or(Value::is_null))
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("missing required field(s): {}", missing.join(", ")))
        }
    }
}

impl From<&str> for Question {
    fn from(message: &str) -> Self {
        Question::new(message)
    }
}

impl From<String> for Question {
    fn from(message: String) -> Self {
        Question::new(message)
    }
}

/// The user's answer to a [`Question`].
///
/// ```
/// use llm_tools_core::Answer;
/// use serde_json::json;
///
/// let answer = Answer::accept(json!({"answer": "eu-west-1"}));
/// assert!(answer.is_accepted());
/// assert_eq!(answer.get_str("answer"), Some("eu-west-1"));
/// assert!(!Answer::decline(None).is_accepted());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Answer {
    /// The user filled the form (or visited the page).
    Accept {
        /// The field values.
        #[serde(default)]
        values: Map<String, Value>,
    },
    /// The user declined to answer.
    Decline {
        /// Why, if they said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

impl Answer {
    /// An accepted answer; `values` is a JSON object of field values (anything else counts as
    /// no values).
    pub fn accept(values: Value) -> Self {
        match values {
            Value::Object(values) => Answer::Accept { values },
            _ => Answer::Accept { values: Map::new() },
        }
    }

    /// A declined answer.
    pub fn decline(reason: Option<String>) -> Self {
        Answer::Decline { reason }
    }

    /// Whether the user answered.
    pub fn is_accepted(&self) -> bool {
        matches!(self, Answer::Accept { .. })
    }

    /// The field values of an accepted answer.
    pub fn values(&self) -> Option<&Map<String, Value>> {
        match self {
            Answer::Accept { values } => Some(values),
            Answer::Decline { .. } => None,
        }
    }

    /// One field's value.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.values().and_then(|v| v.get(field))
    }

    /// One field's value, when it is a string.
    pub fn get_str(&self, field: &str) -> Option<&str> {
        self.get(field).and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ruby_style_required_flag_is_lifted_into_required() {
        let q = Question::with_fields(
            "Ask the team",
            json!({"answer": {"type": "string", "title": "Answer", "required": true}, "note": {"type": "string"}}),
        );
        assert_eq!(q.required(), ["answer"]);
        assert_eq!(
            q.fields().unwrap()["answer"],
            json!({"type": "string", "title": "Answer"})
        );
        assert!(
            q.check_answer(json!({"note": "x"}).as_object().unwrap())
                .is_err()
        );
        assert!(
            q.check_answer(json!({"answer": "y"}).as_object().unwrap())
                .is_ok()
        );
    }

    #[test]
    fn questions_and_answers_round_trip_through_json() {
        for q in [
            Question::new("Sure?").required_field("ok", json!({"type": "boolean"})),
            Question::visit("Sign in", "https://example.com"),
        ] {
            let back: Question = serde_json::from_value(serde_json::to_value(&q).unwrap()).unwrap();
            assert_eq!(back, q);
        }
        for a in [
            Answer::accept(json!({"a": 1})),
            Answer::decline(Some("no".into())),
        ] {
            let back: Answer = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
            assert_eq!(back, a);
        }
    }
}
